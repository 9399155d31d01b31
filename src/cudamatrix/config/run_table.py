"""[variant.run]: a kernel's launch, its arguments and its NumPy checks, read as the GPU
stages will read them, and refused when the case is read, before any cell runs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..common.keys import check_keys
from ..stages.expressions import RefusedExpression, parse_check
from .case_tables import TableReader

RUN_KEYS = ("args", "grid", "block", "shared_bytes", "shared_opt_in", "check", "rtol", "atol",
            "seed", "host")
ARG_KEYS = ("name", "value", "dtype", "shape", "output", "inout", "range", "fill", "values")
# The NumPy dtypes an argument may have (NumPy's own names).
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128")
# The most elements one array argument may have (1 GiB of float32).
MAX_ELEMENTS = 1 << 28


class RunTableReader(TableReader):
    """The reader of a variant's [variant.run] table."""

    def run_table(self, where: str, run: Mapping[str, Any]) -> None:
        """[variant.run] as the GPU stages will read it, refused here, before any cell runs:
        each argument a scalar (`value`) or an array (`shape`, with `fill`, `values`,
        random in `range`, `output` or `inout`), of a NumPy dtype; each check an expression
        over the arguments (stages/expressions.py)."""
        args = run.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, dict) for a in args):
            raise self.fail(f"{where}.args", "expected a list of tables")
        names: list[str] = []
        for number, arg in enumerate(args):
            at = f"{where}.args[{number}]"
            check_keys(at, arg, ARG_KEYS, self.fail)
            name = arg.get("name", f"arg{number}" if "value" in arg else None)
            if not isinstance(name, str) or not name.isidentifier() or name == "np":
                raise self.fail(at, f"name must be an identifier (not np), got {name!r:.60}"
                                " (a scalar may go unnamed; an array is checked by its name)")
            if name in names:
                raise self.fail(at, f"a second argument named {name!r}")
            at = f"{where}.args[{number}] ({name})"
            names.append(name)
            dtype = arg.get("dtype", "int32" if "value" in arg else "float32")
            if dtype not in DTYPES:
                raise self.fail(at, f"dtype must be one of NumPy's {', '.join(DTYPES)}, "
                                f"got {dtype!r:.60}")
            if "value" in arg:
                self.scalar(at, arg)
            else:
                self.array(at, arg, dtype)
            if arg.get("inout"):
                names.append(f"{name}_in")
        checks = run.get("check", {})
        if not isinstance(checks, dict):
            raise self.fail(f"{where}.check", "expected a table of output = \"expression\"")
        outputs = {a.get("name", "") for a in args if a.get("output") or a.get("inout")}
        for output, expression in checks.items():
            if output not in outputs:
                raise self.fail(f"{where}.check.{output}", "checks an argument that is no "
                                f"output (outputs: {', '.join(sorted(outputs)) or 'none'}: "
                                "mark it output = true, or inout = true when read and written)")
            try:
                parse_check(expression, names)
            except RefusedExpression as exc:
                raise self.fail(f"{where}.check.{output}", str(exc)) from None

    def scalar(self, at: str, arg: Mapping[str, Any]) -> None:
        value = arg["value"]
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or (isinstance(value, float) and not math.isfinite(value)):
            raise self.fail(at, f"value is a scalar argument's number, got {value!r:.60}")
        for key in ("shape", "fill", "values", "output", "inout", "range"):
            if key in arg:
                raise self.fail(at, f"value makes a scalar, which takes no {key}: an array "
                                "of one value is shape = [N] with fill = VALUE")

    def array(self, at: str, arg: Mapping[str, Any], dtype: str) -> None:
        shape = arg.get("shape", [len(arg["values"])] if isinstance(arg.get("values"), list)
                        else [1])
        if not isinstance(shape, list) or not shape or not all(
                isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in shape):
            raise self.fail(at, f"shape must be a list of positive whole numbers, got "
                            f"{shape!r:.60}")
        elements = math.prod(shape)
        if elements > MAX_ELEMENTS:
            raise self.fail(at, f"shape {shape} holds {elements} elements (at most "
                            f"{MAX_ELEMENTS})")
        if (arg.get("output") is not None and not isinstance(arg.get("output"), bool)) \
                or (arg.get("inout") is not None and not isinstance(arg.get("inout"), bool)):
            raise self.fail(at, "output and inout are true or false")
        if arg.get("output") and arg.get("inout"):
            raise self.fail(at, "output (written only, poisoned first) or inout (read and "
                            "written, its input seen as NAME_in), not both")
        if "fill" in arg and "values" in arg:
            raise self.fail(at, "fill (every element) or values (each one), not both")
        fill = arg.get("fill")
        if fill is not None and (isinstance(fill, bool) or not isinstance(fill, int | float)):
            raise self.fail(at, f"fill is a number, got {fill!r:.60}")
        values = arg.get("values")
        if values is not None:
            if not isinstance(values, list) or not all(
                    isinstance(v, int | float) and not isinstance(v, bool) for v in values):
                raise self.fail(at, "values is a list of numbers")
            if len(values) != elements:
                raise self.fail(at, f"{len(values)} values for shape {shape} "
                                f"({elements} elements)")
        span = arg.get("range")
        if span is not None:
            if not dtype.startswith(("int", "uint")):
                raise self.fail(at, f"range is for integer arrays ({dtype} values are "
                                "uniform in [-1, 1))")
            if not isinstance(span, list) or len(span) != 2 or not all(
                    isinstance(v, int) and not isinstance(v, bool) for v in span) \
                    or span[0] >= span[1]:
                raise self.fail(at, f"range is [low, high) of whole numbers, got {span!r:.60}")
