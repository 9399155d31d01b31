"""`cudamatrix bisect`: since when does a cell do what it does now?

One cell selection (a case, a variant, an arch, the other axes fixed as in any run) is run
at values of one ordered axis: the matrix's toolkits in release order, a library's
releases from the package index (or the matrix's list), or the commits of the project
under test. The search is a binary search on *what happened* (the stage reached or failed
at, and the decisive message with its paths and version numbers left out), not on the
verdict: a change from "fails to compile: cuda_fp4.h not found" to "builds" is found even
where both were expected. Where the two ends of a stretch differ the stretch is halved,
each half whose ends differ searched again, so several changes on one axis are all found.
A value that cannot be built (no wheel, no nvcc, a cell the matrix rules out) is skipped
and said, as ``git bisect skip`` does; a change next to skipped values is given as the
stretch it lies in.

With ``--slower RATIO`` the question is the kernel's time instead: a timed cell
(``[variant.time]``) is run at the first value for its reference time, and each value is
told apart by whether its median is more than RATIO times that (a cell that fails there,
or runs untimed, is a change of its own): where a toolkit upgrade first made a kernel
slower, beyond a ratio the user names (say 1.03 for 3%, above the timing's own noise).

Every cell it runs is an ordinary cell, through the compile cache, and the whole is an
ordinary report with the answer in its header.
"""

from __future__ import annotations

import math
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.version import InvalidVersion, Version

from ..common.up_to_date import InputLedger
from ..common.versions import TOOLKIT_OWN
from ..common.words import shortened
from ..config.corpus import load_corpus
from ..config.options import RunOptions
from ..config.plan import BUNDLED, Cell
from ..config.planning import make_plan, run_matrix
from ..config.project import project_root
from ..config.repro_line import repro_line
from ..config.run_flags import repro_arguments, words_for
from ..config.sources import SourceSpec, fetch, index_versions
from ..errors import EnvironmentUnavailable, Failure, UserError
from ..orchestrator.progress import Progress
from ..orchestrator.runner import run_plan
from ..record.results import (
    BisectAnswer,
    BisectChange,
    BisectSide,
    BisectTime,
    CellResult,
    RunInfo,
)
from ..reports.answers import without_paths
from ..reports.glance import happened

Key = tuple[str, str]


def what_happened(result: CellResult) -> Key:
    """The stage a cell reached or failed at, and its decisive message without the paths
    and version numbers that differ from value to value."""
    what = happened(result)
    if not what.startswith("fails"):
        return what, ""
    message = without_paths(" ".join((result.message or "").split()))
    return what, re.sub(r"\b\d+(?:\.\d+)+\b", "#", message)


def search(count: int, probe: Callable[[int], Key | None]) -> list[tuple[int, int]]:
    """The changes among values 0..count-1 as (last index before, first index after) of
    the nearest values that could be run; `probe` says what happened at a value, None
    where it cannot be run. Each value is probed at most once."""
    known: dict[int, Key | None] = {}

    def key(index: int) -> Key | None:
        if index not in known:
            known[index] = probe(index)
        return known[index]

    low = next((i for i in range(count) if key(i) is not None), None)
    high = next((i for i in reversed(range(count)) if key(i) is not None), None)
    if low is None or high is None or low == high:
        return []
    changes: list[tuple[int, int]] = []

    def halve(lo: int, hi: int) -> None:
        if key(lo) == key(hi):
            return
        middle = (lo + hi) // 2
        for index in sorted(range(lo + 1, hi), key=lambda i: (abs(i - middle), i)):
            if key(index) is not None:
                halve(lo, index)
                halve(index, hi)
                return
        changes.append((lo, hi))

    halve(low, high)
    return sorted(changes)


@dataclass
class Axis:
    """An ordered axis: its name, its values (labels as printed), and how a run at a value
    differs from the base run."""

    name: str
    values: list[str]
    options_for: Callable[[RunOptions, int], RunOptions]
    repro: Callable[[Cell, int], str]


