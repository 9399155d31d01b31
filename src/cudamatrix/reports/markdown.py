"""COMPATIBILITY.md: per case, a table of toolkit x arch for each variant, then the details.

Plain GitHub-flavoured Markdown tables (`compact_table`), so the same text
renders in a repository and in a GitHub Actions step summary.
"""

from __future__ import annotations

import html
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from ..common.versions import Arch
from ..common.words import shortened
from ..config.repro_line import REPRO_REPORTS
from ..record.baseline import BaselineDiff
from ..record.outcomes import FAILING
from ..record.resource_changes import ResourceChange, kernel_label, usage_text
from ..record.results import BisectAnswer, BisectSide, CellResult, RunInfo, summary
from ..record.time_changes import TimeChange
from .answers import (
    Grid,
    GridCell,
    answer_grid,
    case_answers,
    legend,
    said_message,
    spans,
    where_key,
    without_paths,
)
from .budget import MARKDOWN_BUDGET_BYTES, Section, fitted
from .formats import ReportFormat
from .glance import (
    UNEXPECTED,
    CompiledOnly,
    axis_rates,
    happened,
    likely_culprit,
    repro,
    repro_root,
)
from .labels import distinct_labels, row_label
from .symbols import (
    FLAKY_MARK,
    OUTCOME_LOOKS,
    SYMBOLS,
    UNEXPECTED_MARK,
    VERBS,
    counted,
    unexpected_rank,
)

_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
# What starts Markdown structure inside a line: links and images (their brackets), code,
# escapes, table pipes. A value is always placed after the tool's own text on its line
# (a list item's "- ", a table's "| ", a heading's "## "), and made one line, so nothing
# it holds can start a heading, a list or a quote. Emphasis (`_`, `*`) is left as it
# reads: it makes no tag, link or heading, and `sm_90` stays searchable.
_MARKUP = re.compile(r"[\\`\[\]|]")


NOTED_CELLS = 3  # rows named beside a note; more are counted (the page names them all)
SUMMARY_MESSAGE = 300  # at most a message's characters in a folded cell's summary line
SKIP_REASON = 400  # at most a skip's reason's characters beside its cells
# Where a message's first sentence ends: a stop and a space, then more.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
NOTE_LIMIT = 160  # a note's characters beside its cells; the case file has it whole
EXPLANATION_LIMIT = 400  # a diagnosis' explanation in a folded cell; its fix is never cut


def _covered(rows: dict[str, list[str]], archs: Sequence[str]) -> str:
    """Cells by row, each row's archs as ranges; past NOTED_CELLS rows, counted."""
    where = [md_text(f"{label} {spans(row_archs, archs)}")
             for label, row_archs in sorted(rows.items(), key=lambda i: where_key(i[0]))]
    return ", ".join(where[:NOTED_CELLS]) + (f" and {len(where) - NOTED_CELLS} more"
                                             if len(where) > NOTED_CELLS else "")


def skip_reason(result: CellResult) -> str:
    """Why a cell was skipped, as the case's lines say it: whole, for its last clause is the
    fix (a skip's reason is the tool's own words, "... NVIDIA's images or a host install
    have it"), paths cut, one line; a reason carrying a long exception ends at a word."""
    return shortened(without_paths(" ".join((result.message or result.reason or "").split())),
                     SKIP_REASON)


def stopped_lines(cells: Sequence[CellResult]) -> list[str]:
    """What stopped the case's cells that did not build or run, each message once with its
    symbol and the cells it stopped: the grid's squares in words."""
    stopped: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r in cells:
        what = happened(r)
        if what == "skipped":
            stopped[(what, skip_reason(r))][row_label(r.cell)].append(r.cell.arch)
        elif what.startswith("fails"):
            stopped[(what, said_message(r))][row_label(r.cell)].append(r.cell.arch)
    archs = sorted({r.cell.arch for r in cells}, key=Arch.parse)
    lines = [""] if stopped else []
    for (what, message), rows in sorted(stopped.items(), key=lambda i: list(VERBS).index(
            i[0][0]) if i[0][0] in VERBS else len(VERBS)):
        lines.append(f"- {SYMBOLS.get(what, '?')} {md_text(VERBS.get(what, what))}"
                     + (f": {md_text(message)}" if message else "")
                     + f" ({_covered(rows, archs)})")
    return lines


