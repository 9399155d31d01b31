"""What an ELF file really carries for the GPU.

A module is one fatbinary in the library's ``.nv_fatbin`` section: the images (SASS
per arch, PTX) the driver chooses from when the library loads it. The section is split
into fatbinaries by their own headers (magic 0xBA55ED50, header size, size), and each
fatbinary's entries counted by kind from theirs; nothing else of the format is read.
Each fatbinary is handed to ``cuobjdump -xelf all -xptx all`` on its own, which
writes its images as files. Each cubin is then read as the ELF it is (its kernels are its
``.nv.info.<name>`` sections, the toolkit that built it is in its ``.note.nv.tkinfo``
note); each PTX by its own ``.version``, ``.target`` and ``.entry`` lines.

A stranger's fatbinary is read within bounds: what cuobjdump writes of one module may
be at most what any archive may inflate to (inputs.inflation_limit of the fatbinary's own
size: compressed PTX of 44 kB once expanded to 768 MiB), each file held to it by
RLIMIT_FSIZE and the folder watched as it grows; a module takes at most MODULE_SECONDS to
read; and a PTX's head is read once from its start (a search through the text whose blanks
spanned lines took hours over 1 MiB of blank lines), its kernels by a pattern linear in
it. A module over a bound is an UnreadableFile naming the module and the bound, and the
audit's other files are judged all the same.
"""

from __future__ import annotations

import io
import os
import re
import resource
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ...common.versions import Arch, sass_runs_on
from .elf import EM_CUDA, UnreadableFile, elf_machine, elf_sections, fatbins
from .inputs import MEMBER_CEILING_BYTES, RATIO_CEILING, inflation_limit

# The module's number is left out where the image names its source (nvcc -lineinfo:
# ``k.sm_90.cubin``, not ``k.1.sm_90.cubin``): such an image was read as no image at all.
_IMAGE = re.compile(r"^(?P<stem>.+?)(?:\.(?P<module>\d+))?\.(?P<arch>sm_\d+[af]?)"
                    r"\.(?P<kind>cubin|ptx)$")
# A PTX module's head, as the PTX ISA fixes it: blanks and comments, then `.version`, then
# `.target` (ptxas refuses a module whose first directive is another). Read from the start
# by a cursor that only moves forward; a search of the whole text for them once rescanned
# every blank line for each (``^\s*`` spans lines: 32 KiB of blank lines took 48 s).
_PTX_BLANKS = re.compile(rb"[ \t\r\n]*")
_PTX_VERSION = re.compile(rb"\.version[ \t]+(\d+\.\d+)")
_PTX_TARGET = re.compile(rb"\.target[ \t]+(sm_\d+[af]?)")
_PTX_ENTRY = re.compile(rb"^[ \t]*(?:\.visible[ \t]+|\.weak[ \t]+)?\.entry\s", re.MULTILINE)
# The most seconds one module may take to be read (cuobjdump and the images' facts): the
# largest real modules take a few seconds; past this a module is an error cell.
MODULE_SECONDS = 300.0
_POLL_S = 0.05
_KEPT_ERROR_BYTES = 64 << 10
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


@dataclass(frozen=True)
class PtxHead:
    """A PTX module's `.version` and `.target` (None where its head lacks them), and
    `examined`: how many bytes from its start the reading took, each read once and none
    after the head, so that what reading a stranger's PTX costs is counted, not timed."""

    version: str | None
    target: str | None
    examined: int


def ptx_head(data: bytes) -> PtxHead:
    """The head of a PTX module: past blanks and comments, `.version` first and `.target`
    next, as the ISA orders them."""
    at = 0
    found: list[str] = []
    for directive in (_PTX_VERSION, _PTX_TARGET):
        while True:
            at = _blanks_end(data, at)
            if data.startswith(b"//", at):
                end = data.find(b"\n", at)
                at = len(data) if end < 0 else end
            elif data.startswith(b"/*", at):
                end = data.find(b"*/", at + 2)
                at = len(data) if end < 0 else end + 2
            else:
                break
        match = directive.match(data, at)
        if match is None:
            break
        found.append(match.group(1).decode())
        at = match.end()
    return PtxHead(found[0] if found else None, found[1] if len(found) > 1 else None, at)


def _blanks_end(data: bytes, at: int) -> int:
    match = _PTX_BLANKS.match(data, at)
    return match.end() if match else at


def read_ptx(data: bytes, arch: str, index: int = 0) -> Image:
    head = ptx_head(data)
    return Image("ptx", head.target or arch, index, len(data),
                 len(_PTX_ENTRY.findall(data)), ptx_isa=head.version)


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


class OverBound(UnreadableFile):
    """A module past the audit's bounds (its expansion, its time): no other cuobjdump is
    tried, since each would take as much."""


