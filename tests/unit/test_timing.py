"""Kernel time (issue 41): [variant.time] read with the case, the sampling rule that
decides when a figure's noise is known, the max_us verdict, and the report's table.
The GPU half (CUDA events, the L2 flush, NVML's clocks) is proven on the device
(tests/e2e/test_gpu.py, bench/evidence/kernel-time-h100)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cudamatrix.config.corpus import load_case, timing_spec
from cudamatrix.errors import UserError
from cudamatrix.record.baseline import Baseline, compare
from cudamatrix.record.history import PastRun
from cudamatrix.record.results import CellResult, RunInfo
from cudamatrix.record.verdict import judge_run
from cudamatrix.reports.github import annotation_lines
from cudamatrix.reports.markdown import baseline_section, timing_lines
from cudamatrix.stages.cell.specs import TimingSpec
from cudamatrix.stages.device import timing

CASE = """title = "timed"
[[variant]]
name = "v"
source = "k.cu"
frontend = "nvrtc"
kernel = "k"
{run}
{time}
"""
RUN = """  [variant.run]
  args = [{ name = "y", dtype = "float32", shape = [4], output = true }]
  check = { y = "0 * y" }"""
REPO = Path(__file__).resolve().parents[2]
EVIDENCE = REPO / "bench" / "evidence"  # the runs kept as evidence of past changes


def _load(tmp_path: Path, time: str, run: str = RUN) -> TimingSpec | None:
    folder = tmp_path / "k"
    folder.mkdir(exist_ok=True)
    (folder / "k.cu").write_text('extern "C" __global__ void k(float* y) {}\n')
    (folder / "case.toml").write_text(CASE.format(run=run, time=time))
    return load_case(folder).variants[0].time


def test_a_time_table_is_read_with_the_case(tmp_path: Path) -> None:
    said = _load(tmp_path, '  [variant.time]\n  l2 = "hot"\n  noise = 0.01\n  max_us = 50')
    assert said is not None and (said.l2, said.noise, said.max_us) == ("hot", 0.01, 50)
    assert said.max_seconds == 0.5  # declared, filled in by the reader
    assert _load(tmp_path, "") is None


@pytest.mark.parametrize(("time", "run", "said"), [
    ('  [variant.time]\n  l2 = "warm"', RUN, "cold (flushed before each sample) or hot"),
    ("  [variant.time]\n  noise = 2", RUN, "noise: expected a number from 0.0001 to 0.5"),
    ("  [variant.time]\n  max_seconds = true", RUN, "max_seconds: expected a number"),
    ("  [variant.time]\n  max_seconds = 3600", RUN, "max_seconds: expected a number"),
    ("  [variant.time]\n  samples = 5", RUN, "samples"),
    ("  [variant.time]\n  noise = 0.01", "", "give [variant.run] too"),
])
def test_a_wrong_time_table_is_refused_naming_the_key(tmp_path: Path, time: str, run: str,
                                                     said: str) -> None:
    with pytest.raises(UserError, match=r"case\.toml") as caught:
        _load(tmp_path, time, run)
    assert said in str(caught.value)


def test_sampling_stops_once_the_noise_is_under_its_target() -> None:
    steady = iter([10.0, 10.01, 9.99] * 1000)
    launches: list[int] = []
    samples = timing.sample(lambda: launches.append(1), lambda run: (run(), next(steady))[1],
                            timing_spec({"noise": 0.005, "max_seconds": 5}))
    assert len(samples) == timing.MIN_SAMPLES  # steady: the fewest samples that count
    assert len(launches) == timing.MIN_SAMPLES + 1  # and one warm-up launch, untimed
    noisy = random.Random(1)
    samples = timing.sample(lambda: None, lambda run: noisy.uniform(5, 15),
                            timing_spec({"noise": 0.001, "max_seconds": 0.05}))
    # Never steady enough: the time budget ends it.
    assert len(samples) > timing.MIN_SAMPLES
    said = timing.sample_summary(samples, timing_spec({"noise": 0.001}))
    assert said["converged"] is False and said["noise"] > 0.1
    assert said["min_us"] <= said["median_us"] and said["l2"] == "cold"


def test_max_us_fails_only_a_median_over_it() -> None:
    figure = timing.sample_summary([10.0] * 20, timing_spec({}))
    assert timing.over_limit(figure, timing_spec({"max_us": 12})) == ""
    assert timing.over_limit(figure, timing_spec({})) == ""
    said = timing.over_limit(figure, timing_spec({"max_us": 8}))
    assert said.startswith("too slow: median 10.000 us over max_us 8")


def test_the_report_shows_each_toolkits_time_with_its_noise() -> None:
    document = json.loads((EVIDENCE / "realworld-h100" / "results.json").read_text())
    ran = [c for c in document["cells"]
           if any(s["stage"] == "run" and s["status"] == "ok" for s in c["stages"])][:2]
    cells = []
    for number, cell in enumerate(ran):
        for stage in cell["stages"]:
            if stage["stage"] == "run":
                summary = timing.sample_summary([20.0 + number] * 12, timing_spec({}))
                stage["details"]["timing"] = {**summary,
                                              "clock_event_reasons": number}
        cells.append(CellResult.from_dict(cell))
    text = "\n".join(timing_lines(cells))
    assert "#### Kernel time on NVIDIA H100 80GB HBM3 (GPU events around each launch, " \
        "median of the samples; against the variant's fastest toolkit on that arch)" in text
    assert "| cold | 11.8 |" in text
    assert "20.00 us ±0.0%" in text and "21.00 us ±0.0% (clock held)" in text
    assert timing_lines([CellResult.from_dict(c) for c in document["cells"][:3]]) == []


@pytest.mark.parametrize("timed", [{"median_us": "fast", "min_us": 1, "noise": 0},
                                   {"min_us": 1, "noise": 0}, "12 us"])
def test_a_recorded_timing_that_is_no_figure_is_refused(timed: object) -> None:
    document = json.loads((EVIDENCE / "realworld-h100" / "results.json").read_text())
    cell = next(c for c in document["cells"]
                if any(s["stage"] == "run" and s["status"] == "ok" for s in c["stages"]))
    next(s for s in cell["stages"] if s["stage"] == "run")["details"]["timing"] = timed
    with pytest.raises(ValueError, match="timing"):
        CellResult.from_dict(cell)


def _timed_cell(median_us: float, noise: float, l2: str = "cold") -> CellResult:
    document = json.loads((EVIDENCE / "realworld-h100" / "results.json").read_text())
    cell = next(c for c in document["cells"]
                if any(s["stage"] == "run" and s["status"] == "ok" for s in c["stages"]))
    run = next(s for s in cell["stages"] if s["stage"] == "run")
    run["details"]["timing"] = {"median_us": median_us, "min_us": median_us * 0.98,
                                "noise": noise, "samples": 100, "converged": True, "l2": l2,
                                # 1 GiB a launch: its bandwidth, as a timed cell records it
                                "bytes": 1 << 30,
                                "bandwidth_gbs": round((1 << 30) / median_us / 1e3, 2)}
    return CellResult.from_dict(cell)


@pytest.mark.parametrize(("after_us", "after_noise", "l2", "said"), [
    (48.0, 0.004, "cold", "slower: median 40.00 us -> 48.00 us (1.20x; noise 0.6%)"),
    (32.0, 0.004, "cold", "faster: median 40.00 us -> 32.00 us (0.80x; noise 0.6%)"),
    (40.3, 0.004, "cold", None),   # timed twice: within the noise
    (41.6, 0.004, "cold", None),   # 4%, over 3 x 0.6%, but 5% is the least a finding is
    (48.0, 0.07, "cold", None),    # 20%, but within 3 x the runs' combined noise (21%)
    (48.0, 0.004, "hot", None),    # a hot L2 against a cold one: not the same measure
])
def test_a_time_change_against_the_baseline_is_a_finding_beyond_the_noise(
        after_us: float, after_noise: float, l2: str, said: str | None) -> None:
    before = _timed_cell(40.0, 0.004)
    after = _timed_cell(after_us, after_noise, l2)
    diff = compare("baseline.json", Baseline({before.cell.id: before.to_dict()}), [after])
    assert [c.describe() for c in diff.times] == ([said] if said else [])
    assert [c.cell for c in diff.slower] == ([after.cell.id] if said and "slower" in said
                                             else [])
    text = "\n".join(baseline_section(diff))
    assert ("⏱ Time: 1" in text) == bool(said)
    annotations = "\n".join(annotation_lines([after], diff))
    assert (f"{after.cell.id}%3A time::slower" in annotations) == bool(said and "slower" in said)


def test_each_toolkits_time_is_said_against_the_variants_fastest() -> None:
    """The H100's CUTLASS nchw_to_nhwc under a 24-register cap (bench/evidence/kernel-time-h100/
    realworld): NVRTC 11.8's build the fastest, 12.4's 1.04x it; a fastest cell says none."""
    document = json.loads((EVIDENCE / "kernel-time-h100" / "realworld" / "prebuilt"
                           / "results.json").read_text())
    text = "\n".join(timing_lines([CellResult.from_dict(c) for c in document["cells"]]))
    assert "| `capped` | cold | 12.4 | 29.98 us ±1.2% · 1.04x (noisy) |" in text
    assert "| `capped` | cold | 11.8 | 28.70 us ±1.4% (noisy) |" in text


SLOWDOWN_CASE = """title = "nchw_to_nhwc, timed"
[[variant]]
name = "{name}"
source = "k.cu"
frontend = "nvrtc"
kernel = "k"
  [variant.run]
  args = [{{ name = "y", dtype = "float32", shape = [4], output = true }}]
  check = {{ y = "0 * y" }}
  [variant.time]
  max_slowdown = {{ toolkit = "11.8", ratio = {ratio} }}
{expect}"""


def _realworld_with(tmp_path: Path, ratio: float, expect: str = "") -> list[CellResult]:
    """bench/evidence/kernel-time-h100/realworld's H100 run, judged again with the capped
    variant's max_slowdown against its NVRTC 11.8 build."""
    folder = tmp_path / "nchw-timed"
    folder.mkdir(exist_ok=True)
    (folder / "k.cu").write_text('extern "C" __global__ void k(float* y) {}\n')
    (folder / "case.toml").write_text(SLOWDOWN_CASE.format(name="capped", ratio=ratio,
                                                           expect=expect)
                                      + '[[variant]]\nname = "float"\nsource = "k.cu"\n'
                                      'frontend = "nvrtc"\n')
    document = json.loads((EVIDENCE / "kernel-time-h100" / "realworld" / "prebuilt"
                           / "results.json").read_text())
    results = [CellResult.from_dict(c) for c in document["cells"]]
    return judge_run(results, {"nchw-timed": load_case(folder)})


