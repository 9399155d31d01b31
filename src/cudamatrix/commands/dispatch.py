"""What each command does, from the parsed command line (cli.py): runs, bisects, reports,
plans, merges, audits, writes a starter project."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from ..common.folders import writable_folder
from ..common.up_to_date import (
    CONTENT,
    DOCKER_SOCKET,
    LEDGER,
    NAMES,
    command_parts,
    loaded_module_files,
    record_run,
    said_plainly,
    standing_record,
)
from ..config.defaults import CONFIG, KNOWN_BUGS
from ..config.defaults import DEFAULT_HISTORY_RUNS as DEFAULT_RUNS
from ..config.options import RunOptions, default, default_cache
from ..config.project import find_project, init_project
from ..errors import UserError
from ..orchestrator.gpu import DeviceInfo, run_device
from ..orchestrator.progress import Progress as PlainProgress

# Only what `cudamatrix run` needs before it knows whether the last run's results stand is
# imported here; the planner, the runner and the reports when a command uses them.
if TYPE_CHECKING:
    from rich.progress import TaskID

    from ..config.corpus import Case
    from ..record.merge import ExpectedShard
    from ..record.results import CellResult, RunInfo


class RichProgress(PlainProgress):
    """A live bar (cells done/total, ETA) for terminals; CI logs get plain lines instead."""

    def __init__(self, console: Console) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

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
        result = self.settle(result)
        if result.outcome not in ("pass", "xfail", "skip"):
            self.bar.console.print(f"{result.outcome:>5}  {result.cell.id}: "
                                   f"{(result.message or result.reason)[:120]}", markup=False)
        if self.task is not None:
            self.bar.advance(self.task)

    def finish(self) -> None:
        self.bar.stop()


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
        shard=args.shard, paths=project.paths)
    values.update(extra)
    return RunOptions(**values)  # type: ignore[arg-type]


def _report_cases(args: argparse.Namespace) -> dict[str, Case]:
    """The cases --rejudge judges against: those a run would load here."""
    cases = _cases_here(args)
    if not cases:
        raise UserError("--rejudge: no cases to judge against (--corpus DIR, --known-bugs)")
    return cases


def _cases_here(args: argparse.Namespace) -> dict[str, Case]:
    """The cases a run would load here: the project's, --corpus and the known bugs; none
    where none is named (a merge needs cases only to judge max_slowdown across shards)."""
    from ..config.corpus import load_corpus

    project = find_project(Path.cwd())
    folders = (*project.cases, *args.corpus, *((KNOWN_BUGS,) if args.known_bugs
                                                or project.known_bugs else ()))
    return {case.id: case for case in load_corpus(folders, project.paths)} if folders else {}


def planned_shards(plan_file: Path, matrix: Path | None, parser: argparse.ArgumentParser
                   ) -> list[ExpectedShard]:
    """The jobs of a workflow plan, each with the cells its arguments select (read by
    `parser`, the command line's own)."""
    from ..config.planning import make_plan
    from ..record.merge import ExpectedShard

    try:
        jobs = json.loads(plan_file.read_text())["include"]
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
    from ..config.matrix import load_matrix
    from ..providers.sass_tools import prepare_sass_tools
    from ..record.baseline import load_baseline
    from .audit.run import AuditOptions, run_audit

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
        gpu_server=not getattr(args, "context_per_cell", False),
        runner_label=args.runner_label,
        prebuilt=args.prebuilt, compile_cache=not args.no_compile_cache,
        compile_together=not args.compile_apart, order=args.order,
        compile_here=tuple(args.compile_here or default("compile_here")),
        containers=args.containers, docker_flavour=args.docker_flavour,
        container_timeout=args.container_timeout, cuda_compat=args.cuda_compat,
        jitify_warmup_timeout=args.jitify_warmup_timeout)
    if args.cache:
        extra["cache"] = args.cache
    if args.compile_cache_from:
        extra["compile_cache_from"] = tuple(args.compile_cache_from)
    versions: dict[str, list[str]] = {}
    for name, version in args.library:
        versions.setdefault(name, []).append(version)
    if not versions:
        return _options(args, **extra)
    from ..config.planning import with_library_versions

    return with_library_versions(_options(args, **extra), versions)


