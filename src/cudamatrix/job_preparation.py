"""What a cell's job needs beyond its case, prepared on the orchestrator's side before a
worker runs it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .corpus import Variant
from .environments import Environments
from .providers import Environment
from .sources import tree_digest
from .stages.result import StageResult


def build_options(variant: Variant, env: Environment | None, envs: Environments,
                  prebuilt: bool, versions: dict[str, str]) -> dict[str, Any] | StageResult:
    """What a build cell's worker needs: the project's folder, the toolkit as
    ``$CUDA_HOME``, the build's own tools; recorded in the cell's versions."""
    options: dict[str, Any] = {k: v for k, v in variant.build.items()
                               if k not in ("project", "requires")}
    if prebuilt:  # built elsewhere: its folder came with it
        return options
    if not envs.local:
        return StageResult("compile", "unavailable", "the build frontend runs with the "
                           "wheels or host provider (--provider wheels)")
    spec = variant.build.get("project")
    if spec:
        got = envs.source(spec, variant.source)
        if isinstance(got, str):  # the user's to fix: reported again at the end
            return StageResult("compile", "error", got)
        if got.is_wheel:
            return StageResult("compile", "error", f"project {spec}: a wheel is built "
                               "already; a build needs a folder, an sdist or a checkout")
        options.update(project=str(got.path), project_label=got.label)
    else:
        digest = tree_digest(variant.source)
        options.update(project=str(variant.source),
                       project_label=f"{variant.source.name}/ ({digest[:12]})")
    versions["project"] = options["project_label"]
    requires = tuple(variant.build.get("requires", ()))
    if requires:
        tools = envs.build_tools(requires)
        if isinstance(tools, str):
            return StageResult("compile", "error", f"build tools: {tools}")
        options.update(tools_path=list(tools.python_path),
                       tools_bin=[str(Path(tools.root) / "bin")])
        versions.update({f"{name} (build)": v for name, v in tools.packages.items()})
    if env is not None:
        options["cuda_home"] = str(envs.cuda_home(env))
    return options
