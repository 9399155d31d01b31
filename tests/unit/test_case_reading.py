"""What the case reader refuses before anything compiles (`validate`, and every run, read
in this process as tox's `tox_project` fixture runs tox): a source or include folder that
leads outside the corpus, a placeholder the tool does not fill, an artifact check or a
resource budget that could never tell a good build from a bad one. Each is one line naming
the case file, exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SCALE_KERNEL, scale_case, write_case
from conftest import cudamatrix_in_process as read


@pytest.mark.parametrize("source, flags, says", [
    ("../../secret.cu", "[]", "source '../../secret.cu' leads outside the corpus folder"),
    ("{secret}", "[]", "is an absolute path"),
    ("link.cu", "[]", "link.cu: a link that leads outside the corpus folder"),
    ("k.cu", '["-I../.."]', "path '../..' leads outside the corpus folder"),
    ("k.cu", "[]", "inc: a link that leads outside the corpus folder"),
    ("k.cu", '["--include-path=/etc"]', "path '/etc' is an absolute path"),
])
def test_a_case_cannot_read_outside_its_corpus(tmp_path: Path, source: str, flags: str,
                                               says: str) -> None:
    secret = tmp_path / "secret.cu"
    secret.write_text(SCALE_KERNEL % "2.0f")
    corpus = tmp_path / "corpus"
    toml = scale_case(title="reaches out", variant="v").replace(
        'source = "k.cu"', f'source = "{source.format(secret=secret)}"\n    flags = {flags}')
    write_case(corpus, "sneaky", toml, {"k.cu": SCALE_KERNEL % "2.0f"})
    if source == "link.cu":
        (corpus / "sneaky" / "link.cu").symlink_to(secret)
    elif flags == "[]" and source == "k.cu":  # #include "inc/secret.cu" would read it
        (corpus / "sneaky" / "inc").symlink_to(tmp_path)
    run = read("validate", "--corpus", str(corpus))
    assert run.code == 2, run.output[-2000:]
    lines = run.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.output
    assert str(corpus / "sneaky" / "case.toml") in lines[0] and says in lines[0], lines[0]


def test_unknown_placeholder_is_refused(tmp_path: Path) -> None:
    write_case(tmp_path / "c", "bad", """
        title = "t"
        [[variant]]
        name = "v"
        source = "k.cu"
        frontend = "nvrtc"
        flags = ["-I{toolkit_inc}"]
        """, {"k.cu": "\n"})
    result = read("validate", "--corpus", str(tmp_path / "c"))
    assert result.code == 2
    assert "unknown placeholder {toolkit_inc}" in result.output
    assert "bad/case.toml" in result.output


@pytest.mark.parametrize(("table", "words"), [
    ('  [[variant.artifact]]\n  in = "cubin"\n  lacks = "x*"\n', "matches the empty string"),
    ('  [[variant.artifact]]\n  in = "strings"\n  contains = "\\\\x00abc"\n',
     "can never match the printable strings"),
    ('  [[variant.artifact]]\n  in = "bytes"\n  contains = "x"\n', "'in' must be one of"),
    ('  [variant.resources]\n  max_spils = 0\n', "max_spils"),
    ('  [variant.resources]\n  max_registers = -1\n', "expected a whole number >= 0"),
])
def test_a_check_or_budget_that_cannot_tell_is_refused_when_read(tmp_path: Path, table: str,
                                                                  words: str) -> None:
    variant = '[[variant]]\nname = "v"\nsource = "k.cu"\nfrontend = "nvrtc"\n'
    write_case(tmp_path / "c", "bad", f'title = "t"\n{variant}{table}',
               {"k.cu": SCALE_KERNEL % "2.0f"})
    result = read("validate", "--corpus", str(tmp_path / "c"))
    assert result.code == 2, result.output
    assert words in result.output and "bad/case.toml" in result.output, result.output
