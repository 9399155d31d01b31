"""Checks across a table's keys have a home, declared with the table (declarations.Across,
issue 80): a variant that caps its registers both with `maxrregcount` and with a flag of
its own is refused in one line, since nvcc takes whichever comes last on its line and
clang's ptxas the flag's, so each compiler would build with another cap; and one that
chooses its C++ dialect both with `std` and with a -std flag, for the same reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import ADD_KERNEL, write_case


def _case(root: Path, extra: str, key: str = "maxrregcount = 64") -> Path:
    write_case(root / "cases", "capped", f"""\
        title = "a capped kernel"
        [[variant]]
        name = "v"
        source = "k.cu"
        frontend = "nvcc"
        {key}
        {extra}
        """, {"k.cu": ADD_KERNEL})
    return root


@pytest.mark.parametrize("extra", [
    'flags = ["-maxrregcount=32"]',
    'flags = ["-O3", "--maxrregcount", "32"]',
    'flags_if = [{ when = { toolkit = "13.0" }, flags = ["-maxrregcount=32"] }]',
])
def test_a_register_cap_given_twice_is_refused_in_one_line(tmp_path: Path, read_cli: Any,
                                                          extra: str) -> None:
    said = read_cli("validate", "--corpus", "cases", cwd=_case(tmp_path, extra))
    assert said.code == 2, said.output
    lines = said.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in said.output, said.output
    assert "case.toml" in lines[0] and "variant 'v'" in lines[0], lines[0]
    assert "maxrregcount = 64 and the flag" in lines[0] and "maxrregcount" in lines[0]
    assert ("of flags_if" if "flags_if" in extra else "of flags") in lines[0], lines[0]


def test_a_cap_given_once_either_way_is_taken(tmp_path: Path, read_cli: Any) -> None:
    said = read_cli("validate", "--corpus", "cases", cwd=_case(tmp_path, 'flags = ["-O3"]'))
    assert said.code == 0, said.output
    write_case(tmp_path / "other", "flagged", """\
        title = "capped by its flags"
        [[variant]]
        name = "v"
        source = "k.cu"
        frontend = "nvcc"
        flags = ["-maxrregcount=32"]
        """, {"k.cu": ADD_KERNEL})
    said = read_cli("validate", "--corpus", "other", cwd=tmp_path)
    assert said.code == 0, said.output


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("extra", [
    'flags = ["-O3", "-std=c++17"]',
    'flags = ["--std", "c++17"]',
    'flags_if = [{ when = { toolkit = "13.0" }, flags = ["-std=c++14"] }]',
])
def test_a_dialect_given_twice_is_refused_in_one_line(tmp_path: Path, read_cli: Any,
                                                      extra: str, command: str) -> None:
    """nvcc takes the last -std on its line (std's, after the flags), clang the flags',
    so `std` beside a -std flag would build other C++ per compiler: refused by validate
    and by run before any cell, in one line naming the case file and both keys."""
    said = read_cli(command, "--corpus", "cases", "--out", str(tmp_path / "out"),
                    cwd=_case(tmp_path, extra, key='std = "c++20"')) \
        if command == "run" else read_cli(command, "--corpus", "cases",
                                          cwd=_case(tmp_path, extra, key='std = "c++20"'))
    assert said.code == 2, said.output
    lines = [line for line in said.output.strip().splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in said.output, said.output
    assert "case.toml" in lines[0] and "variant 'v'" in lines[0], lines[0]
    assert "std = 'c++20' and the flag" in lines[0], lines[0]
    assert ("of flags_if" if "flags_if" in extra else "of flags") in lines[0], lines[0]
    assert not (tmp_path / "out" / "results.json").exists()


def test_a_dialect_given_once_either_way_is_taken(tmp_path: Path, read_cli: Any) -> None:
    said = read_cli("validate", "--corpus", "cases",
                    cwd=_case(tmp_path, 'flags = ["-O3", "-stdlib=libc++"]', key='std = "c++20"'))
    assert said.code == 0, said.output
    said = read_cli("validate", "--corpus", "cases",
                    cwd=_case(tmp_path / "other", 'flags = ["-std=c++17"]', key=""))
    assert said.code == 0, said.output
