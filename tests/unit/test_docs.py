"""The site's generated references (issue 51, point 2): every key the declarations hold
and every command and option of the parser is on its page, so a key or an option added
without words shows as a hole here, not in a user's editor."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from types import ModuleType

from cudamatrix.cli import build_parser
from cudamatrix.config.declarations import CASE, PROJECT, walk

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_declared_key_is_on_its_reference_page() -> None:
    generate = _generator()
    for root, name in ((CASE, "case.toml"), (PROJECT, "cudamatrix.toml")):
        page = generate._table_page(root, name, "")
        for place, table in walk(root):
            assert f"## `{place}`" in page
            for key in table.keys:
                assert f"| `{key.name}` |" in page, (place, key.name)
                assert key.doc.replace("|", "\\|") in page


def test_every_command_and_option_is_on_the_cli_page() -> None:
    page = _generator()._cli_page()
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert len(commands.choices) >= 11
    for name, sub in commands.choices.items():
        assert f"## `cudamatrix {name}`" in page
        for action in sub._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}`" in page, (name, option)


def test_the_committed_reference_pages_are_current() -> None:
    """README links the reference pages, so they are committed; `python docs/generate.py`
    writes them again after a declaration or an option changed."""
    generate = _generator()
    reference = ROOT / "docs" / "reference"
    expected = {"case-toml.md": generate._table_page(CASE, "case.toml", generate.CASE_INTRO),
                "cudamatrix-toml.md": generate._table_page(PROJECT, "cudamatrix.toml",
                                                           generate.PROJECT_INTRO),
                "cli.md": generate._cli_page(), "../examples.md": generate._examples_page()}
    for name, text in expected.items():
        assert (reference / name).read_text() == text, \
            f"docs/reference/{name} is stale: python docs/generate.py"


def test_no_option_or_key_is_left_without_words() -> None:
    """Issue 58, point 6: every option of every command, every key of every table and every
    command has a description; no "(default: None)", no half-written range."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    blank = [(name, action.option_strings or action.dest)
             for name, sub in commands.choices.items() for action in sub._actions
             if action.dest != "help" and not (action.help or "").strip()]
    assert blank == []
    assert all(c.help for c in commands._choices_actions)
    page = _generator()._cli_page()
    assert "(default: None)" not in page
    for root, name in ((CASE, "case.toml"), (PROJECT, "cudamatrix.toml")):
        for place, table in walk(root):
            assert table.doc.strip(), place
            assert [k.name for k in table.keys if not k.doc.strip()] == [], place
        text = _generator()._table_page(root, name, "")
        assert " to )" not in text and "( to" not in text, name


SITE = "https://cudamatrix.github.io/cudamatrix/"
REPOSITORY = "https://github.com/cudamatrix/cudamatrix/blob/main/"


def test_readmes_links_work_on_pypi() -> None:
    """README is the package's page on PyPI, where a relative link (`docs/ci.md`) leads
    nowhere: each link is absolute, to a page of the site (mkdocs.yml's site_url) or a
    file of the repository, and each names a page or file that exists."""
    import re

    readme = (ROOT / "README.md").read_text()
    config = (ROOT / "mkdocs.yml").read_text()
    assert f"site_url: {SITE}\n" in config
    links = re.findall(r"\]\(([^)]+)\)", readme)
    assert links
    for link in links:
        assert link.startswith(("https://", "#")), link
        if link.startswith(SITE):
            page = link.removeprefix(SITE).rstrip("/") or "index"
            assert (ROOT / "docs" / f"{page}.md").is_file(), link
        elif link.startswith(REPOSITORY):
            assert (ROOT / link.removeprefix(REPOSITORY)).exists(), link


def test_the_docs_show_a_worked_example() -> None:
    page = (ROOT / "docs" / "bisect.md").read_text()
    assert "cudamatrix bisect --over toolkit" in page


def test_the_site_build_makes_its_generated_pages_itself(tmp_path: Path) -> None:
    """Issue 70, point 5: `mkdocs build --strict` failed on a fresh clone with 4 warnings
    (no changelog, no schemas) until docs/generate.py had run. MkDocs runs it as a hook:
    from the committed pages alone, its on_pre_build makes every page the nav and the
    pages link to."""
    import re
    import shutil

    config = (ROOT / "mkdocs.yml").read_text()
    hooks = re.search(r"^hooks:\n((?:  - .*\n)+)", config, re.MULTILINE)
    assert hooks is not None and "  - docs/generate.py\n" in hooks.group(1)
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    ignored = ("changelog.md", "schema", "reference")  # as a fresh clone lacks them, and more
    for name in ignored:
        shutil.rmtree(docs / name, ignore_errors=True)
        (docs / name).unlink(missing_ok=True)
    _generator().on_pre_build({"docs_dir": str(docs)})
    nav = re.findall(r"^\s+- (?:[^:\n]+: )?([\w/.-]+\.md)$", config, re.MULTILINE)
    assert "changelog.md" in nav and "reference/cli.md" in nav
    assert [page for page in nav if not (docs / page).is_file()] == []
    linked = re.findall(r"\]\((schema/[\w.]+)\)", (docs / "index.md").read_text())
    assert linked and [link for link in linked if not (docs / link).is_file()] == []
