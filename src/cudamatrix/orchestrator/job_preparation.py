"""What a cell's job needs beyond its case, prepared on the orchestrator's side before a
worker runs it: a built-in frontend's is one function here, in `BUILT_IN` by the
frontend's name (an import the layer contracts see; the cell side never imports this
module); a plugin's is the `prepare` its `Frontend` gives."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..config.corpus import Variant
from ..config.sources import tree_digest
from ..errors import Failure, UserError
from ..providers import Environment
from ..providers.wheels import build_components
from ..stages.cell.job import Job
from ..stages.cell.result import StageResult
from ..stages.cell.specs import BuildSetting
from ..stages.frontends import Frontend
from .cupy_warmup import JitifyWarmups
from .environments import Environments


@dataclass(frozen=True)
class JobContext:
    """What a frontend's `prepare` may use: the cell's variant and toolkit, the run's
    environments and warm-ups, and the cell's recorded versions (which it may add to)."""

    variant: Variant
    env: Environment | None
    envs: Environments
    warmups: JitifyWarmups
    prebuilt: bool  # its artifacts come from an earlier run (--prebuilt)
    versions: dict[str, str]


def preparation(spec: Frontend) -> Callable[[Job, JobContext], Job | StageResult] | None:
    """A frontend's orchestrator-side function: a built-in's from `BUILT_IN`, a plugin's
    as its `Frontend` gives it (a function, or "module:function" for a plugin module that
    the cell side must not import)."""
    if spec.prepare is None:
        return BUILT_IN.get(spec.name)
    if callable(spec.prepare):
        return spec.prepare
    module, _, name = spec.prepare.partition(":")
    try:
        found: Callable[[Job, JobContext], Job | StageResult] = getattr(
            importlib.import_module(module), name)
    except Exception as exc:  # a plugin's module may be missing or raise anything
        raise UserError(f"frontend {spec.name!r}: its prepare {spec.prepare!r} cannot be "
                        f"loaded ({type(exc).__name__}: {exc})") from None
    if not callable(found):
        raise UserError(f"frontend {spec.name!r}: its prepare {spec.prepare!r} is no function")
    return found


def prepare_cupy(job: Job, context: JobContext) -> Job | StageResult:
    """CuPy finds its toolkit as a classic CUDA folder; with Jitify, the run's one warm-up
    of its headers seeds the cell."""
    env = context.env
    if env is not None and env.from_wheels:
        job = replace(job, options={**job.options,
                                    "cuda_path": str(context.envs.layouts.classic_root(env))})
    return context.warmups.prepare(job) if job.options.get("jitify") else job


def prepare_build(job: Job, context: JobContext) -> Job | StageResult:
    """A build cell: its project's folder, the toolkit as ``$CUDA_HOME``, its tools."""
    if context.prebuilt:  # built elsewhere: its folder came with it
        return job
    made = build_setting(context.variant, context.env, context.envs, context.versions)
    if isinstance(made, StageResult):
        return made
    setting, env = made
    return replace(job, build_setting=setting, env=env)


# The built-in frontends' orchestrator sides, by frontend name.
BUILT_IN: dict[str, Callable[[Job, JobContext], Job | StageResult]] = {
    "cupy": prepare_cupy,
    "build": prepare_build,
}

def build_setting(variant: Variant, env: Environment | None, envs: Environments,
                  versions: dict[str, str]
                  ) -> tuple[BuildSetting, Environment | None] | StageResult:
    """What a build cell's worker needs beyond its [variant.build]: the project's folder,
    the toolkit as ``$CUDA_HOME`` (with the libraries of the components its build files
    link, where a wheels toolkit has them only once their wheels are in), the build's own
    tools; recorded in the cell's versions. The toolkit environment comes back with those
    libraries on its library path."""
    build = variant.build
    assert build is not None  # the reader gives the build frontend's variants their table
    if not envs.local:
        return StageResult("compile", "unavailable", "the build frontend runs with the "
                           "wheels or host provider (--provider wheels)")
    if build.project is not None:
        got = envs.source(build.project, variant.source)
        if isinstance(got, Failure):  # the user's to fix: reported again at the end
            return StageResult("compile", "error", got.reason)
        if got.is_wheel:
            return StageResult("compile", "error", f"project {build.project}: a wheel is "
                               "built already; a build needs a folder, an sdist or a checkout")
        project, label = str(got.path), got.label
    else:
        digest = tree_digest(variant.source)
        project, label = str(variant.source), f"{variant.source.name}/ ({digest[:12]})"
    versions["project"] = label
    if env is not None and env.from_wheels:
        for component, named in build_components(Path(project)).items():
            linked = envs.component_libraries(env, component, named)
            if isinstance(linked, Failure):  # a release without it: a skip naming it
                return StageResult("compile", "unavailable", f"toolkit {env.toolkit} "
                                   f"(wheels) has no {component} libraries for the build's "
                                   f"{named}: {linked.reason}")
            env = replace(env, library_dirs=(*env.library_dirs, *linked.library_dirs))
            versions.update(linked.packages)
    tools_path: tuple[str, ...] = ()
    tools_bin: tuple[str, ...] = ()
    if build.requires:
        tools = envs.build_tools(build.requires)
        if isinstance(tools, Failure):
            return StageResult("compile", "error", f"build tools: {tools.reason}")
        tools_path, tools_bin = tuple(tools.python_path), (str(Path(tools.root) / "bin"),)
        versions.update({f"{name} (build)": v for name, v in tools.packages.items()})
    return BuildSetting(project=project, project_label=label, tools_path=tools_path,
                        tools_bin=tools_bin,
                        cuda_home=str(envs.layouts.cuda_home(env)) if env is not None
                        else ""), env
