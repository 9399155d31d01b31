"""The main pages as a pip user reads them (issue 82, point 10): someone who ran `pip
install cudamatrix` has the package and the folder they are in, not this repository, so a
page that points at `bench/evidence/...`, `tests/data/...` or `stages/...` points at
nothing, and a command printed on a page must be one the installed CLI accepts."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from cudamatrix.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

# The pages a newcomer follows from the home page to a running CI, each a task of theirs.
MAIN_PAGES = ("index.md", "getting-started.md", "writing-cases.md", "cases-in-depth.md",
              "torch-extensions.md", "gpu-runners.md", "report.md")

# README is the package's page on PyPI: its commands are a pip user's too.
COMMAND_PAGES = (*MAIN_PAGES, "../README.md")

# Folders of this repository a pip install does not bring, and the package's own folders
# (a module's path names the source, which a pip user does not read).
REPOSITORY_FOLDERS = ("bench", "tests", "src", "stages", "noxfile.py", "record", "config",
                      "orchestrator", "providers", "reports/budget", "commands")
_REPOSITORY_PATH = re.compile(
    r"(?<![\w./~{-])(?:" + "|".join(re.escape(f) for f in REPOSITORY_FOLDERS) + r")(?:/[\w.-]+)+")

# Fenced blocks whose lines a reader pastes into a shell.
_ANY_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _page(name: str) -> str:
    return (DOCS / name).read_text()


def _prose(text: str) -> str:
    """The page without HTML comments (a generator's note to the next editor)."""
    return re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)


@pytest.mark.parametrize("name", MAIN_PAGES)
def test_a_main_page_names_no_repository_path(name: str) -> None:
    found = _REPOSITORY_PATH.findall(_prose(_page(name)))
    assert found == [], f"docs/{name} names paths only this repository has: {found}"


def _shell_commands(block: str, console: bool) -> list[str]:
    """The commands of a fenced block as a shell reads them: a console block's are the
    lines after `$ ` (the rest is what the terminal printed), a line ending in a backslash
    goes on, and `&&`, `;` and `|` separate commands."""
    lines: list[str] = []
    pending = ""
    for line in block.splitlines():
        if not pending and console:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        lines.append(pending + line)
        pending = ""
    commands: list[str] = []
    for line in lines:
        words = shlex.split(line, comments=True)
        current: list[str] = []
        for word in [*words, ";"]:
            if word in ("&&", "||", ";", "|", "&"):
                if current:
                    commands.append(shlex.join(current))
                current = []
            else:
                current.append(word)
    return commands


def _cudamatrix_argv(command: str) -> list[str] | None:
    words = shlex.split(command)
    for prefix in (["cudamatrix"], ["python", "-m", "cudamatrix"],
                   ["python3", "-m", "cudamatrix"]):
        if words[:len(prefix)] == prefix:
            return words[len(prefix):]
    return None


def _page_commands(name: str) -> list[list[str]]:
    """The page's `cudamatrix` commands: every command of its shell blocks, and each line
    of a block without a language that starts with one (a reader pastes those too)."""
    found: list[list[str]] = []
    for language, block in _ANY_FENCE.findall(_page(name)):
        if not language:
            block = "\n".join(line for line in block.splitlines()
                              if re.match(r"(\$ )?(python3? -m )?cudamatrix ", line))
            language = "console" if block.startswith("$ ") else "sh"
        elif language not in ("console", "sh", "bash", "shell"):
            continue
        for command in _shell_commands(block, console=language == "console"):
            argv = _cudamatrix_argv(command)
            if argv is not None:
                found.append(argv)
    return found


@pytest.mark.parametrize("name", COMMAND_PAGES)
def test_a_main_pages_commands_parse_as_printed(name: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Each `cudamatrix ...` of a console or sh block is read by the CLI's own parser,
    nothing run: a subcommand or option the tool does not have, or a shell variable
    the page never sets (`$common`), is a command that does not run as printed."""
    parser = build_parser()
    refused: list[tuple[list[str], str]] = []
    for argv in _page_commands(name):
        unset = [word for word in argv if re.search(r"\$\{?\w", word)]
        if unset:
            refused.append((argv, f"shell variables {unset}"))
            continue
        try:
            parser.parse_args(argv)
        except SystemExit as stop:
            if stop.code != 0:
                refused.append((argv, capsys.readouterr().err.strip()))
    assert refused == [], f"docs/{name}: commands the CLI refuses: {refused}"


@pytest.mark.parametrize("name", COMMAND_PAGES)
def test_a_main_pages_commands_are_in_shell_blocks(name: str) -> None:
    """A command in a fence without a language is neither highlighted nor checked above:
    the blocks that run `cudamatrix` say they are console or sh."""
    unlabelled = [block.splitlines()[0] for language, block in _ANY_FENCE.findall(_page(name))
                  if not language and re.search(r"^(\$ )?(python3? -m )?cudamatrix ", block,
                                                re.MULTILINE)]
    assert unlabelled == [], f"docs/{name}: blocks of commands without a language: {unlabelled}"


def test_the_commands_are_found() -> None:
    """The checks above read the pages: they find getting-started's own run and the
    torch-extension page's."""
    assert ["run", "--toolkit", "13.0", "--arch", "sm_80"] in \
        _page_commands("getting-started.md")
    assert any(argv[:1] == ["run"] and "torch==2.5.1" in argv
               for argv in _page_commands("torch-extensions.md"))


def test_the_torch_extension_pages_files_are_the_tested_ones() -> None:
    """The torch-extension page gives each file of its two cases in full, for a reader to
    create; the e2e lane builds the same files from tests/data, so the page's text is
    the tested text."""
    page = _page("torch-extensions.md")
    blocks = [block for _, block in _ANY_FENCE.findall(page)]
    data = ROOT / "tests" / "data" / "torch-extension"
    for name in ("scale/scale.cu", "scale/binding.cpp", "setup-py/setup.py",
                 "setup-py/check.py"):
        assert (data / name).read_text() in blocks, name


def _example_case_folders(name: str) -> list[str]:
    """The case folders a page has its reader make (`mkdir -p FOLDER/CASE`, in a shell
    block), as `CASE`: the name the case's cells are known by."""
    made: list[str] = []
    for language, block in _ANY_FENCE.findall(_page(name)):
        if language not in ("console", "sh", "bash", "shell"):
            continue
        for command in _shell_commands(block, console=language == "console"):
            words = shlex.split(command)
            if words[:2] == ["mkdir", "-p"]:
                made.extend(Path(folder).name for folder in words[2:] if "/" in folder)
    return made


def test_the_main_pages_example_cases_can_live_in_one_project() -> None:
    """A newcomer follows the pages in one project, one after the other: writing-cases'
    first case and the torch-extension page's were both `scale`, so the second page's run
    stopped at `case id 'scale' already defined` (every case folder of cudamatrix.toml is
    read, besides --corpus). Each page's example case has a name of its own."""
    made = [(case, name) for name in MAIN_PAGES for case in _example_case_folders(name)]
    cases = [case for case, _ in made]
    assert len(cases) >= 2, f"the pages' mkdir lines not found: {made}"
    twice = [(case, name) for case, name in made if cases.count(case) > 1]
    assert twice == [], f"example cases of one name on two pages: {twice}"
