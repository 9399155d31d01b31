"""Every key case.toml declares, set in a real case, read by the real reader and made into
a cell's job by the run's own `CellJobs.job_for`: the value must reach the job, the
compile key must move exactly where the declaration says the key changes a compile, the
compiler lines of each frontend it names must change, and nvcc must take every word a key
gives it (issue 67: the unit lane once passed a reader that dropped a new key's value, a
misspelt nvcc flag, a key marked as not changing the compile, and NVRTC forgetting it).

No list of keys is kept here: the keys come from config/declarations.py, each with the
value of its own `example`; a new key is tested by being declared."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from copy import deepcopy
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.config.corpus import Variant
from cudamatrix.config.declarations import VARIANT, Key, Table
from cudamatrix.config.matrix import load_matrix
from cudamatrix.config.options import RunOptions
from cudamatrix.config.planning import make_plan
from cudamatrix.orchestrator.cell_jobs import CellJobs, NoJob
from cudamatrix.orchestrator.compile_cache import compile_key
from cudamatrix.orchestrator.cupy_warmup import JitifyWarmups
from cudamatrix.orchestrator.environments import Environments
from cudamatrix.orchestrator.gpu import DeviceInfo
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.frontends import frontend
from cudamatrix.stages.frontends.registry import Line

# Tables whose keys a kernel case cannot hold, or that make cells of their own, each with
# why they are tested elsewhere (never a list of keys: a key added to any other table is
# tested here by being declared).
ELSEWHERE = {
    "build": "a build case's table (frontend = \"build\"): no compile key's, the build "
             "cache keys it (tests/unit/test_build_cache.py)",
    "libraries": "a plan axis: a library's release is its own environment, keyed apart "
                 "(tests/unit/test_compile_key.py, 'library version')",
    "torch_pairing": "a plan's choice of cells on a torch axis, no job's input "
                     "(tests/unit/test_torch_pairing.py)",
    "python": "a plan axis of the frontends that include Python's headers: each Python's "
              "headers are prepared by the run and keyed apart (tests/unit/test_python_axis.py)",
    "options": "each frontend's own option schema (cupy's, which compiles only on a GPU): "
               "the options are a compile input as a whole (test_every_field_of_a_job...)",
}
# What a table needs beside the key under test to be one a case may write: the case
# without the key has the table so (a table not named here, it has none).
CONTEXT: dict[tuple[str, ...], dict[str, Any]] = {
    ("artifact",): {"contains": "ld"},
    ("flags_if",): {"when": {"toolkit": ">=12"}, "flags": ["-DFLAGGED"]},
    ("run",): {"grid": [1]},
    ("run", "args"): {"name": "z", "shape": [3]},
    ("run", "args", "value"): {"dtype": "float32"},
    ("run", "args", "range"): {"dtype": "int32"},
    ("resources",): {"max_stack": 4096},
    # A check names the arguments its example's expression reads.
    ("run", "check"): {"args": [{"name": "a", "value": 2.0, "dtype": "float32"},
                                {"name": "x", "shape": [4]},
                                {"name": "y", "shape": [4], "inout": True}]},
}
# Keys of which a table takes one: the context's other is left out for the one tested.
ONE_OF = ({"contains", "lacks"}, {"value", "shape"})
# Tables that stand only beside another (a kernel is timed once it ran).
BESIDE: dict[tuple[str, ...], dict[str, Any]] = {("time",): {"run": {"grid": [1]}}}


def _leaves(table: Table, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Key,
                                                                       Table]]:
    """Every key with an example, where it sits; a table without one, by its own keys."""
    for key in table.keys:
        at = (*path, key.name)
        if key.example:
            yield at, key, table
        elif key.table is not None and key.name not in ELSEWHERE:
            yield from _leaves(key.table, at)


LEAVES = [(at, key, table) for at, key, table in _leaves(VARIANT) if at[0] not in ELSEWHERE]


def _example(key: Key) -> Any:
    return tomllib.loads(key.example)[key.name]


def _arrays(table: Table, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key in table.keys:
        if key.table is not None:
            if key.kind == "array of tables":
                yield (*path, key.name)
            yield from _arrays(key.table, (*path, key.name))


ARRAYS = set(_arrays(VARIANT))


def _declared(at: tuple[str, ...]) -> Table:
    """The table declared at `at` below [[variant]]."""
    table = VARIANT
    for name in at:
        found = table.key(name).table
        assert found is not None, at
        table = found
    return table


def _table(variant: dict[str, Any], at: tuple[str, ...]) -> dict[str, Any]:
    """The table at `at` of a variant, made where it is not (as CONTEXT makes it; an array
    of tables one table long)."""
    here = variant
    for depth, name in enumerate(at):
        prefix = at[:depth + 1]
        if name not in here:
            made = {k.name: _example(k) for k in _declared(prefix).keys
                    if k.required and k.example}
            made.update(deepcopy(CONTEXT.get(prefix, {})))
            here[name] = [made] if prefix in ARRAYS else made
        here = here[name][0] if prefix in ARRAYS else here[name]
    return here


# A made-up nvcc (a shell script: a cell makes a dozen calls) that logs each call's words
# (each ended by \037, a call a line) and answers as nvcc would the few things a cell
# asks: its version and archs; a compile that fails on an undefined name where the unit
# says UNDEFINED (the since-which-arch search then preprocesses for the cell's arch and a
# newer one and asks for the host pass's line), else one whose PTX holds a kernel named
# otherwise than the case (the kernel probe runs); a preprocessing that declares the name
# from sm_100 on (or for the host pass); the probe's address of the kernel.
_FAKE_NVCC = """#!/bin/sh
for word in "$@"; do printf '%s\037' "$word"; done >> LOG; echo >> LOG
out= keep= deps= arch= mode=compile prev=
for word in "$@"; do
  case "$prev" in -o) out=$word;; --keep-dir) keep=$word;; -MF) deps=$word;; esac
  case "$word" in
    --version) echo 'Cuda compilation tools, release 13.0, V13.0.88'; exit 0;;
    --list-gpu-arch) printf -- '-arch=compute_80\n-arch=compute_90\n-arch=compute_100\n'
                     exit 0;;
    --gpu-architecture=*) arch=${word#--gpu-architecture=};;
    --dryrun) mode=dryrun;; -E) mode=preprocess;; -ptx) mode=probe;;
  esac
  prev=$word source=$word
