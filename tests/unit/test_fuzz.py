"""Every reader of a file a stranger can hand the tool, fuzzed (issue 23).

The property for each: the reader returns, or raises the error the command line turns
into one line and exit status 2 (UserError; for the audit's ELF reader UnreadableFile,
which becomes an `error` cell). Never another exception, never a traceback; and what
was read is then used as the command would use it (reports written, verdicts judged
again, a baseline compared), which must not fail either. Memory stays under 1 GiB for
the whole session. `nox -s fuzz` runs each target for 10 minutes; here each gets a
bounded number of inputs (tests/fuzzing.py has the profiles and the seeds).
"""

from __future__ import annotations

import contextlib
import json
import resource
import shutil
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cudamatrix.config.corpus import load_case, load_corpus
from cudamatrix.config.defaults import KNOWN_BUGS
from cudamatrix.config.matrix import load_matrix
from cudamatrix.config.project import find_project
from cudamatrix.errors import UserError
from cudamatrix.record.baseline import compare, load_baseline
from cudamatrix.record.merge import merge_results
from cudamatrix.record.results import CELLS_DIR, load_cell, load_results
from cudamatrix.record.verdict import rejudge
from cudamatrix.reports import write_reports
from cudamatrix.stages.binaries.elf import UnreadableFile, elf_machine, elf_sections, fatbins
from cudamatrix.stages.binaries.facts import cubin_kernel_names, read_cubin, read_ptx
from cudamatrix.stages.binaries.inputs import members
from fuzzing import (
    EVIDENCE,
    REPO,
    TRIED,
    damaged,
    damaged_library,
    json_text,
    library_seeds,
    mutated,
    run_target,
    stream,
    toml_text,
)

MEMORY_BOUND_KIB = 1 << 20
CASE_SEEDS = {p.parent.name: p for p in sorted(KNOWN_BUGS.glob("*/case.toml"))}
RESULTS = EVIDENCE / "realworld-h100" / "results.json"


def _toml(path: Path) -> Any:
    import tomllib

    return tomllib.loads(path.read_text())


def _trimmed_results() -> dict[str, Any]:
    """The H100 run's results.json, its first 12 cells (the mutations reach every field)."""
    document = json.loads(RESULTS.read_text())
    document["cells"] = document["cells"][:12]
    return document


RESULT_SEED = _trimmed_results()
CELL_SEEDS = RESULT_SEED["cells"][:6]
LIBRARIES = library_seeds()


@pytest.fixture(scope="module", autouse=True)
def memory_stays_bounded() -> Iterator[None]:
    yield
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert peak < MEMORY_BOUND_KIB, f"{peak} KiB resident after the fuzz targets"


def _count(name: str) -> None:
    TRIED[name] = TRIED.get(name, 0) + 1


def _scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="cudamatrix-fuzz-"))


# --- the audit's readers -----------------------------------------------------------------

def test_elf_and_fatbinary_reader() -> None:
    @given(damaged_library(LIBRARIES))
    def target(data: bytes) -> None:
        _count("elf")
        try:
            elf_machine(stream(data))
            elf_sections(stream(data))
            cubin_kernel_names(data)
            read_cubin(data, "sm_90")
            read_ptx(data, "sm_90")
            for fatbin in fatbins(stream(data)):
                assert fatbin.offset + fatbin.size <= len(data)
        except UnreadableFile as exc:
            assert str(exc) and "\n" not in str(exc)

    run_target("elf", target)


def test_wheel_members() -> None:
    """A wheel (zip) around a damaged library, or a damaged zip: its members stream out
    or are refused by name."""
    def wheel(library: bytes, name: str) -> bytes:
        buffer = stream(b"")
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(name, library)
        return buffer.getvalue()

    names = st.sampled_from(["pkg/lib.so", "../lib.so", "/abs/lib.so", "a/../../b.so",
                             "C:/x.so", "lib.so.12", "pkg\\..\\..\\x.so"])

    @given(damaged_library(LIBRARIES[:1]), names, st.booleans(), st.data())
    def target(library: bytes, name: str, damage: bool, data: st.DataObject) -> None:
        _count("wheel")
        scratch = _scratch()
        try:
            path = scratch / "x-1.0-py3-none-any.whl"
            content = wheel(library, name)
            path.write_bytes(data.draw(damaged(content)) if damage else content)
            try:
                for member in members(path, scratch):
                    if member.problem:
                        assert "\n" not in member.problem
                        continue
                    with member.path.open("rb") as handle:
                        fatbins(handle)
            except (UserError, UnreadableFile):
                pass
        finally:
            shutil.rmtree(scratch)

    run_target("wheel", target)


