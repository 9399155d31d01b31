"""What a CI engine shows of a record, behind one shape: each engine's module publishes
where its CI reads (GitHub's annotations and step summary, GitLab's log section and merge
request note) when the command runs there, and says whether it did. Adding an engine is one
module and one entry here; the commands call `publish` and name none."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..record.baseline import BaselineDiff
from ..record.results import CellResult
from . import github, gitlab

Publisher = Callable[[Path, Sequence[CellResult], BaselineDiff | None], bool]
PUBLISHERS: dict[str, Publisher] = {"github": github.publish, "gitlab": gitlab.publish}


def publish(report: Path, results: Sequence[CellResult], diff: BaselineDiff | None
            ) -> list[str]:
    """Every engine's output where the command runs in it, from the written Markdown
    `report`; the names of the engines that published."""
    return [name for name, publisher in PUBLISHERS.items() if publisher(report, results, diff)]