done
case "$mode" in
  dryrun) echo "#\\$ $0 -E -x c++ $source -o $out.ii" >&2;;
  preprocess)
    printf '# 1 "k.cu"\nint a;\n' > "$out"
    case "$arch" in ''|sm_1??|compute_1??) echo 'int UNDEFINED;' >> "$out";; esac;;
  probe) echo '.visible .global .align 8 .u64 __cudamatrix_kernel_ref = generic(_Z1kPf);' \\
           > "$out";;
  *) for word in "$@"; do source=$word; done
     if grep -q UNDEFINED "$source"; then
       echo "k.cu(1): error: identifier \\"UNDEFINED\\" is undefined" >&2; exit 2
     fi
     printf '.visible .entry _Z5otherPf(\n)\n{\n}\n' > "$keep/k.ptx"
     echo "k.o: $source" > "$deps";;
esac
"""


def _fake_toolkit(tmp_path: Path) -> Path:
    """A CUDA 13.0 install as the host provider reads one: its ptxas answers its version,
    its nvcc is _FAKE_NVCC, logging each call to `nvcc-calls` beside the install."""
    root = tmp_path / "cuda"
    (root / "bin").mkdir(parents=True)
    ptxas = root / "bin" / "ptxas"
    ptxas.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n")
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text(_FAKE_NVCC.replace("LOG", shlex.quote(str(tmp_path / "nvcc-calls"))))
    for tool in (ptxas, nvcc):
        tool.chmod(0o755)
    (root / "lib64").mkdir()
    (root / "lib64" / "libnvrtc.so.13").write_bytes(b"")
    (root / "include").mkdir()
    (root / "include" / "cuda_runtime.h").write_text("#pragma once\n")
    return root


class Jobs:
    """The jobs the run would give a case's cells (toolkit 13.0, sm_90, the host provider
    over a made-up install), by the reader and `CellJobs.job_for` as a run makes them; one
    run's environments for every case (the toolkit is prepared once, as in a run)."""

    def __init__(self, tmp_path: Path) -> None:
        self.calls = tmp_path / "nvcc-calls"
        self.corpus = tmp_path / "corpus"
        self.options = RunOptions(corpus=(self.corpus,), toolkits=("13.0",), archs=("sm_90",),
                                  provider="host", cache=tmp_path / "cache",
                                  out=tmp_path / "out", gpu=False, compile_cache_from=())
        envs = Environments(load_matrix(self.options.matrix), "host", self.options.cache,
                            _Notes(), ledger=InputLedger())
        warmups = JitifyWarmups(self.options.cache, self.options.out, 1.0, lambda job: [],
                                print)
        self.made = CellJobs(self.options, envs, DeviceInfo(reason="no GPU in the unit lane"),
                             warmups, None, lambda limit: limit)

    def of(self, case: dict[str, Any]) -> dict[str, Job]:
        """Each cell's job by its id less the case's name; the case is written where the
        last one was, as a user's edit leaves it."""
        return self.read(case)[1]

    def read(self, case: dict[str, Any]) -> tuple[tuple[Variant, ...], dict[str, Job]]:
        """The case's variants as the reader made them, and each cell's job."""
        folder = self.corpus / "keys"
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("k0.cu", "k.cu"):
            (folder / name).write_text('extern "C" __global__ void k(float *x) { x[0] = 1; }\n')
        (folder / "case.toml").write_text(tomli_w.dumps(case))
        plan = make_plan(self.options)
        jobs = {}
        for cell in plan.cells:
            job, _ = self.made.job_for(cell, plan.variant(cell))
            assert not isinstance(job, NoJob), (cell.id, job.stages)
            jobs[cell.id.split("/", 1)[1]] = job
        return tuple(v for c in plan.cases.values() for v in c.variants), jobs


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Jobs]:
    tmp = tmp_path_factory.mktemp("keys")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CUDA_HOME", str(_fake_toolkit(tmp)))
        yield Jobs(tmp)


