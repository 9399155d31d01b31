"""[variant.run]: a kernel's launch, its arguments and its NumPy checks, read as the GPU
stages will read them, and refused when the case is read, before any cell runs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..common.keys import check_keys
from ..stages.cell.specs import ArgumentSpec, LaunchSpec
from ..stages.device.expressions import RefusedExpression, parse_check
from .case_tables import TableReader
from .declarations import ARG, RUN, declared_defaults

RUN_KEYS = RUN.names()
ARG_KEYS = ARG.names()
# The NumPy dtypes an argument may have (NumPy's own names).
DTYPES = ARG.key("dtype").allowed
# The most elements one array argument may have (1 GiB of float32).
MAX_ELEMENTS = 1 << 28
# The most bytes a cell's arguments may take together (each is made on the host and on
# the GPU): 64 arguments of 2^28 complex128 asked for 256 GiB.
MAX_ARGUMENT_BYTES = 4 << 30
# The launch limits CUDA defines for every GPU since compute capability 3.0: a grid of
# 2^31-1 x 65535 x 65535 blocks, blocks of 1024 x 1024 x 64 threads, at most 1024 in all.
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024
# The dynamic shared memory a launch can ask for (an unsigned int of the driver API).
MAX_SHARED_BYTES = 2**32 - 1
ITEM_BYTES = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "float16": 2,
              "int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8, "float64": 8,
              "complex64": 8, "complex128": 16}
# The largest finite float16 (a float32 or float64 number is checked by Python's float).
FLOAT16_MAX = 65504.0


def integer_range(dtype: str) -> tuple[int, int] | None:
    """The smallest and largest value of an integer dtype (bool: 0 and 1); None for floats."""
    if dtype == "bool":
        return 0, 1
    if dtype.startswith("uint"):
        return 0, 2 ** int(dtype[4:]) - 1
    if dtype.startswith("int"):
        bits = int(dtype[3:])
        return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return None


def argument_spec(number: int, arg: Mapping[str, Any]) -> ArgumentSpec:
    """One checked argument with its declared defaults: a scalar is ``arg<N>`` (its place)
    unless named and int32 unless typed; an array float32, its shape its values' count."""
    table = {**declared_defaults(ARG), **arg}
    scalar = "value" in arg
    values = arg.get("values")
    shape = () if scalar else tuple(arg.get("shape", [len(values)] if isinstance(values, list)
                                            else [1]))
    low, high = table["range"]
    return ArgumentSpec(
        name=str(arg.get("name", f"arg{number}")),
        dtype=str(arg.get("dtype", "int32" if scalar else "float32")),
        value=arg["value"] if scalar else None, shape=shape,
        output=bool(table["output"]), inout=bool(table["inout"]), range=(int(low), int(high)),
        fill=arg.get("fill"), values=tuple(values) if isinstance(values, list) else None)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class RunTableReader(TableReader):
    """The reader of a variant's [variant.run] table."""

    @staticmethod
    def launch_spec(run: Mapping[str, Any]) -> LaunchSpec:
        """A checked [variant.run] (run_table) as the GPU stages receive it: each declared
        default filled in here, once; an argument's name and dtype, which depend on whether
        it is a scalar, as the declarations say."""
        table = {**declared_defaults(RUN), **run}
        return LaunchSpec(
            args=tuple(argument_spec(number, arg)
                       for number, arg in enumerate(table.get("args", []))),
            grid=tuple(table["grid"]), block=tuple(table["block"]),
            shared_bytes=int(table["shared_bytes"]), shared_opt_in=bool(table["shared_opt_in"]),
            check=tuple((str(k), str(v)) for k, v in table.get("check", {}).items()),
            rtol=float(table["rtol"]), atol=float(table["atol"]), seed=int(table["seed"]),
            host=bool(table["host"]))

    def run_table(self, where: str, run: Mapping[str, Any]) -> None:
        """[variant.run] as the GPU stages will read it, refused here, before any cell runs:
        each argument a scalar (`value`) or an array (`shape`, with `fill`, `values`,
        random in `range`, `output` or `inout`), of a NumPy dtype; each check an expression
        over the arguments (stages/device/expressions.py)."""
        args = run.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, dict) for a in args):
            raise self.fail(f"{where}.args", "expected a list of tables")
        self.launch(where, run)
        names: list[str] = []
        total = 0
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
                self.scalar(at, arg, dtype)
            else:
                total += self.array(at, arg, dtype)
            if arg.get("inout"):
                names.append(f"{name}_in")
        if total > MAX_ARGUMENT_BYTES:
            raise self.fail(f"{where}.args", f"the arguments take {total / (1 << 30):.1f} GiB "
                            f"together (at most {MAX_ARGUMENT_BYTES >> 30} GiB a cell)")
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

    def scalar(self, at: str, arg: Mapping[str, Any], dtype: str) -> None:
        value = arg["value"]
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or (isinstance(value, float) and not math.isfinite(value)):
            raise self.fail(at, f"value is a scalar argument's number, got {value!r:.60}")
        self.fits(at, "value", value, dtype)
        for key in ("shape", "fill", "values", "output", "inout", "range"):
            if key in arg:
                raise self.fail(at, f"value makes a scalar, which takes no {key}: an array "
                                "of one value is shape = [N] with fill = VALUE")

    def array(self, at: str, arg: Mapping[str, Any], dtype: str) -> int:
        """Checks an array argument; the bytes it takes on the GPU (twice over with its
        input kept, inout)."""
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
        if fill is not None:
            self.fits(at, "fill", fill, dtype)
        values = arg.get("values")
        if values is not None:
            if not isinstance(values, list) or not all(
                    isinstance(v, int | float) and not isinstance(v, bool) for v in values):
                raise self.fail(at, "values is a list of numbers")
            if len(values) != elements:
                raise self.fail(at, f"{len(values)} values for shape {shape} "
                                f"({elements} elements)")
            for value in values:
                self.fits(at, "values", value, dtype)
        span = arg.get("range")
        if span is not None:
            if not dtype.startswith(("int", "uint")):
                raise self.fail(at, f"range is for integer arrays ({dtype} values are "
                                "uniform in [-1, 1))")
            if not isinstance(span, list) or len(span) != 2 or not all(
                    isinstance(v, int) and not isinstance(v, bool) for v in span) \
                    or span[0] >= span[1]:
                raise self.fail(at, f"range is [low, high) of whole numbers, got {span!r:.60}")
            low, high = integer_range(dtype) or (0, 0)
            if span[0] < low or span[1] - 1 > high:
                raise self.fail(at, f"range {span} leaves {dtype} (its values are {low} to "
                                f"{high})")
        copies = 2 if arg.get("inout") else 1
        return copies * elements * ITEM_BYTES.get(dtype, 16)

    def fits(self, at: str, key: str, value: int | float, dtype: str) -> None:
        """A number `dtype` holds as written: a whole number in an integer dtype's range,
        a float that stays finite (1.5 for an int32 was silently 1; 1000 for an int8 was
        another number; 1e5 for a float16 infinity)."""
        bounds = integer_range(dtype)
        if bounds is not None:
            if isinstance(value, float) and not value.is_integer():
                raise self.fail(at, f"{key} {value!r:.40} is no whole number, which {dtype} "
                                "holds")
            if not bounds[0] <= value <= bounds[1]:
                raise self.fail(at, f"{key} {value!r:.40} is outside {dtype} ({bounds[0]} to "
                                f"{bounds[1]})")
        elif dtype == "float16" and abs(value) > FLOAT16_MAX:
            raise self.fail(at, f"{key} {value!r:.40} is outside float16 (at most "
                            f"{FLOAT16_MAX:g} in magnitude)")
        elif dtype in ("float32", "complex64") and abs(value) > 3.4028234663852886e38:
            raise self.fail(at, f"{key} {value!r:.40} is outside {dtype}")

    def launch(self, where: str, run: Mapping[str, Any]) -> None:
        """The launch as the driver takes it: grid and block within the limits CUDA defines,
        dynamic shared memory an unsigned int, a seed NumPy takes, tolerances finite and
        not negative. A value the GPU cannot take failed only there (a server died)."""
        for key, limits in (("grid", MAX_GRID), ("block", MAX_BLOCK)):
            if key not in run:
                continue
            sizes = run[key]
            if not isinstance(sizes, list) or not 1 <= len(sizes) <= 3 or not all(
                    isinstance(n, int) and not isinstance(n, bool) for n in sizes):
                raise self.fail(f"{where}.{key}", f"expected 1 to 3 whole numbers, got "
                                f"{sizes!r:.60}")
            for axis, (n, limit) in enumerate(zip(sizes, limits, strict=False)):
                if not 1 <= n <= limit:
                    raise self.fail(f"{where}.{key}", f"{'xyz'[axis]} = {n} is outside 1 to "
                                    f"{limit}, what CUDA allows")
            if key == "block" and math.prod(sizes) > MAX_THREADS_PER_BLOCK:
                raise self.fail(f"{where}.block", f"{math.prod(sizes)} threads a block (at "
                                f"most {MAX_THREADS_PER_BLOCK})")
        shared = run.get("shared_bytes", RUN.key("shared_bytes").default)
        if not isinstance(shared, int) or isinstance(shared, bool) \
                or not 0 <= shared <= MAX_SHARED_BYTES:
            raise self.fail(f"{where}.shared_bytes", f"a whole number of bytes from 0 to "
                            f"{MAX_SHARED_BYTES}, got {shared!r:.40}")
        if "shared_opt_in" in run and not isinstance(run["shared_opt_in"], bool):
            raise self.fail(f"{where}.shared_opt_in", "expected true or false")
        seed = run.get("seed", RUN.key("seed").default)
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
            raise self.fail(f"{where}.seed", f"a whole number from 0 to 2^63-1, got "
                            f"{seed!r:.40}")
        for key in ("rtol", "atol"):
            value = run.get(key, RUN.key(key).default)
            if not _number(value) or not math.isfinite(value) or value < 0:
                raise self.fail(f"{where}.{key}", f"a finite number, 0 or more, got "
                                f"{value!r:.40}")
