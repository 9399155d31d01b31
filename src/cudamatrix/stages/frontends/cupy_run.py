"""The CuPy frontend: compile, load and run through ``cupy.RawModule``.

CuPy compiles through NVRTC only after asking the driver for the device, so
these cells are GPU cells. Each path (jitify on/off, an explicit -arch or not,
cooperative groups on/off) reports its own error text: the point of the case
is to show the precise message one path gives and the vague one another gives.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..cell.job import Job
from ..cell.result import StageResult
from ..cell.steps import Carried, Step
from ..compile.flags import resolve_flags
from ..compile.logs import decisive_line
from ..inspect.kernel_names import is_mangled
from ..process.limits import decode


def _options(job: Job) -> list[str]:
    options = resolve_flags(job.flags, job.case_folder, job.env)
    if job.arch_flag:
        options.append(f"-arch={job.arch}")
    return options


# What the one-time Jitify warm-up compiles: nothing of the case's, through CuPy's own API,
# so a hang there is CuPy's and its stack reads as a user's would.
WARMUP_KERNEL = 'extern "C" __global__ void cudamatrix_jitify_warmup() {}'
JITIFY_CACHE = "jitify_*.json"


def _cupy_environment(job: Job) -> Path:
    """Every cell compiles afresh in a CuPy cache of its own, seeded with the run's warmed
    Jitify headers where there are some; CUDA_PATH names the cell's toolkit."""
    cache = job.work / "cupy-cache"
    cache.mkdir(exist_ok=True)
    seed = job.options.get("jitify_seed")
    if seed:
        for warmed in Path(seed).glob(JITIFY_CACHE):
            shutil.copyfile(warmed, cache / warmed.name)
    os.environ["CUPY_CACHE_DIR"] = str(cache)
    if job.options.get("cuda_path"):
        os.environ["CUDA_PATH"] = str(job.options["cuda_path"])
    return cache


def jitify_warmup(job: Job) -> list[StageResult]:
    """CuPy's one-time Jitify warm-up (it compiles its own headers once per CuPy and CUDA
    version, one NVRTC compile per header it finds), done once for the run's jitify cells."""
    cache = _cupy_environment(job)
    import cupy

    started = time.monotonic()
    try:
        module = cupy.RawModule(code=WARMUP_KERNEL, options=("-std=c++17",), jitify=True)
        module.get_function("cudamatrix_jitify_warmup")
    except Exception as exc:  # the cells will meet the same and say so, each for itself
        text = f"{type(exc).__name__}: {exc}"
        return [StageResult("compile", "failed", decisive_line(text) or text.splitlines()[0],
                            text[-20_000:], time.monotonic() - started, {"cupy": cupy.__version__})]
    files = sorted(p.name for p in cache.glob(JITIFY_CACHE))
    return [StageResult("compile", "ok", "", f"CuPy {cupy.__version__}'s Jitify warm-up",
                        time.monotonic() - started, {"cupy": cupy.__version__, "files": files})]


def cupy_steps(job: Job) -> list[Step]:
    """CuPy's steps: its compile (NVRTC through CuPy, the kernel looked up, which loads the
    module), the load said apart, the run; or, for the run's one warm-up job, the warm-up."""
    if job.options.get("jitify_warmup"):
        return [Step("compile", lambda carried: jitify_warmup(carried.job), measured=True)]
    cell = _CupyCell(job)
    return [Step("compile", cell.compile, measured=True), Step("load", cell.load, gpu=True),
            Step("run", cell.run, gpu=True)]


class _CupyCell:
    """What CuPy's steps hand each other: the kernel it compiled and loaded, or the
    driver's refusal to load it (NVRTC had succeeded: the compile worked)."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.kernel: Any = None
        self.refused: StageResult | None = None
        self.details: dict[str, Any] = {}

    def compile(self, carried: Carried) -> list[StageResult]:
        job = self.job
        _cupy_environment(job)
        import cupy

        options = _options(job)
        jitify = bool(job.options["jitify"])
        cooperative = bool(job.options["enable_cooperative_groups"])
        details: dict[str, Any] = {"cupy": cupy.__version__, "jitify": jitify,
                                   "enable_cooperative_groups": cooperative, "options": options}
        if "jitify_warmup_s" in job.options:  # the run's one warm-up, whose headers it reused
            details["jitify_warmup_s"] = job.options["jitify_warmup_s"]
        if os.environ.get("CUDA_PATH"):
            details["cuda_path"] = os.environ["CUDA_PATH"]
        self.details = details
        started = time.monotonic()
        try:
            # The kernel as C++ names it: CuPy hands it to NVRTC as a name expression, and
            # get_function finds the lowered name by it (a mangled name is taken as it is).
            expressions = (job.kernel,) if job.kernel and not is_mangled(job.kernel) else None
            module = cupy.RawModule(code=decode(Path(job.source).read_bytes()),
                                    options=tuple(options), jitify=jitify,
                                    enable_cooperative_groups=cooperative,
                                    name_expressions=expressions)
            self.kernel = module.get_function(job.kernel)
        except Exception as exc:  # CuPy raises CompileException, CUDADriverError, ...
            text = f"{type(exc).__name__}: {exc}"
            # A driver error here comes from linking/loading the image, after NVRTC succeeded.
            refused = StageResult("load", "failed", decisive_line(text) or text.splitlines()[0],
                                  text[-20_000:], time.monotonic() - started, details)
            if type(exc).__name__ == "CUDADriverError":
                self.refused = refused
                return [StageResult("compile", "ok", "", "", 0.0, details)]
            return [replace(refused, stage="compile")]
        return [StageResult("compile", "ok", "", f"cupy.RawModule({options}, jitify={jitify})",
                            time.monotonic() - started, details)]

    def load(self, carried: Carried) -> list[StageResult]:
        if self.refused is not None:
            return [self.refused]
        return [StageResult("load", "ok", "", f"get_function({self.job.kernel!r})", 0.0, {})]

    def run(self, carried: Carried) -> list[StageResult]:
        job, launch_spec = self.job, self.job.run
        if launch_spec is None:
            return []
        import cupy

        from ..device.checks import case_arguments, compare_outputs

        started = time.monotonic()
        try:
            launched, host = case_arguments(job)
            device = {a.name: cupy.asarray(a.value) for a in launched if not a.scalar}
            arguments = [a.value[()] if a.scalar else device[a.name] for a in launched]
            grid = tuple([*launch_spec.grid, 1, 1][:3])
            block = tuple([*launch_spec.block, 1, 1][:3])
            shared = launch_spec.shared_bytes
            if shared:
                self.kernel.max_dynamic_shared_size_bytes = shared
            self.kernel(grid, block, tuple(arguments), shared_mem=shared)
            cupy.cuda.Device().synchronize()
            for argument in launched:
                if argument.written:
                    host[argument.name] = cupy.asnumpy(device[argument.name])
            status, message, log, more = compare_outputs(job, host)
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            return [StageResult("run", "failed", text.splitlines()[0], text,
                                time.monotonic() - started)]
        return [StageResult("run", status, message, log, time.monotonic() - started, more)]
