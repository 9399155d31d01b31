"""NVRTC, loaded from one exact toolkit's ``libnvrtc.so`` by path.

Why not `cuda.bindings.nvrtc`: cuda-python binds one NVRTC major version per
installation and finds the library by its own search rules, while a matrix
needs 11.8, 12.x and 13.x side by side, each from the wheel folder of its
cell's toolkit. NVRTC's C API has been stable since CUDA 11, so these few
ctypes declarations load every toolkit's library the same way.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class NvrtcOutput:
    ok: bool
    log: str
    ptx: bytes
    version: str
    # NVRTC's own cubin when it compiled for a real arch (sm_XX), as CuPy asks it to.
    cubin: bytes = b""
    # Why a failure is not NVRTC's verdict on the source and its options: it ran out of
    # memory (the cell's limit) or could not even create the program.
    accident: str | None = None
    # Each name expression given, as NVRTC lowered it (the name in the module).
    lowered: dict[str, str] = field(default_factory=dict)


_NVRTC_ACCIDENTS = {1: "NVRTC_ERROR_OUT_OF_MEMORY", 2: "NVRTC_ERROR_PROGRAM_CREATION_FAILURE"}


class Nvrtc:
    def __init__(self, library: str) -> None:
        self._lib = ctypes.CDLL(library)
        self._lib.nvrtcGetErrorString.restype = ctypes.c_char_p

    @property
    def version(self) -> str:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        return f"{major.value}.{minor.value}"

    def _check(self, code: int, what: str) -> None:
        if code != 0:
            message = self._lib.nvrtcGetErrorString(code)
            raise RuntimeError(f"{what}: {message.decode() if message else code}")

    def supported_archs(self) -> list[int]:
        """The real architectures this NVRTC compiles for, as it says itself (11.2+)."""
        if not hasattr(self._lib, "nvrtcGetNumSupportedArchs"):
            return []
        count = ctypes.c_int()
        self._check(self._lib.nvrtcGetNumSupportedArchs(ctypes.byref(count)),
                    "nvrtcGetNumSupportedArchs")
        archs = (ctypes.c_int * count.value)()
        self._check(self._lib.nvrtcGetSupportedArchs(archs), "nvrtcGetSupportedArchs")
        return list(archs)

    def _cubin(self, program: ctypes.c_void_p) -> bytes:
        """The cubin, or nothing when the program was compiled for a virtual arch."""
        if not hasattr(self._lib, "nvrtcGetCUBINSize"):
            return b""
        size = ctypes.c_size_t()
        if self._lib.nvrtcGetCUBINSize(program, ctypes.byref(size)) != 0 or size.value == 0:
            return b""
        cubin = ctypes.create_string_buffer(size.value)
        self._check(self._lib.nvrtcGetCUBIN(program, cubin), "nvrtcGetCUBIN")
        return cubin.raw

    def compile(self, source: bytes, name: str, options: Sequence[str],
                name_expressions: Sequence[str] = ()) -> NvrtcOutput:
        """Compile `source` as the bytes on disk: NVRTC reads them as the file nvcc would,
        so a comment in Latin-1 is no reason to fail.

        `name_expressions` are C++ names of kernels (``Marlin<256, 1>``, ``ns::scale``):
        NVRTC instantiates each (a template needs no explicit instantiation) and says the
        name it got in the module, as CuPy's ``name_expressions`` ask it."""
        program = ctypes.c_void_p()
        self._check(self._lib.nvrtcCreateProgram(ctypes.byref(program), source,
                                                 name.encode(), 0, None, None),
                    "nvrtcCreateProgram")
        try:
            for expression in name_expressions:
                self._check(self._lib.nvrtcAddNameExpression(program, expression.encode()),
                            "nvrtcAddNameExpression")
            encoded = [os.fsencode(o) for o in options]
            array = (ctypes.c_char_p * len(encoded))(*encoded)
            result = self._lib.nvrtcCompileProgram(program, len(encoded), array)
            size = ctypes.c_size_t()
            self._check(self._lib.nvrtcGetProgramLogSize(program, ctypes.byref(size)),
                        "nvrtcGetProgramLogSize")
            log = ctypes.create_string_buffer(size.value)
            self._check(self._lib.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
            text = log.value.decode(errors="replace")
            if result != 0:
                status = self._lib.nvrtcGetErrorString(result).decode()
                # NVRTC may fail with nothing in its log (a cubin over a limit its ptxas
                # accepted): its return code is then the only error, so say it as one.
                accident = (f"nvrtcCompileProgram returned {status}"
                            if result in _NVRTC_ACCIDENTS else None)
                return NvrtcOutput(False, f"{text}\nerror: nvrtcCompileProgram returned "
                                   f"{status}".strip(), b"", self.version, accident=accident)
            self._check(self._lib.nvrtcGetPTXSize(program, ctypes.byref(size)), "nvrtcGetPTXSize")
            ptx = ctypes.create_string_buffer(size.value)
            self._check(self._lib.nvrtcGetPTX(program, ptx), "nvrtcGetPTX")
            lowered = {}
            for expression in name_expressions:
                name_in_module = ctypes.c_char_p()
                self._check(self._lib.nvrtcGetLoweredName(program, expression.encode(),
                                                          ctypes.byref(name_in_module)),
                            "nvrtcGetLoweredName")
                lowered[expression] = (name_in_module.value or b"").decode()
            return NvrtcOutput(True, text, ptx.value, self.version, self._cubin(program),
                               lowered=lowered)
        finally:
            self._lib.nvrtcDestroyProgram(ctypes.byref(program))


def driver_command(library: str, source: str, options: Sequence[str],
                   name_expressions: Sequence[str] = ()) -> list[str]:
    """The command line of the NVRTC driver this module is (``python -m
    cudamatrix.stages.compile.nvrtc``), compiling as a cell's NVRTC compile does: a cell's log shows
    it, so pasting the line into a shell compiles again, outside the tool."""
    words = [sys.executable, "-m", "cudamatrix.stages.compile.nvrtc", library, source]
    for expression in name_expressions:
        words += ["--name-expression", expression]
    return [*words, "--", *options]


def main(argv: Sequence[str] | None = None) -> int:
    """Compile one source with one toolkit's NVRTC, as a cell does: the log on standard
    output, kernel.ptx and kernel.cubin (where NVRTC made one) in the current folder, each
    name expression's lowered name; exit status 1 when NVRTC refused the source."""
    parser = argparse.ArgumentParser(prog="python -m cudamatrix.stages.compile.nvrtc",
                                     description=main.__doc__)
    parser.add_argument("library", help="the toolkit's libnvrtc.so")
    parser.add_argument("source", help="the .cu file (its bytes, by its file name)")
    parser.add_argument("--name-expression", action="append", default=[],
                        help="a kernel's C++ name for NVRTC to instantiate and lower")
    parser.add_argument("options", nargs="*", help="NVRTC's options, after --")
    # Everything after the first `--` is NVRTC's, as driver_command writes it: argparse
    # would have given the positional options an empty list before the `--` and then
    # refused the rest ("unrecognized arguments: -- -std=c++14").
    words = list(sys.argv[1:] if argv is None else argv)
    cut = words.index("--") if "--" in words else len(words)
    args = parser.parse_args(words[:cut])
    options = [*args.options, *words[cut + 1:]]
    source = Path(args.source)
    output = Nvrtc(args.library).compile(source.read_bytes(), source.name, options,
                                         args.name_expression)
    print(f"NVRTC {output.version}")
    if output.log:
        print(output.log)
    if not output.ok:
        return 1
    Path("kernel.ptx").write_bytes(output.ptx)
    if output.cubin:
        Path("kernel.cubin").write_bytes(output.cubin)
    for expression, lowered in output.lowered.items():
        print(f"{expression} -> {lowered}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
