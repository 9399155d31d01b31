"""Typed reads of recorded JSON (results.json, cell files, stage records), and the one
reader of every JSON file the tool reads back, its own cache's records included.

A results file is a stranger's file as soon as it is downloaded from another job's
artifacts: `report`, `merge`, `--baseline`, `--resume` and `--rejudge` read it. Each field
is read here with the type its consumers use, and a field of another type is a
ValueError naming it, which the readers turn into one line and exit status 2; a report
is never written from a record that would break it halfway (fuzzed: tests/unit/test_fuzz.py).

The tool's own records (a marker, a toolkit's description, the cells' timings) are no
user's file: `read_cache` reads a damaged one as none, and the tool makes it again. No
module reads a JSON file any other way (tests/unit/test_damaged_caches.py walks them).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

# How deep a recorded document may nest: results.json's deepest is a stage's details' table
# of lists (about 6); a record nested 100,000 deep was a RecursionError in every reader.
MAX_DEPTH = 64
# How large one may be, unless its reader says otherwise.
MAX_BYTES = 1 << 30


class UnreadableRecord(ValueError):
    """A file handed over as a record that is none: not a regular file, too large, not
    JSON, nested too deep (the message says which, without the path: its reader adds it)."""


def _depth(value: Any) -> int:
    """How deep `value` nests, walked without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                return level
            todo.extend((v, level + 1) for v in (item.values() if isinstance(item, dict)
                                                  else item))
    return deepest


def read_regular(path: Path, max_bytes: int) -> bytes:
    """A file the tool did not write, bounded before it is read: a regular file (never a
    device, a FIFO or a socket, which could be read forever or block: ``/dev/zero`` named
    by a preprocessor's line marker was read whole, 3.8 GB), at most `max_bytes`."""
    try:
        info = os.stat(path)
    except (OSError, ValueError) as exc:
        raise UnreadableRecord(f"cannot read it ({getattr(exc, 'strerror', None) or exc})"
                               ) from None
    if not stat.S_ISREG(info.st_mode):
        raise UnreadableRecord("not a regular file")
    if info.st_size > max_bytes:
        raise UnreadableRecord(f"{info.st_size} bytes, over the {max_bytes >> 20} MiB it "
                               "may have")
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise UnreadableRecord(f"cannot read it ({exc.strerror})") from None
    if len(data) > max_bytes:  # it grew since
        raise UnreadableRecord(f"over the {max_bytes >> 20} MiB it may have")
    return data


def read_json(path: Path, max_bytes: int = MAX_BYTES) -> Any:
    """A JSON document from a file a user or another job handed over, bounded before use
    (read_regular), JSON, nested at most MAX_DEPTH deep."""
    data = read_regular(path, max_bytes)
    try:
        document = json.loads(data)
    except RecursionError:
        raise UnreadableRecord(f"nested deeper than the {MAX_DEPTH} levels a record may "
                               "have") from None
    except ValueError as exc:
        raise UnreadableRecord(f"not JSON ({exc})") from None
    if _depth(document) > MAX_DEPTH:
        raise UnreadableRecord(f"nested deeper than the {MAX_DEPTH} levels a record may have")
    return document


# How large a record the tool keeps in its cache may be: the largest (a toolkit's
# description, 50,000 cells' timings) are a few MiB.
CACHE_BYTES = 64 << 20


def read_cache(path: Path, max_bytes: int = CACHE_BYTES) -> Any:
    """A record the tool wrote into its own cache or a cell's folder, or None where there is
    none or it is damaged (a run killed as it wrote one, a full disk, a hand's edit:
    truncated, binary, too large): what it stands for is made again, never a traceback on
    every later run. The document's types are its reader's to check, as damage too."""
    try:
        return read_json(path, max_bytes)
    except UnreadableRecord:
        return None


# The largest time a record may hold, in microseconds (11 days): history.json's bound too.
MAX_MICROSECONDS = 1e12


def _fail(key: str, wanted: str, value: Any) -> ValueError:
    shown = repr(value)
    return ValueError(f"{key}: expected {wanted}, got {shown[:60]}")


