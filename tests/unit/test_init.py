"""`cudamatrix init` writes only inside the project, never through a link, refuses what it
cannot write before writing anything, and puts no value into YAML it has not checked
(issue 43, item 8)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cudamatrix.config.project import CI_FILES, init_project
from cudamatrix.errors import UserError


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_linked_github_folder_is_refused_and_nothing_written(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / ".github").symlink_to(elsewhere)
    with pytest.raises(UserError, match=r"\.github: a link; cudamatrix init writes only"):
        init_project(project, "github")
    assert _listing(elsewhere) == [] and _listing(project) == [".github"]


def test_a_dangling_link_where_the_workflow_goes_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".github" / "workflows").mkdir(parents=True)
    (project / CI_FILES["github"]).symlink_to(tmp_path / "made-elsewhere.yml")
    with pytest.raises(UserError, match="already exists"):
        init_project(project, "github")
    assert not (tmp_path / "made-elsewhere.yml").exists()


def test_what_cannot_be_written_is_refused_before_anything_is(tmp_path: Path) -> None:
    """A folder in the way that is a file (as unwritable for root as for anyone)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / ".github").write_text("a file, not a folder")
    with pytest.raises(UserError, match=r"\.github: not a folder"):
        init_project(project, "github")
    assert _listing(project) == [".github"]  # not the 7 starter files, then a traceback


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through a folder's mode: the "
                    "refusal is shown where a file stands in the way, which root cannot pass")
def test_a_read_only_project_is_refused_before_anything_is(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    project.chmod(0o555)
    try:
        with pytest.raises(UserError, match="not writable; nothing was written"):
            init_project(project)
        assert _listing(project) == []
    finally:
        project.chmod(0o755)


@pytest.mark.parametrize("workflow", [
    "me/repo/.github/workflows/x.yml@v1\n    secrets: inherit",
    "me/repo/x.yml@v1 # comment",
    "'me/repo/x.yml@v1'",
    "not-a-workflow",
])
def test_a_workflow_that_is_no_reference_is_refused(tmp_path: Path, workflow: str) -> None:
    with pytest.raises(UserError, match="expected OWNER/REPO/PATH@REF"):
        init_project(tmp_path, "github", workflow)
    assert _listing(tmp_path) == []


def test_a_workflow_reference_is_written_as_given(tmp_path: Path) -> None:
    init_project(tmp_path, "github", "me/repo/.github/workflows/cudamatrix.yml@main")
    assert "uses: me/repo/.github/workflows/cudamatrix.yml@main" in \
        (tmp_path / CI_FILES["github"]).read_text()


def test_init_help_names_the_folder_init_writes(tmp_path: Path) -> None:
    """Issue 70, point 5: `init --help` said "cases/" where init writes cudamatrix-cases/;
    both now come from one constant."""
    import argparse

    from cudamatrix.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    said = commands.choices["init"].format_help()
    written = {p.parent.parent.name for p in init_project(tmp_path)
               if p.name == "case.toml"}
    assert written == {"cudamatrix-cases"}
    assert all(f"{folder}/" in " ".join(said.split()) for folder in written), said
