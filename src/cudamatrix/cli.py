"""Command line: parses arguments into options and hands them to the runner and reports."""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import signal
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from . import __version__
from .baseline import compare, load_baseline, settle_xpass
from .bisect import bisect
from .ci import RUNNER_BASE, github_matrix
from .corpus import Case, load_corpus
from .defaults import CONFIG, KNOWN_BUGS
from .defaults import DEFAULT_HISTORY_RUNS as DEFAULT_RUNS
from .errors import UserError
from .history import PastRun, gather
from .matrix import load_matrix
from .merge import ExpectedShard, merge_results
from .options import (
    CACHE_ENV,
    DOCKER_FLAVOURS,
    PROVIDER_ENV,
    RUNNER_LABEL_ENV,
    RunOptions,
    default,
    default_cache,
)
from .planning import make_plan, with_library_versions
from .project import find_project, init_project
from .rejudge import rejudge
from .reports import write_reports
from .reports.github import publish
from .reports.markdown import bisect_lines
from .results import CellResult, RunInfo, load_results, summary
from .runner import Progress as PlainProgress
from .runner import execute, exit_status
from .versions import HOST_COMPILER


class RichProgress(PlainProgress):
    """A live bar (cells done/total, ETA) for terminals; CI logs get plain lines instead."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                            MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("eta"),
                            TimeRemainingColumn(), console=console)
        self.task: TaskID | None = None

    def note(self, text: str) -> None:
        self.console.print(text, markup=False)

    def start(self, total: int) -> None:
        self.bar.start()
        self.task = self.bar.add_task("cells", total=total)

    def cell_done(self, result: CellResult) -> None:
        if result.outcome not in ("pass", "xfail", "skip"):
            self.bar.console.print(f"{result.outcome:>5}  {result.cell.id}: "
                                   f"{(result.message or result.reason)[:120]}", markup=False)
        if self.task is not None:
            self.bar.advance(self.task)

    def finish(self) -> None:
        self.bar.stop()


class ProviderChoices:
    """--provider's choices: "auto" and the provider registry's names, read only when a
    value is checked or the help printed (the registry imports every provider, which
    `cudamatrix --version` and a warm run's start should not wait for)."""

    def names(self) -> tuple[str, ...]:
        from .providers.toolkits import TOOLKIT_PROVIDERS

        return ("auto", *TOOLKIT_PROVIDERS)

    def __contains__(self, value: object) -> bool:
        return value in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def _seconds(text: str) -> float:
    """A positive, finite number (seconds, GiB): nan, inf and 0 are refused by name."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text!r}")
    return value


def _host_compiler(text: str) -> str:
    """A host compiler program name (g++-11, clang++-19), refused by name otherwise."""
    if not HOST_COMPILER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a host compiler program "
                                         "(g++, g++-12, clang++-19)")
    return text


def _shard(text: str) -> tuple[int, int]:
    try:
        index, count = (int(p) for p in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected i/n, got {text!r}") from None
    return index, count


def _add_selection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--matrix", type=Path, default=None,
                        help="the matrix file (default: %(default)s)")
    parser.add_argument("--corpus", type=Path, action="append", default=[],
                        help="an extra folder of cases (repeatable), besides cudamatrix.toml's")
    parser.add_argument("--known-bugs", action="store_true",
                        help="also run the tool's corpus of known CUDA bugs")
    parser.add_argument("--tier", help="pr or nightly (default: the matrix's default_tier)")
    parser.add_argument("--toolkit", action="append", default=[],
                        help="run only these toolkits (repeatable), e.g. 12.4")
    parser.add_argument("--arch", action="append", default=[],
                        help="run only these archs (repeatable), e.g. sm_90a")
    parser.add_argument("--host-compiler", action="append", default=[], type=_host_compiler,
                        help="nvcc's host compilers as an axis (repeatable), e.g. g++-11 "
                             "clang++-19: each nvcc cell once per compiler, in place of the "
                             "tier's host_compiler list")
    parser.add_argument("--case", action="append", default=[], help="run only these cases")
    parser.add_argument("--cell", action="append", default=[], metavar="ID",
                        help="run only this cell (an id as `cudamatrix list` prints it)")
    parser.add_argument("--shard", type=_shard, help="run shard i of n (1-based), e.g. 2/4")


def _library_pin(text: str) -> tuple[str, str]:
    name, equals, version = text.partition("==")
    if not equals or not name or not version:
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME==VERSION (cutlass==3.7.0)")
    return name, version


def _add_run_arguments(run: argparse.ArgumentParser) -> None:
    """What a run takes: the selection, where it writes, how it runs its cells."""
    _add_selection(run)
    run.add_argument("--library", action="append", default=[], type=_library_pin,
                     metavar="NAME==VERSION",
                     help="this release of a library in place of the tier's (any release "
                          "on the index, listed in the matrix or not); repeatable")
    run.add_argument("--out", type=Path, default=default("out"),
                     help="report folder (default: %(default)s)")
    run.add_argument("--provider", choices=ProviderChoices(),
                     default=default("provider"),
                     help="where toolkits come from: docker where an engine and the base image "
                          f"are ready, else wheels (auto, the default); ${PROVIDER_ENV}")
    run.add_argument("--containers", type=Path, default=default("containers"),
                     help="the Dockerfiles of the docker provider (default: %(default)s)")
    run.add_argument("--docker-flavour", choices=DOCKER_FLAVOURS,
                     default=default("docker_flavour"),
                     help="toolkit images from PyPI wheels on a local Debian base (no registry "
                          "needed), or from NVIDIA's pinned CUDA images")
    run.add_argument("--cuda-compat", action="store_true",
                     help="with NVIDIA's images, run on the forward-compatibility libraries "
                          "(a newer toolkit on an older driver); label the runner apart")
    run.add_argument("--container-timeout", type=_seconds, default=default("container_timeout"),
                     help="seconds a toolkit container may live (default: %(default)s)")
    run.add_argument("--jobs", "-j", type=int, default=default("jobs"),
                     help="cells run in parallel (default: the number of cores)")
    run.add_argument("--cache", type=Path, default=None, help="where environments are kept "
                     f"(default: ${CACHE_ENV} or ~/.cache/cudamatrix)")
    run.add_argument("--cell-timeout", type=_seconds, default=default("cell_timeout"),
                     help="seconds one cell may take (default: %(default)s)")
    run.add_argument("--jitify-warmup-timeout", type=_seconds,
                     default=default("jitify_warmup_timeout"),
                     help="seconds CuPy's one-time Jitify warm-up may take; done once per "
                          "CuPy version and toolkit for the run's jitify cells, which share "
                          "its time-out (default: %(default)s)")
    run.add_argument("--cell-memory", type=_seconds, default=None, metavar="GIB",
                     help="address space each compiler may take (default: the machine's "
                          "memory shared by --jobs, 4 to 16 GiB)")
    run.add_argument("--run-timeout", type=_seconds, default=None,
                     help="seconds the whole run may take; cells it cannot start are reported "
                          "as timeouts and left for --resume")
    run.add_argument("--resume", action="store_true",
                     help="keep the cells an interrupted run in --out finished")
    run.add_argument("--no-gpu", action="store_true", help="skip the load and run stages")
    run.add_argument("--no-compile-cache", action="store_true",
                     help="compile every cell afresh, neither reading nor filling the cache")
    run.add_argument("--prebuilt", type=Path,
                     help="take compiled artifacts from an earlier run's --out folder (built on "
                          "another machine) and do the load and run stages here")
    run.add_argument("--compile-here", action="append", default=None, metavar="FRONTEND",
                     help="with --prebuilt, frontends still compiled on this machine "
                          f"(repeatable; default: {', '.join(default('compile_here'))})")
    run.add_argument("--runner-label", default=default("runner_label"),
                     help="the driver/runner label this machine was promised "
                          f"(${RUNNER_LABEL_ENV})")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cudamatrix",
        description="Compile and run a corpus of CUDA reproducers across toolkits, drivers "
                    "and GPU architectures, and report what works where.")
    parser.add_argument("--version", action="version", version=f"cudamatrix {__version__}")
    commands = parser.add_subparsers(dest="command")
    init = commands.add_parser("init", help=f"write a starter {CONFIG} and two example cases "
                                            "into the current folder")
    init.add_argument("folder", type=Path, nargs="?", default=Path("."))
    init.add_argument("--ci", choices=("github",),
                      help="also write a workflow that runs the matrix in that CI (GitHub "
                           "Actions: a caller of cudamatrix's reusable workflow)")
    init.add_argument("--workflow", metavar="OWNER/REPO/.github/workflows/cudamatrix.yml@REF",
                      help="the reusable workflow the caller uses (default: this release's)")
    run = commands.add_parser("run", help="run the matrix and write the reports")
    _add_run_arguments(run)
    bisect = commands.add_parser(
        "bisect", help="the toolkit, library release or commit where a cell changed what it "
                       "does (the other axes fixed by the usual selectors)")
    _add_run_arguments(bisect)
    bisect.add_argument("--over", required=True, metavar="toolkit|library:NAME|project",
                        help="the ordered axis: the matrix's toolkits, a library's releases, "
                             "or the commits of the git repository the cases are in")
    bisect.add_argument("--from", dest="start", metavar="VALUE",
                        help="the first value (a toolkit, a version, a revision)")
    bisect.add_argument("--to", dest="end", metavar="VALUE", help="the last value")
    bisect.add_argument("--variant", help="the case's variant, where it has several")
    bisect.add_argument("--versions", choices=("index", "matrix"), default="index",
                        help="library:NAME: its releases from the package index (default) "
                             "or only those the matrix lists")
    validate = commands.add_parser("validate", help="check the matrix and the corpus")
    _add_selection(validate)
    listing = commands.add_parser("list", help="print the cells a run would have")
    _add_selection(listing)
    report = commands.add_parser("report", help="rewrite the reports from a results.json")
    report.add_argument("results", type=Path)
    report.add_argument("--out", type=Path, required=True)
    report.add_argument("--rejudge", action="store_true",
                        help="judge the recorded stages again against the cases as they are "
                             "now (cudamatrix.toml's, --corpus, --known-bugs): after fixing an "
                             "expectation, without running anything again")
    report.add_argument("--corpus", type=Path, action="append", default=[],
                        help="with --rejudge: an extra folder of cases (repeatable)")
    report.add_argument("--known-bugs", action="store_true",
                        help="with --rejudge: the tool's corpus of known CUDA bugs")
    plan = commands.add_parser("plan", help="the GitHub Actions matrix (JSON) for a tier")
    _add_selection(plan)
    plan.add_argument("--driver", action="append", dest="drivers", default=None,
                      help="runner driver labels, repeatable (default: latest)")
    plan.add_argument("--cells-per-job", type=int, default=40)
    plan.add_argument("--runner-labels", default=" ".join(RUNNER_BASE), metavar="LABELS",
                      help="labels every GPU runner has, space separated "
                           f"(default: {' '.join(RUNNER_BASE)})")
    plan.add_argument("--label-prefix", default="", metavar="PREFIX",
                      help="put before the plan's gpu-sm_XX and driver-NAME labels")
    plan.add_argument("--max-jobs", type=int, default=256)
    plan.add_argument("--compat", action="store_true",
                      help="also run older drivers on NVIDIA's forward-compatibility libraries")
    plan.add_argument("--cpu", action="store_true",
                      help="plan for runners without a GPU (compile stages only)")
    plan.add_argument("--github-output", metavar="NAME",
                      help="also append NAME=<json> to $GITHUB_OUTPUT")
    merge = commands.add_parser("merge", help="one report from shards' --out folders")
    merge.add_argument("shards", type=Path, nargs="*")
    merge.add_argument("--out", type=Path, required=True)
    merge.add_argument("--plan", type=Path, metavar="PLAN_JSON",
                       help="the job matrix `cudamatrix plan` printed: every planned cell no "
                            "shard reported becomes an error naming its job")
    merge.add_argument("--matrix", type=Path, default=None,
                       help="the matrix the plan was made from (with --plan)")
    audit = commands.add_parser(
        "audit", help="judge built wheels and libraries for the GPUs and drivers they load on")
    audit.add_argument("inputs", nargs="+", metavar="WHEEL|FOLDER|ELF|NAME==VERSION")
    audit.add_argument("--out", type=Path, default=Path("reports/audit-latest"))
    audit.add_argument("--matrix", type=Path, default=None,
                       help="the matrix whose archs, drivers and PTX ISA table to use")
    audit.add_argument("--gpu", action="append", default=[], metavar="sm_XX",
                       help="GPU archs to predict for (default: the matrix's)")
    audit.add_argument("--driver", action="append", default=[],
                       help="driver labels, versions or branches (default: the matrix's labels)")
    audit.add_argument("--expect-gpu", action="append", default=[], metavar="sm_XX",
                       help="GPUs the artifacts must load on: any other that does not is xfail")
    audit.add_argument("--no-measure", action="store_true",
                       help="predict only, even on a GPU machine")
    audit.add_argument("--cache", type=Path, help="where downloaded wheels and cuobjdump live")
    for command in (run, bisect, report, merge, audit):
        _add_baseline(command)
        _add_history(command)
    return parser


def _add_history(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--history", type=Path, action="append", default=[], metavar="PATH",
                        help="earlier runs to keep beside this one (a history.json, a "
                             "results.json, or a folder with either; repeatable): the page "
                             "shows each cell's recent outcomes and where it flipped")
    parser.add_argument("--history-runs", type=int, default=DEFAULT_RUNS, metavar="N",
                        help=f"how many runs history.json keeps (default {DEFAULT_RUNS})")


def _add_baseline(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", type=Path,
                        help="an earlier results.json: list new failures, fixes, flips and "
                             "added/removed cells, and fail only on new failures")
    parser.add_argument("--allow-new-failures", action="store_true",
                        help="with --baseline, exit 0 even when there are new failures")


def _options(args: argparse.Namespace, **extra: object) -> RunOptions:
    project = find_project(Path.cwd())
    corpus = (*project.cases, *args.corpus)
    if args.known_bugs or project.known_bugs:
        corpus = (*corpus, KNOWN_BUGS)
    # A folder named twice (cudamatrix.toml's and --corpus) is read once.
    corpus = tuple({p.resolve(): p for p in corpus}.values())
    if not corpus:
        raise UserError(f"no cases to run: no {CONFIG} in {Path.cwd()} or above "
                        "(`cudamatrix init` writes one), no --corpus DIR, no --known-bugs")
    values: dict[str, object] = dict(
        matrix=args.matrix or project.matrix,
        matrix_overrides={} if args.matrix else project.overrides, corpus=corpus,
        tier=args.tier, toolkits=tuple(args.toolkit),
        archs=tuple(args.arch), cases=tuple(args.case), cell_ids=tuple(args.cell),
        host_compilers=tuple(args.host_compiler),
        shard=args.shard)
    values.update(extra)
    return RunOptions(**values)  # type: ignore[arg-type]


def _report_cases(args: argparse.Namespace) -> dict[str, Case]:
    """The cases a run would load here: the project's, --corpus and the known bugs."""
    project = find_project(Path.cwd())
    folders = (*project.cases, *args.corpus, *((KNOWN_BUGS,) if args.known_bugs
                                                or project.known_bugs else ()))
    if not folders:
        raise UserError("--rejudge: no cases to judge against (--corpus DIR, --known-bugs)")
    return {case.id: case for case in load_corpus(folders)}


def planned_shards(plan_file: Path, matrix: Path | None) -> list[ExpectedShard]:
    """The jobs of a workflow plan, each with the cells its arguments select."""
    try:
        jobs = json.loads(plan_file.read_text())["include"]
        parser = build_parser()
        expected = []
        for job in jobs:
            job_args = parser.parse_args(["run", *(["--matrix", str(matrix)] if matrix else []),
                                          *shlex.split(job["args"])])
            cells = make_plan(_options(job_args)).cells
            expected.append(ExpectedShard(job["name"], job["artifact"], job["label"],
                                          tuple(cells)))
    except OSError as exc:
        raise UserError(f"--plan {plan_file}: cannot read it ({exc.strerror})") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"--plan {plan_file}: not a plan from `cudamatrix plan` "
                        f"({type(exc).__name__}: {exc})") from None
    return expected