def _position(values: list[str], given: str, what: str) -> int:
    """Where `given` is among `values`: by name, else as the same version (PEP 440's
    3.4.1 is the index's 3.4.1.0)."""
    if given in values:
        return values.index(given)
    try:
        wanted = Version(given)
        return next(i for i, v in enumerate(values) if _version_key(v) == wanted)
    except (InvalidVersion, StopIteration):
        raise UserError(f"--from/--to {given}: no such {what} (known: "
                        f"{', '.join(values)})") from None


def _between(values: list[str], start: str | None, end: str | None, what: str) -> list[str]:
    first = _position(values, start, what) if start else 0
    last = _position(values, end, what) if end else len(values) - 1
    chosen = values[first:last + 1]
    if len(chosen) < 2:
        raise UserError(f"bisect over {what}: {len(chosen)} value(s) between "
                        f"{start or values[0]} and {end or values[-1]}; it needs two or more")
    return chosen


def _version_key(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        return Version("0")


def _run_command(cell: Cell, base: RunOptions, extra: Sequence[str] = ()) -> str:
    """The `cudamatrix run` that runs this one cell again, from the project's root: the
    run's own corpus and options (run_flags.repro_arguments), the provider where one was
    named, with the axis value it needs (a toolkit or a library release outside the tier),
    made one line as every repro is (config/repro_line: its own --out, a compile afresh,
    the cell by its id)."""
    words = repro_arguments(base, project_root(Path.cwd()))
    if base.provider != "auto":
        words += words_for("provider", base.provider)
    if cell.toolkit != BUNDLED:
        words += words_for("toolkits", (cell.toolkit,))
    return repro_line([*words, *extra], cell.id.split("@")[0])


def toolkit_axis(base: RunOptions, start: str | None, end: str | None) -> Axis:
    if base.toolkits:
        raise UserError("bisect --over toolkit: leave --toolkit out, the axis is the toolkits")
    matrix = run_matrix(base)
    values = _between(sorted(matrix.toolkits, key=_version_key), start, end, "toolkit")
    return Axis("toolkit", values,
                lambda options, i: replace(options, toolkits=(values[i],)),
                lambda cell, i: _run_command(cell, base))


def library_axis(base: RunOptions, name: str, start: str | None, end: str | None,
                 from_index: bool) -> Axis:
    matrix = run_matrix(base)
    library = matrix.libraries.get(name)
    if library is None:
        raise UserError(f"--over library:{name}: unknown library (known: "
                        f"{', '.join(sorted(matrix.libraries))})")
    listed = [v for v in library.versions if v != TOOLKIT_OWN]  # releases, in order
    if from_index:
        toolkit = base.toolkits[0] if len(base.toolkits) == 1 else None
        major = int(toolkit.split(".")[0]) if toolkit and toolkit[0].isdigit() else 12
        package = library.package_for(major)
        try:
            found = index_versions(package)
        except EnvironmentUnavailable as exc:
            raise UserError(f"--over library:{name}: {exc}") from None
        # The matrix's spelling of a release the index spells otherwise (3.4.1, 3.4.1.0).
        spelled = {_version_key(v): v for v in listed}
        for release in found:
            version = _version_key(release)
            if str(version) != "0" and not version.is_prerelease:
                spelled.setdefault(version, release)
        listed = [spelled[v] for v in sorted(spelled)]
    values = _between(sorted(listed, key=_version_key), start, end, f"{name} version")

    def options_for(options: RunOptions, index: int) -> RunOptions:
        return replace(options, library_versions={**options.library_versions,
                                                  name: (values[index],)})

    return Axis(f"library:{name}", values, options_for,
                lambda cell, i: _run_command(cell, base, words_for(
                    "library_versions", {name: (values[i],)})))


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True,
                          check=False, timeout=120)
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise UserError(f"{folder}: git {' '.join(args)}: {said}")
    return done.stdout.strip()


