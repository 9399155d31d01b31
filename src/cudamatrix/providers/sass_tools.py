"""The disassembler that turns a cubin into SASS for ``in = "sass"`` checks.

A cubin is ELF: searching its bytes for ``STL`` finds nothing whatever the code does,
so machine-code checks read ``cuobjdump -sass``. The 11.x/12.x wheels carry no
cuobjdump; NVIDIA publishes it, and the nvdisasm it calls, as 13.x wheels, and a
newer disassembler reads older cubins. A toolkit that has its own is used as it is.
"""

from __future__ import annotations

from pathlib import Path

from ..common.up_to_date import InputLedger
from ..errors import EnvironmentUnavailable
from .wheels import install

SASS_TOOLS = ("nvidia-cuda-cuobjdump==13.5.*", "nvidia-cuda-nvdisasm==13.5.*")


def prepare_sass_tools(cache: Path, ledger: InputLedger) -> str | None:
    """The path of a cuobjdump with its nvdisasm beside it, or None when none can be had
    (a GPU machine without network): checks on SASS then say so and decide nothing."""
    try:
        root = install(cache / "tools" / "sass-13.5", SASS_TOOLS, ledger=ledger)
    except EnvironmentUnavailable:
        return None
    tool = root / "nvidia" / "cu13" / "bin" / "cuobjdump"
    if not tool.is_file():
        return None
    for binary in tool.parent.iterdir():
        binary.chmod(binary.stat().st_mode | 0o111)
    return str(tool)
