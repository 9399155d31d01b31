"""What the compile cache's key holds (compile_cache.compile_key): a compile from another
environment is never served as this one's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cudamatrix.compile_cache import compile_key
from cudamatrix.providers.environment import Environment
from cudamatrix.stages.job import Job


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
    from cudamatrix.compile_cache import stage_code_files

    names = {p.as_posix().split("cudamatrix/", 1)[1] for p in stage_code_files()}
    assert {"stages/frontends/nvrtc.py", "stages/frontends/nvcc.py", "stages/compile.py",
            "stages/kernel_names.py", "audit/elf.py"} <= names, sorted(names)
