"""Issue 79, break 4: what the tool prints quotes what others wrote (a compiler's message, a
case key's value, a shard's record), and a newline there followed by `::stop-commands::`,
or `##[add-mask]` anywhere, reached the CI log where GitHub's runner reads workflow
commands; raw ESC and OSC 52 (a clipboard write) reached the log and the terminal.

Every line goes through common/log_line.py, by construction: the walk below fails where a
module prints any other way. Then the function itself, and a hostile message through
each printing path."""

from __future__ import annotations

import ast
import io
import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cudamatrix
from conftest import cudamatrix_in_process as cli
from conftest import one_line_error
from cudamatrix.common.log_line import json_text, log_line, say, say_lines
from cudamatrix.config.plan import Cell
from cudamatrix.orchestrator.progress import Progress
from cudamatrix.record.results import CellResult
from cudamatrix.reports.github import annotation_lines

# The package imported (a mutated copy's, under tests/mutations.py), not the file tree's.
PACKAGE = Path(cudamatrix.__file__).resolve().parent
HOME = "common/log_line.py"
# Where something is written that is not a line of the log, each with why. Nothing else may
# print but through HOME.
ALLOWED = {
    "reports/github.py": "the workflow commands the tool means (`::error title=...::...`), "
                         "each value escaped by log_line.annotation_data/_property",
    "stages/runtime/forkserver.py": "a cell's server: `ready` and a child's traceback go to "
                                    "the pipe and log file its parent reads, never the log",
    "stages/runtime/gpu_server.py": "its ready line (JSON) goes to the pipe the run reads",
    "stages/compile/nvrtc.py": "a cell's NVRTC process: its stdout is the cell's compile log, "
                               "captured; the log sees it only as a cell's message",
    "reports/gitlab.py": "GitLab's section markers (ESC [0K, CR) written as GitLab reads "
                         "them; each line of a record's words made by log_line first",
    "providers/environment.py": "Python's DeprecationWarning of the old module path: fixed "
                                "text, no value from outside",
}
_STREAMS = {"sys.stdout", "sys.stderr", "sys.__stdout__", "sys.__stderr__",
            "sys.stdout.buffer", "sys.stderr.buffer"}
_STREAM_NAMES = {"stdout", "stderr", "__stdout__", "__stderr__"}
_PRINTING_CALLS = {"print", "pprint", "pprint.pprint", "rich.print", "warnings.warn",
                   "traceback.print_exc", "traceback.print_exception", "traceback.print_stack"}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def _prints(node: ast.Call, called: str) -> bool:
    receiver = _dotted(node.func.value) if isinstance(node.func, ast.Attribute) else ""
    method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
    if called in _PRINTING_CALLS:
        return True
    if called == "os.write":
        to_fd = node.args[0] if node.args else None
        return isinstance(to_fd, ast.Constant) and to_fd.value in (1, 2)
    if method in ("write", "writelines"):
        return receiver in _STREAMS or receiver.endswith(".file")  # console.file.write
    if method in ("print", "print_json", "print_exception", "log", "out"):  # rich's Console
        return receiver not in ("math", "np", "numpy")
    return False


def printing_calls(tree: ast.AST) -> list[tuple[int, str]]:
    """Each place a module prints on its own: print(), a write to stdout or stderr (or to a
    rich console's file), a rich console's print or log, os.write to 1 or 2, warnings,
    tracebacks, and the logging module (whose handlers write to the console)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                alias.name for alias in node.names]
            if any(name.split(".")[0] == "logging" for name in names):
                found.append((node.lineno, "import logging"))
            if isinstance(node, ast.ImportFrom) and node.module in ("rich", "pprint") and any(
                    alias.name in ("print", "pprint") for alias in node.names):
                found.append((node.lineno, f"from {node.module} import print"))
            if isinstance(node, ast.ImportFrom) and node.module == "sys" and any(
                    alias.name in _STREAM_NAMES for alias in node.names):
                found.append((node.lineno, "from sys import a stream"))
            continue
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr) and node.value is not \
                None and (_dotted(node.value) in _STREAMS or _dotted(node.value) == "print"):
            # A stream or print held under another name writes unseen by the calls' walk.
            found.append((node.lineno, f"{_dotted(node.value)} held under another name"))
            continue
        if not isinstance(node, ast.Call):
            continue
        called = _dotted(node.func)
        if _prints(node, called):
            found.append((node.lineno, called))
    return found


def _modules() -> dict[str, ast.AST]:
    """The tool's modules (the known-bug corpus's scripts are the code under test)."""
    return {str(path.relative_to(PACKAGE)): ast.parse(path.read_text(), str(path))
            for path in sorted(PACKAGE.rglob("*.py")) if "data" not in path.parts}


def test_nothing_prints_but_through_the_log_line() -> None:
    modules = _modules()
    bypasses = [f"{name}:{line}: {call}" for name, tree in modules.items()
                if name != HOME and name not in ALLOWED
                for line, call in printing_calls(tree)]
    assert bypasses == [], "print through common/log_line.py's say (or add a reason here)"
    # Each exception still prints (a stale one would let a bypass in unseen).
    assert [name for name in ALLOWED if not printing_calls(modules[name])] == []


def test_the_walk_finds_each_way_of_printing() -> None:
    """The walk's own check: each form it must catch, caught."""
    source = "\n".join([
        "print('x')", "import sys", "sys.stdout.write('x')", "sys.stderr.write('x')",
        "console.print('x')", "self.bar.console.print('x')", "console.file.write('x')",
        "import logging", "os.write(2, b'x')", "warnings.warn('x')", "console.log('x')",
        "traceback.print_exc()", "from rich import print",
        "from sys import stderr", "out = sys.stdout", "say = print",
    ])
    caught = {line for line, _ in printing_calls(ast.parse(source))}
    assert caught == set(range(1, 17)) - {2}  # every line but `import sys`
    assert printing_calls(ast.parse("handle.write('x'); math.log(2); os.write(fd, b'')")) == []


