"""What a cell worker is asked to do: everything it needs, as JSON-ready data."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .environment import Environment, LibraryEnvironment
from .specs import (
    ArtifactCheck,
    BuildSetting,
    BuildSpec,
    LaunchSpec,
    ResourceBudget,
    TimingSpec,
    from_data,
)


@dataclass(frozen=True)
class Job:
    cell_id: str
    arch: str
    source: str
    frontend: str
    workdir: str
    timeout: float
    flags: tuple[str, ...] = ()
    kernel: str | None = None
    arch_flag: bool = True
    artifacts: tuple[ArtifactCheck, ...] = ()
    # [variant.run] and [variant.time] (specs.py): None where the case launches nothing
    # or times nothing.
    run: LaunchSpec | None = None
    time: TimingSpec | None = None
    env: Environment | None = None
    library: LibraryEnvironment | None = None
    gpu_stages: bool = True
    load: str = "auto"
    options: dict[str, Any] = field(default_factory=dict)
    prebuilt: str | None = None
    # The address space each compiler process (and NVRTC in the worker) may take.
    memory_bytes: int | None = None
    # The host compiler a case names for nvcc (-ccbin) and its version, else the run's
    # choice for the toolkit (the newest GCC that release accepts).
    host_compiler: str | None = None
    host_compiler_version: str | None = None
    # [variant.resources]: the limits on each kernel's registers, spills, stack and shared
    # memory, judged at the inspect stage.
    budgets: ResourceBudget | None = None
    # A build cell's [variant.build], and what the run found for it (its project's folder,
    # tools, $CUDA_HOME).
    build: BuildSpec | None = None
    build_setting: BuildSetting | None = None
    # A prebuilt cell's disassembler for SASS checks: its toolkit is never prepared on the
    # machine that loads it, so the run's SASS tools read its cubin.
    disassembler: str | None = None
    # The cells built by this one compile (compile_together): each one's cell_id, arch and
    # workdir; the job itself is any of them, its workdir the shared build's own.
    group: tuple[dict[str, str], ...] = ()
    # The case folder, which every relative path of the case starts from (its include
    # folders, as `validate` read them); empty for a job made without a case (a toy).
    case_dir: str = ""
    # The GPU (its UUID) a cell that runs GPU work in its own process is lent for it,
    # while no GPU server times a cell there; empty: the process sees every GPU.
    gpu: str = ""

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
        for name, kind in (("run", LaunchSpec), ("time", TimingSpec), ("budgets", ResourceBudget),
                           ("build", BuildSpec), ("build_setting", BuildSetting)):
            data[name] = None if data[name] is None else from_data(kind, data[name])
        data["group"] = tuple(data.get("group", ()))
        data["env"] = Environment.from_dict(data["env"]) if data["env"] else None
        data["library"] = (LibraryEnvironment.from_dict(data["library"])
                           if data["library"] else None)
        return cls(**data)
