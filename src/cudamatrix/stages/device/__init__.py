"""The load and run stages on a real GPU (``load_run``), a kernel's time (``timing``), a
case's inputs and its NumPy reference (``checks``, ``expressions``).

May import: ``cell``, ``process``, ``common``, ``errors``.
"""
