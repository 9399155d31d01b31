"""The names of the files in a cell's folder (``<out>/artifacts/<cell>/``), in one place.

The orchestrator writes the job, the worker the stage records and artifacts, the compile
cache stores and restores some of them, a prebuilt run copies the folder to another
machine, and a stopped cell is read back from it: each reads the name from here.
"""

from __future__ import annotations

JOB_FILE = "job.json"  # what the worker is asked to do
RESULT_FILE = "stages.json"  # the worker's stage records, written as each one ends
COMPILE_RECORD = "compile.json"  # the compile stage's record (cached; what --prebuilt imports)
PTX = "kernel.ptx"
CUBIN = "kernel.cubin"
# The object a kernel case's compile makes (host and device code), as a build's would be.
OBJECT = "kernel.o"
LIBRARY = "libcase.so"  # a host-entry case's shared library
ARTIFACTS = (PTX, CUBIN, LIBRARY)  # what the compile cache keeps beside the record
STAGE_FILE = "stage.txt"  # the stage the worker entered last (where a stopped cell was)
STACK_FILE = "stack.txt"  # every thread's Python stack, written just before the limit
SCRIPT_STACK_FILE = "script-stack.txt"  # the same, by a case script of its own
BUILD_SOURCE = "src"  # the build frontend's copy of the project
# What a tool prints, streamed to files in its working folder (the cell's, or the build's
# copy in it) while it runs and removed when it ends: a worker stopped from outside leaves
# them, and its cell's record is read from them.
TOOL_OUTPUT_PREFIXES = (".tool-stdout-", ".tool-stderr-")

# nvcc's list of the files a compile read (-MD -MF), in the cell's folder (those outside the
# folders the compile key stands for are the compile stage's `read_outside`).
DEPENDENCIES = "dependencies.d"
