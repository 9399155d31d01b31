"""What the compile cache's key holds (compile_cache.compile_key): a compile from another
environment is never served as this one's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cudamatrix.orchestrator.compile_cache import compile_key
from cudamatrix.stages.cell.environment import Environment, LibraryEnvironment
from cudamatrix.stages.cell.job import Job


def _job(tmp_path: Path, image: str) -> Job:
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    env = Environment(toolkit="12.4", provider="docker", root="/opt/cudamatrix/toolkit",
                      image=image, packages={"nvidia-cuda-nvcc-cu12": "12.4.131"},
                      tool_versions={"nvcc": "12.4.131", "host_compiler": "g++-12 (image)"})
    return Job(cell_id="c", arch="sm_90a", source=str(tmp_path / "k.cu"), frontend="nvcc",
               workdir=str(tmp_path / "w"), timeout=60, env=env)


def test_a_rebuilt_image_is_another_key(tmp_path: Path) -> None:
    """The same toolkit packages in an image on another base (which gained Python's
    headers) once hit the old image's failed compile: `Python.h: No such file`."""
    old = _job(tmp_path, "cudamatrix/toolkit:12.4-wheels-bef2c9382d62")
    new = replace(old, env=replace(old.env, image="cudamatrix/toolkit:12.4-wheels-b7354c9c13c0"))
    assert compile_key(old, "docker") != compile_key(new, "docker")
    assert compile_key(old, "docker") == compile_key(_job(tmp_path, old.env.image), "docker")


def test_the_stage_code_digest_covers_every_frontend_module() -> None:
    """The frontends are a package of their own (stages/frontends/): a change to NVRTC's
    compile must invalidate NVRTC's cached compiles, so its module is in the digest."""
    from cudamatrix.orchestrator.compile_cache import stage_code_files

    names = {p.as_posix().split("cudamatrix/", 1)[1] for p in stage_code_files()}
    assert {"stages/frontends/nvrtc.py", "stages/frontends/nvcc.py", "stages/compile/built.py",
            "stages/inspect/kernel_names.py", "stages/binaries/elf.py"} <= names, sorted(names)


def _nvrtc_job(case: Path, flags: tuple[str, ...] = (), toolkit: Path | None = None) -> Job:
    env = Environment(toolkit="13.0", provider="wheels", root=str(toolkit or case / "none"),
                      include_dirs=(str(toolkit),) if toolkit else (),
                      packages={"nvidia-cuda-nvrtc": "13.0.88"})
    return Job(cell_id="c", arch="sm_90", source=str(case / "k.cu"), frontend="nvrtc",
               workdir=str(case.parent / "w"), timeout=60, env=env, flags=flags)


def _edited(path: Path, text: str = "#define SCALE 4\n") -> None:
    path.write_text(path.read_text() + text)


def test_every_file_an_include_line_reaches_is_keyed(tmp_path: Path) -> None:
    """Issue 43: `#include "../common/h.h"` (no -I) was outside every folder the key
    hashed, so a broken h.h was served the old pass. Each way a header is reached, edited
    one at a time: the key changes; the same tree again gives the same key."""
    case = tmp_path / "cases" / "k"
    (tmp_path / "cases" / "common").mkdir(parents=True)
    (tmp_path / "shared" / "deep").mkdir(parents=True)
    (tmp_path / "inc").mkdir()
    toolkit = tmp_path / "toolkit"
    toolkit.mkdir()
    case.mkdir()
    (case / "linked").symlink_to(tmp_path / "shared")
    files = {
        "relative": tmp_path / "cases" / "common" / "h.h",
        "linked folder": tmp_path / "shared" / "l.h",
        "reached from a reached header": tmp_path / "shared" / "deep" / "d.h",
        "-I folder outside the case": tmp_path / "inc" / "i.h",
        "the case's own": case / "own.h",
    }
    for path in files.values():
        path.write_text("#pragma once\n")
    (tmp_path / "shared" / "l.h").write_text('#include "deep/d.h"\n')
    (toolkit / "cuda_fp16.h").write_text("// the toolkit's: its version stands for it\n")
    (case / "k.cu").write_text('#include "../common/h.h"\n#include "linked/l.h"\n'
                               '#include <i.h>\n#include "own.h"\n#include <cuda_fp16.h>\n'
                               'extern "C" __global__ void k() {}\n')
    job = _nvrtc_job(case, ("-I../../inc",), toolkit)
    key = compile_key(job, "wheels")
    assert compile_key(job, "wheels") == key
    for name, path in files.items():
        _edited(path)
        now = compile_key(job, "wheels")
        assert now != key, f"an edit in {name} ({path}) left the key as it was"
        key = now
    # The toolkit's own header is stood for by its package versions, not its bytes.
    _edited(toolkit / "cuda_fp16.h")
    assert compile_key(job, "wheels") == key
    # The link pointed elsewhere: another compile.
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "l.h").write_text("#pragma once\n")
    (case / "linked").unlink()
    (case / "linked").symlink_to(tmp_path / "other")
    assert compile_key(job, "wheels") != key


