"""Issue 79, break 12: a build's output that is no ELF (a linker script named `.so`, the
case.toml that `outputs = ["*"]` caught, an empty file, a truncated ELF) crashed the cell's
worker at inspect (members() raised a UserError nobody there catches). Now a file a glob
caught is skipped with a note in the stage's log, and a file the case named fails the stage
in one line naming it: the real build (its commands run) and the real audit on its files."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.cell.specs import BuildSetting, BuildSpec
from cudamatrix.stages.frontends.build_run import BUILD_SOURCE, audit_outputs, build

# A host ELF without device code: this Python's own executable.
HOST_ELF = Path(sys.executable).resolve()


def _job(tmp_path: Path, commands: tuple[str, ...], outputs: tuple[str, ...]) -> Job:
    project = tmp_path / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "case.toml").write_text('[variant.v]\nfrontend = "build"\n')
    (project / "host.elf").write_bytes(HOST_ELF.read_bytes())
    spec = BuildSpec(commands, None, outputs, None, (), ())
    # A cuobjdump that is a real program; no test below gets as far as asking it anything.
    return Job(cell_id="c/v/12.4/sm_90", arch="sm_90", source=str(project), frontend="build",
               workdir=str(tmp_path / "work"), timeout=60, disassembler=shutil.which("false"),
               build=spec, build_setting=BuildSetting(str(project), "p", (), (), ""))


def _built_and_inspected(job: Job) -> tuple[list[str], str, str, str]:
    job.work.mkdir(parents=True, exist_ok=True)
    built = build(job)
    assert built.status == "ok", built.message
    inspected, _ = audit_outputs(job, [job.work / BUILD_SOURCE / p
                                       for p in built.details["outputs"]])
    return built.details["outputs"], inspected.status, inspected.message, inspected.log


def test_a_named_linker_script_fails_inspect_naming_it(tmp_path: Path) -> None:
    job = _job(tmp_path, ("sh -c 'printf \"INPUT(-lfoo_impl)\\n\" > libfoo.so'",),
               ("libfoo.so",))
    outputs, status, message, _ = _built_and_inspected(job)
    assert outputs == ["libfoo.so"]
    assert status == "error"
    assert message == ("cannot read the build's outputs: libfoo.so: not an ELF file "
                       "(text: 'INPUT(-lfoo_impl)')"), message


def test_a_named_empty_or_truncated_output_fails_naming_it(tmp_path: Path) -> None:
    for name, command, said in (
            ("libempty.so", "touch libempty.so", "libempty.so: an empty file, not an ELF file"),
            ("libcut.so", "sh -c 'head -c 40 host.elf > libcut.so'",
             "libcut.so: a truncated ELF file (40 bytes, shorter than its 64-byte header)"),
            ("libhalf.so", "sh -c 'head -c 4096 host.elf > libhalf.so'",
             "libhalf.so: a truncated ELF file (its section table lies past its 4096 bytes)")):
        job = _job(tmp_path / name, (command,), (name,))
        _, status, message, _ = _built_and_inspected(job)
        assert (status, message) == ("error", f"cannot read the build's outputs: {said}")


def test_what_a_glob_caught_that_is_no_elf_is_skipped_with_a_note(tmp_path: Path) -> None:
    job = _job(tmp_path, ("sh -c 'printf \"INPUT(-lfoo_impl)\\n\" > libfoo.so && touch empty'",),
               ("*",))
    outputs, status, message, log = _built_and_inspected(job)
    assert sorted(outputs) == ["case.toml", "empty", "host.elf", "libfoo.so"]
    # The host ELF is read (it ships no kernels); the rest are passed over, each said.
    assert (status, message) == ("ok", "the build ships no kernels"), (status, message)
    assert "skipped case.toml (caught by '*'): not an ELF file (text: '[variant.v]')" in log, log
    assert "skipped empty (caught by '*'): an empty file, not an ELF file" in log, log
    assert "skipped libfoo.so (caught by '*'): not an ELF file (text: " in log, log
    assert not [line for line in log.splitlines() if "host.elf" in line], log