def _audit(args: argparse.Namespace, console: Console) -> int:
    """`cudamatrix audit`: facts, predictions (and measurements on a GPU), then the reports."""
    from .audit.run import AuditOptions, run_audit
    from .providers.sass_tools import prepare_sass_tools

    baseline = load_baseline(args.baseline) if args.baseline else None
    matrix = load_matrix(args.matrix or find_project(Path.cwd()).matrix)
    cache = args.cache or default_cache()
    # The 13.5 wheel where pip works; else a toolkit's own (a GPU machine without network).
    cuobjdump = prepare_sass_tools(cache) or shutil.which("cuobjdump")
    if cuobjdump is None:
        raise UserError("audit needs cuobjdump: the nvidia-cuda-cuobjdump wheel could not be "
                        f"installed into {cache}/tools")
    options = AuditOptions(tuple(args.inputs), cache, tuple(args.gpu), tuple(args.driver),
                           tuple(args.expect_gpu), measure=not args.no_measure)
    info, results = run_audit(options, matrix, cuobjdump,
                              lambda text: console.print(text, soft_wrap=True))
    return publish_reports(args, console, args.out, info, results, baseline)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_options(args: argparse.Namespace) -> RunOptions:
    """`cudamatrix run`'s options from its arguments (each default from options.py)."""
    extra: dict[str, object] = dict(
        out=args.out, provider=args.provider, jobs=args.jobs, cell_timeout=args.cell_timeout,
        cell_memory_gib=args.cell_memory,
        run_timeout=args.run_timeout, resume=args.resume, gpu=not args.no_gpu,
        runner_label=args.runner_label,
        prebuilt=args.prebuilt, compile_cache=not args.no_compile_cache,
        compile_here=tuple(args.compile_here or default("compile_here")),
        containers=args.containers, docker_flavour=args.docker_flavour,
        container_timeout=args.container_timeout, cuda_compat=args.cuda_compat,
        jitify_warmup_timeout=args.jitify_warmup_timeout)
    if args.cache:
        extra["cache"] = args.cache
    versions: dict[str, list[str]] = {}
    for name, version in args.library:
        versions.setdefault(name, []).append(version)
    return with_library_versions(_options(args, **extra), versions)


