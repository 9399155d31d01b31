"""Frontends, toolkit providers and commands found by entry point: the built-in ones and a
plugin's alike.

pyproject.toml declares the built-ins under ``cudamatrix.frontends``,
``cudamatrix.providers`` and ``cudamatrix.commands``; a plugin package declares its own
in the same groups and is found once installed, with nothing of this package changed.
Both are loaded the same way (`EntryPoint.load`). The built-ins' entries are read from
``BUILT_IN`` (a unit test keeps it equal to pyproject.toml's), not from the installed
metadata: a source tree that was never installed (``PYTHONPATH=src`` on a GPU machine
without network) or an editable install whose metadata predates an entry has them all.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib.metadata import EntryPoint, EntryPoints, entry_points
from typing import cast

from ..errors import UserError

FRONTENDS = "cudamatrix.frontends"
PROVIDERS = "cudamatrix.providers"
COMMANDS = "cudamatrix.commands"
REPORTS = "cudamatrix.reports"

# Each group's built-ins, "module" or "module:attribute", in the order they are listed.
BUILT_IN: dict[str, dict[str, str]] = {
    FRONTENDS: {
        "nvrtc": "cudamatrix.stages.frontends.nvrtc",
        "nvcc": "cudamatrix.stages.frontends.nvcc",
        "clang": "cudamatrix.stages.frontends.clang",
        "cupy": "cudamatrix.stages.frontends.cupy",
        "cutlass": "cudamatrix.stages.frontends.cutlass",
        "cute-dsl": "cudamatrix.stages.frontends.cute_dsl",
        "cutlass-python": "cudamatrix.stages.frontends.cutlass_python",
        "build": "cudamatrix.stages.frontends.build",
        "torch-extension": "cudamatrix.stages.frontends.torch_extension",
    },
    PROVIDERS: {
        "wheels": "cudamatrix.providers.toolkits:WheelsToolkits.made_for",
        "docker": "cudamatrix.providers.toolkits:DockerToolkits.made_for",
        "host": "cudamatrix.providers.toolkits:HostToolkits.made_for",
    },
    COMMANDS: {
        "init": "cudamatrix.commands.init:COMMAND",
        "run": "cudamatrix.commands.run:COMMAND",
        "bisect": "cudamatrix.commands.bisect:COMMAND",
        "validate": "cudamatrix.commands.validate:COMMAND",
        "list": "cudamatrix.commands.list_cells:COMMAND",
        "report": "cudamatrix.commands.report:COMMAND",
        "repro": "cudamatrix.commands.repro:COMMAND",
        "plan": "cudamatrix.commands.plan:COMMAND",
        "merge": "cudamatrix.commands.merge:COMMAND",
        "audit": "cudamatrix.commands.audit.command:COMMAND",
        "schema": "cudamatrix.commands.schema:COMMAND",
    },
    REPORTS: {
        "results-json": "cudamatrix.reports.formats:RESULTS_JSON",
        "markdown": "cudamatrix.reports.markdown:FORMAT",
        "junit": "cudamatrix.reports.junit:FORMAT",
        "html": "cudamatrix.reports.html:FORMAT",
        "badge": "cudamatrix.reports.badge:FORMAT",
        "history-json": "cudamatrix.reports.formats:HISTORY_JSON",
    },
}


@functools.cache
def _installed() -> EntryPoints:
    """Every installed distribution's entry points, read once a process (each read scans
    every distribution's metadata: tens of milliseconds at every start). Python 3.11 answers
    a SelectableGroups, 3.12 an EntryPoints: both select by group."""
    return cast(EntryPoints, entry_points())


def declared(group: str) -> list[EntryPoint]:
    """The group's entry points: the built-ins first, in their listed order, then each
    plugin's by name. A plugin may not take a built-in's name, nor another plugin's (it
    would replace it silently on one machine and not on another); one entry found twice
    (the same value: a package on two folders of sys.path) is one."""
    built_in = BUILT_IN[group]
    every = list(_installed().select(group=group))
    ours = [EntryPoint(name, value, group) for name, value in built_in.items()]
    for ep in every:
        name = ep.name
        if name in built_in and ep.value != built_in[name]:
            raise UserError(f"entry point {group} {name} = {ep.value}: {name!r} is a "
                            f"built-in name (cudamatrix's own {built_in[name]}); give the "
                            "plugin another name")
    found: dict[str, EntryPoint] = {}
    for ep in every:
        if ep.name in built_in:
            continue
        known = found.setdefault(ep.name, ep)
        if known.value != ep.value:
            raise UserError(f"entry point {group} {ep.name}: two installed plugins declare "
                            f"it ({known.value} and {ep.value}); which one runs would depend "
                            "on the order they are found, so uninstall or rename one")
    plugins = sorted(found.values(), key=lambda ep: ep.name)
    return [*ours, *plugins]


def load(group: str) -> Mapping[str, object]:
    """Each entry point of the group loaded, by name; one that cannot be is named."""
    loaded: dict[str, object] = {}
    for ep in declared(group):
        try:
            loaded[ep.name] = ep.load()
        except UserError:
            raise
        except Exception as exc:  # a plugin's import may raise anything
            raise UserError(f"entry point {group} {ep.name} = {ep.value}: cannot load it "
                            f"({type(exc).__name__}: {exc})") from None
    return loaded
