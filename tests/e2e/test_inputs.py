"""Bad input the user can cause: each gets exit status 2 and a message naming the culprit."""

from __future__ import annotations

import shutil
from pathlib import Path

from cudamatrix.config.defaults import DEFAULT_MATRIX, KNOWN_BUGS


def _matrix_copy(tmp_path: Path, old: str, new: str) -> Path:
    text = DEFAULT_MATRIX.read_text()
    assert old in text
    path = tmp_path / "matrix.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_seed_matrix_and_corpus_validate(run_cli) -> None:
    run = run_cli("validate")
    assert run.code == 0, run.output
    assert "8 cases" in run.output and ": ok" in run.output


def test_malformed_toml_names_file_and_line(run_cli, tmp_path: Path) -> None:
    bad = _matrix_copy(tmp_path, 'default_tier = "pr"', 'default_tier = "pr')
    run = run_cli("validate", "--matrix", str(bad))
    assert run.code == 2
    assert str(bad) in run.output and "line" in run.output


def test_unknown_toolkit_in_tier_is_rejected(run_cli, tmp_path: Path) -> None:
    bad = _matrix_copy(tmp_path, 'toolkit = ["11.8", "12.4", "12.9", "13.0"]',
                       'toolkit = ["11.8", "12.7"]')
    run = run_cli("validate", "--matrix", str(bad))
    assert run.code == 2
    assert "tiers.pr.toolkit" in run.output and "12.7" in run.output


def test_exclude_matching_nothing_is_rejected(run_cli, tmp_path: Path) -> None:
    bad = _matrix_copy(tmp_path, '{ case = "wmma-jitify", arch = "sm_90" },',
                       '{ case = "no-such-case", arch = "sm_90" },')
    run = run_cli("validate", "--matrix", str(bad))
    assert run.code == 2
    assert "exclude[0]" in run.output and "matches no cell" in run.output


def test_impossible_include_is_rejected(run_cli, tmp_path: Path) -> None:
    row = 'include = [{ toolkit = "11.8", arch = "sm_90a" }]\n'
    bad = _matrix_copy(tmp_path, "exclude = [\n  # sm_90 is", row + "exclude = [\n  # sm_90 is")
    run = run_cli("validate", "--matrix", str(bad))
    assert run.code == 2
    assert "impossible cell" in run.output and "11.8" in run.output


def test_unknown_toolkit_on_the_command_line_lists_the_available(run_cli) -> None:
    run = run_cli("list", "--toolkit", "12.7")
    assert run.code == 2
    assert "12.7" in run.output and "11.8" in run.output and "13.5" in run.output


def test_unknown_arch_and_case(run_cli) -> None:
    assert "sm_99" in run_cli("list", "--arch", "sm_99").output
    run = run_cli("list", "--case", "nope")
    assert run.code == 2 and "nope" in run.output and "marlin-sm75" in run.output


def test_empty_selection(run_cli) -> None:
    run = run_cli("list", "--case", "cutlass-sm90", "--arch", "sm_75")
    assert run.code == 2 and "selection is empty" in run.output


def test_missing_source_names_the_case_file(run_cli, tmp_path: Path) -> None:
    case = tmp_path / "cases" / "broken"
    case.mkdir(parents=True)
    (case / "case.toml").write_text(
        'title = "t"\n[[variant]]\nname = "v"\nsource = "gone.cu"\nfrontend = "nvrtc"\n')
    run = run_cli("validate", "--corpus", str(tmp_path / "cases"))
    assert run.code == 2
    assert "case.toml" in run.output and "gone.cu" in run.output


def test_unwritable_output_folder(run_cli, tmp_path: Path) -> None:
    target = tmp_path / "file-not-folder"
    target.write_text("")
    run = run_cli("run", "--case", "marlin-sm75", "--toolkit", "12.4", "--arch", "sm_80",
                  out=target / "sub")
    assert run.code == 2 and "not writable" in run.output


def test_unknown_when_key(run_cli, tmp_path: Path) -> None:
    shutil.copytree(KNOWN_BUGS / "marlin-sm75", tmp_path / "cases" / "mine")
    case = tmp_path / "cases" / "mine" / "case.toml"
    case.write_text(case.read_text().replace("when = { arch", "when = { archs", 1))
    run = run_cli("validate", "--corpus", str(tmp_path / "cases"))
    assert run.code == 2 and "'archs'" in run.output


def test_wheel_that_cannot_be_installed(run_cli, tmp_path: Path) -> None:
    """A pin pip cannot satisfy: the other toolkit's cells still run and are kept, the broken
    toolkit's cells say why, and the run ends with status 2 naming the toolkit."""
    bad = _matrix_copy(tmp_path, 'ptx_isa = "8.4"\n',
                       'ptx_isa = "8.4"\npins = { "nvidia-cuda-nvrtc-cu12" = "==12.4.999" }\n')
    run = run_cli("run", "--matrix", str(bad), "--case", "marlin-sm75", "--toolkit", "12.4",
                  "--toolkit", "13.0", "--arch", "sm_80", "--cache", str(tmp_path / "cache"),
                  out=tmp_path / "out")
    assert run.code == 2, run.output
    assert "error: toolkit 12.4 could not be prepared" in run.output
    assert "nvidia-cuda-nvrtc-cu12==12.4.999" in run.output
    cells = run.cells()
    broken = [c for i, c in cells.items() if "/12.4/" in i]
    assert broken and all(c["outcome"] == "error" and "12.4.999" in c["message"]
                          for c in broken)
    assert all(c["outcome"] in ("pass", "xfail") for i, c in cells.items() if "/13.0/" in i)
    assert run.results["run"]["environment_errors"].keys() == {"toolkit 12.4"}


def test_one_cell_by_its_id(run_cli) -> None:
    """The report's repro command: --cell ID selects exactly that cell; an unknown id is
    exit 2 naming it."""
    one = run_cli("list", "--cell", "marlin-sm75/arch-guard/12.4/sm_80")
    assert one.code == 0 and one.output.split() == ["marlin-sm75/arch-guard/12.4/sm_80"]
    bad = run_cli("list", "--cell", "marlin-sm75/arch-guard/12.7/sm_80")
    assert bad.code == 2 and "--cell marlin-sm75/arch-guard/12.7/sm_80" in bad.output
