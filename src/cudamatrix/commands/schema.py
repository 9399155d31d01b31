"""`cudamatrix schema case|project`: the JSON Schema (Draft 2020-12) of case.toml or
cudamatrix.toml, made from the declarations `validate` checks with (config/declarations.py);
the same schemas ship in the package (config/data/schema/) for an editor's ``#:schema``
line."""

from __future__ import annotations

import argparse

from ..common.log_line import say_json
from .command import Command, Invocation


def _schema(args: argparse.Namespace, invocation: Invocation) -> int:
    from ..config.declarations import json_schema

    say_json(json_schema(args.file), indent=2)
    return 0


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", choices=("case", "project"),
                        help="case: a case.toml; project: cudamatrix.toml")


COMMAND = Command("schema", "print the JSON Schema of case.toml or cudamatrix.toml",
                  _arguments, _schema)
