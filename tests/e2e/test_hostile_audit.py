"""`cudamatrix audit` on files made to hurt it (issue 23): a library whose .nv_fatbin
header lies about its sizes, zip bombs, a member whose name climbs out of the wheel.
Each ends with exit status 2 and one line naming the member (and the offset), in bounded
memory; mixed into a wheel with a real library, each is an `error` cell and the real
library's modules are judged all the same. Real gcc and objcopy make the libraries; the
real library is torchao 0.18.0's from PyPI (the audit tests' download)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import SHARED_CACHE, cudamatrix
from cudamatrix.stages.binaries.inputs import download

ONE_LINE_ERROR = "error: "
MEMORY_BOUND_KIB = 1 << 20  # 1 GiB, the bound README states for the audit of a bomb


def _library(folder: Path, name: str, fatbin: bytes | None = None) -> Path:
    """A real shared library from gcc, with `fatbin` as its .nv_fatbin section."""
    if shutil.which("gcc") is None or shutil.which("objcopy") is None:
        pytest.skip("needs gcc and objcopy (binutils)")
    source = folder / "f.c"
    source.write_text("int f(void) { return 1; }\n")
    plain = folder / f"{name}.plain.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(plain), str(source)], check=True)
    if fatbin is None:
        return plain
    section = folder / f"{name}.fatbin"
    section.write_bytes(fatbin)
    target = folder / f"{name}.so"
    subprocess.run(["objcopy", "--add-section", f".nv_fatbin={section}", str(plain),
                    str(target)], check=True)
    return target


def _lying_fatbin() -> bytes:
    """Magic, a fat size of 2^62, an entry header claiming 2^40 bytes, 300 zero bytes."""
    return (struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 1 << 62)
            + struct.pack("<HHIQ", 2, 0, 64, 1 << 40) + bytes(300))


def _bomb(wheel: Path, member: str, head: bytes, gib: int = 1) -> None:
    """A wheel whose `member` is `head` then `gib` GiB of zeros (deflate: ~1000:1)."""
    with zipfile.ZipFile(wheel, "a" if wheel.exists() else "w",
                         compression=zipfile.ZIP_DEFLATED) as archive, \
            archive.open(member, "w", force_zip64=True) as stream:
        stream.write(head)
        zeros = bytes(1 << 24)
        for _ in range(64 * gib):
            stream.write(zeros)


def _audit_measured(*args: str, cwd: Path) -> tuple[int, str, int]:
    """Exit status, output and the largest resident set (KiB) of the audit and every
    process it ran (cuobjdump included): the children's rusage of a wrapper process."""
    wrapper = ("import resource, subprocess, sys\n"
               "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
               "sys.stdout.write(done.stdout + done.stderr)\n")
    done = subprocess.run([sys.executable, "-c", wrapper, sys.executable, "-m", "cudamatrix",
                           "audit", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600, check=False)
    first, _, output = done.stdout.partition("\n")
    code, rss = map(int, first.split())
    return code, output, rss


def _error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(ONE_LINE_ERROR)]


def test_a_lying_fatbin_header_is_one_line_naming_the_offset(tmp_path: Path) -> None:
    library = _library(tmp_path, "lying", _lying_fatbin())
    code, output, _ = _audit_measured(str(library), "--no-measure", "--out",
                                      str(tmp_path / "out"), cwd=tmp_path)
    assert code == 2, output
    assert "Traceback" not in output
    [line] = _error_lines(output)
    assert "lying.so" in line and "the fatbinary at offset 0x" in line, line
    assert f"{1 << 62} bytes" in line, line