# The property: whatever a message holds, its line is one line, shows every control
# character as an escape, and holds neither form of a workflow command.
_HOSTILE = st.sampled_from(["\n", "\r", "\r\n", "::", "##[", "\x1b", "\x1b]52;c;", "\x07",
                            "\x9b", "\x85", "\u2028", "\u202e", "\t", " ", "#", ":",
                            "\udce9", "\x00", "\x7f", "\x0b", "\x1c"])
_MESSAGES = st.lists(st.one_of(_HOSTILE, st.text(max_size=8)), max_size=12).map("".join)
_RAW_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                          "\ud800-\udfff]")


@given(_MESSAGES)
def test_a_log_line_is_one_line_that_no_runner_or_terminal_acts_on(text: str) -> None:
    line = log_line(text)
    assert len((line + "\n").splitlines()) == 1
    assert not _RAW_CONTROL.search(line)
    assert not line.lstrip().startswith("::")
    assert "##[" not in line
    assert log_line(line) == line  # said again (a captured summary replayed), the same


@given(st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7e), max_size=60))
def test_a_plain_line_is_left_as_it_was_written(text: str) -> None:
    """Readable: the escapes touch only what would be acted on."""
    if "##[" in text or text.lstrip().startswith("::"):
        return
    assert log_line(text) == text.rstrip()


def test_the_escapes_show_what_was_there() -> None:
    said = log_line("error: x\n  ::stop-commands::tok\n##[add-mask]secret "
                    "\x1b]52;c;ZWNobyBoaQ==\x07 done")
    assert said == ("error: x ::stop-commands::tok \\x23#[add-mask]secret "
                    "\\x1b]52;c;ZWNobyBoaQ==\\x07 done")
    assert log_line("  ::warning::x") == "  \\x3a:warning::x"
    assert log_line("caf\udce9 \u202eevil") == "caf\\udce9 \\u202eevil"


@given(st.recursive(st.none() | st.booleans() | st.integers() | _MESSAGES,
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(_MESSAGES, inner, max_size=3), max_leaves=10),
       st.sampled_from([None, 1, 2]))
def test_json_for_the_log_is_the_same_value_and_no_command(value: object,
                                                           indent: int | None) -> None:
    """plan's, schema's and list --json's JSON: byte for byte what json.loads reads back,
    and none of its lines a workflow command."""
    text = json_text(value, indent)
    assert json.loads(text) == value
    assert len(text.splitlines()) == text.count("\n") + 1  # its lines are indent's alone
    _safe_log(text)


def _result(message: str) -> CellResult:
    return CellResult(cell=Cell("c", "v", "13.0", "sm_90", "nvrtc"), outcome="fail",
                      stage="compile", reached="compile", message=message, reason="",
                      expected="", diagnosis=None, stages=(), seconds=0.1)


HOSTILE = "error: x\n::stop-commands::tok\n##[add-mask]secret \x1b]52;c;ZWNobyBoaQ==\x07 done"


def _safe_log(text: str) -> None:
    for line in text.splitlines():
        assert not line.lstrip().startswith("::"), line
        assert "##[" not in line and not _RAW_CONTROL.search(line), line