def test_audited_library() -> None:
    """A damaged .so as `audit` reads it: the file's fatbinaries split, each handed to a
    cuobjdump (here one that writes the module's bytes back as its cubin and its PTX, as a
    lying fatbinary can make the real one do) and its images read from the files, within
    the size and time bounds. Modules, or one line naming what could not be read."""
    from cudamatrix.stages.binaries.facts import read_modules

    scratch = _scratch()
    tool = scratch / "cuobjdump"
    tool.write_text('#!/bin/sh\ncp "$5" lib.1.sm_90.cubin && cp "$5" lib.2.sm_80.ptx\n')
    tool.chmod(0o755)

    @given(damaged_library(LIBRARIES))
    def target(data: bytes) -> None:
        _count("audited")
        library = scratch / "libaudited.so"
        library.write_bytes(data)
        try:
            for module in read_modules(library, "x.whl!libaudited.so", str(tool)):
                assert module.images and module.describe()
        except UnreadableFile as exc:
            assert str(exc) and "\n" not in str(exc)

    try:
        run_target("audited", target)
    finally:
        shutil.rmtree(scratch)


# --- the TOML files a user writes --------------------------------------------------------

def _expect_user_error_only(action: Any) -> None:
    try:
        action()
    except UserError as exc:
        assert str(exc)


def test_case_toml() -> None:
    seeds = [_toml(p) for p in CASE_SEEDS.values()]

    @given(st.one_of(mutated(seeds).map(toml_text), st.sampled_from(
        [p.read_bytes() for p in CASE_SEEDS.values()]).flatmap(damaged)),
        st.sampled_from(sorted(CASE_SEEDS)))
    def target(text: bytes, sources_of: str) -> None:
        _count("case.toml")
        scratch = _scratch()
        try:
            folder = scratch / "corpus" / "case"
            shutil.copytree(CASE_SEEDS[sources_of].parent, folder)
            (folder / "case.toml").write_bytes(text)
            _expect_user_error_only(lambda: load_case(folder, folder.parent))
        finally:
            shutil.rmtree(scratch)

    run_target("case.toml", target)


def test_matrix_toml() -> None:
    seed_path = REPO / "src" / "cudamatrix" / "config" / "data" / "matrix.toml"
    seed = _toml(seed_path)

    @given(st.one_of(mutated([seed]).map(toml_text), damaged(seed_path.read_bytes())))
    def target(text: bytes) -> None:
        _count("matrix.toml")
        scratch = _scratch()
        try:
            path = scratch / "matrix.toml"
            path.write_bytes(text)
            _expect_user_error_only(lambda: load_matrix(path))
        finally:
            shutil.rmtree(scratch)

    run_target("matrix.toml", target)


def test_project_toml() -> None:
    seed_path = REPO / "cudamatrix.toml"
    seed = _toml(seed_path)
    project_seed = {**seed, "cases": ["cases"], "tiers": {"pr": {"toolkit": ["13.0"],
                                                                   "arch": ["sm_80"]}},
                    "libraries": {"cutlass": {"sources": {"4.2.0+mine": "path:cutlass"}}}}

    @given(st.one_of(mutated([seed, project_seed]).map(toml_text),
                     damaged(seed_path.read_bytes())))
    def target(text: bytes) -> None:
        _count("cudamatrix.toml")
        scratch = _scratch()
        try:
            (scratch / "cases").mkdir()
            (scratch / "cudamatrix.toml").write_bytes(text)

            def read() -> None:
                project = find_project(scratch)
                if project.config is not None:
                    load_matrix(project.matrix, project.overrides)

            _expect_user_error_only(read)
        finally:
            shutil.rmtree(scratch)

    run_target("cudamatrix.toml", target)


# --- results.json and what reads it ------------------------------------------------------

CASES = {c.id: c for c in load_corpus([KNOWN_BUGS])}