def test_a_header_that_appears_where_it_was_looked_for_is_another_compile(
        tmp_path: Path) -> None:
    """A quoted include found nowhere fails to compile; the file appearing later must not
    be served that failure."""
    case = tmp_path / "k"
    case.mkdir()
    (case / "k.cu").write_text('#include "../later/h.h"\n')
    job = _nvrtc_job(case)
    key = compile_key(job, "wheels")
    (tmp_path / "later").mkdir()
    (tmp_path / "later" / "h.h").write_text("#pragma once\n")
    assert compile_key(job, "wheels") != key


def test_a_case_reaching_nothing_outside_its_folders_keeps_its_key(tmp_path: Path) -> None:
    """Keys of cases whose headers all sit in their folders are what they were: the new
    material is added only where there is some."""
    from cudamatrix.orchestrator.compile_cache import key_files, key_folders

    case = tmp_path / "k"
    case.mkdir()
    (case / "own.h").write_text("#pragma once\n")
    (case / "k.cu").write_text('#include "own.h"\n#include <cstdio>\n')
    job = _nvrtc_job(case)
    included = key_files(job, key_folders(job))
    assert included.unresolved == () and included.absent == ()
    assert included.files == (str((case / "k.cu").resolve()), str((case / "own.h").resolve()))


def test_every_input_of_the_key_changes_it_one_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 43: dropping the arch from the key was caught in 2 runs of 5 (scheduling
    decided); dropping the include folders survived. Each input, changed alone, must give
    another key; the same job again, the same key."""
    from cudamatrix.stages.cell.environment import LibraryEnvironment

    case = tmp_path / "case"
    (case / "inc").mkdir(parents=True)
    (case / "k.cu").write_text('#include "k.h"\n__global__ void k() {}\n')
    (case / "inc" / "k.h").write_text("#define N 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.h").write_text("#define O 1\n")
    (outside / "pre.h").write_text("#define P 1\n")
    env = Environment(toolkit="13.0", provider="wheels", root="/tk", include_dirs=("/tk/inc",),
                      packages={"nvidia-cuda-nvcc": "13.0.88"}, tool_versions={"nvcc": "13.0.88"})
    headers = tmp_path / "lib"
    (headers / "pkg" / "data" / "inc").mkdir(parents=True)
    (headers / "pkg" / "data" / "inc" / "lib.h").write_text("#define L 1\n")
    library = LibraryEnvironment("cccl", "13.1.115", str(headers),
                                 include_dirs=(str(headers / "pkg"),),
                                 packages={"nvidia-cuda-cccl (headers)": "13.1.115"})
    base = Job(cell_id="c", arch="sm_90a", source=str(case / "k.cu"), frontend="nvcc",
               workdir=str(tmp_path / "w"), timeout=60, env=env, library=library,
               flags=("-Iinc", f"-I{outside}", "-include", "../outside/pre.h"), kernel="k",
               host_compiler_path="/usr/bin/g++-12", host_compiler_version="12.2.0",
               options={"o": 1},
               case_dir=str(case))
    key = compile_key(base, "wheels")
    assert compile_key(base, "wheels") == key
    changed = {
        "arch": replace(base, arch="sm_90"),
        "arch_flag": replace(base, arch_flag=False),
        "flags": replace(base, flags=(*base.flags, "-DX")),
        "frontend": replace(base, frontend="clang"),
        "kernel": replace(base, kernel="k2"),
        "options": replace(base, options={"o": 2}),
        "host compiler": replace(base, host_compiler_path="/usr/bin/g++-11"),
        "host compiler version": replace(base, host_compiler_version="12.3.0"),
        "toolkit version": replace(base, env=replace(env, toolkit="13.1")),
        "toolkit packages": replace(base, env=replace(env, packages={
            "nvidia-cuda-nvcc": "13.0.89"})),
        "tool versions": replace(base, env=replace(env, tool_versions={"nvcc": "13.0.89"})),
        "image": replace(base, env=replace(env, image="cudamatrix/toolkit:13.0-x")),
        "library version": replace(base, library=replace(library, version="13.2.86")),
        "library packages": replace(base, library=replace(library, packages={})),
        "no library": replace(base, library=None),
        # Issue 47: `include = ["pkg/data/inc"]` added to a header library replayed the
        # cached failure without it.
        "library include folders": replace(base, library=replace(
            library, include_dirs=(str(headers / "pkg" / "data" / "inc"),))),
        "case folder": replace(base, case_dir=str(tmp_path)),
    }
    for what, job in changed.items():
        assert compile_key(job, "wheels") != key, f"{what} left the key as it was"
    assert compile_key(base, "docker") != key, "the provider left the key as it was"
    for what, path in (("the case's header", case / "inc" / "k.h"),
                       ("a header of an -I folder outside the case", outside / "o.h"),
                       ("a header the flags include first", outside / "pre.h"),
                       ("a header under the library's include folder",
                        headers / "pkg" / "data" / "inc" / "lib.h"),
                       ("the source", case / "k.cu")):
        path.write_text(path.read_text() + "// edited\n")
        assert compile_key(base, "wheels") != key, f"an edit of {what} left the key"
        key = compile_key(base, "wheels")
    monkeypatch.setenv("NVCC_APPEND_FLAGS", "-DX")
    assert compile_key(base, "wheels") != key, "NVCC_APPEND_FLAGS left the key as it was"


def test_what_a_variant_tells_its_worker_is_one_declaration() -> None:
    """A case key the worker reads is one field of VariantSettings: the case reader's
    Variant and the worker's Job are both of it, and job_for carries each of its fields by
    name, so a key added there reaches the worker, and the compile key, with no other line
    (before, the field was written twice, on Variant and on Job)."""
    from dataclasses import fields

    from cudamatrix.config.corpus import Variant
    from cudamatrix.orchestrator.cell_jobs import AS_DECLARED
    from cudamatrix.stages.cell.job import VariantSettings

    assert issubclass(Variant, VariantSettings) and issubclass(Job, VariantSettings)
    declared = {f.name for f in fields(VariantSettings)}
    assert set(AS_DECLARED) == declared
    # The fields both have that are made for each cell, not carried as the case said them.
    made_for_the_cell = {"frontend", "flags", "host_compiler", "timeout", "source", "case_dir"}
    shared = {f.name for f in fields(Variant)} & {f.name for f in fields(Job)}
    assert shared - made_for_the_cell == declared


def test_an_edit_of_case_toml_that_reaches_no_compiler_keeps_the_key(tmp_path: Path) -> None:
    """Issue 69: an edit of a case's description, expectation or [variant.resources]
    recompiled every cell of the case (the whole case folder was hashed, case.toml too),
    though none reaches the compiler: what case.toml gives a compile is in the job's
    fields. A source that includes case.toml still has it in its key."""
    from cudamatrix.config.corpus import CASE_FILE

    case = tmp_path / "k"
    case.mkdir()
    (case / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    toml = case / CASE_FILE
    toml.write_text('title = "t"\ndescription = "before"\n')
    job = _nvrtc_job(case)
    key = compile_key(job, "wheels")
    toml.write_text('title = "t"\ndescription = "after"\n[[variant]]\nname = "v"\n'
                    '[variant.resources]\nmax_registers = 32\n')
    assert compile_key(job, "wheels") == key
    (case / "k.cu").write_text('#include "case.toml"\n')
    key = compile_key(job, "wheels")
    toml.write_text('title = "t"\ndescription = "again"\n')
    assert compile_key(job, "wheels") != key, "an included case.toml left the key as it was"


def test_a_librarys_headers_beside_its_release_are_keyed_across_cache_folders(
        tmp_path: Path) -> None:
    """A Python library's headers (torch's, cuBLAS's for the CUTLASS PyTorch extension) are
    unpacked beside its release in the cache's libraries folder: their folders were keyed
    by their whole path, so a run pointed at another cache (--compile-cache-from: CI's
    shards, the e2e tests reading the main job's cache) missed every such compile and
    made it again (3 to 6 minutes each). The same release in another cache folder is the
    same key; other headers are another."""
    case = tmp_path / "case"
    case.mkdir()
    (case / "k.cu").write_text('extern "C" __global__ void k() {}\n')

    def job(cache: Path, headers: str = "#pragma once\n") -> Job:
        libraries = cache / "libraries"
        include = libraries / "cutlass_torch-headers-c260d8" / "torch" / "include"
        include.mkdir(parents=True, exist_ok=True)
        (include / "torch.h").write_text(headers)
        (libraries / "cutlass_torch-3.5.0").mkdir(exist_ok=True)
        library = LibraryEnvironment("cutlass_torch", "3.5.0",
                                     str(libraries / "cutlass_torch-3.5.0"),
                                     include_dirs=(str(include),),
                                     packages={"nvidia-cutlass": "3.5.0.0"})
        return Job(cell_id="c", arch="sm_90a", source=str(case / "k.cu"),
                   frontend="nvcc", workdir=str(tmp_path / "w"), timeout=60,
                   library=library)

    mine = compile_key(job(tmp_path / "one" / "cache"), "wheels")
    assert compile_key(job(tmp_path / "two" / "cache"), "wheels") == mine
    assert compile_key(job(tmp_path / "three" / "cache", "#define EDITED\n"), "wheels") != mine