def test_a_compilers_message_in_a_progress_line(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress()
    progress.heartbeat_s = 0
    progress.start(1)
    progress.cell_done(_result(HOSTILE))
    said = capsys.readouterr().out
    _safe_log(said)
    assert said.count("\n") == 1 and "stop-commands::tok" in said and "add-mask" in said


def test_a_rich_console_gets_the_same_line() -> None:
    from rich.console import Console

    screen = io.StringIO()
    console = Console(file=screen, highlight=False, markup=False, soft_wrap=True)
    say(f"[bold]:warning: {HOSTILE}", console)
    said = screen.getvalue()
    _safe_log(said)
    assert said == log_line(f"[bold]:warning: {HOSTILE}") + "\n"  # no markup, no emoji


def test_the_annotations_values_cannot_start_a_command() -> None:
    lines = annotation_lines([_result(HOSTILE)], None)
    assert len(lines) == 1
    (line,) = lines
    assert line.startswith("::error title=c/v/13.0/sm_90%3A fail at compile::")
    assert "\n" not in line and "%0A::stop-commands::tok%0A" in line
    assert "##[" not in line and not _RAW_CONTROL.search(line)


def test_a_replayed_summary_is_said_a_line_at_a_time(capsys: pytest.CaptureFixture[str]) -> None:
    say_lines("pass=1\n\n::stop-commands::x\n  new failure: c: \x1b[2J\n")
    assert capsys.readouterr().out == ("pass=1\n\n\\x3a:stop-commands::x\n"
                                       "  new failure: c: \\x1b[2J\n")


RUN = {"started": "2026-11-01T00:00:00+00:00", "finished": "2026-11-01T00:01:00+00:00",
       "tier": "pr", "provider": "wheels", "host": "h", "tool_version": "0"}


def _record(folder: Path, outcome: str, message: str) -> Path:
    folder.mkdir(parents=True)
    cell = {"case": "saxpy", "variant": "v", "toolkit": "13.0", "arch": "sm_90",
            "frontend": "nvrtc", "outcome": outcome, "stage": "compile", "message": message,
            "stages": [{"stage": "compile", "status": "ok" if outcome == "pass" else "failed"}]}
    (folder / "results.json").write_text(json.dumps({
        "schema": "cudamatrix-results", "schema_version": 1, "run": RUN, "cells": [cell]}))
    return folder / "results.json"


def test_merge_with_a_baseline_says_a_shards_hostile_message_on_one_line(
        tmp_path: Path) -> None:
    """The break: `  new failure: <cell>: error: x` then `::stop-commands::tok` on a line of
    its own, and the OSC 52 raw."""
    baseline = _record(tmp_path / "base", "pass", "")
    _record(tmp_path / "shard", "fail", HOSTILE)
    done = cli("merge", str(tmp_path / "shard"), "--out", str(tmp_path / "m"),
               "--baseline", str(baseline))
    assert done.code == 1, done.output[-3000:]  # a new failure; every report written
    _safe_log(done.output)
    (line,) = [line for line in done.output.splitlines() if "new failure:" in line]
    assert line.startswith("  new failure: saxpy/v/13.0/sm_90: error: x ::stop-commands::tok")
    assert (tmp_path / "m" / "COMPATIBILITY.md").is_file()


def test_validate_names_a_hostile_value_in_one_line(tmp_path: Path) -> None:
    """The break: a case's `source` holding a newline then `::stop-commands::` printed the
    command on a line of its own in the error."""
    from cudamatrix.config.project import init_project

    init_project(tmp_path)
    case = tmp_path / "cudamatrix-cases" / "saxpy" / "case.toml"
    case.write_text(case.read_text().replace('source = "saxpy.cu"',
                                             'source = "saxpy.cu\\n::stop-commands::tok"'))
    done = cli("validate", cwd=tmp_path)
    _safe_log(done.output)
    one_line_error(done, str(case), "::stop-commands::tok")


def test_a_progress_warning_goes_through_the_same_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    Progress().note("warning: \x1b]52;c;eA==\x07\n::add-mask::x")
    said = capsys.readouterr()
    assert said.out == "" and said.err == "warning: \\x1b]52;c;eA==\\x07 ::add-mask::x\n"


def test_an_argument_argparse_cannot_read_is_one_line(tmp_path: Path) -> None:
    """argparse printed `unrecognized arguments: x` and then `::stop-commands::tok` on a
    line of its own (a plan job's words reach it through merge --plan too)."""
    done = cli("list", "x\n::stop-commands::tok", cwd=tmp_path)
    assert done.code == 2
    _safe_log(done.output)
    assert "error: unrecognized arguments: x ::stop-commands::tok" in done.output
