"""The benchmark behind issue targets: run with ``nox -s bench``, never as a timed unit test.

It measures, on this machine, for one tier (default: the default tier):

1. environment set-up: each toolkit and library environment prepared into an empty
   cudamatrix cache from a warm pip cache;
2. the plain compiler loop: the very compiler invocations the tier's cells make
   (NVRTC through its library, ptxas, nvcc, the CuTe DSL script), called straight
   from a thread pool as wide as the tool's, with no worker processes, no compile
   cache, no result files and no reports;
3. the cold run: ``nox -R -s matrix`` with the environments ready and an empty
   compile cache;
4. the warm run: the same command again (the cold run's compiles all kept by the compile
   cache, it answers from the cold run's record), then as one `cudamatrix run` process
   with nothing changed (a record holding) and with ``--always-run`` (every cell from the
   compile cache);
5. the start: `cudamatrix --version`, as a whole process.

and prints the cold/plain ratio and the warm time against the targets, writing
``bench/RESULTS.md`` with ``--write``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path
from typing import Any

from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.config.options import RunOptions
from cudamatrix.config.plan import BUNDLED
from cudamatrix.config.planning import make_plan
from cudamatrix.errors import EnvironmentUnavailable, Failure
from cudamatrix.orchestrator.cell_runner import CellRunner
from cudamatrix.orchestrator.environments import Environments
from cudamatrix.orchestrator.executors.local import LocalExecutor
from cudamatrix.orchestrator.gpu import DeviceInfo
from cudamatrix.orchestrator.progress import Progress
from cudamatrix.providers.docker import engine
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.compile.built import Build
from cudamatrix.stages.frontends import frontend

REPO = Path(__file__).resolve().parents[1]
TARGET_COLD_RATIO = 1.15
TARGET_FLOOR_RATIO = 1.10
TARGET_WARM_S = 3.0  # through nox (its own start, the session's checks)
TARGET_WARM_PROCESS_S = 1.0  # `cudamatrix run` again, its inputs unchanged
TARGET_START_S = 0.3  # `cudamatrix --version`
TARGET_SETUP_S = 30.0


class Quiet(Progress):
    def note(self, text: str) -> None:
        pass

    def cell_done(self, result: object) -> None:
        pass


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        memory_kib = next(int(line.split()[1]) for line in
                          Path("/proc/meminfo").read_text().splitlines()
                          if line.startswith("MemTotal"))
        memory = f"{memory_kib / 2**20:.0f} GiB"
    except (OSError, StopIteration):
        memory = "unknown memory"
    return (f"{model}, {os.cpu_count()} cores, {memory}, {platform.system()} "
            f"{platform.release()}, Python {platform.python_version()}, no GPU")


def prepare(options: RunOptions) -> tuple[Environments, dict[str, float]]:
    """Every environment the tier needs, timed one by one."""
    plan = make_plan(options)
    envs = Environments(plan.matrix, "wheels", options.cache, Quiet(), ledger=InputLedger())
    timings: dict[str, float] = {}
    for toolkit in sorted({c.toolkit for c in plan.cells if c.toolkit != BUNDLED}):
        started = time.monotonic()
        got = envs.toolkit(toolkit)
        if isinstance(got, Failure):
            sys.exit(f"toolkit {toolkit}: {got.reason}")
        timings[f"toolkit {toolkit}"] = time.monotonic() - started
    for cell in plan.cells:
        if cell.library and cell.library_version and cell.library != "cupy":
            label = f"{cell.library} {cell.library_version}"
            if label not in timings:
                started = time.monotonic()
                envs.library(cell.library, cell.library_version, None)
                timings[label] = time.monotonic() - started
    return envs, timings


def _compile(job: Job) -> Build:
    build = frontend(job.frontend).compile
    assert build is not None
    return build(job)


def plain_loop(options: RunOptions, envs: Environments) -> tuple[float, int]:
    """The tier's compiler invocations, called directly; returns wall seconds and the count."""
    plan = make_plan(options)
    runner = CellRunner(plan, options, envs, DeviceInfo(reason="benchmark"), LocalExecutor(),
                        ledger=envs.ledger)
    jobs: list[Job] = []
    for cell in sorted(plan.cells, key=lambda c: c.frontend != "cutlass"):
        job, _ = runner.jobs.job_for(cell, plan.variant(cell))
        if isinstance(job, Job):
            jobs.append(job)
    env = dict(os.environ)
    folders = sorted({d for j in jobs if j.env for d in j.env.library_dirs})
    env["LD_LIBRARY_PATH"] = os.pathsep.join([*folders, env.get("LD_LIBRARY_PATH", "")])
    os.environ.update(env)  # NVRTC finds its builtins library by name, as in a worker
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=options.jobs) as pool:
        for build in pool.map(lambda j: _compile(j), jobs):
            assert build.result.stage == "compile"
    return time.monotonic() - started, len(jobs)


