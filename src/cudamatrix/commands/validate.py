"""`cudamatrix validate`: the matrix and the corpus checked, nothing run."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ..common.log_line import say
from .arguments import add_selection
from .command import Command, Invocation
from .selection import options_from

if TYPE_CHECKING:
    from ..config.corpus import Case, Variant

# The sources read for kernel names (CUDA and C++; a Python frontend's kernels are not
# written this way), and how much of each.
_CUDA_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".cpp", ".cc", ".cxx", ".inl")
_READ_BYTES = 8 << 20


def _kernels_of(case: Case, variant: Variant) -> list[str] | None:
    """The kernels the variant's source and the headers it includes from its case (or its
    -I folders) define; None where they cannot be read for names (a folder, a Python
    source, a kernel a macro makes, a file that cannot be read)."""
    from ..stages.compile.flags import include_folders
    from ..stages.compile.includes import included_files
    from ..stages.inspect.kernel_names import kernels_defined

    if not variant.source.is_file() or variant.source.suffix not in _CUDA_SUFFIXES:
        return None
    case_dir = str(variant.case_dir or case.directory)
    try:
        search = [case_dir, *include_folders(variant.flags, case_dir, None)]
        files = included_files([str(variant.source)], search, ()).files
        found: list[str] = []
        for path in files:
            with open(path, "rb") as file:
                defined = kernels_defined(file.read(_READ_BYTES).decode(errors="replace"))
            if defined is None:
                return None
            found += defined
    except (OSError, ValueError):
        return None
    return list(dict.fromkeys(found))


def kernel_warnings(cases: Mapping[str, Case]) -> Iterable[str]:
    """A warning for each variant whose `kernel` names none of the kernels its source
    defines: the run would fail at its check, after its compile, where `validate` can say
    it at once. A warning, not an error: a kernel made by a macro out of sight of this
    reading (in a toolkit's header, say) is still a kernel."""
    from ..stages.inspect.kernel_names import written_base

    for case in cases.values():
        for variant in case.variants:
            written = variant.kernel
            if not written or written.startswith("_Z"):  # a mangled name: the module's own
                continue
            defined = _kernels_of(case, variant)
            if defined and written_base(written) not in defined:
                yield (f"warning: {case.id}/{variant.name}: kernel {written!r} is not a kernel "
                       f"its source {variant.source.name} defines; it defines "
                       f"{', '.join(defined)} (a run fails at the check)")


def _validate(args: argparse.Namespace, invocation: Invocation) -> int:
    from ..config.planning import make_plan

    options = options_from(args)
    plan = make_plan(options)
    # The user's own file where there is one (the matrix under it is the tool's, unless
    # it names another), else the matrix read.
    checked = options.overrides_file or plan.matrix.path
    for idle in plan.idle_variants:
        say(f"warning: variant {idle} has no cell in tier {plan.tier.name} (its `only`, or "
            "the tier's toolkits, archs and libraries, leave none): it never runs",
            invocation.console)
    for warning in kernel_warnings(plan.cases):
        say(warning, invocation.console)
    say(f"{checked}: ok; {len(plan.cases)} cases, {len(plan.cells)} cells in tier "
        f"{plan.tier.name}" + (f" (and {len(plan.ruled_out)} the matrix rules out, each a "
                               "skip)" if plan.ruled_out else ""), invocation.console)
    return 0


COMMAND = Command("validate", "check the matrix and the corpus", add_selection, _validate)
