"""The load and run stages, on a real GPU through the CUDA driver API (cuda-python).

Load: the cubin when its SASS can run on this GPU, otherwise (or when the case
asks for it) the PTX through the driver's JIT, which is where a PTX ISA newer
than the driver is refused. Run: fresh random inputs, outputs poisoned first
(NaN, 0xFF bytes), one launch, then the outputs are compared with the case's
NumPy reference at its stated tolerance. Host-entry cases (CUTLASS) are called
through their shared library instead of a bare kernel launch.

Only imported inside a cell worker on a machine with a GPU.

Why the load and the run are one step of a cell's pipeline (stages/runtime/pipeline.py's
`gpu_step`), not two: they share one context (the cell's own, or the GPU server's), the
module or library handle the load made, which the run launches from, and the clean-up
that must follow them whichever ends the cell (the module unloaded, every allocation
freed, then the server asks whether its context can serve the next cell). On a GPU's
server both are one request: split, the server would hold a cell's module between two
requests and the run's process would owe it a clean-up call, where today a server that
dies is recorded at the stage it noted (`enter_stage` below) with nothing left behind.
The one decision taken here, no run after a load that did not work or where the case
asks no run, is the pipeline's rule (stages/cell/sequence.py: `stops`, a load that did not work ends
the cell) applied inside the step.
"""

from __future__ import annotations

import ctypes
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from cuda.bindings import driver as cu

from ...common.versions import Arch, sass_runs_on
from ..cell.job import Job
from ..cell.result import Stage, StageResult, Status
from ..cell.sequence import stops
from ..cell.specs import TimingSpec
from ..process.hang import enter_stage
from . import timing
from .checks import bytes_moved, case_arguments, compare_outputs

# What a device stage body says: its status, message, log and details.
DeviceSaid = tuple[Status, str, str, dict[str, Any]]


class DriverError(Exception):
    def __init__(self, call: str, status: Any) -> None:
        name = getattr(status, "name", str(status))
        _, text = cu.cuGetErrorString(status)
        detail = text.decode() if isinstance(text, bytes) else ""
        super().__init__(f"{call}: {name}" + (f" ({detail})" if detail else ""))
        self.status_name = name


def _check(call: str, result: tuple[Any, ...]) -> Any:
    status, *values = result
    if status != cu.CUresult.CUDA_SUCCESS:
        raise DriverError(call, status)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def _device_arch(device: Any) -> Arch:
    attr = cu.CUdevice_attribute
    major = _check("cuDeviceGetAttribute", cu.cuDeviceGetAttribute(
        attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device))
    minor = _check("cuDeviceGetAttribute", cu.cuDeviceGetAttribute(
        attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device))
    return Arch.parse(f"sm_{major}{minor}")


def _timed(stage: Stage, body: Callable[[], DeviceSaid]) -> StageResult:
    started = time.monotonic()
    try:
        status, message, log, details = body()
    except DriverError as exc:
        return StageResult(stage, "failed", str(exc), str(exc), time.monotonic() - started,
                           {"driver_error": exc.status_name})
    except Exception as exc:  # whatever a value raises ends its cell alone
        return StageResult(stage, "error", raised(exc), traceback.format_exc()[-20_000:],
                           time.monotonic() - started)
    # How the module was loaded is the run's to act on (a PTX JIT's prediction): a field.
    via = details.pop("via", None)
    return StageResult(stage, status, message, log, time.monotonic() - started, details,
                       via=via)