def test_max_slowdown_fails_a_toolkit_slower_than_the_named_ones_by_more_than_its_ratio(
        tmp_path: Path) -> None:
    judged = {r.cell.id: r for r in _realworld_with(tmp_path, 1.03)}
    slow = judged["nchw-timed/capped/12.4/sm_90"]
    assert (slow.outcome, slow.stage) == ("fail", "run")
    assert slow.message == ("nchw-timed: 29.98 us on 12.4 is 1.04x 11.8's 28.70 us: slower "
                            "than max_slowdown 1.03x (noise 1.4%)")
    assert judged["nchw-timed/capped/11.8/sm_90"].outcome == "pass"  # the reference
    assert judged["nchw-timed/float/12.4/sm_90"].outcome == "pass"  # no budget
    assert all(r.outcome == "pass" for r in _realworld_with(tmp_path, 1.05))
    expected = _realworld_with(tmp_path, 1.03, '  [[variant.expect]]\n  note = "spills more"\n'
                               '  when = { toolkit = ">=12" }\n  outcome = "fail"\n'
                               '  stage = "run"\n  match = "slower than max_slowdown"\n')
    assert {r.cell.toolkit: r.outcome for r in expected if r.cell.variant == "capped"} == {
        "11.8": "pass", "12.4": "xfail", "12.8": "xfail", "13.0": "xfail"}


