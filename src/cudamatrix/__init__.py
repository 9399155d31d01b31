"""cudamatrix: on which CUDA toolkit, driver and GPU architecture does my kernel code build and run?"""

__version__ = "0.1.0"
