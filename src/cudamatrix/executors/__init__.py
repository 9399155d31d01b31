"""Where a cell's worker runs: a process of its own here, or a `docker exec` in its
toolkit's container. Either way the worker writes its stages to the cell's folder and
the run reads them back, so a crash, a hang or an interrupted run costs one cell.
"""