def _use(path: Path, out: Path) -> None:
    """What `report`, `report --rejudge` and `--baseline` do with a results file."""
    info, results = load_results(path)
    write_reports(out, info, results)
    with contextlib.suppress(UserError):  # a cell of no known case: said in one line
        rejudge(results, CASES)
    before = load_baseline(path)
    compare(str(path), before, results)


@given(st.one_of(mutated([RESULT_SEED]).map(json_text), damaged(json_text(RESULT_SEED))))
def _results_target(text: bytes) -> None:
    _count("results.json")
    scratch = _scratch()
    try:
        path = scratch / "results.json"
        path.write_bytes(text)
        _expect_user_error_only(lambda: _use(path, scratch / "out"))
    finally:
        shutil.rmtree(scratch)


def test_results_json_report_rejudge_baseline() -> None:
    run_target("results.json", _results_target)


def test_cell_files_of_resume_and_merge() -> None:
    """--resume's and a dead shard's cells/ files, and merge over such a shard."""
    @given(st.lists(st.one_of(mutated(CELL_SEEDS).map(json_text),
                              st.sampled_from(CELL_SEEDS).map(json_text).flatmap(damaged)),
                    min_size=1, max_size=3))
    def target(texts: list[bytes]) -> None:
        _count("cells")
        scratch = _scratch()
        try:
            shard = scratch / "shard"
            (shard / CELLS_DIR).mkdir(parents=True)
            for number, text in enumerate(texts):
                (shard / CELLS_DIR / f"{number}.json").write_bytes(text)
                _expect_user_error_only(lambda n=number: load_cell(
                    shard / CELLS_DIR / f"{n}.json").to_dict())

            def merged() -> None:
                info, results = merge_results([shard])
                write_reports(scratch / "out", info, results)

            _expect_user_error_only(merged)
        finally:
            shutil.rmtree(scratch)

    run_target("cells", target)


def _record_seed() -> dict[str, Any]:
    """A real up-to-date record, made here of a small folder."""
    from cudamatrix.common.up_to_date import InputLedger, record_run

    scratch = _scratch()
    (scratch / "case").mkdir()
    (scratch / "case" / "k.cu").write_text("__global__ void k() {}\n")
    (scratch / "out").mkdir()
    ledger = InputLedger()
    ledger.watch(scratch / "case")
    record = record_run(scratch / "out", {"c": "1"}, ledger.inputs(), 0, "pass=1\n", "then", 1)
    shutil.rmtree(scratch)
    return record.to_dict()


def test_history_and_the_up_to_date_record() -> None:
    """Issue 43: --history files and the record kept in --out, mutated and nested deep: a
    history is a UserError in one line or read; a record is read or ignored, never trusted
    and never a traceback."""
    from cudamatrix.common.up_to_date import RECORD, standing_record
    from cudamatrix.record.history import PastRun, gather, history_document

    history_seed = history_document([PastRun.of(*load_results(
        EVIDENCE / "realworld-h100" / "results.json"))])
    record_seed = _record_seed()

    @given(st.one_of(mutated([history_seed]).map(json_text), damaged(json_text(history_seed))),
           st.one_of(mutated([record_seed]).map(json_text), damaged(json_text(record_seed))))
    def target(history: bytes, record: bytes) -> None:
        _count("history and record")
        scratch = _scratch()
        try:
            (scratch / "history.json").write_bytes(history)
            _expect_user_error_only(lambda: gather([scratch / "history.json"], None))
            (scratch / "out").mkdir()
            (scratch / "out" / RECORD).write_bytes(record)
            standing_record(scratch / "out", {"c": "1"})  # None or a record, no traceback
        finally:
            shutil.rmtree(scratch)

    run_target("history and record", target)


# --- issue 49: timing records, repro fields, header wheels --------------------------------

def _timed_seed() -> dict[str, Any]:
    """The H100's timed saxpy run (its timing records), with the repro fields a run keeps."""
    document = json.loads((EVIDENCE / "kernel-time-h100" / "saxpy" / "results.json")
                          .read_text())
    document["cells"] = document["cells"][:4]
    document["run"]["repro_args"] = "--corpus 'my cases' --tier pr"
    document["run"]["repro_folder"] = "/home/me/project"
    return document


