"""An unchanged build case is not built again when another case is added (issue 82, item
8: 8.9 s and 9.6 s rebuilt for nothing). Real runs of the tool, each build's commands
real processes on a made-up host toolkit, each noting in a file outside the project that
it ran; the second run has a case more, so it cannot be answered from the first's record,
and the first case's builds come from the build cache: the same verdicts, no command run.
An edit of the project builds again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO

CASE = """\
title = "builds that note each time they run"

[[variant]]
name = "makes"
frontend = "build"
  [variant.build]
  project = "path:project"
  commands = ["sh -c 'echo {name}-makes >> {runs}; mkdir -p out; cp lib.txt out/case.so'"]
  outputs = ["out/*.so"]

[[variant]]
name = "refused"
frontend = "build"
  [variant.build]
  project = "path:project"
  commands = ["sh -c 'echo {name}-refused >> {runs}; echo \\"error: no such thing\\"; exit 1'"]
  outputs = ["*.so"]
  [[variant.expect]]
  outcome = "fail"
  stage = "compile"
"""


def _fake_toolkit(root: Path) -> Path:
    """A CUDA 13.0 install as the host provider reads one (nothing here compiles)."""
    for tool in ("nvcc", "ptxas"):
        path = root / "bin" / tool
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n")
        path.chmod(0o755)
    (root / "lib64").mkdir()
    (root / "include").mkdir()
    (root / "include" / "cuda_runtime.h").write_text("#pragma once\n")
    return root


def _case(corpus: Path, name: str, runs: Path) -> Path:
    folder = corpus / name
    (folder / "project").mkdir(parents=True)
    (folder / "project" / "lib.txt").write_text(f"{name}'s library\n")
    (folder / "case.toml").write_text(CASE.format(name=name, runs=runs))
    return folder


def _run(tmp_path: Path, out: str, *cases: str, cache_from: Path | None = None,
         corpus: Path | None = None, cuda: Path | None = None) -> dict[str, dict]:
    """A run of `cases` with tmp_path's cache (and, read only, `cache_from`'s); the
    corpus and the toolkit are tmp_path's unless given."""
    chosen = [word for case in cases for word in ("--case", case)]
    also = ["--compile-cache-from", str(cache_from)] if cache_from else []
    done = subprocess.run(
        [sys.executable, "-m", "cudamatrix", "run", "--corpus",
         str(corpus or tmp_path / "corpus"), *chosen,
         "--toolkit", "13.0", "--arch", "sm_90", "--provider", "host", "--no-gpu",
         "--cache", str(tmp_path / "cache"), *also, "--out", str(tmp_path / out)],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "CI": "1", "CUDA_HOME": str(cuda or tmp_path / "cuda")})
    said = done.stdout + done.stderr
    assert "Traceback" not in said, said[-3000:]
    cells = json.loads((tmp_path / out / "results.json").read_text())["cells"]
    return {c["id"].rsplit("/", 2)[0]: c for c in cells}


def _verdict(cell: dict) -> tuple[str, str, str]:
    return cell["outcome"], cell["stage"], cell["message"]