class _Notes:
    def note(self, text: str) -> None:
        pass


def _keys(jobs: dict[str, Job]) -> set[str]:
    return {compile_key(job, "host", folders=[], included=_nothing()) for job in jobs.values()}


def _nothing() -> Any:
    from cudamatrix.stages.compile.includes import IncludedFiles

    return IncludedFiles((), (), ())


def _case(frontend_name: str, **variant: Any) -> dict[str, Any]:
    return {"title": "every key", "variant": [
        {"name": "v", "frontend": frontend_name, "source": "k0.cu", "kernel": "k", **variant}]}


def _with(at: tuple[str, ...], key: Key, frontend_name: str) -> tuple[dict[str, Any],
                                                                      dict[str, Any]]:
    """The case without the key (its table as CONTEXT makes it, where it makes one) and
    the same case with it."""
    before = _case("nvrtc" if at == ("frontend",) else frontend_name,
                   **deepcopy(BESIDE.get(at[:-1], {})))
    if len(at) > 1 and at[:-1] in CONTEXT and not key.required:
        _table(before["variant"][0], at[:-1])
    for_key = deepcopy(CONTEXT.get(at, {}))  # what the key's own example reads
    if for_key:
        _table(before["variant"][0], at[:-1]).update(for_key)
    after = deepcopy(before)
    table = _table(after["variant"][0], at[:-1])
    table.update(for_key)
    for group in ONE_OF:
        if at[-1] in group:
            for other in group - {at[-1]}:
                table.pop(other, None)
    table[at[-1]] = _example(key)
    return before, after


def _frontend_for(key: Key) -> str:
    """A frontend that takes the key: nvcc, unless the key names others."""
    return key.frontends[0] if key.frontends and "nvcc" not in key.frontends else "nvcc"


@pytest.mark.parametrize(("at", "key", "table"), LEAVES, ids=[".".join(a) for a, _, _ in LEAVES])
def test_a_declared_key_reaches_the_job_and_moves_the_key_as_declared(
        at: tuple[str, ...], key: Key, table: Table, jobs: Jobs) -> None:
    before, after = _with(at, key, _frontend_for(key))
    (read_before, old), (read_after, new) = jobs.read(before), jobs.read(after)
    name = ".".join(at)
    assert read_before != read_after, f"{name} = {_example(key)!r} did not reach the " \
        "variant: the reader dropped it"
    why_not = VARIANT.not_compiled(at)
    if why_not:
        assert _keys(new) == _keys(old), \
            f"{name} is declared not to change a compile ({why_not}), yet the key moved"
    elif any(new.get(cell) != job for cell, job in old.items()):
        assert _keys(new) != _keys(old), f"{name} changes a compile and its cells' jobs, " \
            "yet the compile key stayed: its Job field is marked AFTER_COMPILE or KEYED_APART"


