"""Where the code under test comes from (issue 14, point 2), the parts that need no
network: a folder and its digest, an sdist file unpacked (and one leaving its folder
refused), a git checkout at the revision it names (real git, a local repository)."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from cudamatrix.config.sources import SourceSpec, fetch, tree_digest
from cudamatrix.errors import EnvironmentUnavailable, UserError


def test_a_folder_is_read_in_place_and_its_digest_follows_its_content(tmp_path: Path) -> None:
    project = tmp_path / "lib"
    (project / "src").mkdir(parents=True)
    (project / "src" / "k.cu").write_text("__global__ void k() {}\n")
    got = fetch(SourceSpec.parse("path:lib", "cudamatrix.toml"), tmp_path, tmp_path / "cache")
    assert got.path == project.resolve()
    before = got.digest
    (project / ".git").mkdir()  # a checkout's own metadata is not its content
    assert tree_digest(project) == before
    (project / "src" / "k.cu").write_text("__global__ void k() { }\n")
    assert tree_digest(project) != before


def test_an_sdist_file_is_unpacked_once_and_a_member_leaving_it_is_refused(tmp_path: Path) -> None:
    good = tmp_path / "lib-1.0.tar.gz"
    with tarfile.open(good, "w:gz") as archive:
        data = b"[project]\nname = 'lib'\n"
        info = tarfile.TarInfo("lib-1.0/pyproject.toml")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    got = fetch(SourceSpec.parse("file:lib-1.0.tar.gz", "x"), tmp_path, tmp_path / "cache")
    assert got.path.name == "lib-1.0" and (got.path / "pyproject.toml").is_file()
    assert got.path.is_relative_to(tmp_path / "cache" / "sources")
    evil = tmp_path / "evil-1.0.tar.gz"
    with tarfile.open(evil, "w:gz") as archive:
        info = tarfile.TarInfo("../../outside.txt")
        info.size = 1
        archive.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(EnvironmentUnavailable, match="cannot unpack"):
        fetch(SourceSpec.parse("file:evil-1.0.tar.gz", "x"), tmp_path, tmp_path / "cache")
    assert not (tmp_path / "outside.txt").exists()


def test_a_git_source_is_the_revision_it_names(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "k.cu").write_text("// one\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    first = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                           check=True).stdout.strip()
    (repo / "k.cu").write_text("// two\n")
    subprocess.run([*git, "commit", "-qam", "two"], check=True)
    got = fetch(SourceSpec.parse(f"git:file://{repo}@{first}", "x"), tmp_path, tmp_path / "c")
    assert got.digest == first
    assert (got.path / "k.cu").read_text() == "// one\n"
    with pytest.raises(UserError, match="name the revision"):
        SourceSpec.parse(f"git:file://{repo}", "cudamatrix.toml")
    # git's ext:: transport runs a command of the address's choosing: refused by name.
    with pytest.raises(UserError, match="git's other transports"):
        SourceSpec.parse("git:ext::sh -c touch% /tmp/pwned@main", "case.toml")


def test_an_sdist_is_found_by_its_pep_625_name() -> None:
    """`sdist:llama-cpp-python==0.3.36` was "the index has no sdist of this release": its
    file is llama_cpp_python-0.3.36.tar.gz, the dashes of the name (not the version's)
    underscores, which neither stem the lookup tried matched."""
    from cudamatrix.common.package_index import Listing
    from cudamatrix.config.sources import sdist_files

    listing = Listing((), (
        {"filename": "llama_cpp_python-0.3.36.tar.gz", "hashes": {"sha256": "a"}},
        {"filename": "llama_cpp_python-0.3.35.tar.gz", "hashes": {"sha256": "b"}},
        {"filename": "llama_cpp_python-0.3.36-py3-none-any.whl", "hashes": {"sha256": "c"}}))
    assert [f["sha256"] if "sha256" in f else f["hashes"]["sha256"]
            for f in sdist_files(listing, "llama-cpp-python", "0.3.36")] == ["a"]
    older = Listing((), ({"filename": "my-lib-1.2.tar.gz", "hashes": {"sha256": "d"}},
                         {"filename": "my_lib_1.2.zip", "hashes": {"sha256": "e"}}))
    assert len(sdist_files(older, "My.Lib", "1.2")) == 2