def raised(exc: BaseException) -> str:
    """An exception as one line: its type and its message's last line (what a traceback
    ends in), for a cell's message."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[-1]}" if lines else type(exc).__name__


class GpuSession:
    """The primary context of device 0, and the arrays of one cell."""

    def __init__(self) -> None:
        _check("cuInit", cu.cuInit(0))
        self.device = _check("cuDeviceGet", cu.cuDeviceGet(0))
        self.context = _check("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(self.device))
        _check("cuCtxSetCurrent", cu.cuCtxSetCurrent(self.context))
        self.arch = _device_arch(self.device)
        self.allocations: list[Any] = []
        self._memory: Any = None  # process_memory.ProcessMemory, made when first asked

    def upload(self, array: np.ndarray) -> Any:
        pointer = _check("cuMemAlloc", cu.cuMemAlloc(max(1, array.nbytes)))
        self.allocations.append(pointer)
        _check("cuMemcpyHtoD", cu.cuMemcpyHtoD(pointer, array.ctypes.data, array.nbytes))
        return pointer

    def download(self, pointer: Any, array: np.ndarray) -> None:
        _check("cuMemcpyDtoH", cu.cuMemcpyDtoH(array.ctypes.data, pointer, array.nbytes))

    def time(self, launch: Callable[[], None], settings: TimingSpec) -> dict[str, Any]:
        """The launch timed on the GPU (timing.py): CUDA events around each launch on the
        default stream, a write over twice the L2's size before each for a cold L2, and
        the clocks and throttle reasons NVML reports after the last sample.

        The stream is held (cuStreamWaitValue32 on a host-mapped flag) while the flush,
        the events and the launch are enqueued, then released at once: otherwise the
        GPU reaches the start event while Python is still enqueueing the launch, and the
        host's tens of microseconds are timed as the kernel's (on an H100, a 4 MiB saxpy
        timed 32 us with a hot L2 and 9 us with a cold one, where the flush happened to
        hold the stream)."""
        cold = settings.l2 == "cold"
        flush_bytes = 2 * int(_check("cuDeviceGetAttribute", cu.cuDeviceGetAttribute(
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, self.device))) if cold else 0
        scratch = _check("cuMemAlloc", cu.cuMemAlloc(flush_bytes)) if cold else None
        events = [_check("cuEventCreate", cu.cuEventCreate(0)) for _ in range(2)]
        host_flag = _check("cuMemHostAlloc", cu.cuMemHostAlloc(4, cu.CU_MEMHOSTALLOC_DEVICEMAP))
        flag = ctypes.c_uint32.from_address(int(host_flag))
        device_flag = _check("cuMemHostGetDevicePointer",
                             cu.cuMemHostGetDevicePointer(host_flag, 0))

        def measure(run: Callable[[], None]) -> float:
            flag.value = 0
            _check("cuStreamWaitValue32", cu.cuStreamWaitValue32(
                0, device_flag, 1, cu.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ))
            try:
                if cold:
                    _check("cuMemsetD8Async", cu.cuMemsetD8Async(scratch, 0, flush_bytes, 0))
                _check("cuEventRecord", cu.cuEventRecord(events[0], 0))
                run()
                _check("cuEventRecord", cu.cuEventRecord(events[1], 0))
            finally:
                flag.value = 1  # the stream goes on, whatever was enqueued
            _check("cuEventSynchronize", cu.cuEventSynchronize(events[1]))
            return float(_check("cuEventElapsedTime",
                                cu.cuEventElapsedTime(events[0], events[1]))) * 1000.0

        try:
            samples = timing.sample(launch, measure, settings)
        finally:
            _check("cuCtxSynchronize", cu.cuCtxSynchronize())
            for event in events:
                cu.cuEventDestroy(event)
            cu.cuMemFreeHost(host_flag)
            if scratch is not None:
                cu.cuMemFree(scratch)
        return {**timing.sample_summary(samples, settings), **self.clocks()}

    def clocks(self) -> dict[str, Any]:
        """The SM clock and the reasons it is held down, from NVML by this GPU's UUID:
        empty where nvidia-ml-py is not installed (the figure stands, unexplained)."""
        try:
            import pynvml
        except ImportError:
            return {}
        try:
            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByUUID(self.identity()["uuid"])
            reasons = int(pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle))
            # Idle is no throttle: between samples the GPU may say it.
            held = reasons & ~int(pynvml.nvmlClocksEventReasonGpuIdle)
            return {"sm_clock_mhz": int(pynvml.nvmlDeviceGetClockInfo(
                        handle, pynvml.NVML_CLOCK_SM)),
                    "max_sm_clock_mhz": int(pynvml.nvmlDeviceGetMaxClockInfo(
                        handle, pynvml.NVML_CLOCK_SM)),
                    "clock_event_reasons": held}
        except pynvml.NVMLError as exc:
            return {"clocks_unread": str(exc)}

    def peak_bandwidth(self) -> float | None:
        """The GPU's peak memory bandwidth (GB/s) from NVML's maximum memory clock and bus
        width, as NVBench computes it; from the driver's attributes where NVML is absent."""
        try:
            import pynvml
        except ImportError:
            pynvml = None
        if pynvml is not None:
            try:
                pynvml.nvmlInit()
                handle = pynvml.nvmlDeviceGetHandleByUUID(self.identity()["uuid"])
                return timing.peak_bandwidth_gbs(
                    pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM),
                    int(pynvml.nvmlDeviceGetMemoryBusWidth(handle)))
            except pynvml.NVMLError:
                pass  # an NVML that cannot say: the driver's attributes below
        attribute = cu.CUdevice_attribute
        status, clock_khz = cu.cuDeviceGetAttribute(
            attribute.CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, self.device)
        status_width, width = cu.cuDeviceGetAttribute(
            attribute.CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, self.device)
        if status != cu.CUresult.CUDA_SUCCESS or status_width != cu.CUresult.CUDA_SUCCESS:
            return None
        return timing.peak_bandwidth_gbs(clock_khz / 1000, int(width)) if clock_khz else None

    def close(self) -> None:
        for pointer in self.allocations:
            cu.cuMemFree(pointer)
        self.allocations = []

    def identity(self) -> dict[str, str]:
        """The GPU this context is on, as the cells that ran on it record it."""
        _, raw = cu.cuDeviceGetName(96, self.device)
        _, uuid = cu.cuDeviceGetUuid(self.device)
        text = bytes(uuid.bytes).hex()
        return {"name": raw.split(b"\0")[0].decode(), "arch": self.arch.name,
                "uuid": "GPU-" + "-".join((text[:8], text[8:12], text[12:16], text[16:20],
                                           text[20:]))}

    def warm_up(self) -> None:
        """One launch of an empty kernel: the driver reserves what a context's first launch
        needs (local memory, the printf buffer: about 90 MiB on an H100) once, so a cell is
        never taken for leaving that behind."""
        ptx = (b".version 6.0\n.target sm_50\n.address_size 64\n"
               b".visible .entry cudamatrix_warm_up()\n{\n\tret;\n}\n\0")
        module = _check("cuModuleLoadData", cu.cuModuleLoadData(ptx))
        function = _check("cuModuleGetFunction",
                          cu.cuModuleGetFunction(module, b"cudamatrix_warm_up"))
        _check("cuLaunchKernel", cu.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0))
        _check("cuCtxSynchronize", cu.cuCtxSynchronize())
        cu.cuModuleUnload(module)

    def free_bytes(self) -> int:
        status, free, _ = cu.cuMemGetInfo()
        return int(free) if status == cu.CUresult.CUDA_SUCCESS else -1

    # The context's limits a cell can change or use up (cuCtxSetLimit's): the device
    # heap (malloc/new in a kernel), the printf buffer, the per-thread stack.
    LIMITS = ("CU_LIMIT_MALLOC_HEAP_SIZE", "CU_LIMIT_PRINTF_FIFO_SIZE", "CU_LIMIT_STACK_SIZE")

    def limits(self) -> dict[str, int]:
        """The context's limits now, by name."""
        found = {}
        for name in self.LIMITS:
            status, value = cu.cuCtxGetLimit(getattr(cu.CUlimit, name))
            if status == cu.CUresult.CUDA_SUCCESS:
                found[name] = int(value)
        return found

    def restore_limits(self, saved: dict[str, int]) -> str:
        """Each limit a cell changed set back to what the context started with; why the
        context cannot be given to the next cell where one will not go back."""
        for name, value in self.limits().items():
            if saved.get(name, value) != value:
                (status,) = cu.cuCtxSetLimit(getattr(cu.CUlimit, name), saved[name])
                if status != cu.CUresult.CUDA_SUCCESS:
                    return f"the cell changed {name} ({value}, was {saved[name]})"
        return ""

    def held_bytes(self) -> int:
        """The device memory this process holds (its context, its buffers), as NVML
        counts it per process (process_memory.py); -1 where that cannot be read."""
        if self._memory is None:
            from .process_memory import ProcessMemory

            self._memory = ProcessMemory(self.identity()["uuid"])
        used = self._memory.used()
        return -1 if used is None else used

    def unusable(self, free_at_start: int, slack: int, held_at_start: int = -1) -> str:
        """Why the next cell must not have this context (an empty string when it may): a
        sticky fault left it broken, or device memory went missing beyond what the driver
        reserves once for what a module uses (the printf buffer of a module with an
        assert: 90 MiB on an H100), counted from the context's start, not per cell: what
        this process holds where NVML says it (`held_at_start`), for the GPU's other
        servers and their cells take the GPU's free memory too; else the GPU's free."""
        (status,) = cu.cuCtxSynchronize()
        if status != cu.CUresult.CUDA_SUCCESS:
            return f"the context is broken ({status.name})"
        status, probe = cu.cuMemAlloc(256)
        if status != cu.CUresult.CUDA_SUCCESS:
            return f"the context is broken ({status.name})"
        cu.cuMemFree(probe)
        held = self.held_bytes() if held_at_start >= 0 else -1
        if held >= 0:
            if held > held_at_start + slack:
                return (f"{(held - held_at_start) >> 20} MiB more device memory held than "
                        "when the context started")
            return ""
        free = self.free_bytes()
        if free_at_start >= 0 and 0 <= free < free_at_start - slack:
            return (f"{(free_at_start - free) >> 20} MiB of device memory went missing since "
                    "the context started")
        return ""


