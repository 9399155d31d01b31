"""What a cell's worker is to do: its job (toolkit and library environments, the host
compiler, the frontend's own preparation, an earlier run's build with --prebuilt), or the
stages that say at once why nothing can run. Kept apart from the runner, which schedules,
executes and judges."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path

from ..common.removal import emptied, removed
from ..common.versions import TOOLKIT_OWN
from ..config.corpus import Variant
from ..config.options import DEFAULT_CELL_TIMEOUT_S, RunOptions
from ..config.plan import BUNDLED, Cell
from ..errors import EnvironmentUnavailable, Failure, UserError
from ..providers import Environment, LibraryEnvironment
from ..providers.wheels import linked_components
from ..record.results import ARTIFACTS_DIR, CELLS_DIR, load_cell
from ..stages.cell.files import COMPILE_RECORD, LIBRARY
from ..stages.cell.job import Job, VariantSettings
from ..stages.cell.result import StageResult
from ..stages.cell.sequence import GPU_STAGES
from ..stages.frontends import frontend
from .cupy_warmup import JitifyWarmups
from .environments import Environments
from .gpu import DeviceInfo
from .job_preparation import JobContext, preparation

# The versions key naming the toolkit whose runtime a prebuilt shared library loads with.
RUNTIME_FOR_LIBRARY = "runtime for the prebuilt library"
# The variant's fields a job takes as the case said them (kernel, run, time, options,
# build...): their one declaration, VariantSettings, is both sides' type. The others are
# made for the cell (its flags, host compiler, time left, paths).
AS_DECLARED = tuple(f.name for f in fields(VariantSettings))


def cell_limit(variant: Variant, options: RunOptions, frontend_name: str) -> float:
    """A cell's limit (seconds): the case's `timeout`, else --cell-timeout, else its
    frontend's own, else the run's default. One limit for every frontend stopped a torch
    extension, minutes of compiling, at 300 s."""
    return (variant.timeout or options.cell_timeout or frontend(frontend_name).timeout_s
            or DEFAULT_CELL_TIMEOUT_S)


def runs_to_its_limit(variant: Variant, cell: Cell, options: RunOptions,
                      gpu: bool) -> float | None:
    """The seconds a cell is known to take before it ever ran: its limit, where its case
    expects it to run to it (`outcome = "timeout"`: a kernel that never returns, a compiler
    that hangs), and where it gets that far (a hang at load or run needs a GPU). A first
    run that guessed such a cell at its frontend's second started the 20 s hang late, and
    the timed cells waiting for the GPU to be idle waited it out after every other cell
    (the faults corpus on an H100: 44.9 s cold against 36.0 s with the costs recorded)."""
    expected = variant.expectation_for(cell.axes())
    if expected.outcome != "timeout" or (expected.stage in GPU_STAGES and not gpu):
        return None
    return cell_limit(variant, options, cell.frontend)


@dataclass(frozen=True)
class NoJob:
    """A cell that gets no job: the stages that say at once why (an environment that failed,
    a compiler the machine lacks, an earlier run's record of it), its whole record."""

    stages: list[StageResult]

class CellJobs:
    """Each cell's job, made the same way for every cell of the run."""

    def __init__(self, options: RunOptions, envs: Environments, device: DeviceInfo,
                 warmups: JitifyWarmups, memory_bytes: int | None,
                 time_left: Callable[[float], float]) -> None:
        self.options, self.envs, self.device, self.warmups = options, envs, device, warmups
        self.memory_bytes, self.time_left = memory_bytes, time_left
        self._resolved: dict[Path, str] = {}

    def resolved(self, path: Path) -> str:
        """A variant's source, the run's artifacts folder: resolved once per run rather than
        once per cell (each resolve is a walk of lstat calls)."""
        if path not in self._resolved:
            self._resolved[path] = str(path.resolve())
        return self._resolved[path]

    def job_for(self, cell: Cell, variant: Variant
                ) -> tuple[Job | NoJob, dict[str, str]]:
        """What a worker is to do for the cell, or the stages that say at once why nothing can."""
        env: Environment | None = None
        versions: dict[str, str] = {}
        workdir = self.options.out / ARTIFACTS_DIR / cell.slug
        prebuilt: Path | None = None
        if not self.compiled_here(cell):
            imported = self.import_prebuilt(cell, workdir, versions)
            if isinstance(imported, NoJob):
                return imported, versions
            prebuilt = imported
            env = self.runtime_for_prebuilt(cell, prebuilt)
            if env is not None:  # which runtime the prebuilt library is loaded with, said
                versions[RUNTIME_FOR_LIBRARY] = f"toolkit {cell.toolkit} ({env.provider})"
        if cell.toolkit != BUNDLED and prebuilt is None:
            got = self.envs.toolkit(cell.toolkit)
            if isinstance(got, Failure):
                said = f"toolkit {cell.toolkit} environment: {got.reason}"
                return NoJob([StageResult("compile", "error", said)]), versions
            env = got
            if "clang" in frontend(cell.frontend).needs:
                env = self.envs.with_clang(env)
            versions.update(env.packages or env.tool_versions)
            if "nvcc" in frontend(cell.frontend).needs:  # which nvcc built it, and with what
                versions.update({k: v for k, v in env.tool_versions.items()
                                 if k in ("nvcc", "nvcc_from", "host_compiler")})
            missing = env.missing_for(cell.frontend, frontend(cell.frontend).needs)
            named = variant.host_compiler or cell.host_compiler
            if missing and not (named and env.nvcc
                                and missing == env.nvcc_unusable):  # the case names its own
                return NoJob([StageResult("compile", "unavailable", missing)]), versions
            unknown = env.lacks_arch(cell.arch)
            if unknown:
                return NoJob([StageResult("compile", "unsupported", unknown)]), versions
        spec = frontend(cell.frontend)
        if spec.needs_gpu_to_compile and not self.device.present:
            reason = f"{spec.needs_gpu_to_compile}: {self.device.reason}"
            return NoJob([StageResult("compile", "unavailable", reason)]), versions
        library: LibraryEnvironment | None = None
        if self.toolkit_own(cell):  # the toolkit's own copy of a header library: nothing
            versions[f"{cell.library} (the toolkit's own)"] = TOOLKIT_OWN  # put ahead of it
        request = self.library_request(cell) if prebuilt is None else None
        if request is not None:
            lib = self.envs.library(*request, env)
            if isinstance(lib, Failure):
                said = f"{cell.library} environment: {lib.reason}"
                return NoJob([StageResult("compile", "error", said)]), versions
            library = lib
            versions.update(lib.packages)
        # The python axis: another Python's headers for the binding, prepared once a run.
        python = self.envs.python_headers(cell.python) if cell.python and prebuilt is None \
            else None
        if isinstance(python, Failure):
            said = f"Python {cell.python}'s headers: {python.reason}"
            return NoJob([StageResult("compile", "error", said)]), versions
        if python is not None:
            versions["python headers"] = python.package
        # A component whose library the case links (-lcublas): its libraries, fetched now.
        if env is not None and env.from_wheels:
            for component, flag in linked_components(variant.flags_for(cell.axes())).items():
                linked = self.envs.component_libraries(env, component, flag)
                if isinstance(linked, Failure):
                    said = f"{component} libraries for {flag}: {linked.reason}"
                    return NoJob([StageResult("compile", "error", said)]), versions
                env = replace(env, library_dirs=(*env.library_dirs, *linked.library_dirs))
                versions.update(linked.packages)
        if prebuilt is None:
            emptied(workdir)
        named = variant.host_compiler or cell.host_compiler
        host = self.host_compiler(named) if prebuilt is None else None
        if isinstance(host, StageResult):
            return NoJob([host]), versions
        if host:
            versions["host_compiler"] = f"{named} {host[1]}"
        job = Job(
            cell_id=cell.id, arch=cell.arch, source=self.resolved(variant.source),
            frontend=cell.frontend, workdir=f"{self.resolved(workdir.parent)}/{workdir.name}",
            timeout=self.time_left(cell_limit(variant, self.options, cell.frontend)),
            flags=variant.flags_for(cell.axes()),
            **{name: getattr(variant, name) for name in AS_DECLARED},
            env=env, library=library,
            gpu_stages=self.device.present,
            prebuilt=str(prebuilt) if prebuilt else None,
            memory_bytes=self.memory_bytes,
            host_compiler_path=host[0] if host else None,
            host_compiler_version=host[1] if host else None,
            disassembler=self.envs.sass_tools() if prebuilt is not None
            and (variant.artifacts or variant.build) else None,
            case_dir=self.resolved(variant.case_dir or variant.source.parent),
            python_headers=python)
        prepare = preparation(spec)
        if prepare is not None:
            try:
                prepared = prepare(job, JobContext(variant, env, self.envs, self.warmups,
                                                        prebuilt is not None, versions))
            except (UserError, EnvironmentUnavailable):
                raise
            except Exception as exc:  # a plugin's prepare may raise anything: its cell's
                prepared = StageResult("compile", "error", f"the {spec.name} frontend's "
                                       f"prepare raised {type(exc).__name__}: {exc}")
            if isinstance(prepared, StageResult):
                return NoJob([prepared]), versions
            job = prepared
        return job, versions

    def toolkit_own(self, cell: Cell) -> bool:
        """Whether the cell takes its header library from its toolkit (`toolkit-own`)."""
        declared = self.envs.matrix.libraries.get(cell.library or "")
        return cell.library_version == TOOLKIT_OWN and declared is not None \
            and bool(declared.headers)

    def library_request(self, cell: Cell) -> tuple[str, str, int | None] | None:
        """The library environment a cell compiled here asks for (name, version, CUDA
        major: CuPy's wheels are per major), or None (no library axis, the toolkit's own)."""
        if not (cell.library and cell.library_version) or self.toolkit_own(cell):
            return None
        major = int(cell.toolkit.split(".")[0]) if cell.library == "cupy" else None
        return cell.library, cell.library_version, major

    def compiled_here(self, cell: Cell) -> bool:
        """Whether the cell's build is made by this run (not taken from --prebuilt)."""
        return not self.options.prebuilt or cell.frontend in self.options.compile_here

    def environment_needs(self, cell: Cell) -> tuple[tuple[str, ...], ...]:
        """The toolkit and library environments the cell's job will ask for (its group's
        too: they differ only in arch), each as `prepare_environment` takes it."""
        if not self.compiled_here(cell):
            return ()
        toolkit = () if cell.toolkit == BUNDLED else (("toolkit", cell.toolkit),)
        if frontend(cell.frontend).needs_gpu_to_compile and not self.device.present:
            # job_for says why at once, after its toolkit and before its library: a first
            # run without a GPU installed CuPy (70 MB) for 20 cells that never use it, and
            # they waited for it.
            return toolkit
        request = self.library_request(cell)
        library = () if request is None else (("library", request[0], request[1],
                                               str(request[2])),)
        return (*toolkit, *library)

    def prepare_environment(self, cell: Cell, need: object) -> None:
        """One of `environment_needs`, prepared ahead of the cell (the run's prefetch):
        Environments keeps it, failures included, for job_for to find."""
        if need == ("toolkit", cell.toolkit):
            self.envs.toolkit(cell.toolkit)
            return
        request = self.library_request(cell)
        if request is None:
            return
        # The toolkit, where the library is built from source with it (else unused).
        built = request[0] in self.envs.matrix.libraries \
            and request[1] in self.envs.matrix.libraries[request[0]].sources
        env = self.envs.toolkit(cell.toolkit) if built and cell.toolkit != BUNDLED else None
        if isinstance(env, Failure):
            return
        self.envs.library(*request, env)

    def runtime_for_prebuilt(self, cell: Cell, prebuilt: Path) -> Environment | None:
        """A prebuilt shared library (a host-entry case's libcase.so, linked against its
        toolkit's CUDA runtime) needs that runtime where it is loaded: the cell's toolkit as
        this machine's provider prepares it, its libraries on the cell's path. None where
        nothing was built as a library, or the provider cannot prepare the toolkit here
        (the load then says which library is missing)."""
        if cell.toolkit == BUNDLED or not (prebuilt / LIBRARY).is_file():
            return None
        got = self.envs.toolkit(cell.toolkit, wanted=False)
        return None if isinstance(got, Failure) else got

    def import_prebuilt(self, cell: Cell, workdir: Path, versions: dict[str, str]
                        ) -> Path | NoJob:
        """The cell's folder from an earlier run (--prebuilt, another machine's compile),
        copied into this run's, its versions recorded; or that run's stages, when it never
        compiled there, or why it is not there."""
        assert self.options.prebuilt is not None
        earlier = self.options.prebuilt / ARTIFACTS_DIR / cell.slug
        record = self.options.prebuilt / CELLS_DIR / f"{cell.slug}.json"
        try:  # another machine's record, read as every record is: bounded and typed
            recorded = load_cell(record) if record.exists() else None
        except UserError as exc:
            return NoJob([StageResult("compile", "error", f"--prebuilt: {exc}")])
        if (earlier / COMPILE_RECORD).exists():
            if earlier.resolve() != workdir.resolve():
                removed(workdir)
                shutil.copytree(earlier, workdir)
            if recorded is not None:
                versions.update(recorded.versions)
            return workdir
        if recorded is not None:  # it never compiled there: its stages are the whole story
            versions.update(recorded.versions)
            return NoJob(list(recorded.stages))
        return NoJob([StageResult("compile", "unavailable",
                                  f"not built in {self.options.prebuilt}")])

    def host_compiler(self, name: str | None) -> tuple[str, str] | StageResult | None:
        """The host compiler a variant or the tier's axis names for nvcc (path, version), or
        why it cannot have it here; None when none is named (the run's choice for the
        toolkit)."""
        if not name:
            return None
        found = self.envs.toolkit_provider.host_compiler(name)
        if isinstance(found, Failure):
            return StageResult("compile", "unavailable", found.reason)
        return found

