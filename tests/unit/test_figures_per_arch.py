"""ptxas's figures kept under the arch each compile reports, whatever the output's length
(issue 69: mamba's six-arch selective-scan forward printed past 2 x 256 KiB, the cut
took sm_90's `#$ ptxas` trace line, sm_89 got sm_90's figures and sm_90 none).

The log is nvcc 13.0's real `-v -Xptxas -v` output for one source built for six archs at
once (tests/data/logs/nvcc-13.0-six-archs-ptxas-excerpt.log: every trace line, and three
of each ptxas step's 160 kernels; /case and /keep stand for the case's and nvcc's keep
folders). A stand-in nvcc prints it inflated past the cut, each ptxas step's kernels
copied under new names before its three real ones, and writes the files nvcc keeps; the
real frontend runs it as it runs nvcc (a process, its output cut as any tool's is).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from cudamatrix.orchestrator.compile_cache import CompileCache
from cudamatrix.stages.cell.environment import Environment
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.cell.result import StageResult
from cudamatrix.stages.cell.specs import ResourceBudget
from cudamatrix.stages.frontends.nvcc import compile_together
from cudamatrix.stages.inspect.stage import inspect_artifacts, inspect_job
from cudamatrix.stages.process.limits import KEPT_OUTPUT_BYTES

LOG = (Path(__file__).parents[1] / "data" / "logs" / "nvcc-13.0-six-archs-ptxas-excerpt.log"
       ).read_text()
ARCHS = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_120"]
# The kernels' copies per arch: sm_89's and sm_90's steps long, as mamba's were.
COPIES = {"sm_75": 8, "sm_80": 8, "sm_86": 8, "sm_89": 150, "sm_90": 150, "sm_120": 8}
# What ptxas printed for the three real kernels (read off the log by eye, per arch):
# (registers, spill store bytes), by the kernel's template arguments.
SPILLY, SMALL = "ILi64ELi1EdLb1E", "ILi4ELi1EfLb1E"
TRUTH = {"sm_75": {SPILLY: (64, 1432), SMALL: (16, 0)},
         "sm_80": {SPILLY: (64, 1432), SMALL: (15, 0)},
         "sm_86": {SPILLY: (64, 1432), SMALL: (16, 0)},
         "sm_89": {SPILLY: (64, 1432), SMALL: (16, 0)},
         "sm_90": {SPILLY: (64, 1400), SMALL: (14, 0)},
         "sm_120": {SPILLY: (64, 1432), SMALL: (17, 0)}}
_ENTRY = re.compile(r"Compiling entry function '(\w+)'|Function properties for (\w+)")


def _renamed_in(line: str, suffix: str) -> str:
    """A ptxas line with the kernel it names renamed (_renamed)."""
    return _ENTRY.sub(lambda m: m.group(0).replace(
        m.group(1) or m.group(2), _renamed(m.group(1) or m.group(2), suffix)), line)


def _renamed(symbol: str, suffix: str) -> str:
    """A mangled name with `suffix` on its identifier, still a valid mangled name."""
    found = re.match(r"_Z(\d+)", symbol)
    assert found, symbol
    length, at = int(found.group(1)), found.end()
    return f"_Z{length + len(suffix)}{symbol[at:at + length]}{suffix}{symbol[at + length:]}"


def _inflated() -> str:
    """The log with each ptxas step's kernels printed COPIES times more, under new names,
    before the step's own three."""
    out: list[str] = []
    block: list[str] = []
    arch = ""

    def flush() -> None:
        for copy in range(COPIES.get(arch, 0)):
            out.extend(_renamed_in(line, f"_copy{copy}") for line in block)
        out.extend(block)
        block.clear()

    for line in LOG.splitlines():
        if line.startswith("#$ "):
            flush()
            named = re.match(r"#\$ ptxas -arch=(sm_\d+)", line)
            arch = named.group(1) if named else ""
            out.append(line)
        elif (arch and "Compiling entry function" in line) or block:
            block.append(line)
        else:
            out.append(line)
    flush()
    return "\n".join(out) + "\n"