def _run(args: argparse.Namespace, console: Console) -> int:
    options = run_options(args)
    interactive = console.is_terminal and not os.environ.get("CI")
    # A cancelled CI job gets SIGTERM: stop as on Ctrl-C, keeping every finished cell.
    signal.signal(signal.SIGTERM, _interrupt)
    # A shell starts background jobs with SIGINT ignored, and Python then leaves it so:
    # Ctrl-C (or a runner's SIGINT) must still stop the run and keep what it finished.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # Probed once: the record's command holds its answer, and the run uses it.
    device = run_device(options.gpu)
    command = _run_command(args, options, device)
    if not args.always_run:
        record, changed = standing_record(options.out, command)
        if record is not None:
            console.print(f"up to date: nothing the run into {options.out} (finished "
                          f"{said_plainly(record.finished)}) read has changed; its "
                          f"{record.cells} cells stand (--always-run runs them again)")
            console.file.write(said_plainly(record.said))
            return record.status
        if changed:
            console.print(f"running: {changed} since the last run into {options.out}")
    from ..orchestrator.runner import execute
    from ..record.baseline import load_baseline, settle_xpass

    progress = RichProgress(console) if interactive else PlainProgress()
    # A malformed baseline or history is found now, not after the whole run.
    baseline = load_baseline(args.baseline) if args.baseline else None
    progress.settle = lambda result: settle_xpass([result], baseline)[0]
    if args.history:
        from datetime import datetime, timezone

        from ..record.history import check_history

        check_history(args.history, datetime.now(timezone.utc).isoformat(timespec="seconds"))
    try:
        info, results = execute(options, progress, device=device)
    except KeyboardInterrupt:
        console.print(f"interrupted: finished cells are kept in {options.out}/cells; "
                      "continue with --resume")
        return 130
    console.begin_capture()
    try:
        code = publish_reports(args, console, options.out, info, results, baseline)
    finally:
        said = console.end_capture()
        console.file.write(said)
        console.file.flush()
    for name, reason in info.environment_errors.items():
        console.print(f"error: {name} could not be prepared; its cells are marked error: "
                      f"{reason}", markup=False, soft_wrap=True)
    if info.environment_errors:
        return 2
    if not _unrecorded(options, info.provider):
        _watch_run_inputs(args, options, info.provider)
        record_run(options.out, command, LEDGER.inputs(), code, said, info.finished,
                   len(results))
    return code


def _run_command(args: argparse.Namespace, options: RunOptions, device: DeviceInfo
                 ) -> dict[str, str]:
    """The run's command by part (see up_to_date): its arguments as parsed, the options
    they made, the GPU as the probe found it, the commit."""
    from ..common.revision import source_revision

    arguments = {k: str(v) for k, v in sorted(vars(args).items()) if k != "always_run"}
    return command_parts(json.dumps(arguments), repr(options), device.to_dict(),
                         source_revision())


def _unrecorded(options: RunOptions, provider: str) -> list[str]:
    """Why a re-run of this run must ask its compilers, driver or kernels again."""
    reasons = list(LEDGER.refusals)
    if options.prebuilt:
        reasons.append("--prebuilt: the builds are another run's")
    if provider == "docker":
        reasons.append("containers: their images are not watched")
    if not options.compile_cache:
        reasons.append("--no-compile-cache")
    return reasons


def _watch_run_inputs(args: argparse.Namespace, options: RunOptions, provider: str) -> None:
    """What the run read besides what its cells named on the way (up_to_date's list)."""
    LEDGER.watch(Path(__file__).resolve().parents[1], CONTENT)  # the cudamatrix package
    for module_file in loaded_module_files():
        LEDGER.watch(module_file, CONTENT)
    for folder in options.corpus:
        LEDGER.watch(folder)
    LEDGER.watch(options.matrix, 0)
    project = find_project(Path.cwd()).config
    for file in (project, args.baseline, *getattr(args, "history", [])):
        if file is not None:
            LEDGER.watch(file, 0)
    for on_path in os.environ.get("PATH", "").split(os.pathsep):
        if on_path:
            LEDGER.watch(on_path, NAMES)  # a program installed or removed there
    LEDGER.watch(DOCKER_SOCKET, 0)  # whether --provider auto would find an engine
    # The environments the cells used were watched by their markers as they were prepared;
    # the rest of the cache is not an input: other toolkits, other runs' installs, and the
    # compile cache, whose entries are what their keys say (one added or removed changes
    # no verdict this run made).
    if provider == "host":
        from ..providers.host import host_root

        LEDGER.watch(host_root(), 1)
        LEDGER.watch(host_root() / "bin", 1)


