"""cudamatrix: on which CUDA toolkit, driver and GPU arch does my kernel build and run?"""

__version__ = "0.1.0"