def text(data: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise _fail(key, "a string", value)
    return value


Word = TypeVar("Word", bound=str)


def one_of(data: Mapping[str, Any], key: str, allowed: tuple[Word, ...],
           default: Word | None = None) -> Word:
    """A text that must be one of `allowed` (an outcome, a stage): the Literal type the
    record's readers check every comparison against."""
    value = data.get(key, default)
    for word in allowed:
        if value == word:
            return word
    raise _fail(key, f"one of {', '.join(map(repr, allowed))}", value)


def optional_text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise _fail(key, "a string or null", value)
    return value


def number(data: Mapping[str, Any], key: str, default: float | None = 0.0,
           where: str = "") -> float:
    """A finite number (`default` where absent; None: it must be there), named in a
    refusal as `where` + `key` (`timing.median_us`)."""
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(where + key, "a finite number", value)
    try:  # JSON's integers have no bound: 10**400 is no float (OverflowError)
        figure = float(value)
    except OverflowError:
        figure = math.inf
    if not math.isfinite(figure):
        raise _fail(where + key, "a finite number", value)
    return figure


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


def shell_words(data: Mapping[str, Any], key: str) -> str:
    """A recorded shell-quoted line (a repro's arguments): refused here when no shell
    could split it, so no report or merge meets it later as a traceback."""
    value = text(data, key, "")
    try:
        shlex.split(value)
    except ValueError as exc:
        raise _fail(key, f"a shell-quoted line ({exc})", value) from None
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
            # ptxas's figures: registers, bytes; a negative or astronomic one is no figure.
            if isinstance(value, bool) or not isinstance(value, int) \
                    or not 0 <= value < 1 << 40:
                raise _fail(f"resources.{key}", "a whole number from 0 to 2^40", value)
    texts(details, "warnings")
    tables(details, "ships")
    kernel = table(details, "kernel", optional=True)
    if kernel is not None:
        for key in ("name", "lowered", "signature"):
            text(kernel, key)
    timed = table(details, "timing", optional=True)
    if timed is not None:
        check_timing(timed)
    for key in ("via", "ptx_version", "accident", "cache", "built_alone"):
        value = details.get(key)
        if value is not None and not isinstance(value, str | bool):
            raise _fail(key, "a string", value)
    texts(details, "read_outside")
    texts(details, "built_with")
    if not isinstance(details.get("not_started", False), bool):
        raise _fail("not_started", "true or false", details.get("not_started"))


# A timing's figures besides its times, as stages/device/timing.py and load_run.py write
# them; each optional (no bandwidth without bytes moved, no clocks without NVML).
_TIMING_FIGURES = ("bandwidth_gbs", "peak_gbs", "bandwidth_fraction")
_TIMING_COUNTS = ("samples", "bytes", "sm_clock_mhz", "max_sm_clock_mhz", "clock_event_reasons")


def check_timing(timed: Mapping[str, Any]) -> None:
    """A timed kernel's record (stages/device/timing.py) by type: the reports, charts,
    history and bisect format every one of these figures, so a string or a negative one
    from a shard or a download is refused here, by name, never met there as a traceback."""
    for key in ("median_us", "min_us", "noise"):
        value = number(timed, key, None, where="timing.")
        # Bounded as history.json's reader bounds them: a time the tool wrote into a
        # history must never be one its next merge refuses (a wedged history).
        low_ok = value >= 0 if key == "noise" else value > 0
        if not (low_ok and value < MAX_MICROSECONDS):
            raise _fail(f"timing.{key}", f"a figure from 0 to {MAX_MICROSECONDS:g}"
                        + (" (not 0)" if key != "noise" else ""), timed.get(key))
    for key in _TIMING_FIGURES:
        if key in timed and number(timed, key, where="timing.") < 0:
            raise _fail(f"timing.{key}", "a figure from 0", timed[key])
    for key in _TIMING_COUNTS:
        value = timed.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 63:
            raise _fail(f"timing.{key}", "a whole number from 0", value)
    samples = timed.get("samples_us", [])
    if not isinstance(samples, list):
        raise _fail("timing.samples_us", "a list of numbers", samples)
    for sample in samples:
        number({"samples_us": sample}, "samples_us", where="timing.")
    for key, kind, wanted in (("l2", str, "a string"), ("converged", bool, "true or false")):
        if key in timed and not isinstance(timed[key], kind):
            raise _fail(f"timing.{key}", wanted, timed[key])


def diagnosis(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """A cell's diagnosis (diagnose.py's Diagnosis as recorded), its texts by type."""
    found = table(data, "diagnosis", optional=True)
    if found is not None:
        for key in ("rule", "title", "explanation", "fix", "evidence"):
            text(found, key, "")
        texts(found, "links")
    return found