@pytest.mark.parametrize(("slowdown", "said"), [
    ('{ toolkit = "12.4" }', "expected { toolkit"),
    ('{ toolkit = "twelve", ratio = 1.05 }', "max_slowdown.toolkit: expected a toolkit"),
    ('{ toolkit = "12.4", ratio = 0.5 }', "max_slowdown.ratio: expected a number"),
])
def test_a_wrong_max_slowdown_is_refused(tmp_path: Path, slowdown: str, said: str) -> None:
    with pytest.raises(UserError, match=r"case\.toml") as caught:
        _load(tmp_path, f"  [variant.time]\n  max_slowdown = {slowdown}")
    assert said in str(caught.value)


def test_history_keeps_each_timed_cells_median() -> None:
    document = json.loads((EVIDENCE / "kernel-time-h100" / "realworld" / "prebuilt"
                           / "results.json").read_text())
    info = RunInfo.from_dict(document["run"])
    past = PastRun.of(info, [CellResult.from_dict(c) for c in document["cells"]])
    said = json.loads(json.dumps(past.to_dict()))
    assert said["median_us"]["nchw-timed/capped/12.4/sm_90"] == pytest.approx(29.98, abs=0.01)
    assert len(said["median_us"]) == 8
    assert PastRun.from_dict(said).times == past.times
    said["median_us"]["nchw-timed/capped/12.4/sm_90"] = -1
    with pytest.raises(ValueError, match=r"median_us\.nchw-timed/capped/12\.4/sm_90"):
        PastRun.from_dict(said)


