"""A run's options are declared once (config/run_flags.py): the parser of every command that
selects or runs cells, the `RunOptions` its arguments make, a repro's words, a plan's jobs
and `merge --plan`'s reading of them all come from the one table, so a flag added there is
everywhere, and a value written back as words reads back as itself."""

from __future__ import annotations

import argparse
import json
import os
import shutil
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudamatrix.cli import build_parser
from cudamatrix.commands.arguments import ProviderChoices
from cudamatrix.commands.merge import planned_shards
from cudamatrix.commands.selection import options_from, run_options
from cudamatrix.config.defaults import KNOWN_BUGS
from cudamatrix.config.flags import RunFlag, host_compiler, library_pin, positive_number, shard
from cudamatrix.config.options import RunOptions
from cudamatrix.config.planning import make_plan
from cudamatrix.config.run_flags import RUN_FLAGS, SET_ELSEWHERE, repro_arguments
from cudamatrix.errors import UserError

# What `run` takes besides a run's declared flags: the command line's own and the report's.
NOT_RUN_FLAGS = {"-h", "--help", "-q", "--quiet", "-v", "--verbose", "--baseline", "--fail-on",
                 "--allow-new-failures", "--history", "--history-runs"}


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]  # type: ignore[no-any-return]
    raise AssertionError("no subcommands")


def test_each_run_option_is_set_by_one_flag_or_said_where() -> None:
    by_field: dict[str, list[str]] = {}
    for flag in RUN_FLAGS:
        if flag.field:
            by_field.setdefault(flag.field, []).append(flag.name)
    names = {f.name for f in fields(RunOptions)}
    assert set(by_field) <= names, set(by_field) - names
    assert all(len(flags) == 1 for flags in by_field.values()), by_field
    assert names == set(by_field) | SET_ELSEWHERE, names ^ (set(by_field) | SET_ELSEWHERE)


@pytest.mark.parametrize("command", ["run", "bisect"])
def test_the_run_commands_take_exactly_the_declared_flags(command: str) -> None:
    taken = {s for action in _subparser(command)._actions for s in action.option_strings}
    declared = {s for flag in RUN_FLAGS for s in flag.flags}
    assert declared <= taken
    own = {"--over", "--from", "--to", "--slower", "--versions"} if command == "bisect" else set()
    assert taken - declared - NOT_RUN_FLAGS == own


@pytest.mark.parametrize("command", ["list", "plan", "validate"])
def test_the_selecting_commands_take_the_selection(command: str) -> None:
    taken = {s for action in _subparser(command)._actions for s in action.option_strings}
    selection = {s for flag in RUN_FLAGS if flag.group == "selection" for s in flag.flags}
    assert selection <= taken
    assert not taken & {s for flag in RUN_FLAGS if flag.group == "run" for s in flag.flags}


_word = st.text("abcxyz019._+", min_size=1, max_size=8)


def _values(flag: RunFlag) -> st.SearchStrategy[Any]:
    """Values of the field the flag sets, as a run could hold them."""
    if flag.switch:
        return st.just(flag.sets)
    if flag.choices:
        one: st.SearchStrategy[Any] = st.sampled_from(flag.choices)
    elif flag.field == "provider":  # its choices are the provider registry's
        one = st.sampled_from(ProviderChoices().names())
    elif flag.read is positive_number:
        one = st.floats(min_value=1e-3, max_value=1e9)
    elif flag.read is host_compiler:
        one = st.sampled_from(["g++", "g++-12", "clang++-19"])
    elif flag.read is shard:
        one = st.integers(1, 64).flatmap(lambda n: st.tuples(st.integers(1, n), st.just(n)))
    elif flag.read is library_pin:
        return st.dictionaries(st.sampled_from(["cutlass", "cupy", "cccl"]),
                               st.lists(_word, min_size=1, max_size=3).map(tuple),
                               min_size=1)
    elif flag.read is Path:
        one = _word.map(Path)
    elif flag.read is str:
        one = _word
    else:  # a whole number in the flag's own range: found from what it accepts
        one = st.sampled_from([n for n in range(5000) if _reads(flag, str(n))])
    return st.lists(one, min_size=1, max_size=3).map(tuple) if flag.repeated else one


