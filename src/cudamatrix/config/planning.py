"""A run's plan: the matrix and tier chosen, the cases read, every cell of the selection
(the matrix's constraints pruned, the shard taken), before anything is prepared."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..errors import UserError
from .corpus import Case, Variant, load_corpus, select_cases
from .matrix import Matrix, Tier, load_matrix
from .options import RunOptions
from .plan import Cell, check_excludes, check_only, expand, ruled_out, shard


@dataclass(frozen=True)
class Plan:
    matrix: Matrix
    tier: Tier
    cases: dict[str, Case]
    cells: list[Cell]
    # Cells that cannot exist (matrix.toml's library constraints), counted by reason.
    pruned: dict[str, int] = field(default_factory=dict)
    # Those cells themselves, each with its reason: every one is a skip in the results.
    ruled_out: list[tuple[Cell, str]] = field(default_factory=list)
    # The variants (case/variant) of the tier's cases that have no cell in the tier at all:
    # an `only` or a tier that leaves none, said rather than silently never run.
    idle_variants: tuple[str, ...] = ()

    def variant(self, cell: Cell) -> Variant:
        return next(v for v in self.cases[cell.case].variants if v.name == cell.variant)


def with_project(case: Case, project: str) -> Case:
    """The case with `project` built by each of its build variants."""
    variants = tuple(replace(v, build=replace(v.build, project=project)) if v.build else v
                     for v in case.variants)
    return replace(case, variants=variants)


def run_matrix(options: RunOptions) -> Matrix:
    """The run's matrix: its file with the project's tables laid over it, and the releases
    --library chose in place of its tier's."""
    matrix = load_matrix(options.matrix, options.matrix_overrides, options.overrides_file)
    return matrix.choosing(options.tier, options.library_versions)


def make_plan(options: RunOptions) -> Plan:
    matrix = run_matrix(options)
    tier = matrix.tier(options.tier)
    all_cases = load_corpus(options.corpus, options.paths)
    check_excludes(matrix, tier, all_cases, options.cache)
    check_only(matrix, all_cases)
    cases = select_cases(all_cases, options.cases)
    if options.project_override:
        cases = [with_project(case, options.project_override) for case in cases]
    cells = expand(matrix, tier, cases, toolkits=options.toolkits, archs=options.archs,
                   host_compilers=options.host_compilers, cache=options.cache)
    removed = ruled_out(matrix, tier, cases, toolkits=options.toolkits, archs=options.archs,
                        host_compilers=options.host_compilers, cache=options.cache)
    if options.variants:
        known = sorted({v.name for case in cases for v in case.variants})
        missing = [name for name in options.variants if name not in known]
        if missing:
            raise UserError(f"--variant {missing[0]}: no selected case has a variant of that "
                            f"name (they have: {', '.join(known[:20])})")
        cells = [c for c in cells if c.variant in options.variants]
        removed = [(c, why) for c, why in removed if c.variant in options.variants]
    if options.cell_ids:
        unknown = sorted(set(options.cell_ids) - {c.id for c in cells}
                         - {c.id for c, _ in removed})
        if unknown:
            raise UserError(f"--cell {unknown[0]}: no such cell in tier {tier.name!r} "
                            "(`cudamatrix list` prints them)")
        cells = [c for c in cells if c.id in set(options.cell_ids)]
        removed = [(c, why) for c, why in removed if c.id in set(options.cell_ids)]
    if options.shard:  # one round robin over every cell, ruled out or not: as `plan` counts
        kept = {c.id for c in shard([*cells, *(c for c, _ in removed)], *options.shard)}
        cells = [c for c in cells if c.id in kept]
        removed = [(c, why) for c, why in removed if c.id in kept]
    if not cells and not (options.cell_ids and removed):
        # Where every cell was ruled out, why (a torch_pairing, an arch no toolkit builds).
        why = f" ({len(removed)} ruled out: {removed[0][1]})" if removed else ""
        raise UserError("the selection is empty: no cell matches "
                        f"tier {tier.name!r}, cases {list(options.cases) or 'all'}, "
                        f"toolkits {list(options.toolkits) or list(tier.toolkits)}, "
                        f"archs {list(options.archs) or list(tier.archs)}{why}")
    counts: dict[str, int] = {}
    for _, why in removed:
        counts[why] = counts.get(why, 0) + 1
    # The tier's own cells are these where no axis was narrowed: not expanded again.
    whole = None if options.toolkits or options.archs or options.cell_ids or options.shard \
        or options.variants else [*cells, *(c for c, _ in removed)]
    return Plan(matrix, tier, {c.id: c for c in cases}, cells, counts, removed,
                _idle_variants(matrix, tier, cases, options, whole))


def _idle_variants(matrix: Matrix, tier: Tier, cases: Sequence[Case], options: RunOptions,
                   whole: Sequence[Cell] | None) -> tuple[str, ...]:
    """Each variant of the tier's cases that has no cell in the tier, planned or ruled out
    (on the tier's own axes: a --toolkit that leaves a variant out is the user's choice);
    `whole`: those cells where the plan already has them all."""
    every = whole if whole is not None else expand(
        matrix, tier, cases, host_compilers=options.host_compilers, prune=False,
        cache=options.cache)
    have = {(cell.case, cell.variant) for cell in every}
    return tuple(f"{case.id}/{variant.name}" for case in cases
                 if not tier.cases or case.id in tier.cases
                 for variant in case.variants if (case.id, variant.name) not in have)