def _prepare_args(job: Job, gpu: GpuSession) -> tuple[dict[str, np.ndarray], list[Any],
                                                        list[tuple[Any, np.ndarray]], int]:
    """The arrays by name, the launch's values, the outputs to read back, and the bytes a
    launch moves at the least (checks.bytes_moved)."""
    arguments, arrays = case_arguments(job)
    values: list[Any] = []
    outputs: list[tuple[Any, np.ndarray]] = []
    for argument in arguments:
        if argument.scalar:
            values.append(argument.value.reshape(1))
            continue
        pointer = gpu.upload(argument.value)
        values.append(pointer)
        if argument.written:
            outputs.append((pointer, argument.value))
    return arrays, values, outputs, bytes_moved(arguments)


def _launch_kernel(job: Job, gpu: GpuSession, module: Any) -> DeviceSaid:
    name = (job.kernel or "").encode()
    function = _check("cuModuleGetFunction", cu.cuModuleGetFunction(module, name))
    arrays, values, outputs, moved = _prepare_args(job, gpu)
    launch_spec = job.run
    assert launch_spec is not None  # run_stages launches only a job with a [variant.run]
    shared = launch_spec.shared_bytes
    # Dynamic shared memory beyond 48 KiB needs this opt-in; a case may leave it out
    # (shared_opt_in = false) to show what a launch without it does.
    if shared > 0 and launch_spec.shared_opt_in:
        _check("cuFuncSetAttribute", cu.cuFuncSetAttribute(
            function, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            shared))
    holders = [np.asarray([int(v)], dtype=np.uint64) if not isinstance(v, np.ndarray) else v
               for v in values]
    pointers = np.asarray([h.ctypes.data for h in holders], dtype=np.uint64)
    grid = [*launch_spec.grid, 1, 1][:3]
    block = [*launch_spec.block, 1, 1][:3]
    launch = (f"cuLaunchKernel (grid {grid}, block {block}, "
              f"{shared} bytes of dynamic shared memory)")

    def start() -> None:
        _check(launch, cu.cuLaunchKernel(function, *grid, *block, shared, 0,
                                         pointers.ctypes.data, 0))

    start()
    _check("cuCtxSynchronize", cu.cuCtxSynchronize())
    for pointer, array in outputs:
        gpu.download(pointer, array)
    status, message, log, details = compare_outputs(job, arrays)
    settings = job.time
    if status != "ok" or settings is None:
        return status, message, log, details
    # Timed only once the result is right: a wrong kernel's speed means nothing.
    details["timing"] = gpu.time(start, settings)
    moved = settings.bytes or moved
    details["timing"].update(timing.bandwidth(details["timing"], moved, gpu.peak_bandwidth()))
    too_slow = timing.over_limit(details["timing"], settings)
    return ("failed" if too_slow else "ok"), too_slow, log, details


