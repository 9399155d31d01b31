"""Will a module load on this GPU under this driver, and why.

The driver takes SASS when one of the module's cubins fits the GPU: same major, minor
not higher (sm_86 runs sm_80 code); an arch-specific ``a`` cubin only on its exact arch;
a family ``f`` cubin on its family's later members. The driver must know the arch (the
matrix's first toolkit for it) and the cubin's CUDA major (minor-version compatibility
holds within a major only). Else it JIT-compiles PTX whose target is not above the GPU
(an ``a`` PTX only on its exact arch), if the PTX ISA is within what the driver's CUDA
version accepts (the matrix's toolkit table). Else the module does not load.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from ...common.versions import Arch, sass_runs_on
from ...config.matrix import Matrix
from ...stages.binaries.facts import Image, Module, ptx_fits


@dataclass(frozen=True)
class Driver:
    """A driver as the audit sees it: its branch, and the CUDA version it supports."""

    branch: str
    cuda: str

    def __str__(self) -> str:
        return f"driver {self.branch} (CUDA {self.cuda})"


@dataclass(frozen=True)
class Prediction:
    loads: bool
    via: str | None  # "sass", "ptx-jit" or None
    image: str | None
    reason: str


def _arch_known(matrix: Matrix, arch: Arch, driver: Driver) -> str | None:
    """Why `driver` cannot know `arch`, if it cannot (the arch's first toolkit is newer)."""
    base = f"sm_{arch.capability}"
    support = matrix.archs.get(arch.name) or matrix.archs.get(base)
    if support is not None and Version(driver.cuda) < support.first:
        return f"{arch.name} needs a CUDA {support.first} driver"
    return None


def _sass(matrix: Matrix, image: Image, gpu: Arch, driver: Driver) -> str | None:
    """Why this cubin cannot run here (None: it can)."""
    arch = Arch.parse(image.arch)
    if not sass_runs_on(arch, gpu):
        return f"SASS {arch.name} cannot run on {gpu.name}"
    unknown = _arch_known(matrix, arch, driver)
    if unknown:
        return unknown
    if image.toolkit and int(image.toolkit.split(".")[0]) > int(driver.cuda.split(".")[0]):
        return (f"SASS {arch.name} was built by CUDA {image.toolkit}, newer in major than "
                f"{driver}")
    return None


def _ptx(matrix: Matrix, image: Image, gpu: Arch, driver: Driver) -> str | None:
    """Why this PTX cannot be JIT-compiled here (None: it can)."""
    target = Arch.parse(image.arch)
    virtual = target.compute
    if not ptx_fits(target, gpu):
        return f"PTX {virtual} targets a newer GPU than {gpu.name}" if target.suffix != "a" \
            else f"PTX {virtual} is arch-specific and JIT-compiles only for sm_{target.capability}"
    accepted = matrix.toolkits.get(driver.cuda)
    if image.ptx_isa and accepted is not None \
            and Version(image.ptx_isa) > Version(accepted.ptx_isa):
        return (f"PTX {virtual} is ISA {image.ptx_isa}, newer than {driver} accepts "
                f"(ISA {accepted.ptx_isa})")
    return None


def predict(matrix: Matrix, module: Module, gpu: Arch, driver: Driver) -> Prediction:
    refusals = []
    for image in module.sass():
        why = _sass(matrix, image, gpu, driver)
        if why is None:
            return Prediction(True, "sass", image.arch,
                              f"loads on {gpu.name} with {driver}: SASS {image.arch}")
        refusals.append(why)
    for image in module.ptx():
        why = _ptx(matrix, image, gpu, driver)
        if why is None:
            return Prediction(True, "ptx-jit", image.arch.replace("sm_", "compute_"),
                              f"loads on {gpu.name} with {driver} through PTX JIT: "
                              f"{image.arch.replace('sm_', 'compute_')} (ISA {image.ptx_isa})")
        refusals.append(why)
    if not module.ptx():
        refusals.append("no PTX to JIT")
    return Prediction(False, None, None,
                      f"does not load on {gpu.name} with {driver}: " + "; ".join(refusals))


def driver_floor(matrix: Matrix, module: Module, gpu: Arch) -> str | None:
    """The oldest driver branch of the matrix's table under which the module loads on `gpu`."""
    for branch, cuda in sorted(matrix.driver_cuda.items(), key=lambda kv: int(kv[0])):
        if predict(matrix, module, gpu, Driver(branch, cuda)).loads:
            return f"{branch} (CUDA {cuda})"
    return None
