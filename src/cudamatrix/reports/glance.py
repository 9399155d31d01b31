"""What the answer at a glance is made of: what a cell really did (runs on a GPU, loads,
builds, or where it stopped), the rate per axis value, the value every failure shares
(the likely culprit), and a command that repeats a failing cell. answers.py says it per
case and per cell."""

from __future__ import annotations

import re
import shlex
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..config.plan import BUNDLED, Cell
from ..config.repro_line import repro_line
from ..config.run_flags import words_for
from ..providers.toolkits import toolkit_providers
from ..record.outcomes import UNEXPECTED_OUTCOMES
from ..record.results import CellResult, RunInfo

UNEXPECTED = UNEXPECTED_OUTCOMES


def happened(result: CellResult) -> str:
    """What the build really did, whatever was expected: runs, loads, builds, or the stage
    it failed at; skipped when it could not be decided here."""
    if result.outcome == "skip":
        return "skipped"
    last_ok = ""
    for stage in result.stages:
        if stage.status == "ok":
            last_ok = stage.stage
        elif stage.status not in ("skipped",):
            return f"fails at {stage.stage}"
    return {"run": "runs", "load": "loads"}.get(last_ok, "builds")


# Why a pass was only compiled, where the run had no GPU (the run's record says which
# reason: no driver, none seen, --no-gpu).
NO_GPU = "no GPU"
# How many reasons a summary names; the rest are counted.
NAMED_REASONS = 3


def compiled_only(result: CellResult) -> str:
    """Why a passing cell was only compiled and its PTX and SASS checked, its load and run
    never done: "no GPU" where its run had none, else the skipped stage's own words (a
    cubin this GPU cannot run); "" where its GPU stages ran or it has none to run. A pass
    on a laptop means "compiled", and `pass=8` said nothing of it."""
    if result.outcome != "pass":
        return ""
    skipped = next((s for s in result.stages
                    if s.stage in ("load", "run") and s.status == "skipped"), None)
    if skipped is None:
        return ""
    if not (result.device or {}).get("name"):
        return NO_GPU
    return " ".join(skipped.message.split()) or "its load was not run here"


@dataclass(frozen=True)
class CompiledOnly:
    """The passes of a run that were only compiled, by why: what the summary line, the
    Markdown and the page say beside `pass`."""

    passes: int
    reasons: tuple[tuple[str, int], ...]  # (why, how many), most first

    @classmethod
    def of(cls, results: Sequence[CellResult]) -> CompiledOnly:
        said = Counter(why for why in map(compiled_only, results) if why)
        return cls(sum(r.outcome == "pass" for r in results),
                   tuple(sorted(said.items(), key=lambda item: (-item[1], item[0]))))

    @property
    def count(self) -> int:
        return sum(n for _, n in self.reasons)

    def _why(self) -> str:
        if len(self.reasons) == 1:
            return self.reasons[0][0]
        named = ", ".join(f"{n} {why}" for why, n in self.reasons[:NAMED_REASONS])
        more = len(self.reasons) - NAMED_REASONS
        return named + (f" and {more} other reasons" if more > 0 else "")

    def said(self) -> str:
        """Beside the pass count: ``8 compiled only: no GPU``; "" where every pass ran."""
        return f"{self.count} compiled only: {self._why()}" if self.count else ""

    def note(self, run_reason: str = "") -> str:
        """The reports' sentence of it, the run's own reason for having no GPU where known;
        "" where every pass ran."""
        if not self.count:
            return ""
        why = self._why()
        if run_reason and any(reason == NO_GPU for reason, _ in self.reasons):
            why = why.replace(NO_GPU, f"{NO_GPU}: {run_reason}", 1)
        were = "was" if self.count == 1 else "were"
        return (f"Compiled only: {self.count} of the {self.passes} passing cells {were} "
                f"compiled and their "
                f"PTX and SASS checked, never loaded or run ({why}): such a pass says the "
                "code builds, not that it runs.")


def host_compiler(result: CellResult) -> str:
    """The host compiler nvcc was given, by family and major (``g++ 11``, ``clang++ 19``),
    however it was named (``g++-12``, ``/usr/bin/g++``); empty for a cell that ran none."""
    said = result.versions.get("host_compiler", "").split()
    if not said:
        return ""
    family = re.sub(r"-\d+$", "", Path(said[0]).name)
    major = said[1].split(".")[0] if len(said) > 1 and said[1][:1].isdigit() else ""
    return f"{family} {major}".strip()


def nvcc_default(results: Sequence[CellResult]) -> str:
    """The name of the host compiler nvcc took by itself (no -ccbin: a cell records none),
    as the run's own record names it: the plain `g++` on PATH, which a toolkit's newest
    accepted GCC records where it is the one (``g++ 12.2.0``); "nvcc's default" where the
    record names no single one. Left empty, those cells made a row of their own beside
    "g++ 12", the same compiler."""
    plain = {host_compiler(r) for r in results
             if r.versions.get("host_compiler", "").split()[:1] == ["g++"]}
    return plain.pop() if len(plain) == 1 else "nvcc's default"