def _run(args: argparse.Namespace, console: Console) -> int:
    options = run_options(args)
    interactive = console.is_terminal and not os.environ.get("CI")
    progress = RichProgress(console) if interactive else PlainProgress()
    # A cancelled CI job gets SIGTERM: stop as on Ctrl-C, keeping every finished cell.
    signal.signal(signal.SIGTERM, _interrupt)
    # A shell starts background jobs with SIGINT ignored, and Python then leaves it so:
    # Ctrl-C (or a runner's SIGINT) must still stop the run and keep what it finished.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # A malformed baseline is found now, not after the whole run.
    baseline = load_baseline(args.baseline) if args.baseline else None
    try:
        info, results = execute(options, progress)
    except KeyboardInterrupt:
        console.print(f"interrupted: finished cells are kept in {options.out}/cells; "
                      "continue with --resume")
        return 130
    code = publish_reports(args, console, options.out, info, results, baseline)
    for name, reason in info.environment_errors.items():
        console.print(f"error: {name} could not be prepared; its cells are marked error: "
                      f"{reason}", markup=False, soft_wrap=True)
    return 2 if info.environment_errors else code


def _bisect(args: argparse.Namespace, console: Console) -> int:
    """Bisect, write the cells it ran as a report, print the answer; 0 where it found a
    change, 1 where the ends agree."""
    options = run_options(args)
    progress = PlainProgress()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    info, results = bisect(options, args.over, args.start, args.end, args.variant, progress,
                           from_index=args.versions == "index")
    publish_reports(args, console, options.out, info, results)
    answer = info.bisect or {}
    console.print(f"bisect over {answer['over']}: {len(results)} cells run of "
                  f"{len(answer['values'])} values ({info.wall_seconds:.0f} s)")
    for line in bisect_lines(answer):
        console.print(line, markup=False, soft_wrap=True)
    return 0 if answer["changes"] else 1