def nox_matrix(args: list[str]) -> tuple[float, bool]:
    """The wall time of `nox -R -s matrix`, and whether the run answered from the last
    run's record (up to date)."""
    started = time.monotonic()
    done = subprocess.run(["nox", "-R", "-s", "matrix", "--", *args], cwd=REPO,
                          capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1):  # 1 = some cell failed, still a timing
        sys.exit(f"nox -s matrix failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return seconds, "up to date: " in done.stdout + done.stderr


def floor_seconds(results: dict[str, Any], cores: int) -> float:
    """The compilers' own CPU seconds over every cell (each compile stage's
    `compiler_cpu_s`: the compiler processes it waited for, and NVRTC's in-process time),
    divided by the cores: no run of these cells on this machine can take less."""
    cpu = sum(float(c["stages"][0].get("details", {}).get("compiler_cpu_s", 0.0))
              for c in results["cells"] if c["stages"])
    return cpu / max(1, cores)


def process_seconds(command: list[str], times: int) -> float:
    """The median wall time of `command` as a whole process (start, imports, work, exit)."""
    program = shutil.which("cudamatrix")
    if program is None:
        sys.exit("cudamatrix is not on PATH (nox -s bench installs it)")
    seconds = []
    for _ in range(times):
        started = time.monotonic()
        done = subprocess.run([program, *command], cwd=REPO, capture_output=True, text=True,
                              check=False)
        seconds.append(time.monotonic() - started)
        if done.returncode not in (0, 1):
            sys.exit(f"cudamatrix {' '.join(command)} failed ({done.returncode}):\n"
                     f"{done.stdout}{done.stderr}")
    return sorted(seconds)[len(seconds) // 2]


def start_rows(run_args: list[str]) -> list[tuple[str, str, str, bool]]:
    """The warm run as one `cudamatrix run` process (the last run's record holding:
    nothing changed since), the same with every cell taken from the compile cache again
    (`--always-run`), and the start, against their targets."""
    warm = process_seconds(["run", *run_args], 3)
    again = process_seconds(["run", "--always-run", *run_args], 3)
    start = process_seconds(["--version"], 5)
    return [("warm re-run, nothing changed (`cudamatrix run`, one process)", f"{warm:.2f} s",
             f"< {TARGET_WARM_PROCESS_S:.0f} s", warm < TARGET_WARM_PROCESS_S),
            ("warm re-run, every cell from the compile cache again (`--always-run`)",
             f"{again:.2f} s", "-", True),
            ("start (`cudamatrix --version`)", f"{start:.2f} s", f"< {TARGET_START_S} s",
             start < TARGET_START_S)]


def write_section(path: Path, tier: str, section: str) -> None:
    """Put one tier's figures into RESULTS.md, keeping the other tiers' sections: the pr
    and the nightly tier are measured apart (the nightly one takes an hour)."""
    text = path.read_text() if path.exists() else ""
    sections: dict[str, str] = {}
    others: list[str] = []  # the sections that are no tier's (GPU stages, first runs)
    for part in text.split("\n## ")[1:]:
        title = part.split("\n", 1)[0].strip()
        if title.startswith("Tier "):
            sections[title[len("Tier "):]] = "## " + part.rstrip("\n") + "\n"
        else:
            others.append("## " + part.rstrip("\n") + "\n")
    sections[tier] = section.rstrip("\n") + "\n"
    order = sorted(sections, key=lambda n: (n != "pr", n))
    path.write_text("# Benchmark results\n\n"
                    + "\n".join([*(sections[n] for n in order), *others]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", default=None)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--work", type=Path, default=REPO / "out" / "bench")
    parser.add_argument("--write", action="store_true",
                        help="write this tier's section of bench/RESULTS.md")
    parser.add_argument("--no-containers", action="store_true",
                        help="leave out the container run (it repeats the cold run)")
    parser.add_argument("--only-start", action="store_true",
                        help="only the warm run and the start, on the machine's own cache "
                             "(a run of the tier must have filled its compile cache)")
    args = parser.parse_args()
    if args.only_start:
        tier = ["--tier", args.tier] if args.tier else []
        for name, value, target, met in start_rows(
                ["--no-gpu", "--provider", "wheels", *tier, "--out", str(args.work / "start")]):
            print(f"{name}: {value}  target {target}: {'met' if met else 'MISSED'}")
        return

    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    cache = work / "cache"
    options = RunOptions(out=work / "plain", cache=cache, jobs=args.jobs, gpu=False,
                         tier=args.tier)
    print(f"machine: {machine()}")
    envs, setup = prepare(options)
    # The same again into the filled cache: what every later run pays.
    _, setup_warm = prepare(options)
    for name, seconds in setup.items():
        print(f"set-up {name}: {seconds:.1f} s (again: {setup_warm[name]:.2f} s)")
    plain_s, invocations = plain_loop(options, envs)
    print(f"plain compiler loop: {invocations} compiles in {plain_s:.1f} s")

    # The wheels provider, as the plain loop uses: like for like. Containers are timed
    # apart below, where an engine is up.
    common = ["--cache", str(cache), "--no-gpu", "--jobs", str(args.jobs)] + \
        (["--tier", args.tier] if args.tier else [])
    run_args = [*common, "--provider", "wheels", "--out", str(work / "run")]
    # Create the nox session's environment once, untimed, so both runs below reuse it.
    subprocess.run(["nox", "-s", "matrix", "--", "--help"], cwd=REPO, capture_output=True,
                   check=True)
    shutil.rmtree(cache / "compile", ignore_errors=True)
    cold_s, _ = nox_matrix(run_args)
    cold = json.loads((work / "run" / "results.json").read_text())
    floor_s = floor_seconds(cold, args.jobs)
    longest = max(cold["cells"], key=lambda c: c["seconds"])
    together = sum(1 for c in cold["cells"]
                   if c["stages"] and "built_with" in c["stages"][0].get("details", {}))
    # The largest process the run started (a compiler, a worker): ru_maxrss of the children.
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    warm_s, warm_recorded = nox_matrix(run_args)
    started_rows = start_rows(run_args)
    docker_s = None
    try:
        if args.no_containers:
            raise EnvironmentUnavailable("left out (--no-containers)")
        engine()
        shutil.rmtree(cache / "compile", ignore_errors=True)
        nox_matrix([*common, "--provider", "docker", "--out", str(work / "docker")])  # images
        shutil.rmtree(cache / "compile", ignore_errors=True)
        docker_s, _ = nox_matrix([*common, "--provider", "docker", "--out",
                                  str(work / "docker")])
    except EnvironmentUnavailable as exc:
        print(f"containers not timed: {exc}")
    results = json.loads((work / "run" / "results.json").read_text())
    hits = sum(1 for c in results["cells"]
               if c["stages"] and c["stages"][0].get("details", {}).get("cache") == "hit")
    cells = len(results["cells"])
    ratio = cold_s / plain_s
    worst_setup = max(setup.values())
    rows = [
        ("cold run / floor (compilers' CPU seconds / cores)",
         f"{cold_s / floor_s:.2f}x ({cold_s:.1f} s / {floor_s:.1f} s)" if floor_s else "-",
         f"<= {TARGET_FLOOR_RATIO}x", bool(floor_s) and cold_s / floor_s <= TARGET_FLOOR_RATIO),
        ("critical path (the longest cell)", f"{longest['seconds']:.1f} s ({longest['id']})",
         "-", True),
        ("peak memory (the largest process)", f"{peak_mib:.0f} MiB", "-", True),
        ("cold run / plain loop", f"{ratio:.2f}x ({cold_s:.1f} s / {plain_s:.1f} s)",
         f"<= {TARGET_COLD_RATIO}x", ratio <= TARGET_COLD_RATIO),
        ("cells built by one nvcc with their sibling archs (cold run)", f"{together}", "-",
         True),
        ("warm re-run (`nox -R -s matrix`, the first after the cold run)",
         f"{warm_s:.2f} s (" + ("answered from the cold run's record" if warm_recorded
                                 else f"{hits} of {cells} cells from the compile cache") + ")",
         f"< {TARGET_WARM_S:.0f} s", warm_s < TARGET_WARM_S),
        *started_rows,
        ("slowest environment set-up", f"{worst_setup:.1f} s", f"< {TARGET_SETUP_S:.0f} s",
         worst_setup < TARGET_SETUP_S),
    ]
    if docker_s is not None:
        rows.append(("cold run in containers (`--provider docker`) / plain loop",
                     f"{docker_s / plain_s:.2f}x ({docker_s:.1f} s; images already built)",
                     "-", True))
    for name, value, target, met in rows:
        verdict = "" if target == "-" else f"  target {target}: {'met' if met else 'MISSED'}"
        print(f"{name}: {value}{verdict}")
    if args.write:
        tier_name = results["run"]["tier"]
        lines = [
            f"## Tier {tier_name}",
            "",
            f"Measured {date.today().isoformat()} by `nox -s bench` (bench/bench.py) on: "
            f"{machine()}. Tier: {tier_name}, {cells} cells, "
            f"{invocations} compiles, {args.jobs} parallel jobs.",
            "",
            "| measure | value | target | met |",
            "|---|---|---|---|",
            *(f"| {n} | {v} | {t} | {'-' if t == '-' else 'yes' if m else 'no'} |"
              for n, v, t, m in rows),
            "",
            "Environment set-up, from a warm pip cache into an empty cudamatrix cache (for",
            "11.8 and 12.4 this includes fetching Debian's nvidia-cuda-toolkit from the",
            "archive, checking its signature and hashes and unpacking it), then again in a",
            "new run with that cache filled:",
            "",
            "| environment | seconds, empty cache | seconds, filled cache |",
            "|---|---|---|",
            *(f"| {n} | {s:.1f} | {setup_warm[n]:.2f} |" for n, s in setup.items()),
            "",
            "The plain loop calls the same compilers with the same options for the same cells",
            "(NVRTC through its library in a thread, then ptxas; nvcc; the CuTe DSL script)",
            "from a thread pool of the same width, longest builds first as the tool orders",
            "them, one call per cell. The cold run is the whole tool on the same wheels",
            "toolkits: a worker process per cell (one per group of cells that differ only",
            "in arch, built by one nvcc), artifact checks, result files and the four",
            "reports; its environments are already prepared. The floor is the CPU time of",
            "the compilers the cold run itself started. The container run adds a",
            "`docker exec` per cell. The cold run leaves a record of what it read",
            "(`<out>/.cudamatrix-run.json`): every compile it made is kept by the compile",
            "cache, so a re-run would take each from there as it is, and a run with",
            "nothing changed answers from that record. `--always-run` takes every compile",
            "from the compile cache and redoes each cell's bookkeeping (its job, key,",
            "restored artifacts, verdict, cell file) and the reports.",
            "",
        ]
        write_section(REPO / "bench" / "RESULTS.md", tier_name, "\n".join(lines))
        print("wrote bench/RESULTS.md")


if __name__ == "__main__":
    main()