def notes_lines(cells: list[CellResult]) -> list[str]:
    """The case's notes on the expectations that decided these cells, each once, with the
    cells it covers (by row, its archs as ranges): why a cell is expected to fail is read
    beside its case."""
    covered: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r in cells:
        # The driver's rule is said once for the run, under the grid.
        if r.note and DRIVER_RULE not in r.note:
            covered[r.note][row_label(r.cell)].append(r.cell.arch)
    archs = sorted({r.cell.arch for r in cells}, key=Arch.parse)
    lines = ["", "Why expected:"] if covered else []
    for note, rows in covered.items():
        lines.append(f"- {md_text(' '.join(note.split()), NOTE_LIMIT)} "
                     f"({_covered(rows, archs)})")
    return lines


def compact_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub table, its columns unpadded: the Details table has a row per cell that is
    not a plain pass (thousands in the nightly tier), and padding every row to the longest
    message made COMPATIBILITY.md near GitHub's 1 MiB step-summary limit. Every table of
    the report is one (no table library for a format this plain). The cells are escaped
    already (md_text)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def md_text(text: object, limit: int | None = None) -> str:
    """Any value from a case, a record or a machine, as plain Markdown text safe anywhere
    (a table cell, a heading, a list item): one line, no control characters, no HTML
    (GitHub renders raw tags), no table pipes, and no character that could start a link,
    an image or code (each backslash-escaped, so it reads as itself). Past `limit`
    characters it ends at a word, marked (common/words.py): cut inside a word, a diagnosis
    read "...is not na" and seemed whole."""
    flat = _CONTROL.sub(" ", str(text)).strip()
    if limit is not None:
        flat = shortened(flat, limit)
    flat = _MARKUP.sub(lambda m: "\\" + m.group(), flat)
    return flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def md_code(text: object, table: bool = False) -> str:
    """A value in a code span, whatever it holds: one line, no control characters, fenced
    by one backtick more than its longest run of them (CommonMark), so it can never close
    the span early; in a table, its pipes escaped as GitHub's tables need."""
    flat = _CONTROL.sub(" ", str(text)).strip()
    fence = "`" * (max((len(run) for run in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    if table:
        flat = flat.replace("|", "\\|")
    return f"{fence}{pad}{flat}{pad}{fence}"


def md_link(address: str) -> str:
    """An upstream address: an autolink when it is a web address, quoted text otherwise."""
    if re.match(r"https?://[^\s<>]+$", address, re.IGNORECASE):
        return f"<{address}>"
    return md_text(address)


def _bisect_side(side: BisectSide) -> str:
    """What happened at one end of a change; with --slower, how fast too."""
    time = side.get("time")
    if not time:
        return str(side["happened"])
    return f"{side['happened']}, {time['ratio']:.3f}x" + (
        f" ({time['bandwidth_gbs']:,.0f} GB/s)" if time.get("bandwidth_gbs") else "")


def bisect_lines(answer: BisectAnswer) -> list[str]:
    """`cudamatrix bisect`'s answer: each change with its two neighbouring cells."""
    lines = []
    slower = answer.get("slower")
    if slower:
        lines.append(f"kernel time against {slower['value']}'s {slower['median_us']:.2f} us, "
                     f"slower meaning over {slower['ratio']}x")
    if not answer["changes"]:
        lines.append(f"no change over {answer['over']} between {answer['values'][0]} and "
                     f"{answer['values'][-1]}: both ends did the same")
    for change in answer["changes"]:
        before, after = change["before"], change["after"]
        between = change["skipped_between"]
        lines.append(f"{answer['over']} {change['at']}: {_bisect_side(before)} -> "
                     f"{_bisect_side(after)}" + (f" (somewhere after {before['value']}; not "
                                                 f"runnable: {', '.join(between)})"
                                                 if between else ""))
        for side in (before, after):
            said = f": {shortened(side['message'], 200)}" \
                if side["happened"].startswith("fails") else ""
            time = side.get("time")
            if time:
                noise = time.get("noise")
                said += (f": {time['median_us']:.2f} us, {time['ratio']:.3f}x"
                         + (f" (noise {100 * noise:.1f}%)" if noise is not None else ""))
            lines.append(f"  {side['value']} {side['cell']}: {side['happened']}{said}")
            lines.append(f"    repro: {side['repro']}")
    lines += [f"  skipped {value}: {why}" for value, why in answer.get("skipped", {}).items()]
    return lines


def header(info: RunInfo, packages: bool = True) -> list[str]:
    """The run's facts, one list item each: date, host, GPU, toolkits, libraries (with
    each one's packages, or by name alone where `packages` is false)."""
    device = info.device or {}
    lines = [
        f"- **Date**: {md_text(info.finished)} (tier {md_code(info.tier)}, provider "
        f"{md_code(info.provider)}, cudamatrix {md_text(info.tool_version)})",
        f"- **Host**: {md_text(info.host)}",
    ]
    if info.provider_choice:
        lines.append(f"- **Provider**: {md_text(info.provider)} "
                     f"({md_text(info.provider_choice)})")
    if device.get("name"):
        lines.append(f"- **GPU**: {md_text(device['name'])} ({md_text(device.get('arch', '?'))}"
                     f"), driver {md_text(device.get('driver', '?'))} (CUDA "
                     f"{md_text(device.get('driver_cuda', '?'))})"
                     + (f", runner label {md_code(info.runner_label)}" if info.runner_label
                        else ""))
    else:
        lines.append(f"- **GPU**: none ({md_text(device.get('reason', 'no GPU'))}): load and "
                     "run stages skipped")
    for toolkit, facts in info.toolkits.items():
        tools = ", ".join(f"{k} {v}" for k, v in sorted(facts.get("tool_versions", {}).items()))
        nvrtc = next((v for k, v in facts.get("packages", {}).items() if "nvrtc" in k), None)
        if nvrtc:
            tools += f", nvrtc {nvrtc}"
        where = f", built on {facts['built_on']}" if facts.get("built_on") else ""
        lines.append(f"- **Toolkit {md_text(toolkit)}** "
                     f"({md_text(str(facts.get('provider', '?')) + where)}): "
                     f"{md_text(tools.strip(', ') or '-')}")
    for name, folder in sorted(info.paths.items()):
        lines.append(f"- **Path {md_code('{' + name + '}')}**: {md_code(folder)}")
    if not packages and info.libraries:
        lines.append("- **Libraries**: " + md_text(", ".join(info.libraries))
                     + " (each one's packages: report.html)")
    for library, facts in info.libraries.items() if packages else ():
        said = ", ".join(f"{k} {v}" for k, v in sorted(facts.get("packages", {}).items()))
        lines.append(f"- **{md_text(library)}**: {md_text(said or '-')}")
    return lines


BASELINE_LIST_LIMIT = 50


def findings_lines(title: str, findings: Sequence[TimeChange | ResourceChange]) -> list[str]:
    """A list of baseline findings that describe themselves, under its title, cut at
    BASELINE_LIST_LIMIT; nothing where there is none."""
    if not findings:
        return []
    lines = ["", title, "", *(f"- {md_code(c.cell)}: {md_text(c.describe(), 200)}"
                              for c in findings[:BASELINE_LIST_LIMIT])]
    if len(findings) > BASELINE_LIST_LIMIT:
        lines.append(f"- … and {len(findings) - BASELINE_LIST_LIMIT} more "
                     "(results.json has them all)")
    return lines


def baseline_section(diff: BaselineDiff) -> list[str]:
    """The changes since the baseline, first thing after the summary."""
    lines = ["", f"## Changes since the baseline ({md_code(diff.source)})", ""]
    if diff.empty:
        return [*lines, "No cell changed its outcome; none was added or removed; no "
                "kernel's resources grew; no timed kernel's time moved beyond its noise."]
    groups = (("🆕❌ New failures", diff.new_failures), ("🩹 Fixed", diff.fixed),
              ("🔀 Flipped", diff.flipped), ("➕ Added", diff.added),
              ("➖ Removed", diff.removed), (f"{FLAKY_MARK} Flaky (never a new failure)",
                                            diff.flaky))
    lines.append(" · ".join(f"{title}: {len(changes)}" for title, changes in groups)
                 + f" · 📈 Resources: {len(diff.resources)} · ⏱ Time: {len(diff.times)}")
    lines += findings_lines("**⏱ Time** (a timed kernel's median moved by more than 5% and "
                            "more than three times the two runs' combined noise)", diff.times)
    lines += findings_lines("**📈 Resources** (a kernel that starts to spill, or takes more "
                            "than 10% more registers, or more shared memory)", diff.resources)
    for title, changes in groups:
        if not changes:
            continue
        lines += ["", f"**{title}**", ""]
        for change in changes[:BASELINE_LIST_LIMIT]:
            said = f": {md_text(change.message, 160)}" \
                if change.message and change.after in FAILING else ""
            lines.append(f"- {md_code(change.cell)}: {md_text(change.before or '(absent)')} → "
                         f"{md_text(change.after or '(absent)')}{said}")
        if len(changes) > BASELINE_LIST_LIMIT:
            lines.append(f"- … and {len(changes) - BASELINE_LIST_LIMIT} more (results.json "
                         "has them all)")
    return lines


KERNELS_PER_VARIANT = 4  # kernels shown per variant where the case names none
KERNEL_NAME = 80  # about a kernel's characters in the resources table (labels.distinct_labels)


def resources_lines(cells: Sequence[CellResult]) -> list[str]:
    """The case's kernels' registers, spills, stack and shared memory as ptxas reported
    them, by toolkit x arch: a toolkit that makes a kernel spill shows here."""
    archs = sorted({r.cell.arch for r in cells if r.resources}, key=Arch.parse)
    rows: dict[tuple[str, str, str], dict[str, str]] = defaultdict(dict)
    hidden = 0
    for r in cells:
        records = r.resources
        if r.kernel:  # the case's own kernel; the module's others are its helpers
            records = [k for k in records if k.get("kernel") == r.kernel["lowered"]] or records
        hidden = max(hidden, len(records) - KERNELS_PER_VARIANT)
        for record in records[:KERNELS_PER_VARIANT]:
            key = (r.cell.variant, row_label(r.cell), kernel_label(record))
            rows[key][r.cell.arch] = usage_text(record)
    if not rows:
        return []
    # Toolkits whose figures are the same for a kernel share a row: what differs stands out.
    alike: dict[tuple[str, str, tuple[tuple[str, str], ...]], list[str]] = defaultdict(list)
    for (variant, label, kernel), row in rows.items():
        alike[(variant, kernel, tuple(sorted(row.items())))].append(label)
    universe = sorted({label for _, label, _ in rows}, key=where_key)
    shown = distinct_labels((kernel for _, _, kernel in rows), KERNEL_NAME)
    table = [[md_code(variant, table=True), md_text(spans(labels, universe)),
              md_text(shown[kernel]),
              *(md_text(dict(figures).get(a, "")) for a in archs)]
             for (variant, kernel, figures), labels in alike.items()]
    lines = ["", "#### Kernel resources (ptxas: registers, spill, stack, static shared memory)",
             "", compact_table(["variant", "toolkit", "kernel", *archs], table)]
    if hidden:
        lines += ["", f"Up to {hidden} more kernels per cell in results.json (`resources`)."]
    return lines


def timing_text(timing: dict[str, Any], fastest: float) -> str:
    """One timed cell: its median, its noise, how many times the variant's fastest toolkit
    on that arch it took, and a mark where its SM clock was held down (NVML's reasons
    other than idle) or the noise target was not met."""
    median = float(timing["median_us"])
    relative = f" · {median / fastest:.2f}x" if fastest > 0 and median != fastest else ""
    marks = ("" if timing.get("converged") else " (noisy)") \
        + (" (clock held)" if timing.get("clock_event_reasons") else "")
    return f"{median:.2f} us ±{timing['noise']:.1%}{relative}{bandwidth_text(timing)}{marks}"


def bandwidth_text(timing: dict[str, Any]) -> str:
    """A timed cell's achieved bandwidth and its share of the GPU's peak, where known."""
    achieved = timing.get("bandwidth_gbs")
    if not achieved:
        return ""
    fraction = timing.get("bandwidth_fraction")
    return f" · {achieved:,.0f} GB/s" + (f" ({fraction:.0%} of peak)" if fraction else "")


def timing_lines(cells: Sequence[CellResult]) -> list[str]:
    """The case's timed kernels by toolkit x arch: what a toolkit change did to their
    speed against the variant's fastest toolkit on the same arch, with the noise that says
    how far the figures can be trusted."""
    timed = [(r, r.timing or {}) for r in cells if r.timing]
    if not timed:
        return []
    archs = sorted({r.cell.arch for r, _ in timed}, key=Arch.parse)
    # Times compare only on one kind of GPU: a merged run's H100 and A100 runners each get
    # their rows and their own fastest toolkit.
    kinds = sorted({r.gpu_name for r, _ in timed})
    fastest: dict[tuple[str, str, str, str], float] = {}
    for r, timing in timed:
        key = (r.gpu_name, r.cell.variant, str(timing.get("l2", "")), r.cell.arch)
        fastest[key] = min(fastest.get(key, float("inf")), float(timing["median_us"]))
    rows: dict[tuple[str, str, str, str], dict[str, str]] = defaultdict(dict)
    for r, timing in timed:
        l2 = str(timing.get("l2", ""))
        rows[(r.gpu_name, r.cell.variant, l2, row_label(r.cell))][r.cell.arch] = timing_text(
            timing, fastest[(r.gpu_name, r.cell.variant, l2, r.cell.arch)])
    several = len(kinds) > 1
    table = [[*([md_text(gpu or "?")] if several else []), md_code(variant, table=True),
              md_text(l2), md_text(label), *(md_text(row.get(a, "")) for a in archs)]
             for (gpu, variant, l2, label), row in sorted(rows.items())]
    where = "" if several or not kinds[0] else f" on {md_text(kinds[0])}"
    return ["", f"#### Kernel time{where} (GPU events around each launch, median of the "
            "samples; against the variant's fastest toolkit on that arch"
            + (" and GPU" if several else "") + ")", "",
            compact_table([*(["GPU"] if several else []), "variant", "L2", "toolkit", *archs],
                          table)]


def grid_section(grid: Grid) -> Section:
    """The grid as a Markdown table: a row per case · variant, a column per toolkit and
    arch, one symbol in each table cell (three archs' symbols in one cell, "🟥❗🟥❗⚪",
    were read as one). Its rows unspaced and a cell not in the run empty: a column per
    arch made the table wider, and the published report must stay within 20 KB."""
    def symbol(cell: GridCell | None) -> str:
        return "" if cell is None else (cell.symbol + (UNEXPECTED_MARK if cell.unexpected
                                                       else "")
                                        + (FLAKY_MARK if cell.result.flaky else ""))

    columns = [f"{md_text(toolkit)} {md_text(arch)}" for toolkit, arch in grid.columns]
    rows = ["|" + "|".join([f"{md_code(row.case, table=True)} {md_text(row.variant)}"
                            + (f" · {md_text(row.extra)}" if row.extra else ""),
                            *map(symbol, row.cells)]) + "|" for row in grid.rows]
    return Section(["", "## At a glance", "",
                    "One symbol per cell, a column per toolkit and arch (empty where that cell "
                    "is not in the run).", "", "| " + " | ".join(["case · variant", *columns])
                    + " |", "|" + "---|" * (len(columns) + 1)],
                   rows, left="rows of the grid")


def glance_lines(results: Sequence[CellResult]) -> list[str]:
    """Under the grid: the rate per axis value where not all were as expected, the likely
    culprit, and the driver's rule said once."""
    lines: list[str] = []
    rates = [f"{axis} {value}: {good}/{total}" for axis, value, good, total
             in axis_rates(results) if total and good < total]
    if rates:
        lines += ["", "As expected, per axis value (where not all were): " + " · ".join(rates)]
    culprit = likely_culprit(results)
    if culprit:
        lines += ["", f"Likely culprit: {culprit}."]
    ruled = driver_ruled(results)
    if ruled:
        rule, cells = ruled
        toolkits = ", ".join(sorted({c.cell.toolkit for c in cells}))
        lines += ["", f"Driver: {len(cells)} cells of toolkit {md_text(toolkits)} could not "
                  f"load, as CUDA's rule says (predicted and confirmed): {md_text(rule)}."]
    return lines


# What verdict.driver_rule writes: a load refused as CUDA's rule says, predicted and confirmed.
DRIVER_RULE = "CUDA's rule, predicted and confirmed: "


def driver_ruled(results: Sequence[CellResult]) -> tuple[str, list[CellResult]] | None:
    """The cells whose PTX the driver refused as CUDA's rule predicts, and the rule, said
    once for all of them (each cell's own row says it too)."""
    cells = [r for r in results if DRIVER_RULE in r.note or DRIVER_RULE in r.reason]
    if not cells:
        return None
    said = cells[0].note if DRIVER_RULE in cells[0].note else cells[0].reason
    return said[said.index(DRIVER_RULE) + len(DRIVER_RULE):], cells


def html_text(text: object, limit: int | None = None) -> str:
    """A value inside an HTML element of the Markdown (a folded block's summary, where
    GitHub renders no Markdown): one line, escaped, ended at a word past `limit`."""
    flat = _CONTROL.sub(" ", str(text)).strip()
    if limit is not None:
        flat = shortened(flat, limit)
    return html.escape(flat, quote=False)


def message_parts(text: str, limit: int = SUMMARY_MESSAGE) -> tuple[str, str]:
    """A message as (what a summary line says, the rest, folded below it): whole up to its
    first sentence's end, else whole up to `limit`, else cut at the last word that fits;
    never in a word ("...CUDA_ERRO..." said nothing)."""
    flat = " ".join(text.split())
    end = _SENTENCE_END.search(flat)
    if end is not None and end.start() <= limit:
        return flat[:end.start()], flat[end.end():]
    if len(flat) <= limit:
        return flat, ""
    cut = flat.rfind(" ", 0, limit + 1)
    cut = cut if cut > 0 else limit
    return flat[:cut], flat[cut:].lstrip()


def unexpected_item(result: CellResult, info: RunInfo) -> str:
    """One cell that is not what its case expects, folded: what it did and its message in
    the summary; its diagnosis, upstream reports and repro command inside."""
    what = happened(result)
    said = result.message or result.reason
    head, rest = message_parts(said)
    summary_line = (f"{SYMBOLS.get(what, '?')}{UNEXPECTED_MARK} <code>{html_text(result.cell.id)}"
                    f"</code> {html_text(VERBS.get(what, what))}"
                    + (f": {html_text(head)}" + (" …" if rest else "")
                       if said and what.startswith("fails") else "")
                    + (" (expected to fail: possibly fixed upstream)"
                       if result.outcome == "xpass" else ""))
    body = [f"- Expected: {md_text(result.expected or '-')}"
            + (f" ({md_text(result.note, 300)})" if result.note else "")]
    if said and rest:  # the summary said its first part: the whole message, folded
        body.append(f"- Message: {md_text(said, 4000)}")
    body += diagnosis_lines(result.diagnosis or {})
    if result.upstream:
        body.append("- Upstream: " + ", ".join(map(md_link, result.upstream)))
    if result.attempts:
        body.append(f"- Attempts: {attempts_text(result)}")
    body.append(f"- Repro: {md_code(repro(result.cell, info))}")
    return "\n".join([f"<details><summary>{summary_line}</summary>", "", *body, "",
                      "</details>"])


def diagnosis_lines(diagnosis: dict[str, Any]) -> list[str]:
    """A diagnosis as the folded cell shows it: its title, its explanation ended at a word
    past EXPLANATION_LIMIT (report.html has it whole), then its fix, whole: the fix is what
    the reader acts on, and a cut one once ended "...is not na" and lost the rest."""
    if not diagnosis.get("title"):
        return []
    explanation = str(diagnosis.get("explanation") or "")
    lines = [f"- Diagnosis: {md_text(diagnosis['title'])}"
             + (f": {md_text(explanation, EXPLANATION_LIMIT)}" if explanation else "")]
    if diagnosis.get("fix"):
        lines.append(f"- Fix: {md_text(diagnosis['fix'])}")
    return lines


def attempts_text(result: CellResult) -> str:
    """A retried cell's attempts in order, this one last: ``fail at run → pass``."""
    return " → ".join(md_text(f"{a.get('outcome', '?')} at {a.get('stage', '?')}")
                      for a in result.attempts) + f" → {md_text(result.outcome)}"


def flaky_section(results: Sequence[CellResult]) -> Section:
    """The cells whose attempts disagreed (--retries): each with its attempts."""
    flaky = [r for r in results if r.flaky]
    if not flaky:
        return Section([])
    return Section(["", f"## {FLAKY_MARK} Flaky ({len(flaky)})", "",
                    "Run again where they were not what their case expects, and not alike "
                    "the next time: never counted as new failures.", ""],
                   [f"- {md_code(r.cell.id)}: {attempts_text(r)}" for r in flaky],
                   left="flaky cells")


def unexpected_section(results: Sequence[CellResult], info: RunInfo) -> Section:
    """The cells that are not what their case expects, worst first (fail, error, xpass),
    each folded."""
    bad = sorted((r for r in results if r.outcome in UNEXPECTED),
                 key=lambda r: unexpected_rank(r.outcome))
    if not bad:
        return Section([])
    opening = ["", f"## Not what the cases expect ({len(bad)})", ""]
    if info.repro_folder:
        opening += [f"Each repro command reruns its cell as this run ran it, from the "
                    f"project's root ({md_code(repro_root(info))}: the folder holding "
                    f"cudamatrix.toml, else the one the run was made in), compiling it "
                    f"again into a report folder of its own under "
                    f"{md_code(str(REPRO_REPORTS))}: this report stays as it is.", ""]
    return Section(opening, [unexpected_item(r, info) + "\n" for r in bad], left="cells")


def case_item(case: str, cells: Sequence[CellResult]) -> str:
    """A case folded: its upstream reports, why its cells are expected to fail, the
    compiler's warnings, its kernels' resources and times. Where it works is the grid's to
    say (its sentence, from the same cells, is the page's: a summary says it once)."""
    first = cells[0]
    expected = sum(r.outcome == "xfail" for r in cells)
    summary_line = (f"<strong>{html_text(case)}</strong>: {html_text(first.title, 120)} "
                    f"({len(cells)} cells" + (f", {expected} expected failures" if expected
                                              else "") + ")")
    body = []
    if first.upstream:
        body.append("Upstream: " + ", ".join(map(md_link, first.upstream)))
    body += stopped_lines(cells)
    body += notes_lines(list(cells))
    warned = [r for r in cells if r.warnings]
    if warned:
        body += ["", *(f"- {md_code(r.cell.id)} warning: {md_text(r.warnings[0], 200)}"
                       for r in warned[:NOTED_CELLS])]
        if len(warned) > NOTED_CELLS:
            body.append(f"- … and {len(warned) - NOTED_CELLS} more cells with warnings")
    body += resources_lines(cells)
    body += timing_lines(cells)
    return "\n".join([f"<details><summary>{summary_line}</summary>", "", *body, "",
                      "</details>"])


def cases_section(results: Sequence[CellResult]) -> Section:
    by_case: dict[str, list[CellResult]] = defaultdict(list)
    for result in results:
        by_case[result.cell.case].append(result)
    return Section(["", "## Cases", ""],
                   [case_item(case, cells) + "\n" for case, cells in by_case.items()],
                   left="cases")


def headline(info: RunInfo, results: Sequence[CellResult]) -> list[str]:
    """The counts in words, then the legend with each symbol's number of cells, and what
    the passes that were only compiled are (CompiledOnly: no GPU ran them)."""
    counts = summary(results)
    unexpected = sum(counts[o] for o in UNEXPECTED)
    compiled = CompiledOnly.of(results)
    # The passes' count with what the only-compiled ones are, then each outcome's.
    words = [counted(outcome, counts[outcome])
             + (f" ({md_text(compiled.said())})"
                if outcome == "pass" and compiled.count else "")
             if counts[outcome] else "" for outcome in OUTCOME_LOOKS]
    flaky = sum(r.flaky for r in results)
    if flaky:
        words.append(f"{FLAKY_MARK} {flaky} flaky")
    device = (info.device or {}).get("name")
    # The provider, and why where `auto` chose it: an engine that answers changes where
    # every cell compiles, so the first screen says it.
    chosen = f"provider {md_code(info.provider)}" + (
        f" ({md_text(info.provider_choice)})" if info.provider_choice.startswith("auto") else "")
    facts = [f"tier {md_code(info.tier)}", f"{info.wall_seconds:.0f} s",
             *([md_text(device)] if device else []),
             *([chosen] if info.provider and info.provider not in ("unknown", "none") else [])]
    happenings = Counter(happened(r) for r in results if r.cell.frontend != "audit")
    return ["# CUDA compatibility report", "",
            f"**{len(results)} cells, "
            + (f"{UNEXPECTED_MARK} {unexpected} not what the cases expect" if unexpected
               else "all as the cases expect") + "**: "
            + ", ".join(w for w in words if w) + " · " + " · ".join(facts),
            *(["", legend(dict(happenings), flaky=bool(flaky))] if happenings else []),
            *(["", md_text(compiled.note(str((info.device or {}).get("reason") or "")))]
              if compiled.count else [])]


def markdown_report(info: RunInfo, results: Sequence[CellResult],
                    diff: BaselineDiff | None = None,
                    budget: int = MARKDOWN_BUDGET_BYTES) -> str:
    """COMPATIBILITY.md, which is also the GitHub step summary: the counts and the one
    legend, what changed, the grid, the unexpected cells folded, then the cases folded,
    within `budget` bytes (what does not fit is in the page, and the report says so)."""
    sections = [Section(headline(info, results))]
    if info.bisect:
        answer = [_CONTROL.sub(" ", line) for line in bisect_lines(info.bisect)]
        fence = "`" * max(3, 1 + max((len(r) for line in answer
                                      for r in re.findall(r"`+", line)), default=0))
        sections.append(Section(["", "## Bisect", "", f"Over {md_text(info.bisect['over'])}: "
                                 f"{len(info.bisect['values'])} values, "
                                 f"{len(info.bisect['probed'])} run.", "", fence, *answer,
                                 fence]))
    if diff is not None:
        sections.append(Section(baseline_section(diff)))
    if case_answers(results):
        sections += [grid_section(answer_grid(results, info)), Section(glance_lines(results))]
    sections += [unexpected_section(results, info), flaky_section(results),
                 cases_section(results),
                 Section(["", "<details><summary>The run: date, host, GPU, toolkits and "
                          "libraries</summary>", "",
                          *header(info, packages=False), "", "</details>"])]
    return "\n".join(fitted(sections, budget)) + "\n"


FORMAT = ReportFormat("COMPATIBILITY.md", lambda run: markdown_report(run.info, run.results,
                                                                    run.diff))
