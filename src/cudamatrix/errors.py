"""Errors a user can cause, kept apart from bugs so the CLI can answer them plainly."""

from __future__ import annotations


class UserError(Exception):
    """Bad input: a malformed file, an unknown value, an empty selection.

    The CLI prints the message (which names the file, entry or value) and exits
    with status 2; nothing already written is removed.
    """

    exit_code = 2


class EnvironmentUnavailable(Exception):
    """A toolkit or library environment could not be prepared (a wheel failed to install)."""
