"""A pybind11 extension with a CUDA kernel, built by `python setup.py build_ext` through
nvcc, as small CUDA projects without CMake or PyTorch do: nvcc from $CUDA_HOME, the
target from $NVCC_GENCODE (the project's own knob), the shared CUDA runtime."""

import os
import subprocess
from pathlib import Path

import pybind11
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class NvccBuild(build_ext):
    def build_extension(self, ext):
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        cuda = os.environ["CUDA_HOME"]
        gencode = os.environ.get("NVCC_GENCODE", "-arch=sm_75").split()
        host = ["-ccbin", os.environ["CUDAHOSTCXX"]] if os.environ.get("CUDAHOSTCXX") else []
        subprocess.run([f"{cuda}/bin/nvcc", *host, "-O2", "-std=c++17", "-shared",
                        "-Xcompiler", "-fPIC", *gencode, f"-I{pybind11.get_include()}",
                        f"-I{self.get_finalized_command('build').build_base}",
                        *[f"-I{d}" for d in self.include_dirs or []],
                        *ext.sources, "-o", str(target), f"-L{cuda}/lib64",
                        "-cudart", "shared"], check=True)


setup(name="vecadd", version="1.0",
      ext_modules=[Extension("vecadd", ["vecadd.cu"])], cmdclass={"build_ext": NvccBuild})
