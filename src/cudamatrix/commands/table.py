"""Every command, found by its ``cudamatrix.commands`` entry point (common/plugins.py):
the built-ins in the order `cudamatrix --help` lists them, then a plugin's. A new command
is a module exporting a `Command` and one entry point naming it."""

from __future__ import annotations

import functools

from ..common import plugins
from ..errors import UserError
from .command import Command


@functools.cache
def commands() -> tuple[Command, ...]:
    """Loaded when the parser is built, so that a plugin that cannot be loaded is said in
    one line (cli.main) rather than as a traceback at import."""
    found = []
    for name, loaded in plugins.load(plugins.COMMANDS).items():
        if not isinstance(loaded, Command) or loaded.name != name:
            raise UserError(f"entry point {plugins.COMMANDS} {name}: not a Command named "
                            f"{name!r} (got {loaded!r:.80})")
        found.append(loaded)
    return tuple(found)

