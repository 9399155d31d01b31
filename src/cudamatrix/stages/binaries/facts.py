"""What an ELF file really carries for the GPU.

A module is one fatbinary in the library's ``.nv_fatbin`` section: the images (SASS
per arch, PTX) the driver chooses from when the library loads it. The section is split
into fatbinaries by their own headers (magic 0xBA55ED50, header size, size), and each
fatbinary's entries counted by kind from theirs; nothing else of the format is read.
Each fatbinary is handed to ``cuobjdump -xelf all -xptx all`` on its own, which
writes its images as files. Each cubin is then read as the ELF it is (its kernels are its
``.nv.info.<name>`` sections, the toolkit that built it is in its ``.note.nv.tkinfo``
note); each PTX by its own ``.version``, ``.target`` and ``.entry`` lines.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ...common.versions import Arch, sass_runs_on
from .elf import EM_CUDA, UnreadableFile, elf_machine, elf_sections, fatbins

_IMAGE = re.compile(r"^(?P<stem>.+)\.(?P<module>\d+)\.(?P<arch>sm_\d+[af]?)\.(?P<kind>cubin|ptx)$")
_PTX_VERSION = re.compile(rb"^\s*\.version\s+(\d+\.\d+)", re.MULTILINE)
_PTX_TARGET = re.compile(rb"^\s*\.target\s+(sm_\d+[af]?)", re.MULTILINE)
_PTX_ENTRY = re.compile(rb"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s", re.MULTILINE)
_TOOLKIT = re.compile(rb"release (\d+\.\d+), V(\d+\.\d+\.\d+)")


@dataclass(frozen=True)
class Image:
    """One SASS (cubin) or PTX image of a module."""

    kind: str  # "sass" or "ptx"
    arch: str  # sm_XX[a|f]; for PTX the virtual arch it targets (compute_XX)
    index: int  # cuobjdump's number for it (cubins and PTX are numbered apart)
    size: int
    kernels: int
    ptx_isa: str | None = None  # PTX only: the ISA version (.version)
    toolkit: str | None = None  # SASS only: the toolkit that built it, when recorded


@dataclass(frozen=True)
class Module:
    """The images of one compilation unit, as the driver sees them at load time."""

    file: str
    number: int
    images: tuple[Image, ...] = field(default_factory=tuple)
    # On a GPU: what the driver said to the whole fatbinary ("loads" or its error name).
    measured: str | None = None
    # The cuobjdump that read it, where the newest could not (Cuobjdumps); "" for the newest.
    read_by: str = ""

    @property
    def name(self) -> str:
        return f"module-{self.number}"

    def sass(self) -> list[Image]:
        return [i for i in self.images if i.kind == "sass"]

    def ptx(self) -> list[Image]:
        return [i for i in self.images if i.kind == "ptx"]

    def describe(self) -> str:
        sass = ", ".join(i.arch for i in self.sass()) or "none"
        ptx = ", ".join(f"{i.arch.replace('sm_', 'compute_')} (ISA {i.ptx_isa})"
                        for i in self.ptx()) or "none"
        return f"SASS {sass}; PTX {ptx}"

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "module": self.name, "measured": self.measured,
                "images": [asdict(i) for i in self.images],
                **({"read_by": self.read_by} if self.read_by else {})}


def cubin_kernel_names(data: bytes) -> list[str]:
    """The kernels of a cubin by their names in it: each has a ``.nv.info.<name>``
    section (device functions do not)."""
    prefix = ".nv.info."
    return [name[len(prefix):] for name in elf_sections(io.BytesIO(data))
            if name.startswith(prefix)]


def read_cubin(data: bytes, arch: str, index: int = 0) -> Image:
    sections = elf_sections(io.BytesIO(data))
    kernels = sum(1 for name in sections if name.startswith(".nv.info."))
    at, size = sections.get(".note.nv.tkinfo", (0, 0))
    found = _TOOLKIT.search(data[at:at + size])
    toolkit = found.group(2).decode() if found else None
    return Image("sass", arch, index, len(data), kernels, toolkit=toolkit)


def read_ptx(data: bytes, arch: str, index: int = 0) -> Image:
    version = _PTX_VERSION.search(data)
    target = _PTX_TARGET.search(data)
    return Image("ptx", target.group(1).decode() if target else arch, index, len(data),
                 len(_PTX_ENTRY.findall(data)), ptx_isa=version.group(1).decode()
                 if version else None)


def shipped_images(cubin: Path | None, ptx: Path | None, arch: str) -> list[dict[str, Any]]:
    """The facts of a compiled cell's own cubin (built for `arch`) and PTX, as a wheel's
    images get them."""
    images = []
    if cubin is not None and cubin.is_file():
        images.append(asdict(read_cubin(cubin.read_bytes(), arch)))
    if ptx is not None and ptx.is_file():
        images.append(asdict(read_ptx(ptx.read_bytes(), arch)))
    return images


@dataclass
class Cuobjdumps:
    """The cuobjdumps a module may be read with, the newest first. A newer one reads most
    older cubins, not all (CUDA 13's calls CUDA 12.1's fatbinaries an "Invalid ELF"), so the
    older ones are tried in turn, made on first need (`more`: (label, path) pairs, newest
    first), and a module says which one read it."""

    newest: str
    label: str = "cuobjdump"
    more: Callable[[], Sequence[tuple[str, str]]] | None = None
    _older: list[tuple[str, str]] | None = None

    def tools(self) -> Iterator[tuple[str, str]]:
        yield self.label, self.newest
        if self.more is not None:
            if self._older is None:
                self._older = list(self.more())
            yield from self._older


def _extract_any(tools: Cuobjdumps, source: Path, label: str, scratch: Path
                 ) -> tuple[list[Image], str]:
    """The images of `source` by the first cuobjdump that reads it whole, and that tool's
    label ("" for the newest); where none can, each one's words."""
    tried = []
    for number, (tool_label, tool) in enumerate(tools.tools()):
        try:
            return _extract(source, label, tool, scratch, tool_label), \
                tool_label if number else ""
        except UnreadableFile as exc:
            tried.append(str(exc))
    raise UnreadableFile("; ".join(tried))


