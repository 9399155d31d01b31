"""Every key of case.toml and cudamatrix.toml, declared once: its type, default, allowed
values, what it means and an example.

`validate` takes each table's key names from here (corpus.py, case_tables.py,
run_table.py, project.py refuse any other key by name), `cudamatrix schema case|project`
prints the JSON Schema made from here (shipped in the package too, for an editor's
``#:schema`` line), and ``nox -s docs`` writes the case.toml and cudamatrix.toml
references from here. The readers keep the checks a schema cannot say (a source file
that must exist, a specifier's grammar, a kernel name's C++); the declarations say
everything a reader of the file needs to write it.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any, Literal, get_args

from ..common.confined import FLAGS, PATHS, PATTERNS
from ..common.versions import EXPECT_KEYS, LIBRARY_AXES, PYTHON, PYTHON_VALUE, WHEN_KEYS
from ..stages.cell.job import VariantSettings
from ..stages.cell.result import STAGE_NAMES
from ..stages.inspect.artifact_text import ARTIFACT_KINDS
from ..stages.inspect.budgets import BUDGET_FIELDS, BUDGET_KEYS
from .torch_cuda import PAIRINGS

SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"
# Where the schemas are published: the documentation site, in the report's docs/ folder
# on this repository's Pages (docs/generate.py copies them there); an editor reads the
# #:schema line.
SCHEMA_BASE = "https://cudamatrix.github.io/cudamatrix/docs/schema"

# A value's kind, as TOML writes it.
STRING, BOOLEAN, INTEGER, NUMBER = "string", "boolean", "integer", "number"
STRINGS = "string or array of strings"
STRING_LIST = "array of strings"  # a list even of one (an axis's values)
INTEGERS = "array of integers"
NUMBERS = "array of numbers"
ANY = "any value"
# A package name, or one per CUDA major (``{"12" = "nvidia-cuda-cccl-cu12", "13" = ...}``).
PACKAGE_NAMES = "string or table of CUDA major = string"
# What a build's audit reads when the case names no outputs: its libraries and wheels.
DEFAULT_OUTPUTS = ("**/*.so", "**/*.whl")
# A library's name, as matrix.toml's [libraries.NAME] spells it.
LIBRARY_NAME_PATTERN = "^[a-z][a-z0-9_]*$"
# What a case may expect of a cell: that it works, that it fails (at a stage, saying
# something), or that it hangs until its limit (a known hang is a finding, not a broken
# tool).
ExpectedOutcome = Literal["pass", "fail", "timeout"]


@dataclass(frozen=True)
class Key:
    """One key of a table."""

    name: str
    kind: str  # STRING, BOOLEAN, ..., or "table" / "array of tables" (with `table`)
    doc: str
    default: object = None  # None: no default (optional unless `required`)
    required: bool = False
    allowed: tuple[str, ...] = ()
    example: str = ""
    table: Table | None = None
    minimum: float | None = None
    maximum: float | None = None
    # Why the key never changes what a compile makes (the compile key then holds it not):
    # None to say what its table says, "" where it does (it is in the key). A case key
    # that does not says why, and tests/unit/test_declared_keys.py holds every key to it.
    not_compiled: str | None = None
    # The frontends that take the key, where only some do: the case reader refuses it on
    # another, and each named frontend's compiler lines must change with it (the test).
    frontends: tuple[str, ...] = ()
    # A regular expression each of its strings matches whole, where its values have a
    # shape (a Python: installed or 3.N): the readers refuse another, the schema says it.
    pattern: str | None = None
    # What kind of path its values name, where they name one (common/confined.py's PATHS,
    # FLAGS, PATTERNS): the reader holds each to that kind's check in the one home, and
    # tests/unit/test_confined_paths.py gives each declared one a path out of the corpus.
    path: str = ""

    def refusal(self, value: Any) -> str | None:
        """Why `value` is not one this key takes, by its declaration alone (a list of
        strings where it is one, each of the declared shape), or None: the readers say
        it after the file and the key's place."""
        such = self.example.split("=", 1)[-1].strip()
        if self.kind == STRING_LIST and (
                not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            return f"expected a list of strings such as {such}, got {value!r:.60}"
        if self.pattern is not None:
            for one in value if isinstance(value, list) else [value]:
                if not isinstance(one, str) or not re.fullmatch(self.pattern, one):
                    return f"got {one!r:.40}; expected values such as {such}"
        return None


# A scalar field's Python type, as TOML writes its value.
_KINDS: dict[type, str] = {str: STRING, bool: BOOLEAN, int: INTEGER, float: NUMBER}


def setting(name: str, doc: str, **declared: Any) -> Key:
    """The key of the VariantSettings field `name` (the worker reads it as the case said
    it): its kind and default are the field's own, written once on the field, so the
    declaration (the reader's check, the schema, the reference) cannot say another type or
    default than the worker receives (kind="string" beside `kernel: str | None` said it
    twice, and only a test held the two equal)."""
    hints = typing.get_type_hints(VariantSettings)
    field = next(f for f in fields(VariantSettings) if f.name == name)
    given = hints[name]
    scalar = [t for t in get_args(given) if t is not type(None)] \
        if isinstance(given, types.UnionType) else [given]
    if len(scalar) != 1 or scalar[0] not in _KINDS:
        raise TypeError(f"VariantSettings.{name}: {given} is not one scalar type")
    default = None if field.default is MISSING else field.default
    return Key(name, _KINDS[scalar[0]], doc, default=default, **declared)


@dataclass(frozen=True)
class Across:
    """A check across keys of one table, declared with the table: two keys that can say
    the same thing differently (a compiler takes the last word it is given, another its
    flags), so a table giving both is refused rather than built one way by one compiler
    and another way by the next. `refusal`: why the table's raw values contradict, or None."""

    keys: tuple[str, ...]
    refusal: Callable[[Mapping[str, Any]], str | None]


@dataclass(frozen=True)
class Table:
    """A table and its keys; `extra` is the kind of keys it takes beyond those declared
    (a table of names the user chooses: [paths], [variant.defines]), None for none;
    `across`: its checks across keys (each reader runs them on the table it read)."""

    title: str
    doc: str
    keys: tuple[Key, ...] = ()
    extra: str | None = None
    extra_doc: str = ""
    # The names the extra keys may have (a regular expression), where they have a shape.
    extra_names: str | None = None
    # Why its keys never change a compile, where none does (a key may say otherwise).
    keys_not_compiled: str = ""
    across: tuple[Across, ...] = ()

    def contradiction(self, raw: Mapping[str, Any]) -> str | None:
        """The first of its checks across keys that `raw` fails, in words, or None."""
        for check in self.across:
            why = check.refusal(raw)
            if why is not None:
                return why
        return None

    def names(self) -> tuple[str, ...]:
        return tuple(key.name for key in self.keys)

    def key(self, name: str) -> Key:
        return next(k for k in self.keys if k.name == name)

    def not_compiled(self, at: tuple[str, ...]) -> str:
        """Why the key at `at` (a path of names below this table) never changes a compile,
        or "" where it does: its own word, else the nearest table around it that says."""
        reason, table = self.keys_not_compiled, self
        for name in at:
            key = table.key(name)
            if key.not_compiled is not None:
                reason = key.not_compiled
            if key.table is None:
                break
            table = key.table
            reason = table.keys_not_compiled or reason
        return reason


# -- case.toml -------------------------------------------------------------------------

_SELECTOR_DOC = ("each axis a specifier or a list of them: a version range (`\">=12.4\"`, "
                 "`\"<13\"`), an arch range (`\"<sm_80\"`, `\">=sm_90\"`) or a name "
                 "(`host_compiler = \"clang++-19\"`); a header library's name selects its "
                 "version")

WHEN = Table("when", "Which cells: every axis given must match.", tuple(
    Key(axis, STRINGS, f"the `{axis}` axis", example=f'{axis} = ">=12.4"'
        if axis in ("toolkit", "driver") else f'{axis} = "<sm_80"' if axis == "arch"
        else f'{axis} = "clang++-19"' if axis == "host_compiler"
        else f'{axis} = ">=3.13"' if axis == PYTHON else f'{axis} = ">=3.5"')
    for axis in WHEN_KEYS), extra=STRINGS, extra_names=LIBRARY_NAME_PATTERN,
    extra_doc="a header library the variant names (`libraries = [\"cccl\"]`), by its version "
    "(the schema takes any name shaped like a library's; validate, only the variant's)")
EXPECT_WHEN = Table("when", "Which cells this expectation is about: " + _SELECTOR_DOC + ".",
                    tuple([*WHEN.keys, Key("gpu_arch", STRINGS,
                                           "the GPU the cell ran on (load and run stages)",
                                           example='gpu_arch = ">=sm_90"')]),
                    extra=STRINGS, extra_names=LIBRARY_NAME_PATTERN, extra_doc=WHEN.extra_doc)
assert EXPECT_WHEN.names() == EXPECT_KEYS

EXPECT = Table("[[variant.expect]]", "What a cell should do; the first expectation whose "
               "`when` matches decides, and a cell none matches must pass.", (
    Key("when", "table", "which cells (none: every cell)", table=EXPECT_WHEN),
    Key("outcome", STRING, "what the cell should do", required=True,
        allowed=get_args(ExpectedOutcome), example='outcome = "fail"'),
    Key("stage", STRING, "where a failure stops", allowed=STAGE_NAMES,
        example='stage = "compile"'),
    Key("match", STRING, "a regular expression the decisive message must match",
        example='match = "unsupported GNU version"'),
    Key("note", STRING, "why: shown beside the case's table", example='note = "fixed in 12.8"'),
    Key("warning", STRING, "a regular expression over the compile stage's warnings that the "
        "cell must print", example='warning = "pre-Hopper path"'),
), keys_not_compiled="it judges what a cell did")

ARTIFACT = Table("[[variant.artifact]]", "A check of what was built: a pattern its PTX, "
                 "SASS or cubin must contain, or lack.", (
    Key("in", STRING, "what is read", default="ptx", allowed=tuple(ARTIFACT_KINDS),
        example='in = "sass"'),
    Key("contains", STRING, "a regular expression that must match (give it or `lacks`)",
        example='contains = "fma\\\\.rn\\\\.f32"'),
    Key("lacks", STRING, "a regular expression that must not match",
        example='lacks = "STL"'),
    Key("why", STRING, "what the check proves, shown when it fails",
        example='why = "no local-memory spills"'),
), keys_not_compiled="it checks what a compile made")

ARG = Table("[[variant.run.args]]", "One kernel argument, in launch order: a scalar "
            "(`value`) or an array (`shape`).", (
    Key("name", STRING, "its name in `check` expressions (default: arg<N> for a scalar)",
        example='name = "x"'),
    Key("value", NUMBER, "a scalar argument's value", example="value = 2.5"),
    Key("dtype", STRING, "NumPy's dtype (default: int32 for a scalar, float32 for an array)",
        allowed=("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float16", "float32", "float64", "complex64", "complex128"),
        example='dtype = "float16"'),
    Key("shape", INTEGERS, "an array's shape (at most 2^28 elements)", example="shape = [1024]"),
    Key("output", BOOLEAN, "written by the kernel, checked by `check`", default=False,
        example="output = true"),
    Key("inout", BOOLEAN, "read and written: its input is `<name>_in` in `check`",
        default=False, example="inout = true"),
    Key("range", INTEGERS, "an integer array's random values, uniform in [low, high) (a "
        "float array's: uniform in [-1, 1))", default=[0, 4], example="range = [0, 16]"),
    Key("fill", NUMBER, "every element this value", example="fill = 1.0"),
    Key("values", NUMBERS, "each element's value", example="values = [1, 2, 3]"),
), keys_not_compiled="the run stage makes the arguments")

RUN = Table("[variant.run]", "Launch the kernel on a GPU and check its outputs against "
            "NumPy.", (
    Key("args", "array of tables", "the kernel's arguments, in order", table=ARG),
    Key("grid", INTEGERS, "blocks, 1 to 3 dimensions", default=[1], example="grid = [64]"),
    Key("block", INTEGERS, "threads a block, 1 to 3 dimensions (at most 1024 in all)",
        default=[32], example="block = [256]"),
    Key("shared_bytes", INTEGER, "dynamic shared memory a block", default=0, minimum=0,
        example="shared_bytes = 49168"),
    Key("shared_opt_in", BOOLEAN, "raise the kernel's dynamic shared memory limit first "
        "(cuFuncSetAttribute), as a library must above 48 KiB; false shows what a launch "
        "without it does", default=True, example="shared_opt_in = false"),
    Key("check", "table", "each output's expected value, a NumPy expression over the "
        "arguments", table=Table("check", "output = \"expression\"", extra=STRING,
                                 extra_doc="an output argument's name"),
        example='check = { y = "a * x + y_in" }'),
    Key("rtol", NUMBER, "relative tolerance", default=1e-5, minimum=0, example="rtol = 1e-3"),
    Key("atol", NUMBER, "absolute tolerance", default=1e-5, minimum=0, example="atol = 1e-2"),
    Key("seed", INTEGER, "the random inputs' seed", default=2024, minimum=0,
        example="seed = 7"),
    Key("host", BOOLEAN, "the kernel is launched by the case's own host code (a library's "
        "entry point)", default=False, example="host = true", not_compiled=""),
), keys_not_compiled="the kernel is launched and checked after the compile")

TIME = Table("[variant.time]", "Time the kernel once its run passed: GPU events around "
             "each launch, the median of the samples.", (
    Key("l2", STRING, "cold: the L2 cache flushed before each sample", default="cold",
        allowed=("cold", "hot"), example='l2 = "hot"'),
    Key("noise", NUMBER, "the relative noise to sample down to (NVBench's target)",
        default=0.005, minimum=0.0001, maximum=0.5, example="noise = 0.01"),
    Key("max_seconds", NUMBER, "the most time spent sampling (hundreds of timed cells stay "
        "within minutes)", default=0.5, minimum=0.01, maximum=30.0,
        example="max_seconds = 2"),
    Key("max_us", NUMBER, "fail above this median (microseconds)", minimum=0.001,
        maximum=1e9, example="max_us = 40"),
    Key("bytes", INTEGER, "the bytes a launch moves, for its achieved bandwidth (default: "
        "every array it reads read once, every array it writes written once)", minimum=1,
        example="bytes = 805306368"),
    Key("max_slowdown", "table", "fail where the median is more than `ratio` times the "
        "named toolkit's", table=Table("max_slowdown", "{ toolkit, ratio }", (
            Key("toolkit", STRING, "the reference toolkit", required=True,
                example='toolkit = "12.4"'),
            Key("ratio", NUMBER, "at most this many times slower", required=True,
                minimum=1.0, maximum=100.0, example="ratio = 1.05"))),
        example='max_slowdown = { toolkit = "12.4", ratio = 1.05 }'),
), keys_not_compiled="the kernel is timed after its run")

RESOURCES = Table("[variant.resources]", "A resource budget per kernel, against the "
                  "compiler's own figures (ptxas -v; a build's modules through cuobjdump).", (
    *(Key(name, INTEGER, f"at most this many {words}", minimum=0,
          example=f"{name} = {128 if name == 'max_registers' else 0}")
      for name, (_, words) in BUDGET_FIELDS.items()),
    Key("kernel", STRING, "the one kernel judged (default: every kernel of the module)",
        example='kernel = "gemm<128>"'),
), keys_not_compiled="the budget is judged at the inspect stage, after the compile")
assert RESOURCES.names() == BUDGET_KEYS

BUILD = Table("[variant.build]", "The project's own build, run per cell in a fresh copy "
              "(frontend = \"build\").", (
    Key("commands", STRINGS, "the build's commands, each run with the cell's toolkit as "
        "$CUDA_HOME, its arch as $CUDAARCHS, {cuda_arch} and {gencode} filled in",
        required=True, example='commands = ["cmake -B b -S .", "cmake --build b"]'),
    Key("project", STRING, "where the project comes from (default: the case folder): "
        "path:, file:, sdist:NAME==VERSION, git:URL@REV", example='project = "path:../.."'),
    Key("outputs", STRINGS, "what the build makes, audited per arch (globs in the project)",
        default=list(DEFAULT_OUTPUTS), example='outputs = ["build/*.so"]', path=PATTERNS),
    Key("test", STRING, "a command run on a GPU once the outputs loaded",
        example='test = "python check.py"'),
    Key("requires", STRINGS, "PyPI requirements the build needs (cmake, pybind11...)",
        default=[], example='requires = ["cmake>=3.26"]'),
    Key("env", "table", "environment variables for the commands",
        table=Table("env", "NAME = \"value\"", extra=STRING, extra_doc="a variable"),
        example='env = { CMAKE_BUILD_PARALLEL_LEVEL = "2" }'),
), keys_not_compiled="a build runs every time, never from the compile cache")

FLAGS_IF = Table("[[variant.flags_if]]", "Flags some cells add: a build's option that only "
                 "some toolkits take.", (
    Key("when", "table", "which cells add them", required=True, table=WHEN),
    Key("flags", STRINGS, "what they add", required=True,
        example='flags = ["-compress-mode=size"]', path=FLAGS),
))

# A register cap in a variant's compiler flags (nvcc's and NVRTC's -maxrregcount,
# --maxrregcount=N, clang's through -Xcuda-ptxas).
_REGISTER_CAP_FLAG = re.compile(r"^--?maxrregcount\b")


def _flag_words(raw: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every word of a variant's raw flags and flags_if flags, each with its key (as the
    file gives them, before the reader's checks: a check across keys runs first, on what
    it can read)."""
    given: list[tuple[str, Any]] = []
    for key, flags in [("flags", raw.get("flags", [])),
                       *(("flags_if", entry.get("flags", [])) for entry in
                         raw.get("flags_if", []) if isinstance(entry, dict))]:
        words = [flags] if isinstance(flags, str) else flags if isinstance(flags, list) else []
        given += [(key, word) for word in words]
    return [(key, word) for key, word in given if isinstance(word, str)]


def _register_cap_twice(raw: Mapping[str, Any]) -> str | None:
    """`maxrregcount` and a register cap among the flags: nvcc takes whichever comes last
    on its line, clang's ptxas the flags', so the two would say different caps per
    compiler; one way to say it is kept."""
    cap = raw.get("maxrregcount")
    if cap is None:
        return None
    found = next(((k, w) for k, w in _flag_words(raw) if _REGISTER_CAP_FLAG.match(w)), None)
    if found is None:
        return None
    key, word = found
    return (f"maxrregcount = {cap!r:.20} and the flag {word!r:.40} of {key} both cap the "
            "registers (nvcc takes the last, clang its flags): give maxrregcount alone")


# A dialect in a variant's compiler flags (-std=c++17, --std c++17, -std c++17).
_DIALECT_FLAG = re.compile(r"^--?std\b")


def _dialect_twice(raw: Mapping[str, Any]) -> str | None:
    """`std` and a dialect among the flags: nvcc takes whichever comes last on its line,
    clang its flags', so the two would build the unit as different C++ per compiler; one
    way to say it is kept."""
    std = raw.get("std")
    if std is None:
        return None
    found = next(((k, w) for k, w in _flag_words(raw) if _DIALECT_FLAG.match(w)), None)
    if found is None:
        return None
    key, word = found
    return (f"std = {std!r:.20} and the flag {word!r:.40} of {key} both choose the C++ "
            "dialect (nvcc takes the last, clang its flags): give std alone")


VARIANT = Table("[[variant]]", "One way of building the case: a cell per toolkit, arch, "
                "host compiler and library version of the tier.", (
    Key("name", STRING, "letters, digits, '.', '_' or '-'; part of each cell's id",
        required=True, example='name = "nvrtc"', not_compiled="it names the variant's cells"),
    Key("frontend", STRING, "what compiles it: nvrtc, nvcc, clang, cupy, cutlass, cute-dsl, "
        "cutlass-python, cutlass-python-build, build, or a plugin's", required=True,
        example='frontend = "nvcc"'),
    Key("source", STRING, "a kernel case's source file beside case.toml, or {tree}/path; a "
        "build case's project folder (default: the case folder)", example='source = "k.cu"',
        path=PATHS),
    setting("kernel", "the kernel as its C++ names it (`ns::gemm<128, float>`)",
            example='kernel = "saxpy"'),
    Key("flags", STRINGS, "compiler flags; relative paths are the case folder's, {tree} a "
        "[paths] tree", default=[], example='flags = ["-std=c++17", "-Iinclude"]',
        path=FLAGS),
    setting("arch_flag", "give the compiler the cell's arch", example="arch_flag = false"),
    Key("only", "table", "the cells this variant has (others are not planned)", table=WHEN,
        example='only = { toolkit = ">=12.0" }', not_compiled="it chooses which cells exist"),
    Key("expect", "array of tables", "what its cells should do", table=EXPECT),
    Key("artifact", "array of tables", "checks of what was built", table=ARTIFACT),
    Key("timeout", NUMBER, "seconds a cell may take", minimum=0, example="timeout = 600",
        not_compiled="it bounds how long a cell may take"),
    Key("run", "table", "run the kernel on a GPU", table=RUN),
    setting("load", "how the load stage gets the module: the cubin where it runs, else "
            "the PTX through the driver's JIT", allowed=("auto", "cubin", "ptx"),
        example='load = "ptx"',
        not_compiled="the load stage chooses the cubin or the PTX after the compile"),
    Key("options", "table", "the frontend's own options (cupy: jitify, "
        "enable_cooperative_groups)", table=Table("options", "the frontend's option schema",
                                                   extra=ANY, extra_doc="an option the "
                                                   "variant's frontend declares"),
        example="options = { jitify = true }"),
    Key("host_compiler", STRING, "nvcc's host compiler for this variant (-ccbin)",
        example='host_compiler = "g++-11"'),
    Key(PYTHON, STRING_LIST, "the Pythons whose headers a torch-extension cell's binding "
        "is built against, a cell each: \"installed\" (the interpreter running the cell) or "
        "\"3.N\" (Debian's libpython3.N-dev); with a tier's `python`, the values both list",
        pattern=PYTHON_VALUE.pattern, example='python = ["3.13"]'),
    Key("build", "table", "the project's own build (frontend = \"build\")", table=BUILD),
    Key("resources", "table", "a resource budget per kernel", table=RESOURCES),
    Key("libraries", STRINGS, "the header library this variant builds against (one axis)",
        default=[], example='libraries = ["cccl"]'),
    Key("torch_pairing", STRING, "which toolkits each torch release is planned with for "
        "this variant, in place of the tier's `torch_pairing` (all, major, exact)",
        allowed=PAIRINGS, example='torch_pairing = "exact"',
        not_compiled="it chooses which cells exist"),
    Key("time", "table", "time the kernel", table=TIME),
    Key("flags_if", "array of tables", "flags some cells add", table=FLAGS_IF),
    Key("defines", "table", "a build option's values, a cell each (-DNAME=VALUE)",
        table=Table("defines", "NAME = [values]", extra=STRINGS, extra_doc="a C macro"),
        example='defines = { GGML_CUDA_FORCE_MMQ = ["0", "1"] }'),
    setting("maxrregcount", "the most registers a thread of each kernel may take "
            "(nvcc's and NVRTC's -maxrregcount; clang gives it to ptxas)", minimum=1,
            maximum=255, example="maxrregcount = 64", frontends=("nvcc", "nvrtc", "clang")),
    setting("std", "the C++ dialect every compiler of the variant is given (-std=...)",
            allowed=("c++11", "c++14", "c++17", "c++20"), example='std = "c++20"',
            frontends=("nvcc", "nvrtc", "clang")),
), across=(Across(("maxrregcount", "flags", "flags_if"), lambda raw: _register_cap_twice(raw)),
           Across(("std", "flags", "flags_if"), lambda raw: _dialect_twice(raw))))

CASE = Table("case.toml", "A case: a folder with case.toml and its sources.", (
    Key("title", STRING, "what the case reproduces", required=True,
        example='title = "WMMA fragments without an arch"'),
    Key("description", STRING, "more words, shown in the report", default=""),
    Key("upstream", STRINGS, "the issues it reproduces (http(s) addresses)", default=[],
        example='upstream = ["https://github.com/cupy/cupy/issues/8155"]'),
    Key("variant", "array of tables", "its variants", required=True, table=VARIANT),
))

# -- cudamatrix.toml -------------------------------------------------------------------

TIER = Table("[tiers.NAME]", "A tier of the matrix, laid over the default tier of that "
             "name (keys not given are the default's).", (
    Key("toolkit", STRINGS, "toolkit versions", example='toolkit = ["12.4", "13.0"]'),
    Key("arch", STRINGS, "GPU archs", example='arch = ["sm_80", "sm_90a"]'),
    Key("include", "array of tables", "cells added beyond the axes' product",
        table=Table("include", "a row of axes", extra=STRING, extra_doc="an axis")),
    Key("exclude", "array of tables", "cells taken out",
        table=Table("exclude", "a row of axes", extra=STRING, extra_doc="an axis")),
    Key("case", STRINGS, "only these cases", example='case = ["saxpy"]'),
    *(Key(library, STRINGS, f"{library} versions", example=f'{library} = ["3.5.0"]')
      for library in LIBRARY_AXES),
    Key("host_compiler", STRINGS, "nvcc's host compilers as an axis",
        example='host_compiler = ["g++-11", "clang++-19"]'),
    Key(PYTHON, STRING_LIST, "the Pythons whose headers a torch-extension cell's binding "
        "is built against, a cell each: \"installed\" (the interpreter running the cell) or "
        "\"3.N\" (Debian's libpython3.N-dev); none: the installed one alone",
        pattern=PYTHON_VALUE.pattern, example='python = ["installed", "3.13", "3.14"]'),
    Key("torch_pairing", STRING, "which toolkits each torch release is planned with: all, "
        "the major of the CUDA its wheels are built with (as cpp_extension accepts), or that "
        "CUDA's major.minor exactly; the other cells are ruled out, each saying why",
        default=PAIRINGS[0], allowed=PAIRINGS, example='torch_pairing = "major"'),
))

LIBRARY = Table("[libraries.NAME]", "A library's own versions (a checkout, a wheel), or a "
                "header library of the project.", (
    Key("sources", "table", "version label = source (path:, file:, sdist:, git:)",
        table=Table("sources", "label = \"source\"", extra=STRING, extra_doc="a version label"),
        example='sources = { "4.2.0+mine" = "path:../cutlass" }'),
    Key("headers", BOOLEAN, "a header library (its include folders ahead of the toolkit's)",
        default=False, example="headers = true"),
    Key("package", PACKAGE_NAMES, "its PyPI package, or one per CUDA major",
        example='package = { "12" = "nvidia-cuda-cccl-cu12", "13" = "nvidia-cuda-cccl" }'),
    Key("versions", STRINGS, "its versions", example='versions = ["13.0"]'),
    Key("include", STRINGS, "its include folders inside the package",
        example='include = ["include/cccl"]'),
    Key("files", STRINGS, "other files of the package (or of its headers_from wheels) "
        "kept beside its headers (globs), which a frontend or a build reads",
        example='files = ["torch/utils/cpp_extension.py"]'),
))

RUNNER = Table("[runners.NAME]", "A GPU runner of your CI (`cudamatrix plan`): each cell goes "
               "to a runner whose GPU runs its arch natively, else by the driver's PTX JIT; "
               "a cell none serves builds without a GPU, the reason said. Declare none and "
               "one runner labelled `gpu` takes every cell.", (
    Key("labels", STRINGS, "the labels a job for it asks for, beside --runner-labels",
        required=True, example='labels = ["gpu-h100"]'),
    Key("gpu", STRING, "the arch of its GPU (none: it takes every cell)",
        example='gpu = "sm_90"'),
    Key("driver", STRING, "the driver label it stands for (`plan --driver NAME`; none: its "
        "own driver)", example='driver = "earliest"'),
))

PROJECT = Table("cudamatrix.toml", "A project: its cases and its part of the matrix (also "
                "[tool.cudamatrix] in pyproject.toml).", (
    Key("cases", STRINGS, "folders of cases, relative to this file", default=[],
        example='cases = ["cudamatrix-cases"]'),
    Key("known_bugs", BOOLEAN, "also run the tool's corpus of known CUDA bugs", default=False,
        example="known_bugs = true"),
    Key("matrix", STRING, "a matrix file of your own in place of the tool's",
        example='matrix = "matrix.toml"'),
    Key("default_tier", STRING, "the tier a run takes without --tier (with a matrix of your "
        "own: its default_tier)", default="pr",
        example='default_tier = "nightly"'),
    Key("tiers", "table", "tiers laid over the default matrix's",
        table=Table("tiers", "[tiers.NAME]", extra="table", extra_doc="a tier")),
    Key("libraries", "table", "your versions of a library, or your header libraries",
        table=Table("libraries", "[libraries.NAME]", extra="table", extra_doc="a library")),
    Key("paths", "table", "trees outside the case folders, named for cases' {name} "
        "(lower-case letters, digits, '_')", table=Table("paths", "name = \"folder\"",
                                                          extra=STRING, extra_doc="a tree"),
        example='paths = { ggml = "../llama.cpp/ggml" }'),
    Key("runners", "table", "your CI's GPU runners, for `cudamatrix plan` (none: one runner "
        "labelled `gpu`)",
        table=Table("runners", "[runners.NAME]", extra="table", extra_doc="a runner")),
))

# The tables whose entries are themselves declared tables (a tier, a library, a runner).
_ENTRIES = {("cudamatrix.toml", "tiers"): TIER, ("cudamatrix.toml", "libraries"): LIBRARY,
            ("cudamatrix.toml", "runners"): RUNNER}


def _kind_schema(kind: str) -> dict[str, Any]:
    if kind == STRINGS:
        return {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
    if kind == INTEGERS:
        return {"type": "array", "items": {"type": "integer"}}
    if kind == STRING_LIST:
        return {"type": "array", "items": {"type": "string"}}
    if kind == NUMBERS:
        return {"type": "array", "items": {"type": "number"}}
    if kind == ANY:
        return {}
    if kind == PACKAGE_NAMES:  # as matrix.py's reader takes it: names under CUDA majors
        return {"anyOf": [{"type": "string"}, {
            "type": "object", "minProperties": 1, "additionalProperties": False,
            "patternProperties": {"^[0-9]+$": {"type": "string"}}}]}
    if kind == "table":
        return {"type": "object"}
    return {"type": kind}


def _key_schema(owner: Table, key: Key) -> dict[str, Any]:
    made: dict[str, Any]
    if key.table is not None:
        inner = _table_schema(key.table, _ENTRIES.get((owner.title, key.name)))
        made = {"type": "array", "items": inner} if key.kind == "array of tables" else inner
    else:
        made = _kind_schema(key.kind)
    made["description"] = key.doc
    if key.allowed and key.kind == STRING:
        made["enum"] = list(key.allowed)
    if key.pattern is not None and key.kind == STRING_LIST:
        made["items"]["pattern"] = f"^({key.pattern})$"
    if key.default is not None:
        made["default"] = key.default
    if key.minimum is not None:
        made["minimum"] = key.minimum
    if key.maximum is not None:
        made["maximum"] = key.maximum
    return made


def _table_schema(table: Table, entries: Table | None = None) -> dict[str, Any]:
    made: dict[str, Any] = {"type": "object", "description": table.doc,
                            "properties": {k.name: _key_schema(table, k) for k in table.keys}}
    required = [k.name for k in table.keys if k.required]
    if required:
        made["required"] = required
    if entries is not None:
        made["additionalProperties"] = _table_schema(entries)
    elif table.extra is None:
        made["additionalProperties"] = False
    elif table.extra_names is not None:
        made["patternProperties"] = {table.extra_names: _kind_schema(table.extra)}
        made["additionalProperties"] = False
    else:
        made["additionalProperties"] = _kind_schema(table.extra)
    return made


def declared_defaults(table: Table) -> dict[str, Any]:
    """Each key of `table` that has a default, with it: what a reader fills in once, so no
    stage reads a key with a default of its own."""
    return {key.name: key.default for key in table.keys if key.default is not None}


def json_schema(which: str) -> dict[str, Any]:
    """The JSON Schema (Draft 2020-12) of case.toml (`case`) or cudamatrix.toml
    (`project`): every key declared here, any other refused as `validate` refuses it."""
    table = {"case": CASE, "project": PROJECT}[which]
    return {"$schema": SCHEMA_DRAFT, "$id": f"{SCHEMA_BASE}/{which}.json",
            "title": table.title, **_table_schema(table)}


# Where `cudamatrix init` puts the installed release's schemas in a project: its files'
# #:schema lines name them by a relative path, so an editor checks every key offline, with
# the rules of the release the project runs.
SCHEMA_FOLDER = (".cudamatrix", "schema")


def schema_line(schema: str) -> str:
    """The first line of a file `cudamatrix init` writes: editors (Taplo, Even Better
    TOML) validate the file against the schema it names (a path relative to the file)."""
    return f"#:schema {schema}\n"


def walk(table: Table, place: str = "") -> Iterator[tuple[str, Table]]:
    """Every declared table under `table` (itself first), each with its place in the file
    (``variant.run.args``; ``tiers.NAME`` for a table of entries)."""
    yield place or table.title, table
    for key in table.keys:
        where = f"{place}.{key.name}" if place else key.name
        entries = _ENTRIES.get((table.title, key.name))
        if entries is not None:
            yield from walk(entries, f"{where}.NAME")
        elif key.table is not None and key.table.keys:
            yield from walk(key.table, where)
