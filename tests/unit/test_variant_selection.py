"""`--variant NAME`: run only the selected cases' variants of that name, as `bisect` could
and `run`, `list` and `plan` could not (issue 61: a user narrowing bitsandbytes' build to
one variant had to list each cell)."""

from __future__ import annotations


def test_run_and_list_take_a_variant(read_cli) -> None:
    every = read_cli("list", "--case", "marlin-sm75").output.split()
    one = read_cli("list", "--case", "marlin-sm75", "--variant", "arch-guard")
    assert one.code == 0, one.output
    cells = one.output.split()
    assert cells and all(c.split("/")[1] == "arch-guard" for c in cells)
    assert set(cells) == {c for c in every if c.split("/")[1] == "arch-guard"} < set(every)


def test_a_variant_no_selected_case_has_is_one_line(read_cli) -> None:
    said = read_cli("list", "--case", "marlin-sm75", "--variant", "nope")
    assert said.code == 2
    assert "--variant nope: no selected case has a variant of that name" in said.output
    assert "arch-guard" in said.output
