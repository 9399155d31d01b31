"""Typed reads of recorded JSON (results.json, cell files, stage records).

A results file is a stranger's file as soon as it is downloaded from another job's
artifacts: `report`, `merge`, `--baseline`, `--resume` and `--rejudge` read it. Each field
is read here with the type its consumers use, and a field of another type is a
ValueError naming it, which the readers turn into one line and exit status 2; a report
is never written from a record that would break it halfway (fuzzed: tests/unit/test_fuzz.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def _fail(key: str, wanted: str, value: Any) -> ValueError:
    shown = repr(value)
    return ValueError(f"{key}: expected {wanted}, got {shown[:60]}")


def text(data: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise _fail(key, "a string", value)
    return value


def optional_text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise _fail(key, "a string or null", value)
    return value


def number(data: Mapping[str, Any], key: str, default: float = 0.0) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value):
        raise _fail(key, "a finite number", value)
    return float(value)


def table(data: Mapping[str, Any], key: str, *, optional: bool = False
          ) -> dict[str, Any] | None:
    value = data.get(key)
    if value is None and (optional or key not in data):
        return None if optional else {}
    if not isinstance(value, dict):
        raise _fail(key, "an object", value)
    return value


def texts(data: Mapping[str, Any], key: str) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(key, "a list of strings", value)
    return value


def text_table(data: Mapping[str, Any], key: str) -> dict[str, str]:
    value = data.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _fail(key, "an object of strings", value)
    return value


def tables(data: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise _fail(key, "a list of objects", value)
    return value


# Figures of a kernel's resource record: whole numbers where present.
_FIGURES = ("registers", "smem_bytes", "stack_bytes", "spill_store_bytes", "spill_load_bytes",
            "local_bytes")


def check_details(details: Mapping[str, Any]) -> None:
    """The entries of a stage's details that the reports and verdicts read, by type."""
    for record in tables(details, "resources"):
        text(record, "kernel")
        for key in ("name", "arch", "file"):
            optional_text(record, key)
        for key in _FIGURES:
            value = record.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int):
                raise _fail(f"resources.{key}", "a whole number", value)
    texts(details, "warnings")
    tables(details, "ships")
    kernel = table(details, "kernel", optional=True)
    if kernel is not None:
        for key in ("name", "lowered", "signature"):
            text(kernel, key)
    for key in ("via", "ptx_version", "accident"):
        value = details.get(key)
        if value is not None and not isinstance(value, str | bool):
            raise _fail(key, "a string", value)


def diagnosis(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """A cell's diagnosis (diagnose.py's Diagnosis as recorded), its texts by type."""
    found = table(data, "diagnosis", optional=True)
    if found is not None:
        for key in ("rule", "title", "explanation", "fix", "evidence"):
            text(found, key, "")
        texts(found, "links")
    return found