def _failed_cell() -> CellResult:
    document = json.loads((EVIDENCE / "realworld-h100" / "results.json").read_text())
    cell = next(c for c in document["cells"] if c["outcome"] in ("fail", "xfail")
                and c["stage"] == "compile")
    return CellResult.from_dict(cell)


def _bisect_by_time(medians: list[float | None], ratio: float
                    ) -> tuple[list[dict[str, object]], list[str]]:
    """The bisect's --slower search over made-up toolkits whose cells ran with these
    medians (None: the cell failed to compile there), through the real search."""
    from cudamatrix.commands.bisection import Axis, Bisection, Probe, search
    from cudamatrix.orchestrator.progress import Progress
    from cudamatrix.reports.markdown import bisect_lines

    values = [f"12.{i}" for i in range(len(medians))]
    axis = Axis("toolkit", values, lambda options, i: options, lambda cell, i: f"repro {i}")
    bisection = Bisection(axis, None, None, Progress(), slower=ratio)  # type: ignore[arg-type]

    def probe(index: int) -> tuple[str, str] | None:
        median = medians[index]
        result = _failed_cell() if median is None else _timed_cell(median, 0.004)
        found = Probe(index, values[index], cell=result.cell, result=result)
        bisection.probes[index] = found
        return bisection.key_of(found)

    changes = [bisection.change(lo, hi) for lo, hi in search(len(values), probe)]
    assert bisection.reference is not None and bisection.reference.result is not None
    answer = {"over": "toolkit", "values": values, "changes": changes, "skipped": {},
              "slower": {"ratio": ratio, "value": bisection.reference.value,
                         "median_us": bisection.reference.result.timing["median_us"]}}  # type: ignore[index]
    return changes, bisect_lines(answer)


def test_bisect_slower_finds_where_a_kernel_first_got_slower_than_the_ratio() -> None:
    changes, lines = _bisect_by_time([28.7, 28.8, 28.6, 29.9, 30.0, 29.9, 29.95], 1.03)
    assert [c["at"] for c in changes] == ["12.3"]
    assert lines[0] == "kernel time against 12.0's 28.70 us, slower meaning over 1.03x"
    assert lines[1].startswith("toolkit 12.3: runs") and "1.042x" in lines[1]
    assert "12.2" in lines[2] and "28.60 us" in lines[2] and "noise 0.4%" in lines[2]
    # Under the ratio everywhere: no change, though every median differs a little.
    assert _bisect_by_time([28.7, 28.8, 28.6, 29.1, 29.0], 1.03)[0] == []