def _lines(job: Job, name: str) -> list[list[str]]:
    commands = frontend(name).command_lines
    assert commands is not None
    if name == "clang":
        assert job.env is not None
        job = replace(job, frontend="clang", env=replace(
            job.env, clang="/usr/bin/clang++", clang_cuda_path=job.env.root))
    return commands(job, Line("compile"))


COMMANDING = [name for name in ("nvcc", "nvrtc", "clang") if frontend(name).command_lines]


def test_every_clang_line_of_a_cell_takes_the_cases_words(jobs: Jobs) -> None:
    """clang compiles a cell in three lines (device code, its PTX, the host code) and
    probes its kernel in a fourth: the case's flags and dialect shape each (a -I or -D the
    host side lacks fails where nvcc's one line builds), and the probe writes its own file,
    never the cell's PTX the compile made."""
    case = _case("nvcc", flags=["-DFOO=1", "-Iinclude"], std="c++20")
    job = next(iter(jobs.of(case).values()))
    assert job.env is not None
    job = replace(job, frontend="clang", env=replace(
        job.env, clang="/usr/bin/clang++", clang_cuda_path=job.env.root))
    commands = frontend("clang").command_lines
    assert commands is not None
    compiled, (probe,) = commands(job, Line("compile")), commands(job, Line("probe"))
    assert len(compiled) == 3
    for words in (*compiled, probe):
        assert "-DFOO=1" in words and "-std=c++20" in words, words
        assert any(w.startswith("-I") and w.endswith("include") for w in words), words
    made = {words[words.index("-o") + 1] for words in compiled}
    assert probe[probe.index("-o") + 1] not in made, probe


@pytest.mark.parametrize(("at", "key", "table"), LEAVES, ids=[".".join(a) for a, _, _ in LEAVES])
def test_what_reaches_a_compiler_is_in_the_key_and_a_named_frontend_uses_it(
        at: tuple[str, ...], key: Key, table: Table, jobs: Jobs) -> None:
    """A key that changes the line a compiler is given changes the compile key (whatever it
    is declared); a key that names its frontends changes each one's lines."""
    for name in COMMANDING:
        if at == ("frontend",) or (name == "nvrtc" and "host_compiler" in at):
            continue  # the frontend is what changes; nvrtc runs no host compiler
        base = "nvrtc" if name == "nvrtc" else "nvcc"
        if key.frontends and base not in key.frontends:
            continue
        before, after = _with(at, key, base)
        old, new = jobs.of(before), jobs.of(after)
        moved = [cell for cell in old if cell in new
                 and _lines(old[cell], name) != _lines(new[cell], name)]
        if moved:
            assert _keys(new) != _keys(old), \
                f"{'.'.join(at)} changes {name}'s command line but not the compile key"
        if name in key.frontends:
            assert moved or set(old) != set(new), \
                f"{'.'.join(at)} is declared for {name}, whose command lines ignore it"


NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="no nvcc on PATH to ask which options it takes")
def test_nvcc_takes_every_word_a_declared_key_gives_it(tmp_path: Path, jobs: Jobs) -> None:
    """nvcc's own dry run over the line each key makes: a misspelt option (`-maxregcount`)
    is refused there, as it would be in every cell."""
    assert NVCC is not None
    for at, key, _ in LEAVES:
        if (key.frontends and "nvcc" not in key.frontends) or at == ("frontend",):
            continue
        _, after = _with(at, key, "nvcc")
        for cell, job in jobs.of(after).items():
            for line in _lines(job, "nvcc"):
                said = subprocess.run([NVCC, "-dryrun", *line[1:]], capture_output=True,
                                      text=True, timeout=60, cwd=tmp_path,
                                      env={**os.environ, "NVCC_APPEND_FLAGS": ""})
                assert "Unknown option" not in said.stderr, \
                    f"{'.'.join(at)} ({cell}): {said.stderr.strip()}"


