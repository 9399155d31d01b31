"""How a cell's processes are bounded, below every stage: a compiler run bounded in time,
memory and output (``limits``), where a cell was when its time ran out (``hang``), what
every process is told so that no cache but the tool's decides (``hermetic``), a library
environment's folders (``library_path``) and a Python case's runner (``pyscript``). The
processes themselves (the worker, the fork server, a GPU's server) are ``runtime``'s.

May import: ``cell``, ``common``, ``errors``; no stage (import-linter keeps it).
"""