def _reads(flag: RunFlag, word: str) -> bool:
    assert flag.read is not None
    try:
        flag.read(word)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("flag", RUN_FLAGS, ids=lambda flag: flag.name)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_a_value_written_as_words_reads_back_as_itself(flag: RunFlag, data: st.DataObject
                                                       ) -> None:
    """What a repro, a plan's job and bisect write is what the parser reads again."""
    value = data.draw(_values(flag))
    words = flag.words(value)
    assert words and words[0] == flag.name
    args = build_parser().parse_args(["run", *words])
    assert flag.value(getattr(args, flag.dest)) == (True, value)


def test_defaults_are_what_runoptions_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    monkeypatch.chdir(tmp_path)
    options = run_options(build_parser().parse_args(["run", "--corpus", str(tmp_path)]))
    made = RunOptions()
    for flag in RUN_FLAGS:
        if flag.field:
            assert getattr(options, flag.field) == getattr(made, flag.field), flag.name


def test_a_repro_reads_back_as_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every option a repro carries, set away from its default, is the same option again
    once its words are parsed from the folder the run was made in."""
    cases = tmp_path / "cases"
    cases.mkdir()
    monkeypatch.chdir(tmp_path)
    words = ["run", "--corpus", "cases", "--known-bugs", "--tier", "nightly", "--no-gpu",
             "--cache", "cache", "--prebuilt", "earlier/out", "--docker-flavour", "nvidia",
             "--cuda-compat", "--cell-timeout", "60"]
    options = run_options(build_parser().parse_args(words))
    again = run_options(build_parser().parse_args(["run", *repro_arguments(options, tmp_path)]))
    for flag in RUN_FLAGS:
        if flag.repro and flag.field:
            assert getattr(options, flag.field) != getattr(RunOptions(), flag.field), flag.name
            mine, theirs = getattr(options, flag.field), getattr(again, flag.field)
            if isinstance(mine, Path):
                mine, theirs = mine.resolve(), theirs.resolve()
            assert mine == theirs, flag.name
    assert [p.resolve() for p in again.corpus] == [p.resolve() for p in options.corpus]


def test_each_job_of_a_plan_selects_the_cells_the_plan_gave_it(tmp_path: Path,
                                                               read_cli: Any) -> None:
    """--known-bugs, --host-compiler and --variant narrowed the plan: every job carries them,
    so `merge --plan` reads each job's cells back as the plan counted them."""
    words = ["--known-bugs", "--host-compiler", "g++-12", "--variant", "arch-guard",
             "--variant", "gcc-12"]
    said = read_cli("plan", *words, "--cells-per-job", "7", "--cpu", cwd=tmp_path)
    assert said.code == 0, said.output
    plan = json.loads(said.output)
    (tmp_path / "plan.json").write_text(said.output)
    jobs = plan["include"]
    assert len(jobs) > 1 and all(" ".join(words) in job["args"] for job in jobs)
    here = os.getcwd()
    os.chdir(tmp_path)  # no cudamatrix.toml above: the jobs' own words say what they run
    try:
        expected = planned_shards(tmp_path / "plan.json", None, build_parser())
        made = make_plan(options_from(build_parser().parse_args(["plan", *words])))
    finally:
        os.chdir(here)
    assert [len(shard.cells) for shard in expected] == [job["cells"] for job in jobs]
    planned = sorted(cell.id for cell in [*made.cells, *(c for c, _ in made.ruled_out)])
    assert sorted(cell.id for shard in expected for cell in shard.cells) == planned


