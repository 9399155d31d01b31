"""The project's own build of the scale extension, as a PyTorch extension's setup.py is
written: torch's CUDAExtension and BuildExtension choose every flag; the arch comes from
TORCH_CUDA_ARCH_LIST, which the case sets from the cell's arch."""

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="scale_ext",
    ext_modules=[CUDAExtension("scale_ext", ["binding.cpp", "scale.cu"])],
    cmdclass={"build_ext": BuildExtension},
)