def _other(value: Any) -> Any:
    """Another value of the same kind, to see a key move."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, tuple):
        return (*value, "-DOTHER")
    if isinstance(value, dict):
        return {**value, "other": 1}
    return 1  # None: an int is a value a str or int field takes alike


def test_every_field_of_a_job_is_in_its_compile_key_unless_it_says_not(
        tmp_path: Path, jobs: Jobs) -> None:
    """Issue 59: the key was a list written by hand beside Job. Every field but those
    marked AFTER_COMPILE or KEYED_APART is in it: each, changed alone, moves the key; the
    marked ones where the cell runs do not."""
    job = next(iter(jobs.of(_case("nvcc")).values()))
    key = compile_key(job, "host", folders=[], included=_nothing())
    for name in job.compile_inputs():
        changed = replace(job, **{name: _other(getattr(job, name))})
        assert compile_key(changed, "host", folders=[], included=_nothing()) != key, name
    after = [f.name for f in fields(Job) if f.metadata.get("compiles") is False]
    assert {"cell_id", "workdir", "timeout", "time", "resources", "gpu"} <= set(after)
    moved = replace(job, cell_id="other", workdir=str(tmp_path / "elsewhere"), timeout=5,
                    gpu="GPU-1", load="ptx")
    assert compile_key(moved, "host", folders=[], included=_nothing()) == key


# The purposes of nvcc's calls in a cell, by the words that tell them apart.
_PURPOSES = {"compile": "--keep-dir", "probe": "-ptx", "preprocess": "-E",
             "host pass": "--dryrun"}


def _purpose(words: list[str]) -> str | None:
    return next((p for p, word in _PURPOSES.items() if word in words), None)


def _calls(jobs: Jobs, job: Job, source: str) -> dict[str, list[list[str]]]:
    """Every nvcc call the nvcc frontend's compile of `job` made, by purpose (compile,
    probe, preprocess, host pass), its source holding `source`: the cell's own compile
    function run on the logging nvcc, as its worker runs it."""
    Path(job.source).write_text(source)
    job.work.mkdir(parents=True, exist_ok=True)
    jobs.calls.write_text("")
    compile_ = frontend("nvcc").compile
    assert compile_ is not None
    compile_(job)
    made: dict[str, list[list[str]]] = {}
    for text in jobs.calls.read_text().splitlines():
        words = text.split("\037")[:-1]
        purpose = _purpose(words)
        # The host pass's preprocessing is the line nvcc's dry run gave (its own words).
        if purpose is not None and not (purpose == "preprocess"
                                        and not any(w.startswith("--gpu-arch") for w in words)):
            made.setdefault(purpose, []).append(words)
    return made


_FAILS = 'extern "C" __global__ void k(float *x) { x[0] = UNDEFINED; }\n'
_BUILDS = 'extern "C" __global__ void k(float *x) { x[0] = 1; }\n'


def _every_call(jobs: Jobs, case: dict[str, Any]) -> dict[str, list[list[str]]]:
    """The nvcc calls of the case's cell (of its first, where a key makes several) where
    its compile fails on an undefined name (the compile, the preprocessing for two archs,
    the host pass) and where it builds (the compile, the kernel probe)."""
    job = next(iter(jobs.of(case).values()))
    assert job.frontend == "nvcc", job.cell_id
    failing, built = _calls(jobs, job, _FAILS), _calls(jobs, job, _BUILDS)
    return {"compile": failing["compile"] + built["compile"], "probe": built.get("probe", []),
            "preprocess": failing.get("preprocess", []),
            "host pass": failing.get("host pass", [])}


# What only the compile's line holds, each with why the other lines leave it out
# (stages/frontends/nvcc.nvcc_lines): what it writes and keeps, how ptxas reports, the
# archs it builds. A key's word outside these reaches every line of the cell.
_THE_COMPILE_S = {"-c": "its output", "-o": "its output", "-shared": "a library's output",
                  "-Xcompiler": "a library's -fPIC", "-fPIC": "a library's",
                  "-cudart": "cudart's linking", "none": "cudart's linking",
                  "-lcudart": "cudart's linking", "-Xptxas": "ptxas's figures",
                  "-v": "ptxas's figures", "--keep": "its intermediates",
                  "--keep-dir": "its intermediates", "-MD": "its list of read files",
                  "-MF": "its list of read files", "--threads": "archs side by side"}


def _own_to_the_compile(word: str, job_folder: str) -> bool:
    return word in _THE_COMPILE_S or word.startswith(("-gencode=", "-L")) \
        or job_folder in word or word.endswith((".cu", ".o", ".so"))


# The keys that change a compile and that nvcc takes (a key declared not to is held to it
# by the compile key's test above, whichever line it reaches).
NVCC_LEAVES = [leaf for leaf in LEAVES if leaf[0] != ("frontend",)
               and not VARIANT.not_compiled(leaf[0])
               and (not leaf[1].frontends or "nvcc" in leaf[1].frontends)]


def test_a_cell_makes_each_kind_of_nvcc_call_the_key_test_reads(jobs: Jobs) -> None:
    """The test below is not vacuous: the made-up nvcc leads a cell through its compile,
    the kernel probe, both archs' preprocessing and the host pass."""
    calls = _every_call(jobs, _case("nvcc"))
    assert {p: len(c) for p, c in calls.items()} == \
        {"compile": 2, "probe": 1, "preprocess": 2, "host pass": 1}, calls


