"""The top of a cell's side: the processes its stages run in. The cell's worker
(``worker``: ``python -m cudamatrix.stages.runtime.worker``), a warm parent that forks
workers (``forkserver``) and one GPU's server holding its context (``gpu_server``).

May import every other group of ``stages`` (the stages they run); none of them imports
this package (import-linter keeps it): the runtime sits above the stages, the process
limits (``process``) below them.
"""
