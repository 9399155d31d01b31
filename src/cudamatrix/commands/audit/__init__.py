"""Auditing what a project ships: built wheels and libraries judged for the GPUs and drivers
they can really load on.

- ``stages.binaries.inputs``: wheels, folders, ELF files or ``name==version`` (downloaded,
  no dependencies), their ELF members streamed one at a time;
- ``stages.binaries.facts``: each embedded CUDA module's SASS and PTX images, as cuobjdump
  extracts them;
- predict: per GPU arch and driver, whether a module loads (SASS, PTX JIT) and why;
- run: the cells, in the results format every report already reads, measured on a GPU
  where there is one.
"""
