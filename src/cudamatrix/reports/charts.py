"""The report's pictures, each from the run's own data: where the code works per toolkit x
arch (and per library version), the outcomes over the last runs, kernel time across
toolkits and archs, and compile seconds per toolkit.

Each chart is a Vega-Lite specification rendered to SVG when the report is written, by
vl-convert (Vega's own renderer in an embedded runtime, no browser and no network), so the
page stays one file that draws without scripts and offline. Chosen over drawing Vega in the
page: the embedded Vega runtime is 0.88 MB of script in every page against a few kilobytes
of SVG a chart (bench/RESULTS.md). Rendering a chart takes about 0.05 s once the runtime is
up (0.8 s): the SVGs are kept in the tool's cache by their specification, so a run whose
data did not change draws nothing again.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from ..common.files import write_atomic
from ..common.versions import Arch
from ..config.options import default_cache
from ..record.history import PastRun
from ..record.results import CellResult
from .answers import where_key
from .glance import UNEXPECTED, happened
from .symbols import OUTCOME_COLOURS

WORKS = frozenset({"runs", "loads", "builds"})
VEGA_LITE = "https://vega.github.io/schema/vega-lite/v6.json"  # a name, never fetched
# A works square's state and its colour: what worked apart from what failed as its case
# expects (the expected failures' amber, as the counts' xfail), red only where some cell
# was not what its case expects. A state, not a share: a square of expected failures is
# the answer the headline gives ("all as the cases expect"), never deep red.
SQUARE_COLOURS = {"works": OUTCOME_COLOURS["pass"], "works in part, as expected": "#a6dba0",
                  "fails as expected": OUTCOME_COLOURS["xfail"],
                  "not as expected": OUTCOME_COLOURS["fail"]}
# The states whose colour is dark enough for a white count.
DARK_SQUARES = ("works", "not as expected")
KERNELS_DRAWN = 400  # timed cells in the kernel time chart; the panel has every one
WIDTH = 360


@dataclass(frozen=True)
class Chart:
    """One picture of the page: an id for its place, a title, a caption saying what it
    shows and from how many cells, and its Vega-Lite specification."""

    id: str
    title: str
    caption: str
    spec: dict[str, Any]


def _toolkit_order(values: Sequence[str]) -> list[str]:
    return sorted(set(values), key=where_key)


def _library_order(label: str) -> tuple[str, Version]:
    """``cupy 13.6.0`` before ``cupy 14.2.0``: by name, then by version."""
    name, _, version = label.rpartition(" ")
    try:
        return name, Version(version)
    except InvalidVersion:
        return label, Version("0")


def square_state(good: int, total: int, unexpected: int) -> str:
    """A works square's state from its decided cells: how many worked (`good`) and how
    many were not what their case expects; an unexpected cell outweighs the rest."""
    if unexpected:
        return "not as expected"
    if good == total:
        return "works"
    return "works in part, as expected" if good else "fails as expected"


def _works_heatmap(chart_id: str, title: str, rows: str, cells: Sequence[CellResult],
                   row_of: Callable[[CellResult], str],
                   order: Callable[[str], Any] = where_key) -> Chart | None:
    """Per row value x arch, how many decided cells built (and loaded and ran, where a GPU
    was) written in each square, coloured by its state (square_state): works, works in
    part, fails as expected, not as expected. Skips are not decided."""
    decided = [r for r in cells if r.outcome != "skip" and r.cell.frontend != "audit"]
    if not decided:
        return None
    table: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in decided:
        counts = table[(row_of(r), r.cell.arch)]
        counts[0] += happened(r) in WORKS
        counts[1] += 1
        counts[2] += r.outcome in UNEXPECTED
    values: list[dict[str, Any]] = [
        {rows: row, "arch": arch, "works": good / total,
         "label": f"{good}/{total}" + ("!" if unexpected else ""),
         "state": square_state(good, total, unexpected),
         "unexpected": unexpected, "cells": total}
        for (row, arch), (good, total, unexpected) in table.items()]
    row_values = sorted({row for row, _ in table}, key=order)
    archs = sorted({arch for _, arch in table}, key=Arch.parse)
    encoding = {
        "x": {"field": "arch", "type": "ordinal", "sort": archs, "title": "arch",
              "axis": {"labelAngle": 0}},
        "y": {"field": rows, "type": "ordinal", "sort": row_values, "title": rows},
    }
    spec = {
        "$schema": VEGA_LITE, "width": {"step": 56}, "height": {"step": 26},
        "data": {"values": values}, "encoding": encoding,
        "layer": [
            {"mark": {"type": "rect", "stroke": "#ffffff"},
             "encoding": {"color": {"field": "state", "type": "nominal", "title": None,
                                    "scale": {"domain": list(SQUARE_COLOURS),
                                              "range": list(SQUARE_COLOURS.values())},
                                    "legend": {"orient": "bottom", "columns": 2}},
                          "tooltip": [{"field": rows}, {"field": "arch"},
                                      {"field": "label", "title": "works/decided"},
                                      {"field": "unexpected"}]}},
            {"mark": {"type": "text", "fontSize": 11},
             "encoding": {"text": {"field": "label"},
                          "color": {"condition": {"test": f"indexof({list(DARK_SQUARES)}, "
                                                  "datum.state) >= 0", "value": "#ffffff"},
                                    "value": "#1f2328"}}},
        ],
    }
    return Chart(chart_id, title, f"Of each square's decided cells (skips left out), how many "
                 f"built, and loaded and ran where a GPU was: {len(decided)} cells. Green where "
                 "they work, amber where they fail as their case expects, red with a \"!\" "
                 "where some were not what the case expects.", spec)


def _history_chart(history: Sequence[PastRun]) -> Chart | None:
    """Outcomes per kept run, stacked, and the cells that flipped since the run before."""
    if len(history) < 2:
        return None
    values: list[dict[str, Any]] = []
    flips: list[dict[str, Any]] = []
    for n, run in enumerate(history):
        label = f"{n + 1}. {run.finished[:10]} {run.revision[:7]}".strip()
        for outcome, count in Counter(o for o, _ in run.outcomes.values()).items():
            values.append({"run": label, "outcome": outcome, "cells": count})
        if n:
            before = history[n - 1].outcomes
            flipped = sum(1 for cell, (outcome, _) in run.outcomes.items()
                          if cell in before and before[cell][0] != outcome)
            flips.append({"run": label, "flipped": flipped})
    runs = [v["run"] for v in values]
    order = list(dict.fromkeys(runs))
    spec = {
        "$schema": VEGA_LITE, "width": WIDTH + 120, "height": 160,
        "layer": [
            {"data": {"values": values}, "mark": "bar",
             "encoding": {"x": {"field": "run", "type": "ordinal", "sort": order,
                                "axis": {"labelAngle": -30}, "title": None},
                          "y": {"field": "cells", "type": "quantitative", "stack": True},
                          "color": {"field": "outcome", "type": "nominal",
                                    "scale": {"domain": list(OUTCOME_COLOURS),
                                              "range": list(OUTCOME_COLOURS.values())}},
                          "tooltip": [{"field": "run"}, {"field": "outcome"},
                                      {"field": "cells"}]}},
            {"data": {"values": flips}, "mark": {"type": "text", "dy": -8, "fontSize": 11,
                                                 "fontWeight": "bold", "color": "#bf3989"},
             "encoding": {"x": {"field": "run", "type": "ordinal", "sort": order},
                          "y": {"value": 0},
                          "text": {"field": "flipped", "format": "d"}}},
        ],
    }
    total = sum(f["flipped"] for f in flips)
    return Chart("history", "Outcomes over the last runs",
                 f"The last {len(history)} runs (history.json), oldest first; the number "
                 f"above each bar is how many cells flipped since the run before ({total} in "
                 "all).", spec)


def _kernel_time_chart(results: Sequence[CellResult]) -> Chart | None:
    """Each timed cell's median with its noise as a bar, per toolkit, a colour per arch,
    a row per case · variant (and GPU, where several)."""
    timed = [r for r in results if r.timing][:KERNELS_DRAWN]
    if not timed:
        return None
    values: list[dict[str, Any]] = []
    for r in timed:
        timing = r.timing or {}
        median, noise = float(timing["median_us"]), float(timing.get("noise", 0.0))
        values.append({"kernel": f"{r.cell.case} · {r.cell.variant}"
                       + (f" · {r.gpu_name}" if r.gpu_name else ""),
                       "toolkit": r.cell.toolkit, "arch": r.cell.arch,
                       "median_us": round(median, 3), "low": round(median * (1 - noise), 3),
                       "high": round(median * (1 + noise), 3),
                       "noise": f"{noise:.1%}", "cell": r.cell.id,
                       "bandwidth": f"{timing['bandwidth_gbs']:,.0f} GB/s"
                       + (f" ({timing['bandwidth_fraction']:.0%} of peak)"
                          if timing.get("bandwidth_fraction") else "")
                       if timing.get("bandwidth_gbs") else ""})
    toolkits = _toolkit_order([r.cell.toolkit for r in timed])
    spec = {
        "$schema": VEGA_LITE, "data": {"values": values},
        "facet": {"row": {"field": "kernel", "type": "nominal", "title": None,
                          "header": {"labelAngle": 0, "labelAlign": "left",
                                     "labelOrient": "top"}}},
        "resolve": {"scale": {"y": "independent"}},
        "spec": {"width": WIDTH, "height": 90, "layer": [
            {"mark": {"type": "rule"},
             "encoding": {"x": {"field": "toolkit", "type": "ordinal", "sort": toolkits},
                          "xOffset": {"field": "arch"},
                          "y": {"field": "low", "type": "quantitative",
                                "title": "median us", "scale": {"zero": False}},
                          "y2": {"field": "high"},
                          "color": {"field": "arch", "type": "nominal"}}},
            {"mark": {"type": "point", "filled": True},
             "encoding": {"x": {"field": "toolkit", "type": "ordinal", "sort": toolkits},
                          "xOffset": {"field": "arch"},
                          "y": {"field": "median_us", "type": "quantitative"},
                          "color": {"field": "arch", "type": "nominal"},
                          "tooltip": [{"field": "cell"}, {"field": "median_us"},
                                      {"field": "noise"}, {"field": "bandwidth"}]}},
            # The achieved bandwidth beside each point, where the cell has one.
            {"mark": {"type": "text", "align": "left", "dx": 6, "fontSize": 10},
             "encoding": {"x": {"field": "toolkit", "type": "ordinal", "sort": toolkits},
                          "xOffset": {"field": "arch"},
                          "y": {"field": "median_us", "type": "quantitative"},
                          "text": {"field": "bandwidth"}}},
        ]},
    }
    more = sum(1 for r in results if r.timing) - len(timed)
    return Chart("kernel-time", "Kernel time across toolkits and archs",
                 f"Each timed cell's median (GPU events around each launch), its noise as a "
                 f"bar: {len(timed)} cells" + (f" (and {more} more in results.json)" if more
                                               else "") + ".", spec)


def _compile_chart(results: Sequence[CellResult]) -> Chart | None:
    """Compile seconds per toolkit: a box of every cell's compile stage."""
    by_toolkit: dict[str, list[float]] = defaultdict(list)
    for r in results:
        for stage in r.stages:
            if stage.stage in ("compile", "build") and stage.seconds > 0:
                by_toolkit[r.cell.toolkit].append(stage.seconds)
    if not by_toolkit:
        return None
    values = [{"toolkit": toolkit, "seconds": max(round(one, 3), 0.001)}
              for toolkit, every in by_toolkit.items() for one in every]
    toolkits = _toolkit_order(list(by_toolkit))
    spec = {
        "$schema": VEGA_LITE, "width": WIDTH, "height": {"step": 22},
        "data": {"values": values},
        "mark": {"type": "boxplot", "extent": "min-max", "size": 14},
        "encoding": {"y": {"field": "toolkit", "type": "ordinal", "sort": toolkits},
                     "x": {"field": "seconds", "type": "quantitative",
                           "scale": {"type": "log"}, "title": "compile seconds a cell (log)"}},
    }
    medians = ", ".join(f"{t} {statistics.median(by_toolkit[t]):.1f} s" for t in toolkits)
    return Chart("compile-time", "Compile seconds per toolkit",
                 f"Each cell's compile (or build) stage, {len(values)} in all; medians: "
                 f"{medians}.", spec)


