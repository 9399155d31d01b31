"""Issue 48, point 6: what a run says while it works agrees with what it reports. The
progress line printed `xpass` for a cell the summary counted as `fail`; each cell of a
compile shared by several archs printed the group's time as its own; the provider line
quoted a DockerException; and `auto` silently switched a folder's runs to containers once
an engine came up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cudamatrix.orchestrator.progress import Progress
from cudamatrix.providers import choice
from cudamatrix.record.results import CellResult
from cudamatrix.record.verdict import settled


def _result(outcome: str, built_with: list[str] | None = None) -> CellResult:
    details: dict[str, Any] = {"built_with": built_with, "together_seconds": 193.0} \
        if built_with else {}
    data: dict[str, Any] = {
        "case": "c", "variant": "v", "toolkit": "13.0", "arch": "sm_80", "frontend": "nvcc",
        "outcome": outcome, "stage": "compile", "seconds": 96.5, "expected": "fail at compile",
        "stages": [{"stage": "compile", "status": "ok", "details": details}]}
    return CellResult.from_dict(data)


def test_the_progress_line_says_the_verdict_the_summary_counts(
        capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress()
    progress.settle = lambda result: settled(result, None)  # as `run` sets it
    progress.start(2)
    progress.cell_done(_result("xpass"))
    progress.cell_done(_result("pass", ["sm_80", "sm_90"]))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("[1/2] c/v/13.0/sm_80: fail (96.5s): expected fail at "
                               "compile, but it worked")
    assert lines[1] == ("[2/2] c/v/13.0/sm_80: pass (96.5s, its share of one compile of 2 "
                        "archs (193.0s))")


def test_a_shared_compile_says_its_whole_time() -> None:
    """Issue 61: a cell built with its sibling archs showed its share of the shared nvcc's
    time ("9.2 s" where the compile took 36 s) as the compile's own, in the page's panel."""
    from cudamatrix.stages.cell.result import said_stage_seconds

    shared = _result("pass", ["sm_80", "sm_86", "sm_89", "sm_90"]).stages[0]
    shared = type(shared)(shared.stage, shared.status, seconds=9.2, details=shared.details,
                          built_with=shared.built_with)
    assert said_stage_seconds(shared) == "193.0 s for one compile of 4 archs (9.2 s each)"
    alone = _result("pass").stages[0]
    assert said_stage_seconds(alone) == "0.0 s"


class _Notes:
    def __init__(self) -> None:
        self.said: list[str] = []

    def note(self, text: str) -> None:
        self.said.append(text)


def _engine(answers: bool) -> Any:
    def probe() -> object:
        if not answers:
            raise choice.EnvironmentUnavailable(
                "no Docker engine answers (DockerException: Error while fetching server API "
                "version: ('Connection aborted.', FileNotFoundError(2, 'No such file')))")
        return object()
    return probe


@pytest.mark.parametrize(("answers", "previous", "chosen", "said"), [
    (False, "", "wheels", "provider: wheels (auto: no Docker engine answers)"),
    (True, "wheels", "wheels", "provider: wheels (auto: kept from the last run here; a Docker "
                               "engine answers now (--provider docker to use it))"),
    (True, "", "docker", "provider: docker (auto: a Docker engine and its images are ready)"),
    (False, "docker", "wheels", "provider: wheels, changed from docker at the last run here "
                                "(auto: no Docker engine answers; --provider pins one)"),
])
def test_auto_keeps_the_provider_of_the_last_run_or_says_why_not(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, answers: bool, previous: str,
        chosen: str, said: str) -> None:
    """The last run's provider as its results.json says it (tests/unit/
    test_provider_choice_kept.py: as the choice file keeps it, with its facts)."""
    monkeypatch.setattr(choice, "engine", _engine(answers))
    monkeypatch.setattr(choice, "image_exists", lambda client, tag: True)
    if previous:
        (tmp_path / "results.json").write_text(json.dumps({"run": {"provider": previous}}))
    notes = _Notes()
    got, _ = choice.choose_provider("auto", "wheels", False, notes, tmp_path)
    assert got == chosen
    assert notes.said == [said]


def test_auto_never_sends_a_build_to_containers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 61: with a Docker engine answering, `--provider auto` chose containers and a
    selection's build cells became skips ("the build frontend runs with the wheels or host
    provider"); two identical commands differed by whether the engine was up. The
    selection's frontends are weighed: a build runs here, and the choice says why."""
    monkeypatch.setattr(choice, "engine", _engine(True))
    monkeypatch.setattr(choice, "image_exists", lambda client, tag: True)
    notes = _Notes()
    got, _ = choice.choose_provider("auto", "wheels", False, notes, None, ["build"])
    assert got == "wheels"
    assert notes.said == ["provider: wheels (auto: the selection's build cells run on this "
                          "machine, not in containers (--provider docker runs the others "
                          "there))"]
    # Named, the user's choice stands; without a build, containers as before.
    assert choice.choose_provider("docker", "wheels", False, notes, None, ["build"])[0] == "docker"
    assert choice.choose_provider("auto", "wheels", False, notes, None, [])[0] == "docker"


def test_the_first_line_of_the_report_says_how_auto_chose() -> None:
    from cudamatrix.record.results import RunInfo
    from cudamatrix.reports.markdown import headline

    info = RunInfo(started="", finished="", tier="pr", provider="wheels", host="",
                   tool_version="", provider_choice="auto: no Docker engine answers")
    assert "provider `wheels` (auto: no Docker engine answers)" in "\n".join(headline(info, []))
    named = RunInfo(started="", finished="", tier="pr", provider="host", host="",
                    tool_version="", provider_choice="named (--provider host)")
    assert "provider `host`" in headline(named, [])[2] and "named" not in headline(named, [])[2]