def test_a_zip_bomb_is_stopped_in_bounded_memory(tmp_path: Path) -> None:
    """An ELF header and 1 GiB of zeros (1 MB on disk): it was read whole, by cuobjdump
    too (1 GB resident; 6.3 GB for a 6 GiB bomb); now the stream stops at 64 MiB."""
    head = _library(tmp_path, "head").read_bytes()
    wheel = tmp_path / "bomb-1.0-py3-none-any.whl"
    _bomb(wheel, "bomb/libbomb.so", head)
    assert wheel.stat().st_size < 4 << 20
    code, output, rss = _audit_measured(str(wheel), "--no-measure", "--out",
                                        str(tmp_path / "out"), cwd=tmp_path)
    assert code == 2, output
    [line] = _error_lines(output)
    assert "bomb/libbomb.so" in line and "a zip bomb" in line, line
    assert rss < MEMORY_BOUND_KIB // 4, f"{rss} KiB resident"


def test_a_member_climbing_out_of_the_wheel_is_refused_by_name(tmp_path: Path) -> None:
    wheel = tmp_path / "climb-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("../../../x.so", _library(tmp_path, "x").read_bytes())
    code, output, _ = _audit_measured(str(wheel), "--no-measure", "--out",
                                      str(tmp_path / "out"), cwd=tmp_path)
    assert code == 2, output
    [line] = _error_lines(output)
    assert "../../../x.so: its name leads outside the wheel" in line, line
    assert not (tmp_path.parent.parent / "x.so").exists()


def test_damage_beside_a_real_library_is_an_error_cell_and_the_rest_is_judged(
        tmp_path: Path) -> None:
    """torchao's real Hopper library, a lying library and a bomb in one wheel: the real
    modules get their verdicts, each damaged member an error cell saying why."""
    real = download("torchao==0.18.0", SHARED_CACHE)
    wheel = tmp_path / "mixed-1.0-py3-none-any.whl"
    with zipfile.ZipFile(real) as source, zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("mixed/_C_cutlass_90a.abi3.so",
                         source.read("torchao/_C_cutlass_90a.abi3.so"))
        archive.writestr("mixed/liblying.so",
                         _library(tmp_path, "lying", _lying_fatbin()).read_bytes())
    _bomb(wheel, "mixed/libbomb.so", _library(tmp_path, "head").read_bytes())
    run = cudamatrix("audit", str(wheel), "--no-measure", "--gpu", "sm_90", "--driver", "580",
                     out=tmp_path / "out", timeout=600)
    assert run.code == 1, run.output[-2000:]  # errors, reported; not a crash
    cells = run.results["cells"]
    errors = {c["case"].split("!")[1]: c["message"] for c in cells if c["outcome"] == "error"}
    assert set(errors) == {"mixed/liblying.so", "mixed/libbomb.so"}, errors
    assert "the fatbinary at offset 0x" in errors["mixed/liblying.so"]
    assert "a zip bomb" in errors["mixed/libbomb.so"]
    judged = [c for c in cells if c["case"].endswith("_C_cutlass_90a.abi3.so")]
    assert judged and all(c["outcome"] == "pass" for c in judged), judged


def test_a_device_a_fifo_and_a_folder_holding_one_are_refused_at_once(tmp_path: Path) -> None:
    """Issue 49: `audit /dev/zero` read to the end (20 GB resident before the kernel killed
    it); `audit FIFO` and a folder with a FIFO inside hung forever. A device or a FIFO
    named is one line and exit 2; one inside a folder is passed over, the folder audited."""
    import os

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    os.mkfifo(folder / "libpipe.so")
    shutil.copyfile(_library(tmp_path, "real"), folder / "libreal.so")
    for named in ("/dev/zero", str(fifo)):
        run = cudamatrix("audit", named, "--no-measure", "--out", str(tmp_path / "out"),
                         timeout=60)
        assert run.code == 2, run.output
        [line] = _error_lines(run.output)
        assert named in line and "not a regular file" in line, line
    run = cudamatrix("audit", str(folder), "--no-measure", "--out", str(tmp_path / "out2"),
                     timeout=60)
    assert "libpipe.so" not in run.output and "Traceback" not in run.output, run.output
