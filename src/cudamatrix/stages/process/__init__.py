"""The processes a cell runs in and how they are bounded: the cell's worker (``worker``),
a warm parent that forks workers (``forkserver``), one GPU's server holding its context
(``gpu_server``), a compiler run bounded in time, memory
and output (``limits``), where a cell was when its time ran out (``hang``), what every
process is told so that no cache but the tool's decides (``hermetic``), a library
environment's folders (``library_path``) and a Python case's runner (``pyscript``).

May import: ``cell``, ``common``, ``errors``; the worker and the GPU server import the stages they
run (``compile``, ``inspect``, ``device``, ``frontends``).
"""