def _nvcc(tmp_path: Path, log: str) -> Path:
    """A stand-in nvcc: prints `log` on stderr, as nvcc -v does, and writes what nvcc
    keeps for each -gencode (the source's PTX and cubin), its object and its -MD list."""
    printed = tmp_path / "printed.log"
    printed.write_text(log)
    script = tmp_path / "nvcc"
    script.write_text(f"""#!{sys.executable}
import pathlib, re, sys
args = sys.argv[1:]
keep = pathlib.Path(args[args.index("--keep-dir") + 1])
for arg in args:
    found = re.match(r"-gencode=arch=(compute_\\w+),code=(sm_\\w+)", arg)
    if found:
        (keep / f"k.{{found[1]}}.ptx").write_text(
            f".version 9.0\\n.target {{found[2]}}\\n.visible .entry k()\\n{{{{ ret; }}}}\\n")
        (keep / f"k.{{found[1]}}.cubin").write_bytes(f"cubin for {{found[2]}}".encode())
pathlib.Path(args[args.index("-MF") + 1]).write_text("k.o: k.cu\\n")
pathlib.Path(args[args.index("-o") + 1]).write_bytes(b"")
sys.stderr.write(pathlib.Path({str(printed)!r}).read_text())
""")
    script.chmod(0o755)
    return script


def _together(tmp_path: Path, log: str) -> tuple[list[Job], list[StageResult]]:
    """One build of the six archs by the stand-in nvcc: each cell's job and compile stage."""
    (tmp_path / "k.cu").write_text("// the source is not read: the stand-in prints the log\n")
    env = Environment(toolkit="13.0", provider="local", root=str(tmp_path),
                      nvcc=str(_nvcc(tmp_path, log)), tool_versions={"nvcc": "13.0.88"})
    members = tuple({"cell_id": f"scan/{a}", "arch": a, "workdir": str(tmp_path / a)}
                    for a in ARCHS)
    for member in members:
        Path(member["workdir"]).mkdir()
    budget = ResourceBudget(max_registers=None, max_spill_stores=1410, max_spill_loads=None,
                            max_stack=None, max_shared=None, kernel=None)
    job = Job(cell_id="scan/sm_75", arch="sm_75", source=str(tmp_path / "k.cu"),
              frontend="nvcc", workdir=str(tmp_path / "together"), timeout=60, env=env,
              group=members, resources=budget)
    job.work.mkdir()
    jobs = [replace(job, cell_id=m["cell_id"], arch=m["arch"], workdir=m["workdir"], group=())
            for m in members]
    return jobs, compile_together(job)


def _figures(stage: StageResult, kernel: str) -> tuple[int, int]:
    """(registers, spill store bytes) of the real kernel named by its template arguments."""
    found = [r for r in stage.details["resources"]
             if kernel in r["kernel"] and "_copy" not in r["kernel"]]
    assert len(found) == 1, (kernel, stage.details.get("resources_missing"))
    return found[0]["registers"], found[0]["spill_store_bytes"]


def test_the_log_passes_the_cut_and_the_cut_takes_sm90s_trace_line() -> None:
    """The ordering matters: what is kept of the output holds sm_89's trace line, not
    sm_90's (the premise of every test below)."""
    data = _inflated().encode()
    assert len(data) > 2 * KEPT_OUTPUT_BYTES
    cut = range(KEPT_OUTPUT_BYTES, len(data) - KEPT_OUTPUT_BYTES)
    assert data.index(b"#$ ptxas -arch=sm_89") < cut.start
    assert data.index(b"#$ ptxas -arch=sm_90") in cut


def test_each_arch_gets_what_ptxas_reported_for_it_past_the_cut(tmp_path: Path) -> None:
    jobs, stages = _together(tmp_path, _inflated())
    assert [s.status for s in stages] == ["ok"] * len(ARCHS), [s.message for s in stages]
    assert any("bytes of output cut" in s.log for s in stages)  # it really was cut
    for job, stage in zip(jobs, stages, strict=True):
        assert len(stage.details["resources"]) == 3 * (COPIES[job.arch] + 1), job.arch
        for kernel, (registers, spills) in TRUTH[job.arch].items():
            assert _figures(stage, kernel) == (registers, spills), (job.arch, kernel)


def test_a_spill_budget_judges_each_arch_by_its_own_figures(tmp_path: Path) -> None:
    """max_spill_stores = 1410: sm_90 (1400 B) passes, every other arch (1432 B) fails;
    sm_89 is never judged by sm_90's figures, sm_90 never left without any."""
    jobs, stages = _together(tmp_path, _inflated())
    for job, stage in zip(jobs, stages, strict=True):
        inspected = inspect_job(job, job.work / "kernel.ptx", job.work / "kernel.cubin",
                                stage.details)
        assert inspected is not None
        if job.arch == "sm_90":
            assert inspected.status == "ok", inspected.message
        else:
            assert inspected.status == "failed", (job.arch, inspected.message)
            assert "1432 bytes of spill stores > max_spill_stores 1410" in inspected.message