def _call_host_entry(job: Job, gpu: GpuSession, library: ctypes.CDLL
                     ) -> DeviceSaid:
    entry = getattr(library, job.kernel or "")
    entry.restype = ctypes.c_int
    arrays, values, outputs, _ = _prepare_args(job, gpu)
    arguments = [ctypes.c_void_p(int(v)) if not isinstance(v, np.ndarray)
                 else np.ctypeslib.as_ctypes(v)[0] for v in values]
    status = entry(*arguments)
    _check("cuCtxSynchronize", cu.cuCtxSynchronize())
    if status != 0:
        return "failed", f"{job.kernel} returned status {status}", "", {"status": status}
    for pointer, array in outputs:
        gpu.download(pointer, array)
    return compare_outputs(job, arrays)


def load_and_run(job: Job, ptx: Path | None, cubin: Path | None,
                 library: Path | None = None, session: GpuSession | None = None
                 ) -> list[StageResult]:
    """The cell's load and run stages: in a context of their own (a cell's own process),
    or in `session`, a GPU server's (device_server.py), which gets it back with the
    cell's module unloaded and every allocation freed."""
    gpu_holder: list[GpuSession] = []
    modules: list[Any] = []
    libraries: list[ctypes.CDLL] = []
    try:
        return _load_and_run(job, ptx, cubin, library, session, gpu_holder, modules,
                             libraries)
    finally:
        if session is not None:
            for module in modules:
                cu.cuModuleUnload(module)
            session.close()


