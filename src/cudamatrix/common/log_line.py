"""Every line the tool prints, made safe for the place it lands: a terminal, or a CI log
that GitHub's runner reads for workflow commands.

What the tool prints quotes what others wrote: a compiler's message, a case key's value, a
shard's record, a package index's names. Printed as it came, a newline there starts a line
of the attacker's choosing, and the runner takes a line starting with `::` (after
whitespace) as a command (`::stop-commands::`, `::add-mask::`) and `##[` anywhere in a
line as one too; raw ESC and OSC 52 reach a terminal (a clipboard written, a screen
cleared). So no module prints on its own: each says its line through `say` (or
`say_lines`, `say_json`), and `log_line` makes it one line, its control characters shown
as escapes (`\\x1b`), a `::` that would start it and every `##[` written with their first
character escaped (`\\x3a:`, `\\x23#[`). tests/unit/test_log_lines.py walks the package
and fails where anything else prints.

The exceptions are machine-readable: JSON (`say_json`: JSON escapes every control
character itself, and `#` is written `\\u0023` where `##[` would stand, the same value),
and the annotations reports/github.py writes on purpose (`annotation_data`,
`annotation_property`: GitHub's own escapes).
"""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

# Characters a terminal or a log viewer acts on rather than shows: C0 and C1 controls and
# DEL, the bidirectional overrides that reorder what is read (U+202A-U+202E,
# U+2066-U+2069, the marks), and lone surrogates (a file name's undecodable bytes, which
# no UTF-8 stream can even write).
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                     "\ud800-\udfff]")
# The runner's two command forms: `##[` anywhere, `::` where a line starts (it trims the
# line first, so after any whitespace).
_V1_COMMAND = re.compile(r"#(?=#\[)")
_V2_COMMAND = re.compile(r"^(\s*):(?=:)")


def _escaped(character: str) -> str:
    code = ord(character)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with each character a terminal would act on written as its escape, newlines
    included: what is left is only characters that are shown."""
    return _HIDDEN.sub(lambda found: _escaped(found.group()), text)


def log_line(text: str) -> str:
    """`text` as one log line that only shows: its lines folded into one (the empty ones
    dropped, each further one stripped, so a compiler's indented continuation reads on; the
    first keeps its indent, a summary's "  new failure: ..."), a tab a space, every other
    control character escaped, and neither GitHub command form left (`::` at the start,
    after any indent, `##[` anywhere). Nothing is cut: the end of a message is often what
    decides. Idempotent: a line said twice is said the same."""
    parts = [part for part in text.splitlines() if part.strip()]
    folded = " ".join([part.rstrip() if number == 0 else part.strip()
                       for number, part in enumerate(parts)])
    shown = visible(folded.replace("\t", " "))
    shown = _V1_COMMAND.sub(r"\\x23", shown)
    return _V2_COMMAND.sub(r"\1\\x3a", shown)


def say(text: str, to: Console | None = None, *, stderr: bool = False) -> None:
    """Print `text` as one log line (`log_line`): on `to`, a rich console (a live bar stays
    below the line, a capture keeps it), else on stdout, or stderr for a warning or an
    error. Rich is told to read nothing into it: no markup (`[/bold]` in a case id), no
    emoji (`:warning:` in a message), no highlighting, no wrapping at the width."""
    line = log_line(text)
    if to is not None:
        to.print(line, markup=False, emoji=False, highlight=False, soft_wrap=True)
        return
    stream = sys.stderr if stderr else sys.stdout
    stream.write(line + "\n")
    stream.flush()


def say_lines(text: str, to: Console | None = None, *, stderr: bool = False) -> None:
    """Print a text the tool made of lines (a recorded run's summary, a repro script) a line
    at a time, each through `log_line`: a line the tool wrote comes out as it was written,
    one a damaged record or a hostile value holds is made harmless like any other."""
    for line in text.splitlines():
        if line.strip():
            say(line, to, stderr=stderr)
        elif to is not None:
            to.print("")
        else:
            (sys.stderr if stderr else sys.stdout).write("\n")


def json_text(value: object, indent: int | None = None) -> str:
    """`value` as JSON text that a log cannot take for a command and a terminal shows as it
    is: json escapes every control character and every non-ASCII one, `#` becomes `\\u0023`
    where `##[` would stand (only a string can hold `#`, so the value is the same), and no
    line of it starts with `::` (a line starts with `{`, `[`, a value, or the indent
    before a key or value; a key is a quoted string)."""
    text = json.dumps(value, indent=indent, separators=None if indent else (",", ":"))
    return _V1_COMMAND.sub(r"\\u0023", text)


def say_json(value: object, indent: int | None = None) -> None:
    """Print `value` as JSON (`json_text`) on stdout: what `plan`, `schema` and `list --json`
    give a script, byte for byte the JSON it parses."""
    sys.stdout.write(json_text(value, indent) + "\n")
    sys.stdout.flush()


def annotation_data(text: str) -> str:
    """An annotation's message as GitHub reads a workflow command's data: `%`, CR and LF as
    its escapes (%25, %0D, %0A: the annotation keeps its lines), every other control
    character shown, `##[` broken. A `::` in the data is the runner's to ignore: only a
    line's start is read for a command, and this line starts with the tool's own."""
    escaped = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return _V1_COMMAND.sub(r"\\x23", visible(escaped))


def annotation_property(text: str) -> str:
    """A workflow command's property value (an annotation's title): the data's escapes, and
    `:` and `,` as %3A and %2C, which would end the property or the command's head."""
    return annotation_data(text).replace(":", "%3A").replace(",", "%2C")