def test_an_arch_ptxas_said_nothing_for_says_so_not_blaming_the_case(tmp_path: Path) -> None:
    """A budget with no figures says why: here ptxas printed figures for five archs of
    the same nvcc and none for sm_120 (its step's lines taken out of the log)."""
    lines, quiet = [], False
    for line in _inflated().splitlines():
        if line.startswith("#$ "):
            quiet = line.startswith("#$ ptxas -arch=sm_120")
        elif quiet:
            continue
        lines.append(line)
    jobs, stages = _together(tmp_path, "\n".join(lines) + "\n")
    job, stage = jobs[-1], stages[-1]
    assert stage.status == "ok" and stage.details["resources"] == []
    inspected = inspect_job(job, None, None, stage.details)
    assert inspected is not None and inspected.status == "error"
    assert "case error" not in inspected.message
    assert "none for sm_120" in inspected.message and "sm_90" in inspected.message


def test_figures_read_off_a_cut_log_say_the_cut() -> None:
    """A compile whose kept log (cut) holds no figures: the budget's error says the
    output was cut, not that the case's module has no kernels."""
    budget = ResourceBudget(max_registers=None, max_spill_stores=40, max_spill_loads=None,
                            max_stack=None, max_shared=None, kernel=None)
    from cudamatrix.stages.compile.built import no_figures_reason

    log = "#$ cicc ...\n[... 1048576 bytes of output cut ...]\n#$ fatbinary ...\n"
    compiled = {"nvcc": "13.0.88", "resources": [], "resources_missing": no_figures_reason(log)}
    judged = inspect_artifacts([], None, None, compiled=compiled, budgets=budget,
                               arch="sm_90")
    assert judged.status == "error"
    assert "case error" not in judged.message
    assert "output was cut (1048576 bytes)" in judged.message


def _record(details: dict[str, Any], log: str = "") -> StageResult:
    ships = [{"kind": "sass", "arch": "sm_90", "index": 0, "size": 9000, "kernels": 160,
              "ptx_isa": None, "toolkit": "13.0.88"}]
    return StageResult("compile", "ok", "", log, 12.0, {"nvcc": "13.0.88", "ships": ships,
                                                         **details},
                       built_with=tuple(ARCHS))


def test_a_record_proved_wrong_is_never_served(tmp_path: Path) -> None:
    """What --compile-apart once served from a six-arch build: sm_89's figures read off a
    cut log, sm_90 with none though its cubin holds 160 kernels; and a figure ptxas made
    for another arch. Each is dropped and compiled again; a sound record is served."""
    cache = CompileCache(tmp_path / "cache")
    cut_log = "#$ ptxas -arch=sm_89\n[... 90000 bytes of output cut ...]\nptxas info ..."
    spilled = {"kernel": "_Z1kv", "registers": 64, "spill_store_bytes": 1400}
    wrong = {
        "cut": _record({"resources": [spilled],
                        "resources_from": "the compiler's log (ptxas -v)"}, cut_log),
        "none": _record({"resources": []}),
        "other-arch": _record({"resources": [{**spilled, "arch": "sm_89"}],
                               "resources_from": "the compiler's whole output"}),
    }
    for name, stage in wrong.items():
        key = f"{name:0<64}"
        assert cache.store(key, tmp_path / "work", stage)
        served, note = cache.restore(key, tmp_path / name)
        assert served is None, name
        assert "dropped" in note and "compiled again" in note, note
    sound = _record({"resources": [{**spilled, "arch": "sm_90"}]})
    assert cache.store("s" * 64, tmp_path / "work", sound)
    served, _ = cache.restore("s" * 64, tmp_path / "sound")
    assert served is not None and served.details["resources"][0]["spill_store_bytes"] == 1400
    silent = _record({"resources": [], "resources_missing": "the compiler printed none"})
    assert cache.store("q" * 64, tmp_path / "work", silent)
    assert cache.restore("q" * 64, tmp_path / "silent")[0] is not None
    # One arch's build read off its own cut log (NVRTC's, clang's): nothing to mix up.
    alone = replace(wrong["cut"], built_with=())
    assert cache.store("a" * 64, tmp_path / "work", alone)
    assert cache.restore("a" * 64, tmp_path / "alone")[0] is not None


def test_reading_figures_whole_agrees_with_the_real_log() -> None:
    """The reader on the real (uncut) excerpt: three kernels per arch, each arch's own."""
    from cudamatrix.stages.compile.logs import PtxasFigures

    figures = PtxasFigures()
    for line in LOG.splitlines():
        figures.feed(line)
    assert figures.archs() == ARCHS
    for arch in ARCHS:
        records = figures.for_arch(arch)
        assert len(records) == 3 and {r["arch"] for r in records} == {arch}
        by_args = {k: (r["registers"], r["spill_store_bytes"]) for r in records
                   for k in TRUTH[arch] if k in r["kernel"]}
        assert by_args == TRUTH[arch]
    assert json.dumps(figures.merged())  # one record per kernel, plain data