def _bisect(args: argparse.Namespace, console: Console) -> int:
    """Bisect, write the cells it ran as a report, print the answer; 0 where it found a
    change, 1 where the ends agree."""
    from ..reports.markdown import bisect_lines
    from .bisect import bisect

    options = run_options(args)
    progress = PlainProgress()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    info, results = bisect(options, args.over, args.start, args.end, args.variant, progress,
                           from_index=args.versions == "index", slower=args.slower)
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
    from ..orchestrator.runner import exit_status
    from ..record.baseline import compare, load_baseline, settle_xpass
    from ..record.history import PastRun, gather
    from ..record.results import summary
    from ..reports import write_reports
    from ..reports.github import publish

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
                      f"{len(diff.resources)} resource changes, "
                      f"{len(diff.slower)} slower, {len(diff.times) - len(diff.slower)} faster")
        for change in diff.new_failures[:20]:
            console.print(f"  new failure: {change.cell}: {change.message[:160]}", markup=False)
        for grown in diff.resources[:20]:
            console.print(f"  resources: {grown.cell}: {grown.describe()}", markup=False)
        for moved in diff.times[:20]:
            console.print(f"  time: {moved.cell}: {moved.describe()}", markup=False)
    console.print("reports: " + ", ".join(str(p) for p in written))
    if diff is not None:
        return 1 if diff.new_failures and not args.allow_new_failures else 0
    return exit_status(results)


def _recorded_cell(out: Path, cell_id: str) -> CellResult:
    """A cell's record in `out`: its own file in cells/ (written as it finished, so a run
    still going has it), else the run's results.json."""
    from ..config.plan import cell_slug
    from ..record.results import CELLS_DIR, load_cell, load_results

    own = out / CELLS_DIR / f"{cell_slug(cell_id)}.json"
    if own.is_file():
        return load_cell(own)
    if not (out / "results.json").exists():
        raise UserError(f"{out}: no record of cell {cell_id!r} (neither cells/ nor "
                        "results.json has it)")
    _, results = load_results(out / "results.json")
    found = next((r for r in results if r.cell.id == cell_id), None)
    if found is None:
        raise UserError(f"{out / 'results.json'}: no cell {cell_id!r}")
    return found


# The options whose value is a file a compile writes: its folder must exist.
_OUTPUT_OPTIONS = ("-o", "-MF", "--output-file", "-odir", "--output-directory")