TIMED_SEED = _timed_seed()


def test_timing_records_and_repro_fields_through_merge_and_history() -> None:
    """A timed results.json, mutated: read and merged into a history, or refused in one
    line; and whatever the merge wrote into history.json, the next merge reads (a damaged
    timing wedged every later merge)."""
    from cudamatrix.record.history import PastRun, gather, history_document

    @given(st.one_of(mutated([TIMED_SEED]).map(json_text), damaged(json_text(TIMED_SEED))))
    def target(text: bytes) -> None:
        _count("timed results.json")
        scratch = _scratch()
        try:
            path = scratch / "results.json"
            path.write_bytes(text)
            try:
                info, results = load_results(path)
            except UserError:
                return
            write_reports(scratch / "out", info, results)
            written = scratch / "history.json"
            written.write_text(json.dumps(history_document(gather([], PastRun.of(info,
                                                                                  results)))))
            gather([written], None)  # the next merge reads it back: never refused
        finally:
            shutil.rmtree(scratch)

    run_target("timed results.json", target)


def test_header_library_wheels() -> None:
    """A header library's wheel with hostile member names and sizes: its members are
    written within bounds, or the library is refused in one line (EnvironmentUnavailable),
    never another exception."""
    from cudamatrix.errors import EnvironmentUnavailable
    from cudamatrix.providers.wheel_index import _extract

    parts = st.sampled_from(["inc", "a", ".", "..", "", "n" * 300, "deep", "x.h", "a.h"])
    names = st.lists(parts, min_size=1, max_size=80).map("/".join).filter(bool)

    @given(st.lists(st.tuples(names, st.integers(0, 3 << 20)), min_size=1, max_size=4))
    def target(members: list[tuple[str, int]]) -> None:
        _count("header wheel")
        scratch = _scratch()
        try:
            wheel = scratch / "h-1.0-py3-none-any.whl"
            with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive, \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a duplicate name is a hostile wheel too
                for name, size in members:
                    archive.writestr(name, b"\0" * size)
            with zipfile.ZipFile(wheel) as archive, contextlib.suppress(EnvironmentUnavailable):
                _extract(archive, lambda name: True, scratch / "out", wheel.name)
        finally:
            shutil.rmtree(scratch)

    run_target("header wheel", target)


# --- issue 57: a repro record, an index listing, a plugin --------------------------------

def test_repro_records() -> None:
    """A cell record from elsewhere, its compile log mutated: `repro` prints a script whose
    every command is one allowed compiler's (or refuses in one line), whatever the record
    says; a line of the script outside its commands is only a comment or its own set-up."""
    import shlex

    from cudamatrix.commands.repro import compile_script
    from cudamatrix.record.results import CellResult

    words = st.sampled_from(["/usr/bin/nvcc", "-c", "k.cu", "-Xcompiler", "-wrapper",
                             "/bin/sh,-c,id", "-ccbin", "g++-12", "/tmp/x/nvcc", "$(id)", ";",
                             "\n", "-B/tmp", "LD_LIBRARY_PATH=/tmp", "-m",
                             "cudamatrix.stages.compile.nvrtc", "/usr/bin/python3", "-o",
                             "out/k.o", "`id`", "'", "--pre-include=a.h,/etc/passwd"])
    seed = CELL_SEEDS[0]

    @given(st.lists(st.lists(words, min_size=1, max_size=8), min_size=1, max_size=3),
           st.text(max_size=30), st.booleans())
    def target(lines: list[list[str]], case: str, quote: bool) -> None:
        _count("repro record")
        record = json.loads(json.dumps(seed))
        log = "\n".join("$ " + (shlex.join(w) if quote else " ".join(w)) for w in lines)
        record["case"] = case or "c"
        record["id"] = f"{record['case']}/{record['variant']}/13.0/sm_90"
        record["frontend"] = "nvcc"
        record["stages"] = [{"stage": "compile", "status": "fail", "message": "", "log": log}]
        try:
            result = CellResult.from_dict(record)
            script = compile_script(result, Path("/tmp/out"))
        except (UserError, ValueError, KeyError, TypeError):
            return
        body = script.splitlines()
        assert body[0] == "#!/bin/sh" and body[1].startswith("# ") and body[2] == "set -e"
        assert body[3:6] == ['work="$(mktemp -d)"', 'cd "$work"',
                             'echo "compiling in $work" >&2'], body
        for line in body[6:]:
            first = shlex.split(line)[0]
            assert first.startswith("LD_LIBRARY_PATH=/usr") \
                or first in ("/usr/bin/nvcc", sys.executable), line
            words = shlex.split(line)  # each output in the script's own folder
            outputs = [w for i, w in enumerate(words[1:]) if words[i] == "-o"]
            assert all("/" not in w for w in outputs), line

    run_target("repro record", target)