def host_compilers(results: Sequence[CellResult]) -> Callable[[CellResult], str]:
    """Each cell's host compiler (host_compiler), a cell that ran nvcc with its default
    named as the run names it (nvcc_default); empty for a cell that ran none."""
    default = nvcc_default(results)

    def named(result: CellResult) -> str:
        return host_compiler(result) or (default if "nvcc" in result.versions else "")
    return named


def driver(result: CellResult) -> str:
    """The driver the cell ran under; empty where it ran on none."""
    return str((result.device or {}).get("driver") or "")


# Axes beyond toolkit and arch, shown in the glance's rows where a run has several values.
EXTRA_AXES = ("host compiler", "driver")


def extra_axes(results: Sequence[CellResult]) -> dict[str, Callable[[CellResult], str]]:
    """Each extra axis's value per cell, as this run's record names it."""
    return {"host compiler": host_compilers(results), "driver": driver}


def varying_axes(results: Sequence[CellResult]) -> list[str]:
    """The extra axes that take more than one value in this run (a merged report of
    runners with two drivers, a tier with several host compilers)."""
    return [name for name, value in extra_axes(results).items()
            if len({value(r) for r in results}) > 1]


def axis_rates(results: Sequence[CellResult]) -> list[tuple[str, str, int, int]]:
    """(axis, value, as expected, decided) per toolkit and arch value; skips not counted."""
    rates = []
    extra = extra_axes(results)
    for axis in ("toolkit", "arch", *varying_axes(results)):
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for result in results:
            if result.outcome == "skip":
                continue
            value = extra[axis](result) if axis in extra else getattr(result.cell, axis)
            counts[value][1] += 1
            counts[value][0] += result.outcome not in UNEXPECTED
        for value, (good, total) in sorted(counts.items()):
            rates.append((axis, value, good, total))
    return rates


# The axis a case compares by its variants (each names its own host compiler): its culprit
# is weighed over the case's cells; every other over each variant's own.
CASE_WIDE_AXES = frozenset({"host compiler"})


def likely_culprit(results: Sequence[CellResult]) -> str | None:
    """The axis value every unexpected cell shares, where it is a value that varied among
    the cells planned beside them: in every variant with an unexpected cell (the whole
    case for the host compiler) some cell took another. A variant planned on sm_80 alone
    that fails says nothing against sm_80: "all 4 unexpected cells share arch sm_80" was
    said of one whose other archs were other cases'."""
    bad = [r for r in results if r.outcome in UNEXPECTED]
    if len(bad) < 2:
        return None
    extra = extra_axes(results)

    def value(result: CellResult, axis: str) -> str | None:
        return extra[axis](result) or None if axis in extra else getattr(result.cell, axis)

    for axis in ("toolkit", "arch", "library_version", *EXTRA_AXES):
        values = {value(r, axis) for r in bad}
        if len(values) != 1 or None in values:
            continue
        groups: dict[tuple[str, ...], set[str | None]] = defaultdict(set)
        for r in results:
            group = (r.cell.case,) if axis in CASE_WIDE_AXES else (r.cell.case, r.cell.variant)
            groups[group].add(value(r, axis))
        if all(len(groups[(r.cell.case,) if axis in CASE_WIDE_AXES
                          else (r.cell.case, r.cell.variant)]) > 1 for r in bad):
            return f"all {len(bad)} unexpected cells share {axis} {values.pop()}"
    return None


def repro_root(info: RunInfo) -> str:
    """The folder a repro is run from as the reports name it: the project's root by its
    name alone ("" for a record without one). The record keeps it whole, but that is the
    path on the machine that ran (a CI runner's /home/runner/work/p/p): a reader's copy of
    the project is elsewhere."""
    return Path(info.repro_folder).name if info.repro_folder else ""


def repro(cell: Cell, info: RunInfo) -> str:
    """The command that runs this one cell again as the run ran it, from the project's root
    (info.repro_folder, whose name the reports give): the run's corpus, tier and options
    that decide a cell, the provider it settled on, the cell's own toolkit, arch, library
    version and host compiler, made one line by config/repro_line (its own --out, a compile
    afresh, the cell). A run recorded before these were kept gives what it has: the tier."""
    cell_id = cell.id.split("@")[0]
    if not info.repro_args and not info.repro_folder:
        return repro_line(words_for("tier", info.tier), cell_id)
    words = shlex.split(info.repro_args)
    if info.provider in toolkit_providers():  # a plugin's too; not a merge's "unknown"
        words += words_for("provider", info.provider)
    if cell.toolkit != BUNDLED:
        words += words_for("toolkits", (cell.toolkit,))
    words += words_for("archs", (cell.arch,))
    if cell.library and cell.library_version:
        words += words_for("library_versions", {cell.library: (cell.library_version,)})
    if cell.host_compiler:
        words += words_for("host_compilers", (cell.host_compiler,))
    return repro_line(words, cell_id, info.repro_folder)
