"""The tables of a variant in case.toml, read and checked: `when`/`only` selections,
expectations, artifact checks, the kernel's name, the resource budget. Every error names
the file and the entry; corpus.py reads the case and its variants with these."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..common.keys import check_keys
from ..common.versions import EXPECT_KEYS, WHEN_KEYS, axis_matches, check_specifier
from ..errors import UserError
from ..stages.cell.result import Stage
from ..stages.cell.specs import ArtifactCheck, ResourceBudget
from ..stages.frontends import registered
from ..stages.inspect.artifact_text import ARTIFACT_KINDS, never_tells
from ..stages.inspect.budgets import BUDGET_FIELDS, BUDGET_KEYS
from .declarations import (
    ARTIFACT,
    BOOLEAN,
    EXPECT,
    INTEGER,
    NUMBER,
    STRING,
    ExpectedOutcome,
    Key,
)

STAGES = EXPECT.key("stage").allowed
EXPECT_FIELDS = EXPECT.names()
# What a case may expect of a cell: that it works, that it fails (at a stage, saying
# something), or that it hangs until its limit (a known hang is a finding, not a broken
# tool); `match` then reads the stopped process's stack.
EXPECTED_OUTCOMES = EXPECT.key("outcome").allowed
ARTIFACT_KEYS = ARTIFACT.names()
Spec = str | tuple[str, ...]


def selects(when: Mapping[str, Spec], axes: Mapping[str, str | None]) -> bool:
    return all(axis_matches(key, spec, axes.get(key)) for key, spec in when.items())


@dataclass(frozen=True)
class Expectation:
    """What a cell selected by `when` should do; the first matching expectation decides."""

    outcome: ExpectedOutcome
    when: Mapping[str, Spec] = field(default_factory=dict)
    stage: Stage | None = None
    match: str | None = None
    note: str = ""
    # A compiler warning the cell must print (regex over the compile stage's warnings).
    warning: str | None = None

    def applies(self, axes: Mapping[str, str | None]) -> bool:
        return selects(self.when, axes)

    def describe(self) -> str:
        text: str = self.outcome
        if self.stage:
            text += f" at {self.stage}"
        if self.match:
            text += f" matching /{self.match}/"
        if self.warning:
            text += f" with a warning matching /{self.warning}/"
        return text


class TableReader:
    """Reads a variant's tables out of one case.toml."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, message: str) -> UserError:
        return UserError(f"{self.path}: {where}: {message}")

    def tables(self, where: str, value: Any) -> list[Any]:
        """An array of tables ([[variant.expect]]): its entries are checked one by one."""
        if not isinstance(value, list):
            raise self.fail(where, f"expected [[...]] tables, got {value!r:.60}")
        return value

    def declared(self, where: str, key: Key, value: Any) -> Any:
        """A scalar key's value checked against its declaration alone (its kind, allowed
        words, bounds), or its declared default where the case leaves it out: a key whose
        declaration says all there is to check needs no reading code of its own."""
        if value is None:
            return key.default
        at = f"{where}.{key.name}"
        if key.kind == BOOLEAN and not isinstance(value, bool):
            raise self.fail(at, f"expected true or false, got {value!r:.60}")
        if key.kind == STRING and not isinstance(value, str):
            raise self.fail(at, f"expected a string, got {value!r:.60}")
        if key.kind == INTEGER and (isinstance(value, bool) or not isinstance(value, int)):
            raise self.fail(at, f"expected a whole number, got {value!r:.60}")
        if key.kind == NUMBER and (isinstance(value, bool) or not isinstance(value, int | float)
                                   or not math.isfinite(value)):
            raise self.fail(at, f"expected a number, got {value!r:.60}")
        if key.allowed and value not in key.allowed:
            raise self.fail(at, f"expected one of {', '.join(key.allowed)}, got {value!r:.60}")
        low = -math.inf if key.minimum is None else key.minimum
        high = math.inf if key.maximum is None else key.maximum
        if key.kind in (INTEGER, NUMBER) and not low <= value <= high:
            raise self.fail(at, f"expected {low:g} to {high:g}, got {value!r}")
        return value

    def flag(self, where: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self.fail(where, f"expected true or false, got {value!r:.60}")
        return value

    def strings(self, where: str, value: Any) -> tuple[str, ...]:
        if isinstance(value, str):
            return (value,)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise self.fail(where, f"expected a string or a list of strings, got {value!r}")

    def links(self, where: str, value: Any) -> tuple[str, ...]:
        """Web addresses only: the reports make them links, and a ``javascript:`` link
        from a pull request's case would run in the reader's browser."""
        links = self.strings(where, value)
        for link in links:
            if not re.match(r"https?://[^\s<>\"']+$", link, re.IGNORECASE):
                raise self.fail(where, f"{link!r} is not an http(s) address")
        return links

    def when(self, where: str, table: Any, keys: tuple[str, ...] = WHEN_KEYS) -> dict[str, Spec]:
        if not isinstance(table, dict):
            raise self.fail(where, f"expected a table like {{ arch = \"<sm_80\" }}, got {table!r}")
        result: dict[str, Spec] = {}
        check_keys(where, table, keys, self.fail)
        for key, spec in table.items():
            specs = self.strings(f"{where}.{key}", spec)
            if not all(s.strip() for s in specs):
                raise self.fail(f"{where}.{key}", "an empty value selects nothing")
            try:
                check_specifier(key, specs)
            except ValueError as exc:
                raise self.fail(f"{where}.{key}", str(exc)) from None
            result[key] = specs[0] if len(specs) == 1 else specs
        return result

    def expectation(self, where: str, raw: Any, libraries: tuple[str, ...] = ()) -> Expectation:
        if not isinstance(raw, dict):
            raise self.fail(where, "expected a table")
        check_keys(where, raw, EXPECT_FIELDS, self.fail)
        outcome = raw.get("outcome")
        if outcome not in EXPECTED_OUTCOMES:
            raise self.fail(where, f"outcome must be one of {', '.join(EXPECTED_OUTCOMES)}, "
                                   f"got {outcome!r}")
        stage = raw.get("stage")
        if stage is not None and stage not in STAGES:
            raise self.fail(where, f"stage must be one of {', '.join(STAGES)}, got {stage!r}")
        match, warning = raw.get("match"), raw.get("warning")
        for key, pattern in (("match", match), ("warning", warning)):
            if pattern is None:
                continue
            if not isinstance(pattern, str):
                raise self.fail(f"{where}.{key}", f"expected a regular expression, got {pattern!r}")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise self.fail(f"{where}.{key}", f"bad regular expression: {exc}") from None
        return Expectation(
            outcome=outcome,
            when=self.when(f"{where}.when", raw.get("when", {}), (*EXPECT_KEYS, *libraries)),
            stage=stage,
            match=match,
            note=str(raw.get("note", "")),
            warning=warning,
        )

    def artifact(self, where: str, raw: Any) -> ArtifactCheck:
        if not isinstance(raw, dict):
            raise self.fail(where, "expected a table")
        check_keys(where, raw, ARTIFACT_KEYS, self.fail)
        kind = raw.get("in", ARTIFACT.key("in").default)
        if not isinstance(kind, str) or kind not in ARTIFACT_KINDS:
            raise self.fail(where, f"'in' must be one of {', '.join(ARTIFACT_KINDS)}, got "
                            f"{kind!r} (ptx: the PTX; sass or cubin: the machine code; "
                            "strings: the strings the cubin embeds)")
        if ("contains" in raw) == ("lacks" in raw):
            raise self.fail(where, "give exactly one of 'contains' or 'lacks'")
        pattern = raw.get("contains", raw.get("lacks"))
        if not isinstance(pattern, str):
            raise self.fail(where, f"the pattern must be a string, got {pattern!r}")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise self.fail(where, f"bad regular expression: {exc}") from None
        pointless = never_tells(kind, pattern)
        if pointless:
            raise self.fail(where, f"a check that cannot tell anything: {pointless}")
        return ArtifactCheck(kind, pattern, "contains" in raw, str(raw.get("why", "")))

    def kernel(self, where: str, raw: Any) -> str | None:
        """The kernel as C++ names it (``gemm``, ``ns::gemm<128, float>``, a full signature)
        or as the module holds it (mangled, ``extern "C"``)."""
        if raw is not None and (not isinstance(raw, str) or not raw.strip()):
            raise self.fail(f"{where}.kernel", f"expected a kernel's name, got {raw!r}")
        return raw.strip() if isinstance(raw, str) else None

    def resources(self, where: str, raw: Any, frontend: str) -> ResourceBudget | None:
        """[variant.resources]: non-negative whole limits by name, and the kernel they are
        for (every kernel of the module without one)."""
        if raw is None:
            return None
        if not isinstance(raw, dict) or not raw:
            raise self.fail(where, "expected a table such as { max_registers = 64, "
                            "max_spill_stores = 0 }")
        check_keys(where, raw, BUDGET_KEYS, self.fail)
        if not registered()[frontend].reports_resources:
            raise self.fail(where, f"the {frontend} frontend reports no resource usage to "
                            "judge (ptxas's figures come from the nvrtc, nvcc, cutlass and "
                            "clang frontends, cuobjdump's from a build's modules)")
        spills = [k for k in ("max_spill_stores", "max_spill_loads") if k in raw]
        if registered()[frontend].builds_project and spills:
            raise self.fail(f"{where}.{spills[0]}", "a build's modules record no spill "
                            "figures (cuobjdump -res-usage reads registers, stack and shared "
                            "memory from them; only ptxas prints spills): use max_stack, or a "
                            "kernel case compiled by nvcc")
        for key in BUDGET_FIELDS:
            value = raw.get(key)
            if key in raw and (isinstance(value, bool) or not isinstance(value, int)
                               or value < 0):
                raise self.fail(f"{where}.{key}", f"expected a whole number >= 0, got {value!r}")
        if "kernel" in raw and (not isinstance(raw["kernel"], str) or not raw["kernel"].strip()):
            raise self.fail(f"{where}.kernel", f"expected a kernel's name, got {raw['kernel']!r}")
        if not any(key in raw for key in BUDGET_FIELDS):
            raise self.fail(where, f"give at least one limit ({', '.join(BUDGET_FIELDS)})")
        return ResourceBudget(**{key: raw.get(key) for key in BUDGET_KEYS})

