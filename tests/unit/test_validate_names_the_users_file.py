"""`validate` in a project names the user's cudamatrix.toml, not the tool's matrix.toml
(issue 61: a stranger's [libraries.*] mistake was reported against
.../cudamatrix/config/data/matrix.toml, a file they never wrote)."""

from __future__ import annotations

from pathlib import Path

from conftest import cudamatrix_in_process


def _project(tmp_path: Path, tables: str) -> Path:
    made = cudamatrix_in_process("init", cwd=tmp_path)
    assert made.code == 0, made.output
    config = tmp_path / "cudamatrix.toml"
    config.write_text(config.read_text() + tables)
    return config


def test_the_ok_line_names_the_project_file(tmp_path: Path) -> None:
    config = _project(tmp_path, "")
    said = cudamatrix_in_process("validate", cwd=tmp_path)
    assert said.code == 0 and said.output.startswith(f"{config}: ok;"), said.output


def test_a_mistake_in_the_projects_tables_names_its_file(tmp_path: Path) -> None:
    config = _project(tmp_path, '\n[libraries.mylib]\nheaders = true\nversions = ["1.0"]\n'
                                'include = ["/usr/include"]\n'
                                'sources = { "1.0" = "path:./nowhere" }\n')
    said = cudamatrix_in_process("validate", cwd=tmp_path)
    assert said.code == 2
    assert said.output.startswith(f"error: {config}: libraries.mylib.include:"), said.output
    assert "data/matrix.toml" not in said.output


def test_a_key_the_project_amends_names_its_file_and_the_matrix_keeps_its_own(
        tmp_path: Path) -> None:
    config = _project(tmp_path, "")
    text = config.read_text().replace('arch = ["sm_80", "sm_90"]', 'arch = ["sm_80", "sm_42"]')
    config.write_text(text)
    said = cudamatrix_in_process("validate", cwd=tmp_path)
    assert said.code == 2 and said.output.startswith(f"error: {config}: tiers.pr.arch"), \
        said.output


def test_a_variant_with_no_cell_in_the_tier_is_flagged(tmp_path: Path) -> None:
    """Issue 61: a variant whose `only` the tier's toolkits never meet was silently never
    run; validate (and a run's notes) now say so, and it is no error."""
    _project(tmp_path, "")
    case = tmp_path / "cudamatrix-cases" / "saxpy" / "case.toml"
    case.write_text(case.read_text() + '\n[[variant]]\nname = "ancient"\nsource = '
                    '"saxpy.cu"\nfrontend = "nvrtc"\nkernel = "saxpy"\n'
                    'only = { toolkit = "<12.0" }\n')
    said = cudamatrix_in_process("validate", cwd=tmp_path)
    assert said.code == 0, said.output
    assert "warning: variant saxpy/ancient has no cell in tier pr" in said.output
    assert "saxpy/nvrtc" not in said.output