def _extract_any(tools: Cuobjdumps, source: Path, label: str, scratch: Path,
                 deadline: float | None = None) -> tuple[list[Image], str]:
    """The images of `source` by the first cuobjdump that reads it whole, and that tool's
    label ("" for the newest); where none can, each one's words."""
    tried = []
    for number, (tool_label, tool) in enumerate(tools.tools()):
        try:
            return _extract(source, label, tool, scratch, tool_label, deadline), \
                tool_label if number else ""
        except OverBound:
            raise
        except UnreadableFile as exc:
            tried.append(str(exc))
    raise UnreadableFile("; ".join(tried))


def _sizes(folder: Path) -> list[int]:
    return [entry.stat(follow_symlinks=False).st_size for entry in os.scandir(folder)]


def _folder_bytes(folder: Path) -> int:
    return sum(_sizes(folder))


def _at_most(limit: int) -> None:
    """In cuobjdump's process: no file it writes grows past `limit` (SIGXFSZ ends it)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _run_bounded(command: list[str], folder: Path, limit: int, deadline: float,
                 errors: Path) -> tuple[int, str]:
    """cuobjdump's status and what it said, run in `folder` and stopped where what it
    wrote there passes `limit` bytes or the clock passes `deadline` (OverBound)."""
    with errors.open("wb") as said:
        process = subprocess.Popen(command, cwd=folder, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=said,
                                   preexec_fn=lambda: _at_most(limit))
        try:
            while True:
                try:
                    status = process.wait(timeout=_POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if _folder_bytes(folder) > limit:
                    raise OverBound(_expanded(limit))
                if time.monotonic() > deadline:
                    raise OverBound(f"not read within {MODULE_SECONDS:g} s, the audit's "
                                    "limit per module")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    # A file at the limit was stopped there (SIGXFSZ, or EFBIG where a tool ignores it).
    if status == -signal.SIGXFSZ or _folder_bytes(folder) > limit \
            or max(_sizes(folder), default=0) >= limit:
        raise OverBound(_expanded(limit))
    with errors.open("rb") as handle:
        text = handle.read(_KEPT_ERROR_BYTES).decode(errors="replace")
    return status, text


def _expanded(limit: int) -> str:
    return (f"its images expand past {limit:,} bytes, more than {RATIO_CEILING} times its "
            "fatbinary (a compression bomb): not read")


def _emptied(folder: Path) -> None:
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()


def _extract(source: Path, label: str, cuobjdump: str, scratch: Path,
             tool_label: str = "cuobjdump", deadline: float | None = None) -> list[Image]:
    """The images cuobjdump extracts from `source` (a fatbinary or a whole file), within
    what its size may expand to and by `deadline` (time.monotonic; default MODULE_SECONDS
    from now)."""
    folder = Path(tempfile.mkdtemp(dir=scratch))
    limit = inflation_limit(source.stat().st_size, MEMBER_CEILING_BYTES)
    ends = deadline if deadline is not None else time.monotonic() + MODULE_SECONDS
    try:
        # Both absolute: cuobjdump runs in the scratch folder it extracts into.
        status, stderr = _run_bounded(
            [os.path.abspath(cuobjdump), "-xelf", "all", "-xptx", "all",
             os.path.abspath(source)], folder, limit, ends, folder.with_suffix(".said"))
        images: list[Image] = []
        for path in sorted(folder.iterdir()):
            match = _IMAGE.match(path.name)
            if match:
                index = int(match["module"]) if match["module"] else len(images) + 1
                is_ptx = match["kind"] == "ptx"
                images.append((read_ptx if is_ptx else read_cubin)(path.read_bytes(),
                                                                   match["arch"], index))
            path.unlink()
            if time.monotonic() > ends:
                raise OverBound(f"not read within {MODULE_SECONDS:g} s, the audit's limit "
                                "per module")
    finally:
        _emptied(folder)
        folder.with_suffix(".said").unlink(missing_ok=True)
    if status != 0:
        said = (stderr.strip().splitlines() or [f"status {status}"])[-1]
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
            try:
                images, reader = _extract_any(tools, elf, name, Path(scratch),
                                              time.monotonic() + MODULE_SECONDS)
            except OverBound as exc:
                raise UnreadableFile(f"module 1: {exc}") from None
            return [Module(name, 1, tuple(images), read_by=reader)] if images else []
        module_file = Path(scratch) / "module.fatbin"
        for number, fatbin in enumerate(found, 1):
            handle.seek(fatbin.offset)
            image = handle.read(fatbin.size)
            module_file.write_bytes(image)
            try:
                images, reader = _extract_any(tools, module_file, name, Path(scratch),
                                              time.monotonic() + MODULE_SECONDS)
            except OverBound as exc:
                raise UnreadableFile(f"module {number}: {exc}") from None
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