def test_index_listings() -> None:
    """A project's page as an index serves it (JSON or HTML, mutated or damaged): read into
    a listing, or one IndexUnreachable line, never another exception."""
    from cudamatrix.common.package_index import Indexes, IndexUnreachable, listing

    page = {"meta": {"api-version": "1.1"}, "name": "x", "versions": ["1.0"],
            "files": [{"filename": "x-1.0-py3-none-any.whl", "url": "x-1.0-py3-none-any.whl",
                       "hashes": {"sha256": "00"}}]}
    html = b'<a href="x-1.0.tar.gz#sha256=00">x-1.0.tar.gz</a><a href="../../e">e</a>'

    @given(st.one_of(mutated([page]).map(json_text), damaged(json_text(page)),
                     damaged(html)))
    def target(text: bytes) -> None:
        _count("index listing")
        scratch = _scratch()
        try:
            (scratch / "x").mkdir()
            (scratch / "x" / "index.html").write_bytes(text)
            try:
                found = listing("x", Indexes(scratch.as_uri()))
            except IndexUnreachable as exc:
                assert str(exc)
                return
            assert all(isinstance(v, str) for v in found.versions)
        finally:
            shutil.rmtree(scratch)

    run_target("index listing", target)


def test_index_html_page() -> None:
    """An index's or a find-links place's HTML page made of hostile links (hrefs with
    IPv6 brackets, ports that are no number, other schemes, paths out, fragments, unclosed
    tags): read into a listing whose every URL a request could be made to, or one
    IndexUnreachable line, never another exception (issue 68, item 12: `http://[::1`)."""
    import urllib.parse

    from cudamatrix.common.package_index import Indexes, IndexUnreachable, listing

    pieces = st.sampled_from(["http://", "https://", "file://", "ftp://", "//", "[", "]",
                              "::1", "[::1]", ":", ":99999", ":port", "@", "host", "..", "/",
                              "x-1.0-py3-none-any.whl", "x-1.0.tar.gz", "#sha256=00", "#",
                              "=", "%", "%zz", "?", "\\", " ", "é", "\x00", "&amp;", "\"",
                              "'", "<", ">"])
    href = st.lists(pieces, max_size=8).map("".join)
    name = st.sampled_from(["x-1.0-py3-none-any.whl", "x-2.0.tar.gz", "", "x", "y-1.0.tar.gz",
                            "x-1.0-py3-none-any.whl.metadata"])
    anchor = st.tuples(href, name, st.booleans(), st.booleans()).map(
        lambda a: (f'<a href="{a[0]}"' + (" data-yanked" if a[2] else "") + ">" + a[1]
                   + ("</a>" if a[3] else "")))
    page = st.lists(anchor, max_size=12).map(lambda found: "\n".join(found).encode(
        errors="surrogateescape"))

    @given(page, st.booleans())
    def target(text: bytes, find_links: bool) -> None:
        _count("index html page")
        scratch = _scratch()
        try:
            (scratch / "x").mkdir()
            (scratch / "x" / "index.html").write_bytes(text)
            indexes = (Indexes("", find_links=(str(scratch / "x" / "index.html"),),
                               no_index=True) if find_links else Indexes(scratch.as_uri()))
            try:
                found = listing("x", indexes)
            except IndexUnreachable as exc:
                assert str(exc)
                return
            assert all(isinstance(v, str) for v in found.versions)
            for entry in found.files:
                parts = urllib.parse.urlsplit(str(entry["url"]))
                assert parts.scheme, entry
                assert parts.port is None or parts.port >= 0  # a bad port: ValueError
        finally:
            shutil.rmtree(scratch)

    run_target("index html page", target)


