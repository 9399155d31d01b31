"""Issue 69, item 6: `--provider auto` moved every nvcc cell of a day's work into Docker
once another process started an engine, so two identical commands ran in different
environments. The choice is kept in the run's --out folder with the facts that decided it;
the next run into the folder takes it while they hold, and its first line says what
changed and what it takes where they do not. Real folders, two runs' choices in one
process; only the Docker engine's answer is played (the thing weighed, not the weigher)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cudamatrix.errors import EnvironmentUnavailable
from cudamatrix.providers import choice

REPO = Path(__file__).resolve().parents[2]


class _Notes:
    def __init__(self) -> None:
        self.said: list[str] = []

    def note(self, text: str) -> None:
        self.said.append(text)


def _engine_answers(monkeypatch: pytest.MonkeyPatch, answers: bool) -> None:
    """The Docker engine up or down, with its base image where it is up."""
    def probe() -> object:
        if not answers:
            raise EnvironmentUnavailable("no Docker engine answers")
        return object()
    monkeypatch.setattr(choice, "engine", probe)
    monkeypatch.setattr(choice, "image_exists", lambda client, tag: True)


def _run(out: Path, local: tuple[str, ...] = ()) -> tuple[str, str]:
    """One run's choice into `out`, as the runner makes it: the provider and its line."""
    notes = _Notes()
    provider, _ = choice.choose_provider("auto", "wheels", False, notes, out, local)
    assert len(notes.said) == 1
    return provider, notes.said[0]


def test_an_engine_started_between_two_runs_moves_nothing_and_is_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    _engine_answers(monkeypatch, False)
    assert _run(out) == ("wheels", "provider: wheels (auto: no Docker engine answers)")
    kept = json.loads((out / choice.CHOICE_FILE).read_text())
    assert kept["provider"] == "wheels" and kept["facts"]["engine"] is False

    _engine_answers(monkeypatch, True)  # another process started an engine
    provider, line = _run(out)
    assert provider == "wheels"
    assert line == ("provider: wheels, kept from the last run here, though a Docker engine "
                    "answers now (none did then) (--provider docker to use it)")

    # A third identical run: nothing changed since the second, nothing to say but the choice.
    provider, line = _run(out)
    assert provider == "wheels"
    assert line == ("provider: wheels (auto: kept from the last run here; a Docker engine "
                    "answers now (--provider docker to use it))")


def test_containers_lost_between_two_runs_say_what_changed_and_what_it_takes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    _engine_answers(monkeypatch, True)
    assert _run(out)[0] == "docker"
    assert _run(out) == ("docker", "provider: docker (auto: a Docker engine and its images "
                                   "are ready)")  # what decided it holds: kept, said plainly

    _engine_answers(monkeypatch, False)
    provider, line = _run(out)
    assert provider == "wheels"
    assert line == ("provider: wheels, changed from docker at the last run here: no Docker "
                    "engine answers now (one did then) (auto: no Docker engine answers; "
                    "--provider pins one)")
    assert json.loads((out / choice.CHOICE_FILE).read_text())["provider"] == "wheels"


def test_a_selection_that_builds_here_leaves_containers_and_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    _engine_answers(monkeypatch, True)
    assert _run(out)[0] == "docker"
    provider, line = _run(out, ("build",))
    assert provider == "wheels"
    assert line.startswith("provider: wheels, changed from docker at the last run here: the "
                           "selection's build cells run on this machine, not in containers "
                           "(none did at the last run) (auto: the selection's build cells run "
                           "on this machine")


def test_without_an_engine_a_selection_that_builds_here_or_not_changes_nothing_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A newcomer's third command (writing-cases' one case after init's tier with its build
    case) began `provider: wheels, as at the last run here, though the selection's cells
    that run on this machine are none (they were build) (auto: ...)`: a fact that decides
    nothing where no Docker engine answers (wheels either way), said in words that do not
    parse. Without an engine the line is the choice and why, as at any other run."""
    out = tmp_path / "out"
    out.mkdir()
    _engine_answers(monkeypatch, False)
    assert _run(out, ("build",)) == ("wheels", "provider: wheels (auto: no Docker engine answers)")
    assert _run(out) == ("wheels", "provider: wheels (auto: no Docker engine answers)")
    assert _run(out, ("build",)) == ("wheels", "provider: wheels (auto: no Docker engine answers)")


def test_a_folder_from_before_the_facts_were_kept_keeps_its_results_provider(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder whose results.json alone says the provider (a real run's record, edited to
    have used wheels): an engine that answers now does not move it either."""
    out = tmp_path / "out"
    out.mkdir()
    record = json.loads((REPO / "reports" / "results.json").read_text())
    record["run"]["provider"] = "wheels"
    (out / "results.json").write_text(json.dumps(record))
    _engine_answers(monkeypatch, True)
    assert _run(out)[0] == "wheels"
    # The published record's own provider (host, named) is no auto choice to keep.
    shutil.copy(REPO / "reports" / "results.json", out / "results.json")
    (out / choice.CHOICE_FILE).unlink()
    assert _run(out) == ("docker", "provider: docker (auto: a Docker engine and its images "
                                   "are ready)")


def test_a_named_provider_is_kept_and_the_next_auto_run_says_it_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    _engine_answers(monkeypatch, False)
    notes = _Notes()
    assert choice.choose_provider("wheels", "wheels", False, notes, out)[0] == "wheels"
    assert json.loads((out / choice.CHOICE_FILE).read_text())["facts"] is None
    _engine_answers(monkeypatch, True)
    provider, line = _run(out)
    assert provider == "wheels" and line.startswith("provider: wheels (auto: kept")


def test_a_broken_choice_file_is_no_choice(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / choice.CHOICE_FILE).write_text('{"format": 1, "provider": 3}')
    _engine_answers(monkeypatch, True)
    assert _run(out)[0] == "docker"
