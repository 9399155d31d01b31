"""Errors a user can cause, kept apart from bugs so the CLI can answer them plainly."""

from __future__ import annotations

import re
from dataclasses import dataclass

# The userinfo of a URL (`https://TOKEN@host`, `https://user:password@host`): a private
# index's credential, which no message, record or report may hold. Up to the authority's
# last `@`, as pip and urllib read it: a password may hold a raw `@` (`p@ss`), and the
# first `@` left the rest of it shown.
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s]+@")


def without_credentials(text: str) -> str:
    """`text` with every URL's userinfo masked, as pip masks it (`https://***@host`)."""
    return _USERINFO.sub(lambda m: f"{m['scheme']}***@", text)


def without_userinfo(text: str) -> str:
    """`text` with every URL's userinfo removed, not masked: a value a program reads (a
    cell's `PIP_INDEX_URL`) names the same host and asks it without credentials."""
    return _USERINFO.sub(lambda m: m["scheme"], text)


class _Said(Exception):
    """An exception whose words never hold a URL's credentials, wherever they are shown or
    recorded (a failure may quote an index's address anywhere in its message)."""

    def __str__(self) -> str:
        return without_credentials(super().__str__())

# Every exit status the command line gives, in one place (the CLI reference prints it).
EXIT_STATUSES: tuple[tuple[int, str], ...] = (
    (0, "done: no cell failed (with --baseline: none failed anew; with --fail-on never: the "
        "record was written); `validate`, `list`, `plan`, `schema`, `init` did what was asked"),
    (1, "done, and a cell failed or erred (with --baseline: a cell failed that did not "
        "before); `bisect` found no change"),
    (2, "not done as asked: a bad file, value or option (one line on stderr naming it), or "
        "an environment that could not be prepared; every result already collected is kept"),
    (130, "interrupted (Ctrl-C, or SIGTERM from a cancelled CI job): finished cells are kept "
          "in --out/cells, `--resume` goes on"),
)


class UserError(_Said):
    """Bad input: a malformed file, an unknown value, an empty selection.

    The CLI prints the message (which names the file, entry or value) and exits
    with status 2; nothing already written is removed.
    """

    exit_code = 2


class EnvironmentUnavailable(_Said):
    """A toolkit or library environment could not be prepared (a wheel failed to install)."""


class RunOutOfTime(EnvironmentUnavailable):
    """The run's --run-timeout was spent while something was prepared or looked up for it
    (pip waiting on an index that never answers): stopped there, so the run still writes
    its record before a CI job's own limit cancels it. Not the environment's failure: the
    run's limit, which its cells' records name."""

    def __init__(self, limit_s: float) -> None:
        super().__init__(f"stopped: the run's {limit_s:.0f} s limit (--run-timeout) was spent")


@dataclass(frozen=True)
class Failure:
    """Why something a cell needed could not be had, returned as a value where the run goes
    on without it (a toolkit that failed to install fails its cells, not the run). Typed,
    so that it cannot be taken for a path, a version or a message, as a bare string could."""

    reason: str

    def __str__(self) -> str:
        return without_credentials(self.reason)