def test_a_plan_refuses_a_word_its_jobs_cannot_carry(tmp_path: Path, read_cli: Any) -> None:
    shutil.copytree(KNOWN_BUGS / "smem-oversize", tmp_path / "my cases" / "smem-oversize")
    said = read_cli("plan", "--corpus", "my cases", "--cpu", cwd=tmp_path)
    assert said.code == 2, said.output
    assert "'my cases'" in said.output and "blanks" in said.output


def test_library_releases_are_chosen_in_the_plan(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """--library is a typed choice the plan's matrix takes, not TOML laid over the file."""
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["run", "--known-bugs", "--library", "cutlass==3.7.0",
                                      "--library", "cutlass==4.2.0", "--no-gpu"])
    options = run_options(args)
    assert options.library_versions == {"cutlass": ("3.7.0", "4.2.0")}
    assert options.matrix_overrides == {}
    plan = make_plan(options)
    chosen = {c.library_version for c in plan.cells if c.library == "cutlass"}
    assert chosen == {"3.7.0", "4.2.0"}
    with pytest.raises(UserError, match="--library nosuch: unknown library"):
        make_plan(run_options(build_parser().parse_args(
            ["run", "--known-bugs", "--library", "nosuch==1.0"])))
    with pytest.raises(UserError, match="--library cutlass==three"):
        make_plan(run_options(build_parser().parse_args(
            ["run", "--known-bugs", "--library", "cutlass==three"])))


def test_run_help_groups_its_options_as_their_declarations_say() -> None:
    """Issue 70, point 5: `run --help` was 127 lines of options in one list. Each declared
    flag is now under its section's heading (which cells, toolkits, ...), made from the
    declaration, and the baseline and history flags under their own."""
    from cudamatrix.config.flags import SECTIONS

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    run = commands.choices["run"]
    where = {option: group.title for group in run._action_groups
             for action in group._group_actions for option in action.option_strings}
    for flag in RUN_FLAGS:
        assert where[flag.name] == SECTIONS[flag.heading], flag.name
    assert len(set(SECTIONS.values())) == len(SECTIONS)
    assert where["--baseline"] == where["--fail-on"] != where["--history"]
    said = run.format_help()
    titles = [title for title in SECTIONS.values() if f"\n{title}:\n" in said]
    assert titles == list(SECTIONS.values()), said
    # A command that only selects cells shows the one heading it has.
    assert "\nwhich cells:\n" in commands.choices["list"].format_help()


def test_every_flag_is_in_a_repro_or_says_why_not() -> None:
    """Issue 67: a flag dropped from a cell's repro line passed the unit lane. A flag that
    changes what a cell does is in its repro (`repro=True`); one that is not declares why
    (`not_in_repro`, or a selection's --cell): never neither, never both."""
    from cudamatrix.config.run_flags import RUN_FLAGS

    for flag in RUN_FLAGS:
        said = flag.not_in_repro if flag.repro else flag.why_not_in_repro
        assert flag.repro != bool(said), \
            f"{flag.flags[0]}: in a repro or not, say one (repro={flag.repro}, {said!r})"


def test_every_run_option_a_flag_sets_is_read_by_the_run() -> None:
    """Issue 67: the code using a new option, forgotten, passed the unit lane. Every
    RunOptions field a flag sets is read somewhere beyond its declaration (the parser,
    the options and the flag table): an option nothing reads is a flag that does
    nothing."""
    import re

    import cudamatrix
    from cudamatrix.config.run_flags import RUN_FLAGS

    package = Path(cudamatrix.__file__).parent  # the package imported, wherever it is
    declaring = {package / "config" / "options.py", package / "config" / "run_flags.py"}
    text = "\n".join(p.read_text() for p in package.rglob("*.py") if p not in declaring)
    for flag in RUN_FLAGS:
        if flag.field is not None:
            assert re.search(rf"\.{flag.field}\b", text), \
                f"{flag.flags[0]} sets RunOptions.{flag.field}, which no module reads"