def test_bisect_slower_says_the_bandwidth_beside_the_time() -> None:
    """Issue 60, point 3: where the cells record their bandwidth, the answer says it: the
    same bytes at both ends, so it falls by the time's ratio."""
    changes, lines = _bisect_by_time([28.7, 28.8, 28.6, 29.9, 30.0], 1.03)
    after = changes[0]["after"]["time"]
    assert after["bandwidth_gbs"] == round((1 << 30) / 29.9 / 1e3, 2)
    assert f"({after['bandwidth_gbs']:,.0f} GB/s)" in lines[1]


def test_bisect_slower_says_a_failure_as_a_change_of_its_own() -> None:
    changes, _ = _bisect_by_time([28.7, 28.7, None, None], 1.03)
    assert [c["at"] for c in changes] == ["12.2"]
    assert "time" not in changes[0]["after"]


def test_bisect_slower_needs_a_timed_cell_at_the_first_value() -> None:
    with pytest.raises(UserError, match=r"has no kernel time at 12\.0"):
        _bisect_by_time([None, 28.7, 30.0], 1.03)


def test_times_on_two_kinds_of_gpu_are_compared_each_on_its_own() -> None:
    """A merged run of an H100 runner and an A100 runner: each GPU kind its own rows and its
    own fastest toolkit; an A100's slower figure is never said against the H100's."""
    h100 = _timed_cell(40.0, 0.004)
    record = h100.to_dict()
    for stage in record["stages"]:
        if stage["stage"] == "load":
            stage["details"]["gpu"] = {"index": 0, "uuid": "GPU-a", "name": "NVIDIA A100",
                                       "arch": "sm_80"}
        if stage["stage"] == "run":
            stage["details"]["timing"]["median_us"] = 60.0
    a100 = CellResult.from_dict(record)
    assert (h100.gpu_name, a100.gpu_name) == ("NVIDIA H100 80GB HBM3", "NVIDIA A100")
    text = "\n".join(timing_lines([h100, a100]))
    assert "against the variant's fastest toolkit on that arch and GPU" in text
    assert "| GPU | variant |" in text
    assert "| NVIDIA A100 |" in text and "60.00 us ±0.4%" in text
    assert "1.50x" not in text  # 60 us is the A100's fastest, not 1.5x the H100's 40 us


def test_the_record_keeps_the_samples_in_order_and_few_of_many() -> None:
    few = [20.0 + i / 10 for i in range(50)]
    assert timing.sample_summary(few, timing_spec({}))["samples_us"] == [round(v, 3) for v in few]
    many = [float(i) for i in range(100_000)]
    kept = timing.sample_summary(many, timing_spec({}))["samples_us"]
    assert len(kept) <= timing.KEPT_SAMPLES and kept[0] == 0.0 and kept == sorted(kept)


def test_max_slowdown_across_toolkit_shards_is_judged_when_they_are_merged(
        tmp_path: Path) -> None:
    """A CI plan that puts 11.8 and 12.4 in different jobs: neither shard can judge
    max_slowdown alone (each says it had no 11.8 cell to compare with); the merge, which
    has both, judges it with the project's cases."""
    import subprocess
    import sys

    _realworld_with(tmp_path, 1.03)  # writes tmp_path/nchw-timed, the case
    document = json.loads((EVIDENCE / "kernel-time-h100" / "realworld" / "prebuilt"
                           / "results.json").read_text())
    for name, toolkits in (("a", {"11.8"}), ("b", {"12.4", "12.8", "13.0"})):
        shard = dict(document, cells=[c for c in document["cells"] if c["toolkit"] in toolkits])
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(shard))
    merged = tmp_path / "merged"
    done = subprocess.run([sys.executable, "-m", "cudamatrix", "merge", str(tmp_path / "a"),
                           str(tmp_path / "b"), "--corpus", str(tmp_path), "--out",
                           str(merged)], capture_output=True, text=True, check=False,
                          cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # the slowdown is a failure
    cells = {c["id"]: c for c in json.loads((merged / "results.json").read_text())["cells"]}
    slow = cells["nchw-timed/capped/12.4/sm_90"]
    assert (slow["outcome"], slow["stage"]) == ("fail", "run")
    assert "slower than max_slowdown 1.03x" in slow["message"]
    assert cells["nchw-timed/capped/11.8/sm_90"]["outcome"] == "pass"