def _git_project(base: RunOptions, variant: str | None) -> str | None:
    """The git URL the selected case's build variants take their project from, where it is
    a `git:` source (their commits are the axis then, not the case folder's)."""
    cases = {c.id: c for c in load_corpus(base.corpus)}
    urls = {v.build.project[4:].rpartition("@")[0]
            for name in base.cases if name in cases for v in cases[name].variants
            if (variant is None or v.name == variant) and v.build is not None
            and v.build.project is not None and v.build.project.startswith("git:")}
    if len(urls) > 1:
        raise UserError(f"bisect --over project: the selection builds {len(urls)} git "
                        "projects; narrow it with --variant")
    return urls.pop() if urls else None


def project_axis(base: RunOptions, start: str | None, end: str | None,
                 variant: str | None = None) -> Axis:
    """The commits from `start` to `end` (first parents) of the project under test: the
    repository a build case's `git:` source names, else the one the case folders are in,
    whose kernels and `path:` projects then come from each commit."""
    if not start or not end:
        raise UserError("bisect --over project: give --from REV and --to REV")
    url = _git_project(base, variant)
    if url is not None:  # a clone of it, at the last revision, to list the commits from
        try:
            top = fetch(SourceSpec("git", f"{url}@{end}"), Path.cwd(), base.cache).path
        except EnvironmentUnavailable as exc:
            raise UserError(str(exc)) from None
    else:
        corpus = [p for p in base.corpus if p.is_dir()]
        tops = {_git(p, "rev-parse", "--show-toplevel") for p in corpus
                if subprocess.run(["git", "-C", str(p), "rev-parse"], capture_output=True,
                                  check=False).returncode == 0}
        if len(tops) != 1:
            raise UserError("bisect --over project: the case folders must be in one git "
                            f"repository, or the case's build a git: project (found "
                            f"{len(tops)} repositories: {sorted(tops) or 'none'})")
        top = Path(tops.pop())
    first = _git(top, "rev-parse", "--verify", f"{start}^{{commit}}")
    last = _git(top, "rev-parse", "--verify", f"{end}^{{commit}}")
    listed = _git(top, "rev-list", "--reverse", "--first-parent", last, f"^{first}")
    commits = [first, *listed.split()]
    if len(commits) < 2 or commits[-1] != last:
        raise UserError(f"bisect --over project: {end} does not descend from {start}")
    labels = [f"{c[:12]} {_git(top, 'log', '-1', '--format=%s', c)[:60]}" for c in commits]

    def options_for(options: RunOptions, index: int) -> RunOptions:
        if url is not None:
            return replace(options, project_override=f"git:{url}@{commits[index]}")
        spec = SourceSpec("git", f"file://{top}@{commits[index]}")
        try:
            checkout = fetch(spec, top, options.cache).path
        except EnvironmentUnavailable as exc:
            raise UserError(str(exc)) from None
        moved = tuple(checkout / p.resolve().relative_to(top)
                      if p.resolve().is_relative_to(top) else p for p in options.corpus)
        return replace(options, corpus=moved)

    def repro(cell: Cell, index: int) -> str:
        if url is not None:
            return (f"set the case's project = \"git:{url}@{commits[index][:12]}\", then "
                    + _run_command(cell, base))
        return f"git checkout {commits[index][:12]} && {_run_command(cell, base)}"

    return Axis("project", labels, options_for, repro)


@dataclass
class Probe:
    index: int
    value: str
    cell: Cell | None = None
    result: CellResult | None = None
    info: RunInfo | None = None
    skipped: str = ""

    @property
    def key(self) -> Key | None:
        return None if self.skipped or self.result is None else what_happened(self.result)