def _extract(source: Path, label: str, cuobjdump: str, scratch: Path,
             tool_label: str = "cuobjdump") -> list[Image]:
    """The images cuobjdump extracts from `source` (a fatbinary or a whole file)."""
    folder = Path(tempfile.mkdtemp(dir=scratch))
    # Both absolute: cuobjdump runs in the scratch folder it extracts into.
    done = subprocess.run([os.path.abspath(cuobjdump), "-xelf", "all", "-xptx", "all",
                           os.path.abspath(source)],
                          cwd=folder, capture_output=True, text=True, check=False)
    images = []
    for path in sorted(folder.iterdir()):
        match = _IMAGE.match(path.name)
        if match:
            index, is_ptx = int(match["module"]), match["kind"] == "ptx"
            images.append((read_ptx if is_ptx else read_cubin)(path.read_bytes(),
                                                               match["arch"], index))
        path.unlink()
    folder.rmdir()
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"status {done.returncode}"])[-1]
        said = said.replace(str(source), label)  # a scratch copy's path says nothing
        if not images and "does not contain device code" in said:
            return []
        raise UnreadableFile(f"{tool_label} could not read it whole ({said.strip()}); "
                             f"{len(images)} images were extracted")
    return images


def read_modules(elf: Path, name: str, cuobjdump: str | Cuobjdumps,
                 load: Callable[[bytes], str] | None = None) -> list[Module]:
    """Every CUDA module embedded in `elf` (none for a plain host library). Each
    fatbinary is handed to cuobjdump on its own (to an older one where the newest cannot
    read it), so memory stays bounded by the largest module, not the library; with `load`,
    the driver gets it too and picks its image as it would for the library."""
    tools = cuobjdump if isinstance(cuobjdump, Cuobjdumps) else Cuobjdumps(cuobjdump)
    modules = []
    with tempfile.TemporaryDirectory(prefix="cudamatrix-audit-") as scratch, \
            elf.open("rb") as handle:
        found = fatbins(handle)
        if not found:
            # A cubin given as such is one module; a host library without .nv_fatbin has no
            # device code (and cuobjdump would read all of it to say so).
            if elf_machine(handle) != EM_CUDA:
                return []
            images, reader = _extract_any(tools, elf, name, Path(scratch))
            return [Module(name, 1, tuple(images), read_by=reader)] if images else []
        module_file = Path(scratch) / "module.fatbin"
        for number, fatbin in enumerate(found, 1):
            handle.seek(fatbin.offset)
            image = handle.read(fatbin.size)
            module_file.write_bytes(image)
            try:
                images, reader = _extract_any(tools, module_file, name, Path(scratch))
            except UnreadableFile as exc:
                raise UnreadableFile(f"module {number}: {exc}; its fatbinary holds "
                                     f"{fatbin.cubins} cubins and {fatbin.ptx} PTX") from None
            measured = load(image) if load else None
            modules.append(Module(name, number, tuple(sorted(images, key=lambda i: (i.kind,
                                                                                    i.arch))),
                                  measured, reader))
    return modules


def ptx_fits(target: Arch, gpu: Arch) -> bool:
    """Whether PTX for `target` can be JIT-compiled for `gpu` (driver aside): not above it,
    an `a` target only on its exact arch, an `f` one on its family's later members."""
    if target.suffix == "a":
        return target.capability == gpu.capability
    if target.suffix == "f":
        return target.capability // 10 == gpu.capability // 10 \
            and target.capability <= gpu.capability
    return target.capability <= gpu.capability


def runs_on(module: Module, gpu: Arch) -> str | None:
    """Why no image of `module` can serve `gpu`, whatever the driver (None: one can): the
    per-arch question a build answers before any driver is named."""
    if any(sass_runs_on(Arch.parse(i.arch), gpu) for i in module.sass()):
        return None
    if any(ptx_fits(Arch.parse(i.arch), gpu) for i in module.ptx()):
        return None
    sass = ", ".join(i.arch for i in module.sass()) or "none"
    ptx = ", ".join(i.arch.replace("sm_", "compute_") for i in module.ptx()) or "none"
    return f"SASS {sass}, PTX {ptx}: none runs on {gpu.name}"