def run_charts(results: Sequence[CellResult], history: Sequence[PastRun] = ()) -> list[Chart]:
    """Every chart the run's data can draw, in the page's order."""
    library = [r for r in results if r.cell.library]
    drawn = [
        _works_heatmap("works", "Where the code works, per toolkit and arch", "toolkit",
                       results, lambda r: r.cell.toolkit),
        _works_heatmap("works-library", "Where the code works, per library version and arch",
                       "library", library,
                       lambda r: f"{r.cell.library} {r.cell.library_version}", _library_order)
        if len({(r.cell.library, r.cell.library_version) for r in library}) > 1 else None,
        _history_chart(history),
        _kernel_time_chart(results),
        _compile_chart(results),
    ]
    return [chart for chart in drawn if chart is not None]


def _chart_cache() -> Path:
    return default_cache() / "charts"


def svg(spec: dict[str, Any]) -> str:
    """The chart drawn as SVG, from the cache where the same specification was drawn
    before (a cache that cannot be read or written is no cache, never an error)."""
    import vl_convert

    text = json.dumps(spec, sort_keys=True)
    key = hashlib.sha256(f"{vl_convert.get_vega_version()}\n{text}".encode()).hexdigest()
    kept = _chart_cache() / f"{key}.svg"
    try:
        return kept.read_text(encoding="utf-8")
    except OSError:
        pass
    drawn = vl_convert.vegalite_to_svg(spec, vl_version="6.4")
    with contextlib.suppress(OSError):
        write_atomic(kept, drawn)
    return drawn


def named_svg(drawing: str, chart: Chart) -> str:
    """The drawn chart as a picture with a name: vl-convert's SVG has no role or title, so a
    screen reader met a bare group of marks. The root element becomes role="img", labelled
    by a <title> (the chart's title and caption) that is its first child, as SVG's
    accessibility rules want it; the cached drawing itself stays as drawn."""
    start = drawing.find("<svg")
    end = drawing.find(">", start)
    if start < 0 or end < 0:
        return drawing
    title_id = f"chart-{chart.id}-title"
    opening = drawing[start:end].replace("<svg", f'<svg role="img" aria-labelledby="{title_id}"', 1)
    name = html.escape(f"{chart.title}. {chart.caption}")
    return (drawing[:start] + opening + ">" + f'<title id="{title_id}">{name}</title>'
            + drawing[end + 1:])