def _load_and_run(job: Job, ptx: Path | None, cubin: Path | None, library: Path | None,
                  session: GpuSession | None, gpu_holder: list[GpuSession],
                  modules: list[Any], libraries: list[ctypes.CDLL]) -> list[StageResult]:
    def load() -> DeviceSaid:
        gpu = session or GpuSession()
        gpu_holder.append(gpu)
        target = Arch.parse(job.arch)
        mode = job.load
        details: dict[str, Any] = {"gpu_arch": gpu.arch.name}
        if library is not None and mode != "ptx":
            details["via"] = "library"
            try:
                libraries.append(ctypes.CDLL(str(library)))
            except OSError as exc:  # the dynamic loader's own words
                said = str(exc)
                if "cannot open shared object file" in said:  # a library this machine lacks
                    return ("unavailable", f"{library.name} cannot be loaded here: {said}",
                            said, details)
                return "failed", f"{library.name} does not load: {said}", said, details
            return "ok", "", f"host entry library {library.name}", details
        use_cubin = mode == "cubin" or (mode == "auto" and cubin is not None
                                        and sass_runs_on(target, gpu.arch))
        if use_cubin and cubin is not None:
            details["via"] = "cubin"
            # load = "cubin" asks the driver even when the SASS cannot fit this GPU:
            # its refusal (no binary for the GPU) is what such a case checks.
            modules.append(_check("cuModuleLoadData", cu.cuModuleLoadData(cubin.read_bytes())))
            return "ok", "", f"loaded {target} cubin on {gpu.arch}", details
        if ptx is None:
            return ("skipped", f"no PTX to JIT and a {target} cubin cannot run on {gpu.arch}",
                    "", details)
        details["via"] = "ptx-jit"
        details["ptx_version"] = _ptx_version(ptx)
        text = ptx.read_bytes() + b"\0"
        try:
            modules.append(_check("cuModuleLoadData", cu.cuModuleLoadData(text)))
        except DriverError as exc:
            details["driver_error"] = exc.status_name
            return ("failed", f"PTX .version {details['ptx_version']} JIT: {exc}", str(exc),
                    details)
        return "ok", "", f"JIT-compiled PTX .version {details['ptx_version']} on {gpu.arch}", \
            details

    enter_stage(job.work, "load")
    results = [_timed("load", load)]
    if stops(results[0]) or not job.run or not job.kernel:
        return results

    def run() -> DeviceSaid:
        gpu = gpu_holder[0]
        try:
            if libraries and not modules:
                return _call_host_entry(job, gpu, libraries[0])
            return _launch_kernel(job, gpu, modules[0])
        finally:
            gpu.close()

    enter_stage(job.work, "run")
    results.append(_timed("run", run))
    return results


def _ptx_version(ptx: Path) -> str:
    for line in ptx.read_text(errors="replace").splitlines():
        if line.startswith(".version"):
            return line.split()[1]
    return "?"


def uses_device_heap(ptx: Path | None, cubin: Path | None) -> bool:
    """Whether a module calls the device heap (malloc, free, new): what it took from the
    heap, a context keeps for good, so the next cell would find less of it."""
    for path in (ptx, cubin):
        if path is not None and path.is_file():
            data = path.read_bytes()
            if b"malloc" in data:  # free and new call it too
                return True
    return False
