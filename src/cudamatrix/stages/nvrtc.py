"""NVRTC, loaded from one exact toolkit's ``libnvrtc.so`` by path.

Why not `cuda.bindings.nvrtc`: cuda-python binds one NVRTC major version per
installation and finds the library by its own search rules, while a matrix
needs 11.8, 12.x and 13.x side by side, each from the wheel folder of its
cell's toolkit. NVRTC's C API has been stable since CUDA 11, so these few
ctypes declarations load every toolkit's library the same way.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class NvrtcOutput:
    ok: bool
    log: str
    ptx: bytes
    version: str


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

    def compile(self, source: str, name: str, options: Sequence[str]) -> NvrtcOutput:
        program = ctypes.c_void_p()
        self._check(self._lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(),
                                                 name.encode(), 0, None, None),
                    "nvrtcCreateProgram")
        try:
            encoded = [o.encode() for o in options]
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
                return NvrtcOutput(False, f"{text}\nnvrtc: {status}".strip(), b"", self.version)
            self._check(self._lib.nvrtcGetPTXSize(program, ctypes.byref(size)), "nvrtcGetPTXSize")
            ptx = ctypes.create_string_buffer(size.value)
            self._check(self._lib.nvrtcGetPTX(program, ptx), "nvrtcGetPTX")
            return NvrtcOutput(True, text, ptx.value, self.version)
        finally:
            self._lib.nvrtcDestroyProgram(ctypes.byref(program))
