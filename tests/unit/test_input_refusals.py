"""Bad input the user can cause, found by reading files alone (validate, list): each gets
exit status 2 and a message naming the culprit. Run in process (conftest's read_cli); the
refusals that need a run stay in tests/e2e/test_inputs.py."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import matrix_copy
from cudamatrix.config.defaults import KNOWN_BUGS


def test_seed_matrix_and_corpus_validate(read_cli) -> None:
    run = read_cli("validate")
    assert run.code == 0, run.output
    assert "8 cases" in run.output and ": ok" in run.output


def test_malformed_toml_names_file_and_line(read_cli, tmp_path: Path) -> None:
    bad = matrix_copy(tmp_path, 'default_tier = "pr"', 'default_tier = "pr')
    run = read_cli("validate", "--matrix", str(bad))
    assert run.code == 2
    assert str(bad) in run.output and "line" in run.output


def test_unknown_toolkit_in_tier_is_rejected(read_cli, tmp_path: Path) -> None:
    bad = matrix_copy(tmp_path, 'toolkit = ["11.8", "12.4", "12.9", "13.0"]',
                       'toolkit = ["11.8", "12.7"]')
    run = read_cli("validate", "--matrix", str(bad))
    assert run.code == 2
    assert "tiers.pr.toolkit" in run.output and "12.7" in run.output


def test_exclude_matching_nothing_is_rejected(read_cli, tmp_path: Path) -> None:
    bad = matrix_copy(tmp_path, '{ case = "wmma-jitify", arch = "sm_90" },',
                       '{ case = "no-such-case", arch = "sm_90" },')
    run = read_cli("validate", "--matrix", str(bad))
    assert run.code == 2
    assert "exclude[0]" in run.output and "matches no cell" in run.output


def test_impossible_include_is_rejected(read_cli, tmp_path: Path) -> None:
    row = 'include = [{ toolkit = "11.8", arch = "sm_90a" }]\n'
    bad = matrix_copy(tmp_path, "exclude = [\n  # sm_90 is", row + "exclude = [\n  # sm_90 is")
    run = read_cli("validate", "--matrix", str(bad))
    assert run.code == 2
    assert "impossible cell" in run.output and "11.8" in run.output


def test_unknown_toolkit_on_the_command_line_lists_the_available(read_cli) -> None:
    run = read_cli("list", "--toolkit", "12.7")
    assert run.code == 2
    assert "12.7" in run.output and "11.8" in run.output and "13.5" in run.output


def test_unknown_arch_and_case(read_cli) -> None:
    assert "sm_99" in read_cli("list", "--arch", "sm_99").output
    run = read_cli("list", "--case", "nope")
    assert run.code == 2 and "nope" in run.output and "marlin-sm75" in run.output


def test_empty_selection(read_cli) -> None:
    run = read_cli("list", "--case", "cutlass-sm90", "--arch", "sm_75")
    assert run.code == 2 and "selection is empty" in run.output


def test_missing_source_names_the_case_file(read_cli, tmp_path: Path) -> None:
    case = tmp_path / "cases" / "broken"
    case.mkdir(parents=True)
    (case / "case.toml").write_text(
        'title = "t"\n[[variant]]\nname = "v"\nsource = "gone.cu"\nfrontend = "nvrtc"\n')
    run = read_cli("validate", "--corpus", str(tmp_path / "cases"))
    assert run.code == 2
    assert "case.toml" in run.output and "gone.cu" in run.output


def test_unknown_when_key(read_cli, tmp_path: Path) -> None:
    shutil.copytree(KNOWN_BUGS / "marlin-sm75", tmp_path / "cases" / "mine")
    case = tmp_path / "cases" / "mine" / "case.toml"
    case.write_text(case.read_text().replace("when = { arch", "when = { archs", 1))
    run = read_cli("validate", "--corpus", str(tmp_path / "cases"))
    assert run.code == 2 and "'archs'" in run.output


def test_one_cell_by_its_id(read_cli) -> None:
    """The report's repro command: --cell ID selects exactly that cell; an unknown id is
    exit 2 naming it."""
    one = read_cli("list", "--cell", "marlin-sm75/arch-guard/12.4/sm_80")
    assert one.code == 0 and one.output.split() == ["marlin-sm75/arch-guard/12.4/sm_80"]
    bad = read_cli("list", "--cell", "marlin-sm75/arch-guard/12.7/sm_80")
    assert bad.code == 2 and "--cell marlin-sm75/arch-guard/12.7/sm_80" in bad.output