def _arch_of(words: list[str]) -> str:
    (arch,) = [w.split("=", 1)[1] for w in words if w.startswith("--gpu-architecture=")]
    return arch


def test_each_nvcc_call_is_for_the_arch_its_purpose_asks(jobs: Jobs) -> None:
    """The purposes kept apart (nvcc_lines): the kernel probe's PTX for the cell's own
    virtual arch (nvcc's default arch would resolve the name for another GPU), the
    preprocessing for the cell's arch and then a newer one, and the host pass for the
    newer arch whose device side declared the name (the one the search is about), not the
    cell's own."""
    calls = _every_call(jobs, _case("nvcc"))
    (probe,) = calls["probe"]
    assert _arch_of(probe) == "compute_90", probe
    own, newer = (_arch_of(words) for words in calls["preprocess"])
    assert own == "sm_90" and newer != own, calls["preprocess"]
    (host,) = calls["host pass"]
    assert _arch_of(host) == newer, host


def test_the_repro_line_is_the_compile_less_its_kept_folder(jobs: Jobs) -> None:
    """A cell's log opens with the line that compiles it again (its repro): the compile's
    own words less --keep and its --keep-dir, a folder of the cell's that is gone when the
    cell ends (a pasted line would fail on it, or fill a folder nobody reads)."""
    job = next(iter(jobs.of(_case("nvcc")).values()))
    (compiled,) = _calls(jobs, job, _BUILDS)["compile"]
    compile_ = frontend("nvcc").compile
    assert compile_ is not None
    built = compile_(job)
    assert built.result.status == "ok", built.result.log
    first = built.result.log.splitlines()[0]
    assert first.startswith("$ ")
    keep_dir = compiled[compiled.index("--keep-dir") + 1]
    # The made-up nvcc logs its words, not its own name.
    assert shlex.split(first[2:])[1:] == [w for w in compiled
                                          if w not in ("--keep", "--keep-dir", keep_dir)]


@pytest.mark.parametrize(("at", "key", "table"), NVCC_LEAVES,
                         ids=[".".join(a) for a, _, _ in NVCC_LEAVES])
def test_a_key_that_reaches_nvccs_compile_reaches_every_nvcc_call_of_the_cell(
        at: tuple[str, ...], key: Key, table: Table, jobs: Jobs) -> None:
    """Issue 80: the kernel probe and the since-which-arch preprocessing made their own
    nvcc lines, so a key that reached the compile (a dialect, a define, a register cap)
    did not reach them, and a test of `Frontend.commands` alone could not see it. Every
    call is captured here, as the cell makes it: each word a key adds to the compile
    that is not the compile's own (_THE_COMPILE_S) is on every other call."""
    before, after = _with(at, key, "nvcc")
    old, new = _every_call(jobs, before), _every_call(jobs, after)
    folder = str(jobs.options.out)
    added = {w for w in new["compile"][0] if w not in old["compile"][0]
             and not _own_to_the_compile(w, folder)}
    for purpose in ("probe", "preprocess", "host pass"):
        for words in new[purpose]:
            lacking = added - set(words)
            assert not lacking, f"{'.'.join(at)} = {_example(key)!r} gives nvcc's compile " \
                f"{sorted(lacking)}, which its {purpose} call lacks: {words}"
