"""A prepared toolkit laid out the way its users look for one: CuPy's classic CUDA_PATH,
and $CUDA_HOME as NVIDIA's installers lay it out (bin/nvcc beside include/, nvvm/ and
lib64/). The wheels spread those files over packages, so each layout is a folder of
links in the cache, made once per toolkit however many cells ask at once."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from . import Environment
from .cuda_root import linked_cuda_root


class ToolkitLayouts:
    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self._lock = threading.Lock()

    def classic_root(self, env: Environment) -> Path:
        """The wheel toolkit as a classic install (links): CuPy's CUDA_PATH."""
        runtime = [Path(d) for d in env.library_dirs if any(Path(d).glob("libcudart.so*"))]
        links = {"lib64": runtime[0]} if runtime else {}
        with self._lock:  # cells ask from many threads; the folder is made once
            return linked_cuda_root(self.cache / "cupy" / f"cuda-{env.toolkit}",
                                    [Path(p) for p in env.include_dirs], links)

    def cuda_home(self, env: Environment) -> Path:
        """The toolkit as a build system expects to find it (``$CUDA_HOME``): ``bin/nvcc``
        beside ``include/``, ``nvvm/`` and ``lib64/`` with the unversioned names a link
        step asks for (``-lcudart``), as NVIDIA's installers lay it out. A host install is
        that already. The wheels spread the same files over packages and ship only the
        versioned ``libcudart.so.N``, so a folder of links gives them that shape; its
        ``bin`` is nvcc's own folder (Debian's, over the 12.x wheels), so nvcc reads its own
        nvcc.profile, whose paths start from there."""
        assert env.nvcc is not None
        if not env.from_wheels:
            return Path(env.nvcc).parent.parent
        libdevice = next(Path(env.root).glob("nvidia/**/nvvm/libdevice"), None)
        libraries = [Path(p) for p in env.library_dirs]
        links = {"bin": Path(env.nvcc).parent}
        if libdevice is not None:
            links["nvvm"] = libdevice.parent
        for folder in libraries:  # libcudart.so -> libcudart.so.13, where no such name is
            for versioned in sorted(folder.glob("lib*.so.*")):
                name = versioned.name.split(".so.")[0] + ".so"
                if not any((f / name).exists() for f in libraries):
                    links.setdefault(f"lib64/{name}", versioned)
        # One folder per set of libraries: a build that links cuBLAS has its libraries in
        # lib64 beside the runtime's, another build of the same toolkit its own set.
        digest = hashlib.sha256("\0".join(env.library_dirs).encode()).hexdigest()[:12]
        with self._lock:  # cells ask from many threads; the folder is made once
            return linked_cuda_root(self.cache / "cuda-home" / f"cuda-{env.toolkit}-{digest}",
                                    [Path(p) for p in env.include_dirs], links,
                                    library_folders=libraries)