def publish_reports(args: argparse.Namespace, console: Console, out: Path, info: RunInfo,
                    results: list[CellResult],
                    baseline: dict[str, dict[str, Any]] | None = None) -> int:
    """Write every report (with the baseline diff when asked), publish to GitHub when there;
    the exit status: new failures with a baseline, any failure without."""
    diff = None
    before = None
    if args.baseline:
        before = baseline if baseline is not None else load_baseline(args.baseline)
    results = settle_xpass(results, before)
    if args.baseline and before is not None:
        diff = compare(str(args.baseline), before, results)
    history = gather(getattr(args, "history", []), PastRun.of(info, results),
                     getattr(args, "history_runs", DEFAULT_RUNS))
    written = write_reports(out, info, results, diff, history)
    publish(out / "COMPATIBILITY.md", results, diff)
    counts = summary(results)
    console.print(" ".join(f"{k}={v}" for k, v in counts.items()) +
                  f" ({len(results)} cells, {info.wall_seconds:.1f} s)")
    if diff is not None:
        console.print(f"since {args.baseline}: {len(diff.new_failures)} new failures, "
                      f"{len(diff.fixed)} fixed, {len(diff.flipped)} flipped, "
                      f"{len(diff.added)} added, {len(diff.removed)} removed, "
                      f"{len(diff.resources)} resource changes")
        for change in diff.new_failures[:20]:
            console.print(f"  new failure: {change.cell}: {change.message[:160]}", markup=False)
        for grown in diff.resources[:20]:
            console.print(f"  resources: {grown.cell}: {grown.describe()}", markup=False)
    console.print("reports: " + ", ".join(str(p) for p in written))
    if diff is not None:
        return 1 if diff.new_failures and not args.allow_new_failures else 0
    return exit_status(results)


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    # Nothing printed is markup: case ids, paths and compiler messages may hold "[/bold]".
    console = Console(stderr=False, highlight=False, markup=False)
    try:
        if args.command in (None, "run"):
            if args.command is None:
                args = build_parser().parse_args(["run", *(argv or sys.argv[1:])])
            sys.exit(_run(args, console))
        if args.command == "bisect":
            sys.exit(_bisect(args, console))
        if args.command == "validate":
            plan = make_plan(_options(args))
            console.print(f"{plan.matrix.path}: ok; {len(plan.cases)} cases, "
                          f"{len(plan.cells)} cells in tier {plan.tier.name}")
        elif args.command == "list":
            for cell in make_plan(_options(args)).cells:
                console.print(cell.id)
        elif args.command == "report":
            info, results = load_results(args.results)
            if args.rejudge:
                results = rejudge(results, _report_cases(args))
            sys.exit(publish_reports(args, console, args.out, info, results))
        elif args.command == "plan":
            made = make_plan(_options(args))
            # The plan's own narrowing (cases, toolkits, corpus folders) travels with each job.
            selection = [*(w for c in args.corpus for w in ("--corpus", str(c))),
                         *(w for c in args.case for w in ("--case", c)),
                         *(w for t in args.toolkit for w in ("--toolkit", t))]
            matrix = github_matrix(made.cells, made.tier.name, args.drivers or ["latest"],
                                   args.cells_per_job, args.max_jobs, gpu=not args.cpu,
                                   compat=args.compat, selection=selection,
                                   runner_base=args.runner_labels.split(),
                                   label_prefix=args.label_prefix)
            text = json.dumps(matrix, separators=(",", ":"))
            print(text)
            if args.github_output:
                target = os.environ.get("GITHUB_OUTPUT")
                if not target:
                    raise UserError("--github-output: $GITHUB_OUTPUT is not set")
                with open(target, "a", encoding="utf-8") as handle:
                    handle.write(f"{args.github_output}={text}\n")
        elif args.command == "init":
            written = init_project(args.folder, args.ci, args.workflow)
            console.print("wrote " + ", ".join(str(p) for p in written))
            console.print(f"next: edit {CONFIG} (tiers: toolkits and archs you support), put "
                          "your kernels in cudamatrix-cases/ (one folder per case, see the "
                          "two examples), then `cudamatrix run`")
        elif args.command == "audit":
            sys.exit(_audit(args, console))
        elif args.command == "merge":
            expected = planned_shards(args.plan, args.matrix) if args.plan else ()
            info, results = merge_results(args.shards, expected)
            sys.exit(publish_reports(args, console, args.out, info, results))
    except UserError as exc:
        console.print(f"error: {exc}", markup=False, soft_wrap=True)
        sys.exit(exc.exit_code)
