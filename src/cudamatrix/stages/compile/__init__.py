"""The compile stage's shared parts: what every frontend's compile ends in (``built``:
the Build and the module's figures), what a case's paths and flags mean to the compiler
(``flags``), the files its include lines reach (``includes``, the compile key), NVRTC by
path (``nvrtc``), a kernel's name resolved by the compiler (``kernel_probe``) and the
compiler's own output read (``logs``).

May import: ``cell``, ``inspect.kernel_names``, ``process.limits``, ``binaries``,
``common``, ``errors``.
"""