def test_an_unchanged_build_is_not_built_again_when_a_case_is_added(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    _fake_toolkit(tmp_path / "cuda")
    first_case = _case(tmp_path / "corpus", "first", runs)
    first = _run(tmp_path, "one", "first")
    assert sorted(runs.read_text().split()) == ["first-makes", "first-refused"]
    assert first["first/refused"]["outcome"] == "xfail", first["first/refused"]

    _case(tmp_path / "corpus", "second", runs)
    second = _run(tmp_path, "two", "first", "second")
    assert sorted(runs.read_text().split()) == ["first-makes", "first-refused",
                                                "second-makes", "second-refused"]
    for name in ("first/makes", "first/refused"):
        assert _verdict(second[name]) == _verdict(first[name]), second[name]
        assert second[name]["stages"][0]["details"]["cache"] == "hit"
    # The kept build's outputs are audited as the build left them.
    audited = [{k: v for k, v in run["first/makes"]["stages"][1].items() if k != "seconds"}
               for run in (first, second)]
    assert audited[0] == audited[1] and audited[1]["status"] == "ok", audited
    # The whole built tree, as the build left it: a --prebuilt runner's test runs in it.
    assert [p.read_text() for p in (tmp_path / "two").glob("artifacts/first__makes*/src/*")
            if p.is_file()] == ["first's library\n"]

    # An edit of the project is another build.
    (first_case / "project" / "lib.txt").write_text("edited\n")
    _run(tmp_path, "three", "first", "second")
    assert runs.read_text().split().count("first-makes") == 2


def test_a_build_kept_in_another_cache_is_served_from_it_read_only(tmp_path: Path) -> None:
    """`--compile-cache-from` serves builds as it serves compiles: a run with an empty
    cache of its own, pointed at a cache whose run built the case, runs no build command,
    says where its build came from, and writes nothing into the cache it read (CI's
    shards and the test suite's runs read the main job's cache so; each built the
    CUTLASS extension again, minutes on 2 cores)."""
    runs = tmp_path / "runs.txt"
    _fake_toolkit(tmp_path / "cuda")
    _case(tmp_path / "corpus", "first", runs)
    first = _run(tmp_path, "one", "first")
    assert sorted(runs.read_text().split()) == ["first-makes", "first-refused"]
    kept = sorted(p.relative_to(tmp_path / "cache") for p in (tmp_path / "cache").rglob("*"))

    other = tmp_path / "elsewhere"
    other.mkdir()
    served = _run(other, "two", "first", cache_from=tmp_path / "cache",
                  corpus=tmp_path / "corpus", cuda=tmp_path / "cuda")
    assert sorted(runs.read_text().split()) == ["first-makes", "first-refused"]  # none ran
    for name in ("first/makes", "first/refused"):
        assert _verdict(served[name]) == _verdict(first[name]), served[name]
        details = served[name]["stages"][0]["details"]
        assert details["cache"] == "hit" and details["cache_from"] == str(tmp_path / "cache")
    assert [p.read_text() for p in (other / "two").glob("artifacts/first__makes*/src/*")
            if p.is_file()] == ["first's library\n"]
    assert sorted(p.relative_to(tmp_path / "cache")
                  for p in (tmp_path / "cache").rglob("*")) == kept  # read, never written


def test_a_builds_key_holds_across_cache_folders(tmp_path: Path) -> None:
    """A build's toolkit and build tools lie in the cache that prepared them, and its
    environment names them ($CUDA_HOME, $PYTHONPATH): the same build made in another
    cache folder is the same key, so a cache another run filled can serve it; another
    toolkit folder, or a folder that only starts with the cache's name, is another."""
    from cudamatrix.orchestrator.build_cache import build_key
    from cudamatrix.stages.cell.job import Job
    from cudamatrix.stages.cell.specs import BuildSetting, BuildSpec

    project = tmp_path / "case"
    project.mkdir()
    (project / "lib.txt").write_text("the project\n")

    def key(cache: Path, cuda_home: Path) -> str | None:
        job = Job(cell_id="c/v/13.0/sm_90", arch="sm_90", source=str(project),
                  frontend="build", workdir=str(tmp_path / "work"), timeout=60,
                  build=BuildSpec(("make",), None, ("*.so",), None, (), ()),
                  build_setting=BuildSetting(str(project), "p",
                                             (str(cache / "build-tools" / "cmake"),),
                                             (str(cache / "build-tools" / "bin"),),
                                             str(cuda_home)))
        return build_key(job, "wheels", cache)

    one, two = tmp_path / "one" / "cache", tmp_path / "two" / "cache"
    first = key(one, one / "toolkits" / "13.0")
    assert first is not None
    assert key(two, two / "toolkits" / "13.0") == first
    assert key(two, two / "toolkits" / "12.4") != first
    assert key(one, tmp_path / "one" / "cache2" / "toolkits" / "13.0") != first