def test_plugin_frontends() -> None:
    """A plugin's Frontend with any name and any pair of compile/steps: registered, or one
    UserError line; a built-in is never replaced."""
    from cudamatrix.stages.frontends import registry

    built_in = dict(registry.registered())

    def compile_(job: object) -> object:
        return None

    @given(st.one_of(st.sampled_from(sorted(built_in)), st.text(min_size=1, max_size=20)),
           st.booleans(), st.booleans())
    def target(name: str, has_compile: bool, has_steps: bool) -> None:
        _count("plugin frontend")
        made = registry.Frontend(name, compile=compile_ if has_compile else None,
                                 steps=compile_ if has_steps else None)  # type: ignore[arg-type]
        try:
            registry.register(made)
        except UserError as exc:
            assert str(exc)
        finally:
            if name not in built_in:
                registry._REGISTERED.pop(name, None)
        assert all(registry.registered()[n] is f for n, f in built_in.items())

    run_target("plugin frontend", target)


# --- issue 68: a results.json's timing and bisect fields ----------------------------------

def _bandwidth_timing() -> dict[str, Any]:
    """A timed cell's timing as a case that moves known bytes records it (the saxpy seed
    has none of the bandwidth fields: a string there reached the Markdown's format)."""
    stage = next(s for s in TIMED_SEED["cells"][0]["stages"] if s["stage"] == "run")
    return {**stage["details"]["timing"], "bytes": 3 << 24, "bandwidth_gbs": 1708.2,
            "peak_gbs": 3352.3, "bandwidth_fraction": 0.5096}


def _bisect_answer() -> dict[str, Any]:
    """A bisect answer as commands/bisection.py writes it, --slower's fields included."""
    def side(value: str, happened: str) -> dict[str, Any]:
        return {"value": value, "cell": f"saxpy/v/{value}/sm_90", "happened": happened,
                "outcome": "pass", "message": "", "repro": f"cudamatrix run --toolkit {value}",
                "time": {"median_us": 294.7, "noise": 0.001, "ratio": 1.0,
                         "bandwidth_gbs": 1708.2}}
    return {"over": "toolkit", "values": ["12.4", "12.8", "13.0"], "probed": ["12.4", "13.0"],
            "skipped": {"12.6": "no wheel"},
            "changes": [{"at": "13.0", "before": side("12.4", "passes"),
                         "after": side("13.0", "slower"), "skipped_between": ["12.8"]}],
            "slower": {"ratio": 1.05, "value": "12.4", "median_us": 294.7}}


def _with_fields(timing: Any, bisect: Any) -> dict[str, Any]:
    """TIMED_SEED with `timing` as its first cell's and `bisect` as its run's answer."""
    document: dict[str, Any] = json.loads(json.dumps(TIMED_SEED))
    for stage in document["cells"][0]["stages"]:
        if stage["stage"] == "run":
            stage["details"]["timing"] = timing
    document["run"]["bisect"] = bisect
    return document


def test_timing_and_bisect_fields_through_report_merge_and_bisect() -> None:
    """Issue 68: a timing's bandwidth figures and a bisect answer, mutated field by field
    (the whole-document targets seldom reach them): the results.json is refused in one line
    (UserError), or read and then reported, merged and printed as bisect prints it with no
    error at all (a render that fails is no refusal of the input)."""
    from cudamatrix.reports.markdown import bisect_lines

    timing, answer = _bandwidth_timing(), _bisect_answer()

    @given(st.one_of(mutated([timing]).map(lambda t: _with_fields(t, answer)),
                     mutated([answer]).map(lambda a: _with_fields(timing, a))))
    def target(document: dict[str, Any]) -> None:
        _count("timing and bisect fields")
        scratch = _scratch()
        try:
            path = scratch / "shard" / "results.json"
            path.parent.mkdir()
            path.write_bytes(json_text(document))
            try:
                info, results = load_results(path)
            except UserError as exc:
                assert str(exc) and "\n" not in str(exc)
                return
            write_reports(scratch / "out", info, results)
            merged_info, merged = merge_results([path.parent])
            write_reports(scratch / "merged", merged_info, merged)
            if info.bisect is not None:
                bisect_lines(info.bisect)
        finally:
            shutil.rmtree(scratch)

    run_target("timing and bisect fields", target)
