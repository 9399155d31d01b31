"""Bad input the user can cause: each gets exit status 2 and a message naming the culprit."""

from __future__ import annotations

from pathlib import Path

from conftest import matrix_copy


def test_unwritable_output_folder(run_cli, tmp_path: Path) -> None:
    target = tmp_path / "file-not-folder"
    target.write_text("")
    run = run_cli("run", "--case", "marlin-sm75", "--toolkit", "12.4", "--arch", "sm_80",
                  out=target / "sub")
    assert run.code == 2 and "not writable" in run.output


def test_wheel_that_cannot_be_installed(run_cli, tmp_path: Path) -> None:
    """A pin pip cannot satisfy: the other toolkit's cells still run and are kept, the broken
    toolkit's cells say why, and the run ends with status 2 naming the toolkit."""
    bad = matrix_copy(tmp_path, 'ptx_isa = "8.4"\n',
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
