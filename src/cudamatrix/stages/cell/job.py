"""What a cell worker is asked to do: everything it needs, as JSON-ready data."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from .environment import Environment, LibraryEnvironment, PythonHeaders
from .specs import (
    ArtifactCheck,
    BuildSetting,
    BuildSpec,
    LaunchSpec,
    ResourceBudget,
    TimingSpec,
    from_data,
)

# The metadata of a field that does not change what a compile makes (where the cell runs,
# what is done with the build after it): the compile key leaves it out, and takes every
# other field as it is (orchestrator/compile_cache.py), so a field added for a new case key
# is in the key unless it says it is not.
AFTER_COMPILE = {"compiles": False}
# Fields the compile key reads in its own way (the toolkit's and library's versions and
# folders, the source and the case folder by their files).
KEYED_APART = {"compiles": "apart"}


@dataclass(frozen=True, kw_only=True)
class VariantSettings:
    """What a variant says that its cells' worker reads as the case said it, declared once
    as the type both sides share: the case reader's `Variant` is one (config/corpus.py), so
    is the worker's `Job`, and the orchestrator's `job_for` carries each field by its name.
    A case key the worker needs is one field here (with its metadata where it does not
    change a compile): the reader fills it, the compile key takes it, nothing else moves.
    The defaults are the declared ones (tests/unit/test_declared_defaults.py)."""

    kernel: str | None = None
    arch_flag: bool = True
    # [[variant.artifact]]: what the built files must (not) hold, judged after the compile.
    artifacts: tuple[ArtifactCheck, ...] = field(default=(), metadata=AFTER_COMPILE)
    # [variant.run] and [variant.time] (specs.py): None where the case launches nothing
    # or times nothing. Of the run, only `host` (a library's entry point) changes a
    # compile: the key reads it as host_entry.
    run: LaunchSpec | None = field(default=None, metadata=KEYED_APART)
    time: TimingSpec | None = field(default=None, metadata=AFTER_COMPILE)
    load: str = field(default="auto", metadata=AFTER_COMPILE)
    # [variant.options]: the frontend's own, its defaults filled in by the reader.
    options: Mapping[str, Any] = field(default_factory=dict)
    # A build cell's [variant.build]: not in the compile key (a build is no compile); the
    # build cache keys it with the build's own inputs (orchestrator/build_cache.py).
    build: BuildSpec | None = field(default=None, metadata=AFTER_COMPILE)
    # The most registers a thread of each kernel may take (nvcc's and NVRTC's
    # maxrregcount, ptxas's under clang): a spill a lower cap forces is the case's to see.
    maxrregcount: int | None = None
    # The C++ dialect every compiler line of the cell is given (-std=...): one word for
    # nvcc, NVRTC and clang alike, where a flag is each compiler's own spelling.
    std: str | None = None
    # [variant.resources]: the limits on each kernel's registers, spills, stack and shared
    # memory, judged at the inspect stage (the reader's and the worker's one field).
    resources: ResourceBudget | None = field(default=None, metadata=AFTER_COMPILE)


@dataclass(frozen=True)
class Job(VariantSettings):
    cell_id: str = field(metadata=AFTER_COMPILE)
    arch: str
    source: str = field(metadata=KEYED_APART)
    frontend: str
    workdir: str = field(metadata=AFTER_COMPILE)
    timeout: float = field(metadata=AFTER_COMPILE)
    flags: tuple[str, ...] = ()
    env: Environment | None = field(default=None, metadata=KEYED_APART)
    library: LibraryEnvironment | None = field(default=None, metadata=KEYED_APART)
    gpu_stages: bool = field(default=True, metadata=AFTER_COMPILE)
    prebuilt: str | None = field(default=None, metadata=AFTER_COMPILE)
    # The address space each compiler process (and NVRTC in the worker) may take.
    memory_bytes: int | None = field(default=None, metadata=AFTER_COMPILE)
    # Where the host compiler a case names for nvcc (-ccbin) is on this machine, and its
    # version, else the run's choice for the toolkit (the newest GCC that release
    # accepts). A case names the program (`host_compiler = "g++-11"`); the job, its path.
    host_compiler_path: str | None = None
    host_compiler_version: str | None = None
    # What the run found for a build cell (its project's folder, tools, $CUDA_HOME).
    build_setting: BuildSetting | None = field(default=None, metadata=AFTER_COMPILE)
    # A prebuilt cell's disassembler for SASS checks: its toolkit is never prepared on the
    # machine that loads it, so the run's SASS tools read its cubin.
    disassembler: str | None = field(default=None, metadata=AFTER_COMPILE)
    # The cells built by this one compile (compile_together): each one's cell_id, arch and
    # workdir; the job itself is any of them, its workdir the shared build's own.
    group: tuple[dict[str, str], ...] = field(default=(), metadata=AFTER_COMPILE)
    # How many archs of that one compile nvcc builds side by side (nvcc --threads; 1: one
    # after another): how the compile runs, not what it makes, so never in its key
    # (orchestrator/compile_strategy.py chooses it from the cores idle when it starts).
    threads: int = field(default=1, metadata=AFTER_COMPILE)
    # The case folder, which every relative path of the case starts from (its include
    # folders, as `validate` read them); empty for a job made without a case (a toy).
    case_dir: str = field(default="", metadata=KEYED_APART)
    # The GPU (its UUID) a cell that runs GPU work in its own process is lent for it,
    # while no GPU server times a cell there; empty: the process sees every GPU.
    gpu: str = field(default="", metadata=AFTER_COMPILE)
    # The Python headers a cell of the python axis is built against ("3.13": Debian's
    # libpython3.13-dev), prepared by the run; None: the worker's own interpreter's. Keyed
    # by its version and package, not by where the cache put them.
    python_headers: PythonHeaders | None = field(default=None, metadata=KEYED_APART)

    def compile_inputs(self) -> dict[str, Any]:
        """Every field that changes what a compile makes, by name, as JSON takes it: all but
        those marked AFTER_COMPILE or KEYED_APART."""
        data = asdict(self)
        return {f.name: data[f.name] for f in fields(self) if "compiles" not in f.metadata}

    @property
    def case_folder(self) -> str:
        """Where the case's relative paths start: its folder, else the source's own."""
        return self.case_dir or str(Path(self.source).parent)

    @property
    def cuobjdump(self) -> str | None:
        """The cuobjdump that reads this cell's cubins: its toolkit's, else the run's."""
        return (self.env.cuobjdump if self.env else None) or self.disassembler

    @property
    def host_entry(self) -> bool:
        """The case is run by calling an extern "C" host function of a shared library."""
        return self.run is not None and self.run.host

    @property
    def work(self) -> Path:
        return Path(self.workdir)

    def to_json(self) -> str:
        data = asdict(self)
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> Job:
        data = json.loads(text)
        data["flags"] = tuple(data["flags"])
        data["artifacts"] = tuple(from_data(ArtifactCheck, a) for a in data["artifacts"])
        for name, kind in (("run", LaunchSpec), ("time", TimingSpec), ("resources", ResourceBudget),
                           ("build", BuildSpec), ("build_setting", BuildSetting)):
            data[name] = None if data[name] is None else from_data(kind, data[name])
        data["group"] = tuple(data.get("group", ()))
        data["env"] = Environment.from_dict(data["env"]) if data["env"] else None
        data["library"] = (LibraryEnvironment.from_dict(data["library"])
                           if data["library"] else None)
        data["python_headers"] = (PythonHeaders.from_dict(data["python_headers"])
                                  if data.get("python_headers") else None)
        return cls(**data)