@dataclass
class Bisection:
    axis: Axis
    base: RunOptions
    variant: str | None
    progress: Progress
    probes: dict[int, Probe] = field(default_factory=dict)
    # --slower: the ratio, and the first value's probe, whose median is the reference.
    slower: float | None = None
    reference: Probe | None = None

    def key_of(self, probe: Probe) -> Key | None:
        """What tells two values apart: what happened, and with --slower whether the
        kernel's median is over RATIO times the first value's."""
        key = probe.key
        if key is None or self.slower is None or probe.result is None:
            return key
        timing = probe.result.timing
        if self.reference is None:
            if timing is None:
                raise UserError(
                    f"bisect --slower: {probe.result.cell.id} has no kernel time at "
                    f"{probe.value} ({happened(probe.result)}); --slower needs a cell whose "
                    "variant has a [variant.time] table and whose run passes at the first "
                    "value")
            self.reference = probe
        if timing is None:
            return key
        return (key[0], "slower" if self.ratio(probe) > self.slower else "as fast")

    def ratio(self, probe: Probe) -> float:
        """The probe's median over the reference's."""
        assert self.reference is not None and self.reference.result is not None
        assert probe.result is not None
        first = self.reference.result.timing or {}
        now = probe.result.timing or {}
        return float(now["median_us"]) / float(first["median_us"])

    def cell_at(self, options: RunOptions) -> Cell | Failure:
        """The one cell the selection names at this value, or why there is none."""
        try:
            cells = make_plan(replace(options, cell_ids=())).cells
        except UserError as exc:
            if str(exc).startswith("the selection is empty"):
                return Failure("no cell: the matrix rules it out at this value")
            if self.axis.name == "project" and str(exc).startswith(("unknown case", "/")):
                # A commit where the case is not there yet, is gone, or does not read: that
                # commit is skipped and said, the bisection goes on.
                return Failure(f"no cell at this commit: {exc}")
            raise  # an unknown case, arch or file is the user's at every value
        if self.variant:
            cells = [c for c in cells if c.variant == self.variant]
        if len(cells) > 1:
            raise UserError(f"bisect: the selection matches {len(cells)} cells, not one: "
                            f"{', '.join(c.id for c in cells[:8])}; narrow it with --case, "
                            "--variant, --arch, --toolkit or --host-compiler")
        return cells[0] if cells else Failure("no cell: the selection is empty at this value")

    def probe(self, index: int) -> Key | None:
        value = self.axis.values[index]
        probe = Probe(index, value)
        self.probes[index] = probe
        options = self.axis.options_for(self.base, index)
        found = self.cell_at(options)
        if isinstance(found, Failure):
            probe.skipped = found.reason
        else:
            probe.cell = found
            out = self.base.out / "bisect" / f"{index:03d}"
            # A bisect records no run to answer from later: what each probe read is kept
            # for nobody.
            info, results, _ = run_plan(replace(options, cell_ids=(found.id,), out=out),
                                    self.progress, ledger=InputLedger())
            probe.info = info
            probe.result = results[0] if results else None
            if info.environment_errors:
                probe.skipped = "; ".join(info.environment_errors.values())
            elif probe.result is None or probe.result.outcome == "skip":
                # What made it a skip (the toolkit lacks a header, no nvcc), not the verdict's
                # generic "this environment cannot run the cell".
                probe.skipped = (probe.result.message or probe.result.reason) \
                    if probe.result else "no result"
        said = f"skipped: {probe.skipped}" if probe.skipped else \
            f"{probe.key[0]}" + (f": {shortened(probe.result.message, 160)}"  # type: ignore[index,union-attr]
                                 if probe.key and probe.key[1] else "")
        key = self.key_of(probe)
        timing = probe.result.timing if probe.result is not None else None
        if timing and self.reference is not None and not probe.skipped:
            said += (f", {float(timing['median_us']):.2f} us ({self.ratio(probe):.3f}x "
                     f"{self.reference.value}'s)")
            if timing.get("bandwidth_gbs"):  # the same ratio, as bandwidth: the same bytes
                said += f", {float(timing['bandwidth_gbs']):,.0f} GB/s"
        self.progress.note(f"bisect {self.axis.name} {value}: {said}")
        return key

    def run(self) -> list[BisectChange]:
        self.progress.note(f"bisect over {self.axis.name}: {len(self.axis.values)} values, "
                           f"{self.axis.values[0]} .. {self.axis.values[-1]}")
        changes = search(len(self.axis.values), self.probe)
        ran = [p for p in self.probes.values() if not p.skipped]
        if not any(p.cell for p in self.probes.values()):
            raise UserError(f"bisect over {self.axis.name}: the selection matches no cell "
                            f"at any value from {self.axis.values[0]} to "
                            f"{self.axis.values[-1]}")
        if len(ran) < 2:
            raise UserError(f"bisect over {self.axis.name}: fewer than two values could be "
                            "run (" + "; ".join(f"{p.value}: {p.skipped}"
                                                for p in self.probes.values()
                                                if p.skipped) + ")")
        return [self.change(lo, hi) for lo, hi in changes]

    def change(self, lo: int, hi: int) -> BisectChange:
        before, after = self.probes[lo], self.probes[hi]
        untested = [self.axis.values[i] for i in range(lo + 1, hi)]

        def side(probe: Probe) -> BisectSide:
            result = probe.result
            assert result is not None and probe.cell is not None
            said: BisectSide = {
                "value": probe.value, "cell": result.cell.id, "happened": happened(result),
                "outcome": result.outcome, "message": result.message,
                "repro": self.axis.repro(probe.cell, probe.index)}
            timing = result.timing
            if self.slower is not None and timing is not None:
                time = BisectTime(median_us=float(timing["median_us"]),
                                  noise=timing.get("noise"), ratio=round(self.ratio(probe), 4))
                if timing.get("bandwidth_gbs"):
                    time["bandwidth_gbs"] = float(timing["bandwidth_gbs"])
                said["time"] = time
            return said

        return {"at": after.value, "before": side(before), "after": side(after),
                "skipped_between": untested}


