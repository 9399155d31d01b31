"""Two installed plugins that declare one name in an entry point group: one of them was
picked silently, by the order distributions are found (issue 68, item 14). Every group
(frontends, providers, commands, report formats) is checked in one place, common/plugins:
names unique across built-ins and plugins, or one line naming both. The plugins are real
distributions (.dist-info folders with entry_points.txt) on sys.path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cudamatrix.common import plugins
from cudamatrix.errors import UserError


def install(site: Path, distribution: str, group: str, entries: dict[str, str]) -> None:
    """A distribution of that name in `site`, declaring `entries` in `group`."""
    info = site / f"{distribution.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entries.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    plugins._installed.cache_clear()
    yield folder
    plugins._installed.cache_clear()


@pytest.mark.parametrize("group", [plugins.COMMANDS, plugins.PROVIDERS, plugins.REPORTS,
                                   plugins.FRONTENDS])
def test_two_plugins_of_one_name_are_refused(site: Path, group: str) -> None:
    install(site, "toy-one", group, {"toy-clash": "toy_one:THING"})
    install(site, "toy-two", group, {"toy-clash": "toy_two:THING"})
    with pytest.raises(UserError, match="toy-clash") as raised:
        plugins.declared(group)
    said = str(raised.value)
    assert "toy_one:THING" in said and "toy_two:THING" in said and "\n" not in said


def test_one_plugin_found_twice_is_one_plugin(site: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The same entry, found twice (a package on two folders of sys.path), is no clash."""
    install(site, "toy-one", plugins.COMMANDS, {"toy-same": "toy_one:COMMAND"})
    other = tmp_path / "other"
    install(other, "toy-one", plugins.COMMANDS, {"toy-same": "toy_one:COMMAND"})
    monkeypatch.syspath_prepend(str(other))
    plugins._installed.cache_clear()
    names = [ep.name for ep in plugins.declared(plugins.COMMANDS)]
    assert names.count("toy-same") == 1


def test_a_clashing_command_is_one_line_at_the_command_line(site: Path, read_cli) -> None:
    from conftest import one_line_error
    from cudamatrix.commands import table

    install(site, "toy-one", plugins.COMMANDS, {"toy-clash": "toy_one:COMMAND"})
    install(site, "toy-two", plugins.COMMANDS, {"toy-clash": "toy_two:COMMAND"})
    table.commands.cache_clear()  # the command table is read once a process
    try:
        one_line_error(read_cli("validate"), "toy-clash", "toy_one", "toy_two")
    finally:
        table.commands.cache_clear()
