"""The default a run uses is the declared one (issue 59, point 1): [variant.run]'s defaults
are filled in once, by the reader, from the declarations the schema and the reference
publish; no stage reads a run key with a default of its own. block, shared_opt_in, atol
and seed were documented [1], false, 1e-8 and 0 while runs used [32], true, 1e-5 and 2024
(the values cases rely on, kept)."""

from __future__ import annotations

import re
from pathlib import Path

from cudamatrix.config.corpus import load_case
from cudamatrix.config.declarations import RUN, declared_defaults, json_schema

STAGES = Path(__file__).resolve().parents[2] / "src" / "cudamatrix" / "stages"
CASE = """title = "t"
[[variant]]
name = "v"
source = "k.cu"
frontend = "nvrtc"
kernel = "k"
[variant.run]
args = [{ name = "x", dtype = "float32", shape = [4], output = true }]
"""


def test_the_reader_fills_every_declared_default(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "k.cu").write_text('extern "C" __global__ void k(float *x) {}\n')
    (folder / "case.toml").write_text(CASE)
    run = load_case(folder).variants[0].run
    declared = declared_defaults(RUN)
    assert {k: run[k] for k in declared} == declared
    assert declared["block"] == [32] and declared["shared_opt_in"] is True
    assert declared["atol"] == 1e-5 and declared["seed"] == 2024
    schema = json_schema("case")["properties"]["variant"]["items"]["properties"]["run"]
    assert {k: schema["properties"][k]["default"] for k in declared} == declared


def test_no_stage_reads_a_run_key_with_a_default_of_its_own() -> None:
    keys = "|".join(map(re.escape, declared_defaults(RUN)))
    pattern = re.compile(rf"\.run\.get\(\s*[\"']({keys})[\"']\s*,")
    found = [f"{path.relative_to(STAGES)}:{number}: {line.strip()}"
             for path in sorted(STAGES.rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if pattern.search(line)]
    assert found == []
