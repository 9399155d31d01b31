"""A case's [variant.run] read when the case is read (issue 38 item 4, issue 43 items 9-10):
arguments that mean what they say, and checks evaluated by an evaluator of their own."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from cudamatrix.config.corpus import load_case
from cudamatrix.config.run_table import argument_spec
from cudamatrix.errors import UserError
from cudamatrix.stages.device.checks import input_array
from cudamatrix.stages.device.expressions import RefusedExpression, evaluate, parse_check

CASE = """title = "run table"
[[variant]]
name = "v"
source = "k.cu"
frontend = "nvrtc"
kernel = "k"
  [variant.run]
  args = [{args}]
  check = {{ {check} }}
"""


def _load(tmp_path: Path, args: str, check: str = "") -> None:
    folder = tmp_path / "k"
    folder.mkdir(exist_ok=True)
    (folder / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    (folder / "case.toml").write_text(CASE.format(args=args, check=check))
    load_case(folder)


@pytest.mark.parametrize(("args", "check", "said"), [
    # A value with a shape was silently a scalar: the kernel got 0 as its pointer.
    ('{ name = "y", dtype = "float32", shape = [4], value = 0 }', "",
     "value makes a scalar, which takes no shape"),
    ('{ name = "x", dtype = "bogus<script>" }', "", "dtype must be one of NumPy's"),
    ('{ name = "x", shape = [-5, 10] }', "", "shape must be a list of positive"),
    ('{ name = "x", shape = 7 }', "", "shape must be a list of positive"),
    ('{ name = "x", shape = [1000000, 1000000] }', "", "holds 1000000000000 elements"),
    ('{ name = "x", shape = [2], values = [1, 2, 3] }', "", "3 values for shape [2]"),
    ('{ name = "x", shape = [2], fill = 0, values = [1, 2] }', "", "not both"),
    ('{ name = "x", shape = [2], output = true, inout = true }', "", "not both"),
    ('{ name = "x", shape = [2], range = [0, 4] }', "", "range is for integer arrays"),
    ('{ name = "x" }, { name = "x" }', "", "a second argument named 'x'"),
    ('{ name = "y", shape = [2], output = true }', 'y = "2 * z"', "'z' is no argument"),
    ('{ name = "y", shape = [2] }', 'y = "2"', "checks an argument that is no output"),
    ('{ name = "y", shape = [2], output = true }',
     """y = "np.__builtins__['__import__']('os')" """, "calls NumPy functions (np.X)"),
    ('{ name = "y", shape = [2], output = true }', 'y = "np.__builtins__"',
     "may not reach '__builtins__'"),
    ('{ name = "y", shape = [2], output = true }',
     'y = "np.ctypeslib.ctypes.CDLL(None)"', "np.ctypeslib.ctypes.CDLL is not among"),
    ('{ name = "y", shape = [2], output = true }', 'y = "(lambda: 1)"', "Lambda"),
    ('{ name = "y", shape = [2], output = true }', 'y = "y.tofile(\'/tmp/x\')"',
     ".tofile is not among the array methods"),
])
def test_what_a_run_table_may_not_say(tmp_path: Path, args: str, check: str, said: str) -> None:
    with pytest.raises(UserError, match=re.escape(said)) as caught:
        _load(tmp_path, args, check)
    assert "case.toml" in str(caught.value) and "\n" not in str(caught.value)


def test_an_in_place_argument_and_fixed_contents(tmp_path: Path) -> None:
    """saxpy's y, read and written: inout, its input seen as y_in; an array of zeros, an
    array of listed values."""
    _load(tmp_path, '{ name = "x", shape = [4] }, { name = "y", shape = [4], inout = true }, '
                    '{ name = "z", shape = [2, 2], fill = 0, output = true }, '
                    '{ name = "w", values = [1, 2, 3] }, { name = "a", dtype = "float32", '
                    'value = 2.5 }', 'y = "2.5 * x + y_in"')
    rng = np.random.default_rng(0)
    assert (input_array(argument_spec(0, {"shape": [2, 2], "fill": 0, "output": True}), rng)
            == 0).all()
    assert input_array(argument_spec(0, {"values": [1, 2, 3], "dtype": "int32"}),
                       rng).tolist() == [1, 2, 3]
    assert np.isnan(input_array(argument_spec(0, {"shape": [3], "output": True}), rng)).all()


def test_the_evaluator_computes_what_numpy_would() -> None:
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    arrays = {"x": x, "y_in": np.ones((2, 4), np.float32)}
    cases = {
        "2.5 * x + y_in": 2.5 * x + 1,
        "x.astype(np.float32) / np.sqrt(np.mean(x ** 2, axis=1, keepdims=True) + 1e-5)":
            x / np.sqrt(np.mean(x ** 2, axis=1, keepdims=True) + 1e-5),
        "np.where(np.arange(4) < 2, x, -x)[:, ::2]": np.where(np.arange(4) < 2, x, -x)[:, ::2],
        "np.transpose(x, (1, 0)) @ x": x.T @ x,
        "(x > 1) & (x < 5)": (x > 1) & (x < 5),
        "np.linalg.norm(x, axis=1)": np.linalg.norm(x, axis=1),
        "x.T.sum()": x.T.sum(),
    }
    for text, expected in cases.items():
        got = evaluate(parse_check(text, arrays), arrays, np)
        assert np.allclose(got, expected), text


def test_nothing_outside_the_whitelist_runs() -> None:
    for text in ("__import__('os')", "open('/etc/passwd')", "x.__class__", "[a for a in x]",
                 "np.load('/tmp/x.npy')", "x if x else x", "np.__dict__", "{'a': 1}",
                 "np.frombuffer(b'', np.uint8)", "x in x"):
        with pytest.raises(RefusedExpression):
            parse_check(text, {"x"})


REFUSED = sorted((Path(__file__).parents[1] / "data" / "hostile-refused").iterdir())


@pytest.mark.parametrize("folder", REFUSED, ids=lambda p: p.name)
def test_the_hostile_run_tables_are_refused_when_read(folder: Path) -> None:
    """tests/data/hostile-refused: each case's [variant.run] is refused when the case is
    read, in one line naming its file, and nothing it says runs."""
    with pytest.raises(UserError) as caught:
        load_case(folder)
    said = str(caught.value)
    assert said.startswith(f"{folder / 'case.toml'}: variant 'v'.run") and "\n" not in said
    assert not Path("/tmp/pwned").exists()
    # Issue 47: values the GPU cannot take passed, and killed the GPU's server.
    named = {"seed": ".seed:", "shared": ".shared_bytes:", "rtol": ".rtol:", "atol": ".atol:",
             "grid": ".grid:", "block": ".block:", "value": "value", "fill": "fill",
             "values": "values", "arguments": "GiB together"}
    first = folder.name.split("-")[0]
    word = named.get(folder.name.split("-")[1] if first in ("int32", "uint8", "int8",
                                                           "float16") else first)
    assert word is None or word in said, said


def test_readmes_saxpy_checks_its_scalar_argument_by_name() -> None:
    """Issue 47: README's saxpy, `check = { y = "a * x + y_in" }` with `a` a scalar, was
    refused on the GPU ("'a' is no argument of the case"): a right kernel reported fail.
    The arguments as launched, the kernel's work done in NumPy, then the check."""
    from cudamatrix.config.run_table import RunTableReader
    from cudamatrix.stages.cell.job import Job
    from cudamatrix.stages.device.checks import case_arguments, compare_outputs

    # As the reader gives it: every declared default filled in.
    run = RunTableReader.launch_spec({"grid": [4], "block": [256],
           "check": {"y": "a * x + y_in"},
           "args": [{"name": "n", "dtype": "int32", "value": 1024},
                    {"name": "a", "dtype": "float32", "value": 2.5},
                    {"name": "x", "dtype": "float32", "shape": [1024]},
                    {"name": "y", "dtype": "float32", "shape": [1024], "inout": True},
                    {"value": 7, "dtype": "int32"}]})
    job = Job(cell_id="c", arch="sm_80", source="k.cu", frontend="nvcc", workdir="/w",
              timeout=1, run=run)
    launched, named = case_arguments(job)
    assert [a.name for a in launched] == ["n", "a", "x", "y", "arg4"]
    assert [a.scalar for a in launched] == [True, True, False, False, True]
    assert set(named) == {"n", "a", "x", "y", "y_in", "arg4"}
    named["y"][:] = np.float32(2.5) * named["x"] + named["y_in"]  # what the kernel does
    status, message, _, _ = compare_outputs(job, named)
    assert (status, message) == ("ok", "")
    named["y"][3] += 1
    assert compare_outputs(job, named)[0] == "failed"