def bisect(base: RunOptions, over: str, start: str | None, end: str | None,
           variant: str | None, progress: Progress, from_index: bool = True,
           slower: float | None = None) -> tuple[RunInfo, list[CellResult]]:
    """Run the bisection; the run record (its `bisect` the answer) and every cell run."""
    if slower is not None and not (math.isfinite(slower) and 1.0 < slower <= 1000.0):
        raise UserError(f"--slower {slower}: give a ratio above 1 (1.05 is 5% slower)")
    begun, started = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()), time.monotonic()
    matrix = run_matrix(base)
    unknown = [t for t in base.toolkits if t not in matrix.toolkits]
    if unknown:  # before any axis reads it as a version (`1a.0` was a ValueError traceback)
        raise UserError(f"--toolkit {unknown[0]}: unknown toolkit (available in "
                        f"{matrix.path}: {', '.join(matrix.toolkits)})")
    if over == "toolkit":
        axis = toolkit_axis(base, start, end)
    elif over.startswith("library:") and over != "library:":
        axis = library_axis(base, over.split(":", 1)[1], start, end, from_index)
    elif over == "project":
        axis = project_axis(base, start, end, variant)
    else:
        raise UserError(f"--over {over}: give toolkit, library:NAME or project")
    if not base.cases:
        raise UserError("bisect: name the case (--case ID)")
    bisection = Bisection(axis, base, variant, progress, slower=slower)
    changes = bisection.run()
    probes = [bisection.probes[i] for i in sorted(bisection.probes)]
    results = [p.result for p in probes if p.result is not None]
    last = next(p.info for p in reversed(probes) if p.info is not None)
    answer: BisectAnswer = {"over": axis.name, "values": axis.values, "changes": changes,
              "probed": [p.value for p in probes],
              "skipped": {p.value: p.skipped for p in probes if p.skipped}}
    reference = bisection.reference
    if slower is not None and reference is not None and reference.result is not None:
        answer["slower"] = {"ratio": slower, "value": reference.value,
                            "median_us": (reference.result.timing or {})["median_us"]}
    info = replace(last, started=begun, finished=time.strftime("%Y-%m-%dT%H:%M:%S+00:00",
                                                                time.gmtime()),
                   wall_seconds=round(time.monotonic() - started, 1), bisect=answer)
    return info, results
