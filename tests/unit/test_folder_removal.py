"""The last run's cells and artifacts moved aside at once and removed beside the run."""

from __future__ import annotations

from pathlib import Path

from cudamatrix.common.removal import TRASH, FolderRemoval, emptied, removed


def _filled(folder: Path, files: int) -> Path:
    for number in range(files):
        (folder / f"cell-{number}").mkdir(parents=True)
        (folder / f"cell-{number}" / "kernel.cubin").write_bytes(b"x" * 4096)
    return folder


def test_a_discarded_folder_is_gone_at_once_and_removed_by_the_end(tmp_path: Path) -> None:
    artifacts = _filled(tmp_path / "artifacts", 50)
    removal = FolderRemoval(tmp_path)
    removal.discard(artifacts)
    assert not artifacts.exists()  # a new run's cell folders can be made now
    artifacts.mkdir()  # as the run does
    (artifacts / "new").write_text("this run's")
    removal.wait()
    assert not (tmp_path / TRASH).exists()
    assert [p.name for p in artifacts.iterdir()] == ["new"]


def test_what_a_killed_run_left_aside_is_removed_by_the_next(tmp_path: Path) -> None:
    _filled(tmp_path / TRASH / "cells-0123456789ab", 5)
    removal = FolderRemoval(tmp_path)
    removal.wait()
    assert not (tmp_path / TRASH).exists()


def test_nothing_to_discard_and_a_link_is_unlinked_never_followed(tmp_path: Path) -> None:
    elsewhere = _filled(tmp_path / "elsewhere", 2)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "cells").symlink_to(elsewhere)
    removal = FolderRemoval(tmp_path / "out")
    removal.discard(tmp_path / "out" / "artifacts")  # not there: nothing to do
    removal.discard(tmp_path / "out" / "cells")
    removal.wait()
    assert not (tmp_path / "out" / "cells").exists()
    assert len(list(elsewhere.iterdir())) == 2


def test_a_folder_made_anew_under_out_removes_only_its_own(tmp_path: Path) -> None:
    """A cell's folder is made anew where the run writes it (removal.emptied, the one way
    besides FolderRemoval that anything under --out is removed): a link there is unlinked,
    never followed (rmtree refused it and the mkdir then failed), a file is replaced, and
    nothing beside the folder is touched."""
    elsewhere = _filled(tmp_path / "elsewhere", 2)
    artifacts = tmp_path / "out" / "artifacts"
    artifacts.mkdir(parents=True)
    (artifacts / "linked").symlink_to(elsewhere)
    (artifacts / "a-file").write_text("x")
    _filled(artifacts / "full", 3)
    (artifacts / "beside").write_text("kept")
    for name in ("linked", "a-file", "full", "missing"):
        emptied(artifacts / name)
        assert (artifacts / name).is_dir() and not (artifacts / name).is_symlink()
        assert list((artifacts / name).iterdir()) == []
    assert len(list(elsewhere.iterdir())) == 2
    assert (artifacts / "beside").read_text() == "kept"
    removed(artifacts / "full")
    removed(artifacts / "missing-too")
    assert not (artifacts / "full").exists()