def _output_folders(command: str) -> list[str]:
    """The folders a logged command writes into (-o FILE, -MF FILE): a repro makes them,
    so the line runs as printed after the run removed them (a together-compiled group's
    folder)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    found = []
    for option, value in itertools.pairwise(words):
        if option in _OUTPUT_OPTIONS and value:
            folder = value if option in ("-odir", "--output-directory") \
                else os.path.dirname(value)
            if folder:
                found.append(folder)
    return list(dict.fromkeys(found))


# The programs a cell's compile runs, as its log names them by path.
_COMPILERS = re.compile(r"(nvcc|ptxas|clang(\+\+)?(-\d+)?|python[\d.]*)$")


def _one_program(line: str) -> bool:
    """Whether a logged line is one compiler's command as the tool writes it (shlex-quoted,
    an optional LD_LIBRARY_PATH first): pasted, it runs that program and nothing else."""
    try:
        words = shlex.split(line)
    except ValueError:
        return False
    if shlex.join(words) != line or not words:
        return False
    if words[0].startswith("LD_LIBRARY_PATH="):
        words = words[1:]
    if not words or not os.path.isabs(words[0]) \
            or _COMPILERS.search(os.path.basename(words[0])) is None:
        return False
    # Python only as the NVRTC driver the tool ships.
    return not os.path.basename(words[0]).startswith("python") \
        or words[1:3] == ["-m", "cudamatrix.stages.compile.nvrtc"]


def compile_script(result: CellResult, out: Path) -> str:
    """A cell's compile as a shell script: each command its compile stage ran, as its log
    shows it (the compiler by its path, every flag, LD_LIBRARY_PATH where NVRTC needs it),
    run in the cell's folder of the run's artifacts, where the compile ran."""
    from ..config.plan import cell_slug
    from ..record.results import ARTIFACTS_DIR

    compile_stage = next((s for s in result.stages if s.stage == "compile"), None)
    lines = [line[2:] for line in (compile_stage.log if compile_stage else "").splitlines()
             if line.startswith("$ ")]
    if not lines:
        raise UserError(f"cell {result.cell.id}: its compile stage logged no command "
                        "(a build case's commands are in its log; a CuPy cell compiles "
                        "through the driver)")
    from ..stages.frontends import frontend

    if frontend(result.cell.frontend).builds_project:
        raise UserError(f"cell {result.cell.id}: a build case runs its own commands (they are "
                        "in its log); its repro is the report's `cudamatrix run ... --cell` line")
    for line in lines:
        if not _one_program(line):
            raise UserError(f"cell {result.cell.id}: its log's command {line[:80]!r} is not one "
                            "compiler's plain command line: not printed as a script (a record "
                            "from elsewhere may hold anything)")
    folder = (out / ARTIFACTS_DIR / cell_slug(result.cell.id)).resolve()
    return "\n".join([
        "#!/bin/sh",
        f"# {result.cell.id}: its compile, as the run into {out} ran it "
        f"({result.outcome} at {result.stage})",
        "set -e",
        f"mkdir -p {shlex.quote(str(folder))}",
        f"cd {shlex.quote(str(folder))}",
        *(f"mkdir -p {shlex.quote(made)}" for made in dict.fromkeys(
            f for line in lines for f in _output_folders(line))),
        *lines, ""])


def dispatch(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Do what the parsed command line asks; exits with its status."""
    # Nothing printed is markup: case ids, paths and compiler messages may hold "[/bold]".
    # No line is cut at the width: a pipe or a CI log counts as 80 columns, and a summary
    # split there ("1 resource\nchanges", a path across two lines) cannot be searched for.
    console = Console(stderr=False, highlight=False, markup=False, soft_wrap=True)
    try:
        if args.command in ("report", "merge", "audit", "bisect") and args.out is not None:
            writable_folder(args.out, "the output folder (--out)")  # before any work
        if args.command == "run":
            sys.exit(_run(args, console))
        if args.command == "bisect":
            sys.exit(_bisect(args, console))
        if args.command in ("validate", "list", "plan"):
            from ..config.planning import make_plan
        if args.command == "validate":
            plan = make_plan(_options(args))
            console.print(f"{plan.matrix.path}: ok; {len(plan.cases)} cases, "
                          f"{len(plan.cells)} cells in tier {plan.tier.name}"
                          + (f" (and {len(plan.ruled_out)} the matrix rules out, each a "
                             "skip)" if plan.ruled_out else ""))
        elif args.command == "list":
            listed = make_plan(_options(args))
            for cell in listed.cells:
                console.print(cell.id, markup=False)
            for cell, _ in listed.ruled_out:  # listed too: each a skip saying why, in a run
                console.print(cell.id, markup=False)
        elif args.command == "report":
            from ..record.rejudge import rejudge
            from ..record.results import load_results

            info, results = load_results(args.results)
            if args.rejudge:
                results = rejudge(results, _report_cases(args))
            sys.exit(publish_reports(args, console, args.out, info, results))
        elif args.command == "repro":
            from ..record.results import load_results

            print(compile_script(_recorded_cell(args.out, args.cell), args.out), end="")
        elif args.command == "plan":
            from .actions_matrix import github_matrix

            made = make_plan(_options(args))
            # The plan's own narrowing (cases, toolkits, corpus folders) travels with each job.
            selection = [*(w for c in args.corpus for w in ("--corpus", str(c))),
                         *(w for c in args.case for w in ("--case", c)),
                         *(w for t in args.toolkit for w in ("--toolkit", t))]
            # Every cell a job reports, the ruled-out skips too (its --shard takes them).
            every = [*made.cells, *(c for c, _ in made.ruled_out)]
            matrix = github_matrix(every, made.tier.name, args.drivers or ["latest"],
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
            from ..record.merge import merge_results

            expected = planned_shards(args.plan, args.matrix, parser) if args.plan else ()
            info, results = merge_results(args.shards, expected)
            for name, why in info.environment_errors.items():  # said here, not only inside
                if name.startswith("shard "):
                    console.print(f"warning: {name}: {why}", markup=False, soft_wrap=True)
            # max_slowdown against a toolkit another shard ran: only the merge has both (the
            # cases are read only where some cell was timed).
            cases = _cases_here(args) if any(r.timing for r in results) else {}
            if cases:
                from ..record.slowdowns import judge_slowdowns
                results = judge_slowdowns(results, cases)
            sys.exit(publish_reports(args, console, args.out, info, results))
    except UserError as exc:
        console.print(f"error: {exc}", markup=False, soft_wrap=True)
        sys.exit(exc.exit_code)
