"""The reproducer corpus: ``<dir>/<case-id>/case.toml`` plus sources.

A case holds variants (usually the buggy form and the fixed form); each
variant says how it is compiled and what the matrix should find, per cell,
through ordered expectations whose ``when`` tables select cells by axis.
The field names are a user-facing format: change them only with a migration.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..common.confined import FLAGS, Outside, confined, inside, plain_relative
from ..common.folders import walk
from ..common.keys import check_keys
from ..common.tomlfile import load_toml
from ..common.versions import HOST_COMPILER, PYTHON, WHEN_KEYS
from ..errors import UserError
from ..stages.cell.job import VariantSettings
from ..stages.cell.specs import (
    BuildSpec,
    SlowdownBudget,
    TimingSpec,
)
from ..stages.compile.flags import PLACEHOLDERS, path_values, unknown_placeholders
from ..stages.frontends import registered
from ..stages.frontends.build_run import BUILD_PLACEHOLDERS
from .case_tables import Expectation, Spec, selects
from .declarations import (
    BOOLEAN,
    BUILD,
    CASE,
    FLAGS_IF,
    INTEGER,
    LIBRARY_NAME_PATTERN,
    NUMBER,
    STRING,
    TIME,
    VARIANT,
    declared_defaults,
)
from .run_table import RUN_KEYS, RunTableReader
from .sources import SourceSpec
from .torch_cuda import PAIRINGS, TORCH

# The variant's keys that are fields of VariantSettings with a scalar value: read and
# checked by their declaration alone (_Reader.settings), so a new one is its field and its
# Key, with no reading code.
DECLARED_SETTINGS = tuple(
    f.name for f in fields(VariantSettings)
    if f.name in VARIANT.names() and VARIANT.key(f.name).kind in (STRING, BOOLEAN, INTEGER, NUMBER))
# The keys of each table of case.toml, as declarations.py declares them (the schema and
# the reference are made from the same declarations).
CASE_KEYS = CASE.names()
# The file that makes a folder a case.
CASE_FILE = "case.toml"
VARIANT_KEYS = VARIANT.names()
# [variant.time]: how a kernel that ran is timed (stages/device/timing.py).
TIME_KEYS = TIME.names()
# A library's name, as matrix.toml's [libraries.NAME] spells it.
LIBRARY_NAME = re.compile(LIBRARY_NAME_PATTERN)
# [variant.build]: a project's own build (the build frontend).
BUILD_KEYS = BUILD.names()

# A case id is its folder's name and travels into file names, XML, Markdown and HTML.
CASE_ID = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Variant(VariantSettings):
    """One [[variant]] of a case: what its worker reads as it is (VariantSettings: the
    kernel, [variant.run], [variant.build], ...), and what the plan and the orchestrator
    read to make its cells (its axes, expectations, flags for each cell)."""

    name: str
    source: Path
    frontend: str
    flags: tuple[str, ...] = ()
    only: Mapping[str, Spec] = field(default_factory=dict)
    expect: tuple[Expectation, ...] = ()
    timeout: float | None = None
    # nvcc's host compiler for this variant (a program on PATH); None: the run's choice.
    host_compiler: str | None = None
    # Header libraries ([libraries.NAME], headers = true) its compiles put ahead of the
    # toolkit's include folders, each an axis of its cells (at most one, for now).
    libraries: tuple[str, ...] = ()
    # The case folder: every relative path of the variant (its source, its include
    # folders) means a path from here, wherever the source itself lies (stages/compile/flags.py).
    case_dir: Path | None = None
    # [[variant.flags_if]]: flags added, in order, to the cells whose axes `when` selects
    # (ggml's `-compress-mode=size` from CUDA 12.8 on).
    flags_if: tuple[tuple[Mapping[str, Spec], tuple[str, ...]], ...] = ()
    # [variant.defines] once expanded: this variant's one value of each (NAME, VALUE),
    # its cells' -DNAME=VALUE; before, each NAME with all its values.
    defines: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Which toolkits its torch releases are planned with, in place of the tier's
    # (config/torch_cuda.py); None: the tier's.
    torch_pairing: str | None = None
    # The Pythons whose headers its cells are built against (a frontend that includes
    # them): with a tier's `python`, the values both list; empty: the tier's.
    python: tuple[str, ...] = ()

    def flags_for(self, axes: Mapping[str, str | None]) -> tuple[str, ...]:
        """The cell's flags: the variant's, each flags_if's whose `when` matches, in order,
        and its defines."""
        added = [flag for when, flags in self.flags_if if selects(when, axes) for flag in flags]
        defines = [f"-D{name}={values[0]}" for name, values in self.defines if len(values) == 1]
        return (*self.flags, *added, *defines)

    def selects(self, axes: Mapping[str, str | None]) -> bool:
        """Whether a cell with these axis values belongs to this variant at all."""
        return selects(self.only, axes)

    def expectation_for(self, axes: Mapping[str, str | None]) -> Expectation:
        for expectation in self.expect:
            if expectation.applies(axes):
                return expectation
        return Expectation(outcome="pass")


@dataclass(frozen=True)
class Case:
    id: str
    title: str
    directory: Path
    variants: tuple[Variant, ...]
    upstream: tuple[str, ...] = ()
    description: str = ""


class _Reader(RunTableReader):
    """Validates one case.toml, prefixing every error with the file and entry: the case,
    its variants, their sources and builds (each table of a variant: case_tables.py)."""

    def __init__(self, path: Path, root: Path, trees: Mapping[str, Path] | None = None) -> None:
        super().__init__(path)
        # The corpus folder the case came from: its sources and include folders stay inside.
        self.root = root.resolve()
        # The project's [paths]: folders its cases may name as {NAME}, and nothing above.
        self.trees = {name: folder.resolve() for name, folder in (trees or {}).items()}

    def tree_path(self, where: str, what: str, value: str) -> Path | None:
        """`value` that starts with a [paths] name (``{ggml}/src/x.cu``) as the path it
        names, kept inside that tree; None when it starts with none."""
        found = re.match(r"\{([a-z][a-z0-9_]*)\}(/.*)?$", value)
        if found is None or found.group(1) not in self.trees:
            return None
        tree = self.trees[found.group(1)]
        try:
            return confined((found.group(2) or "").lstrip("/") or ".", tree, [tree],
                            f"[paths] {found.group(1)}")
        except Outside as refused:
            raise self.fail(where, f"{what} {value!r:.80} {refused}") from None

    def expand_trees(self, text: str) -> str:
        """{NAME} of the project's [paths] replaced by its folder."""
        return re.sub(r"\{([a-z][a-z0-9_]*)\}",
                      lambda m: str(self.trees[m.group(1)]) if m.group(1) in self.trees
                      else m.group(0), text)

    def inside(self, where: str, what: str, value: str, directory: Path) -> Path:
        """`value`, relative to the case folder, as a path inside the corpus folder (or a
        tree of the project's [paths], as {NAME}/...); a path that leaves it (``../..``,
        absolute, a link out) would let a case read any file of the machine into the
        reports. The one check of every path a case names (common/confined.py decides)."""
        in_tree = self.tree_path(where, what, value)
        if in_tree is not None:
            return in_tree
        named = re.match(r"\{([a-z][a-z0-9_]*)\}", value)
        if named is not None and named.group(1) not in PLACEHOLDERS:
            raise self.fail(where, f"{what} {value!r:.80} names {{{named.group(1)}}}, which the "
                            "project's [paths] (cudamatrix.toml) does not declare")
        try:
            return confined(value, directory, [self.root], "the corpus folder")
        except Outside as refused:
            hint = ("; give it relative to the case folder (or use a {toolkit_...} "
                    "placeholder)" if os.path.isabs(value) else "")
            raise self.fail(where, f"{what} {value!r:.80} {refused}{hint}") from None

    def links_stay_inside(self, directory: Path) -> None:
        """No link in the case folder leads out of the corpus: ``#include "inc/x.h"``
        through such a link would put any file of the machine into the compiler's
        messages, and so into the reports."""
        for root, dirs, names in walk(directory, "case folder"):
            for name in [*dirs, *names]:
                path = Path(root) / name
                if path.is_symlink():
                    target = self.link_target(directory, path)
                    if not inside(target, [self.root]):
                        raise self.fail(str(path.relative_to(directory)),
                                        f"a link that leads outside the corpus folder "
                                        f"{self.root} (to {target})")

    def link_target(self, directory: Path, link: Path) -> Path:
        """Where `link` leads; a link that names itself, or a chain of links back to it,
        leads nowhere (pathlib's RuntimeError, ELOOP), and no compile could read it."""
        try:
            return link.resolve()
        except (RuntimeError, OSError):
            raise self.fail(str(link.relative_to(directory)),
                            f"a link that loops back to itself ({os.readlink(link)!a})") from None

    def variant(self, index: int, raw: Any, directory: Path) -> Variant:
        where = f"variant[{index}]"
        if not isinstance(raw, dict):
            raise self.fail(where, "expected a table")
        name = raw.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9._-]+", name):
            raise self.fail(where, f"name must be letters, digits, '.', '_' or '-', got {name!r}")
        where = f"variant {name!r}"
        check_keys(where, raw, VARIANT_KEYS, self.fail)
        contradiction = VARIANT.contradiction(raw)
        if contradiction is not None:
            raise self.fail(where, contradiction)
        frontend = raw.get("frontend")
        if not isinstance(frontend, str) or frontend not in registered():
            raise self.fail(where, f"frontend must be one of {', '.join(registered())}, "
                            f"got {frontend!r}")
        build = self.build(f"{where}.build", raw.get("build"), frontend)
        for key in ("artifact", "run", "kernel", "flags", "flags_if", "defines", "load",
                    "options"):
            if build and key in raw:
                raise self.fail(f"{where}.{key}", "a build case takes no " + key + ": its "
                                "outputs are audited per arch and build.test runs on a GPU")
        source = self.source(where, raw.get("source"), directory, frontend, build)
        libraries = self.libraries(f"{where}.libraries", raw.get("libraries", []), frontend)
        timeout = raw.get("timeout")
        if timeout is not None and (isinstance(timeout, bool)
                                    or not isinstance(timeout, int | float)
                                    or not math.isfinite(timeout) or timeout <= 0):
            raise self.fail(where, f"timeout must be a positive number of seconds, got {timeout!r}")
        settings = self.settings(where, raw, frontend)
        raw_run = raw.get("run", {})
        if not isinstance(raw_run, dict):
            raise self.fail(f"{where}.run", "expected a table")
        check_keys(f"{where}.run", raw_run, RUN_KEYS, self.fail)
        self.run_table(f"{where}.run", raw_run)
        # Every declared default filled in once, here: the GPU stages add none.
        run = self.launch_spec(raw_run) if raw_run else None
        options = raw.get("options", {})
        if not isinstance(options, dict):
            raise self.fail(f"{where}.options", "expected a table")
        allowed = registered()[frontend].options  # each frontend's own option schema
        if options and not allowed:
            raise self.fail(f"{where}.options", f"the {frontend} frontend takes no options, "
                            f"got {', '.join(map(repr, options))}")
        check_keys(f"{where}.options", options, allowed, self.fail)
        options = {**dict(registered()[frontend].option_defaults), **options}
        options.update(self.option_paths(f"{where}.options", options, frontend, directory))
        host_compiler = raw.get("host_compiler")
        if host_compiler is not None:
            if not isinstance(host_compiler, str) or not HOST_COMPILER.fullmatch(host_compiler):
                raise self.fail(f"{where}.host_compiler", "expected a compiler program such as "
                                f"'g++-12' or 'clang++-19', got {host_compiler!r}")
            if "nvcc" not in registered()[frontend].needs:
                raise self.fail(f"{where}.host_compiler", f"the {frontend} frontend runs no "
                                "host compiler (nvcc's -ccbin)")
        flags = self.flag_list(f"{where}.flags", raw.get("flags", []), directory)
        when_keys = (*WHEN_KEYS, *libraries)
        flags_if = []
        for i, entry in enumerate(self.tables(f"{where}.flags_if", raw.get("flags_if", []))):
            at = f"{where}.flags_if[{i}]"
            if not isinstance(entry, dict):
                raise self.fail(at, "expected a table { when = {...}, flags = [...] }")
            check_keys(at, entry, FLAGS_IF.names(), self.fail)
            if "when" not in entry or "flags" not in entry:
                raise self.fail(at, "needs when (which cells) and flags (what they add)")
            flags_if.append((self.when(f"{at}.when", entry["when"], when_keys),
                             self.flag_list(f"{at}.flags", entry["flags"], directory)))
        defines = self.defines(f"{where}.defines", raw.get("defines", {}))
        torch_pairing = self.torch_pairing(f"{where}.torch_pairing",
                                           raw.get("torch_pairing"), frontend, libraries)
        python = self.pythons(f"{where}.{PYTHON}", raw.get(PYTHON), frontend)
        return Variant(
            name=name,
            source=source,
            frontend=frontend,
            flags=flags,
            **settings,
            only=self.when(f"{where}.only", raw.get("only", {}), (*WHEN_KEYS, *libraries)),
            expect=tuple(self.expectation(f"{where}.expect[{i}]", e, libraries) for i, e in
                         enumerate(self.tables(f"{where}.expect", raw.get("expect", [])))),
            artifacts=tuple(self.artifact(f"{where}.artifact[{i}]", a) for i, a in
                            enumerate(self.tables(f"{where}.artifact", raw.get("artifact", [])))),
            timeout=float(timeout) if timeout is not None else None,
            run=run,
            options=options,
            host_compiler=host_compiler,
            build=build,
            resources=self.resources(f"{where}.resources", raw.get("resources"), frontend),
            libraries=libraries,
            time=self.time_table(f"{where}.time", raw.get("time"), run is not None),
            case_dir=directory.resolve(),
            flags_if=tuple(flags_if),
            defines=defines,
            torch_pairing=torch_pairing,
            python=python,
        )

    def torch_pairing(self, where: str, value: Any, frontend: str,
                      libraries: tuple[str, ...]) -> str | None:
        """A variant's own torch_pairing: one of PAIRINGS, on a variant with a torch axis."""
        if value is None:
            return None
        if value not in PAIRINGS:
            raise self.fail(where, f"expected one of {', '.join(map(repr, PAIRINGS))}, got "
                            f"{value!r:.60}")
        if registered()[frontend].library != TORCH and TORCH not in libraries:
            raise self.fail(where, f"the variant has no torch axis (the {frontend} frontend "
                            "brings none and its libraries do not name torch)")
        return str(value)

    def pythons(self, where: str, value: Any, frontend: str) -> tuple[str, ...]:
        """A variant's own Pythons, as its declaration checks them, on a frontend whose
        compiles include Python's headers (no other has the axis)."""
        if value is None:
            return ()
        refused = VARIANT.key(PYTHON).refusal(value)
        if refused:
            raise self.fail(where, refused)
        if not registered()[frontend].python_headers:
            having = ", ".join(n for n, f in registered().items() if f.python_headers)
            raise self.fail(where, f"the {frontend} frontend includes no Python headers "
                            f"(the python axis is for those that do: {having or 'none'})")
        if not value:
            raise self.fail(where, "give at least one Python (installed, 3.N)")
        return tuple(dict.fromkeys(value))

    def settings(self, where: str, raw: Mapping[str, Any], frontend: str) -> dict[str, Any]:
        """The variant's settings its declaration alone checks (DECLARED_SETTINGS: a
        scalar key that is a field of VariantSettings, maxrregcount, load...), each refused
        on a frontend its declaration does not name; the kernel's name read as a name."""
        found = {}
        for name in DECLARED_SETTINGS:
            key = VARIANT.key(name)
            if key.frontends and name in raw and frontend not in key.frontends:
                raise self.fail(f"{where}.{name}", f"the {frontend} frontend takes no {name} "
                                f"(only {', '.join(key.frontends)})")
            found[name] = self.declared(where, key, raw.get(name))
        found["kernel"] = self.kernel(where, found.get("kernel"))
        return found

    def option_paths(self, where: str, options: Mapping[str, Any], frontend: str,
                     directory: Path) -> dict[str, list[str]]:
        """The frontend's options that name paths (its `path_options`), each held to the
        check `source` and `flags` are: a file's name inside the corpus (or a [paths]
        tree, expanded), a flag's path as `flags`' are. torch-extension's `sources` and
        `cxx_flags` were compiled as written: ``../../outside.cpp``, ``-include
        /etc/hostname``."""
        checked: dict[str, list[str]] = {}
        for key, kind in registered()[frontend].path_options:
            value = options.get(key, [])
            if not isinstance(value, list):
                raise self.fail(f"{where}.{key}", f"expected a list of strings, got {value!r:.60}")
            if kind == FLAGS:
                checked[key] = list(self.flag_list(f"{where}.{key}", value, directory))
                continue
            for name in self.strings(f"{where}.{key}", value):
                self.inside(f"{where}.{key}", "path", name, directory)
            checked[key] = [self.expand_trees(name) for name in value]
        return checked

    def flag_list(self, where: str, raw: Any, directory: Path) -> tuple[str, ...]:
        """Compiler flags: strings, every path they name inside the corpus, every
        placeholder one the tool fills in."""
        flags = self.strings(where, raw)
        for folder in path_values(flags):
            if folder.startswith("{") and self.tree_path(where, "path", folder) is None:
                # A placeholder's path stays inside what it names: checked as it will be
                # filled in ({toolkit_root}/../.. is the machine's root).
                if ".." in Path(folder).parts:
                    raise self.fail(where, f"path {folder!r:.80} leads outside the folder its "
                                    "placeholder names")
                continue
            if self.tree_path(where, "path", folder) is None:
                self.inside(where, "path", folder, directory)
        for flag in flags:
            unknown_names = [n for n in unknown_placeholders(flag) if n not in self.trees]
            if unknown_names:
                known_names = ", ".join("{" + p + "}" for p in (*PLACEHOLDERS, *self.trees))
                raise self.fail(where, f"unknown placeholder {{{unknown_names[0]}}} "
                                f"in {flag!r} (known: {known_names}; a project names its "
                                "trees in cudamatrix.toml's [paths])")
        return tuple(self.expand_trees(flag) for flag in flags)

    def defines(self, where: str, raw: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """[variant.defines]: a build option's values, each a cell of its own (-DNAME=VALUE
        added to the flags): NAME = ["0", "1"]."""
        if not isinstance(raw, dict):
            raise self.fail(where, 'expected a table such as { GGML_CUDA_FORCE_MMQ = ["0", "1"] }')
        found = []
        for name, values in raw.items():
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise self.fail(where, f"{name!r:.60} is no C macro name")
            listed = self.strings(f"{where}.{name}", values)
            if not listed or not all(re.fullmatch(r"[A-Za-z0-9_.+-]+", v) for v in listed) \
                    or len(set(listed)) != len(listed):
                raise self.fail(f"{where}.{name}", "expected distinct values of letters, digits, "
                                f"'_', '.', '+' or '-', got {values!r:.60}")
            found.append((name, tuple(listed)))
        combinations = math.prod(len(values) for _, values in found)
        if combinations > MAX_DEFINE_COMBINATIONS:
            raise self.fail(where, f"{combinations:,} combinations of values, each a variant of "
                            f"its own: at most {MAX_DEFINE_COMBINATIONS:,} (split the case, or "
                            "list fewer values)")
        return tuple(found)

    def time_table(self, where: str, raw: Any, runs: bool) -> TimingSpec | None:
        """[variant.time], checked: a kernel is timed only where it runs."""
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise self.fail(where, "expected a table such as { l2 = \"cold\", noise = 0.005 }")
        check_keys(where, raw, TIME_KEYS, self.fail)
        if not runs:
            raise self.fail(where, "a kernel is timed where it runs: give [variant.run] too")
        if raw.get("l2", TIME.key("l2").default) not in TIME.key("l2").allowed:
            raise self.fail(f"{where}.l2", f"cold (flushed before each sample) or hot, got "
                            f"{raw.get('l2')!r:.40}")
        for key, low, high in (("noise", 0.0001, 0.5), ("max_seconds", 0.01, 30.0),
                               ("max_us", 0.001, 1e9)):
            value = raw.get(key)
            if key in raw and (isinstance(value, bool) or not isinstance(value, int | float)
                               or not low <= value <= high):
                raise self.fail(f"{where}.{key}", f"expected a number from {low} to {high}, "
                                f"got {value!r:.40}")
        slowdown = raw.get("max_slowdown")
        if slowdown is not None:
            if not isinstance(slowdown, dict) or set(slowdown) != {"toolkit", "ratio"}:
                raise self.fail(f"{where}.max_slowdown", "expected { toolkit = \"12.4\", "
                                "ratio = 1.05 }")
            ratio = slowdown["ratio"]
            if not isinstance(slowdown["toolkit"], str) \
                    or not re.fullmatch(r"\d+\.\d+", slowdown["toolkit"]):
                raise self.fail(f"{where}.max_slowdown.toolkit", "expected a toolkit such as "
                                f"\"12.4\", got {slowdown['toolkit']!r:.40}")
            if isinstance(ratio, bool) or not isinstance(ratio, int | float) \
                    or not 1.0 <= ratio <= 100.0:
                raise self.fail(f"{where}.max_slowdown.ratio", "expected a number from 1.0 "
                                f"to 100.0, got {ratio!r:.40}")
        return timing_spec(raw)

    def libraries(self, where: str, value: Any, frontend: str) -> tuple[str, ...]:
        """The header libraries a variant names: one axis a cell, so one library, and only
        for a frontend that brings no library axis of its own (whether each is a header
        library of the matrix is the plan's to check: the matrix is not read here)."""
        names = self.strings(where, value)
        for name in names:
            if not LIBRARY_NAME.fullmatch(name):
                raise self.fail(where, f"{name!r} is not a library's name ([libraries.NAME])")
        own = registered()[frontend].library
        if names and own:
            raise self.fail(where, f"the {frontend} frontend has its own library axis ({own}); "
                            "libraries names header libraries for the frontends without one")
        if len(names) > 1:
            raise self.fail(where, "one header library a variant (a cell has one library "
                            f"axis); got {', '.join(names)}")
        return names

    def source(self, where: str, name: Any, directory: Path, frontend: str,
               build: BuildSpec | None) -> Path:
        """A kernel case's source file; a build case's project folder (the case folder
        itself unless named), none where [variant.build] names its project."""
        if registered()[frontend].builds_project:
            if build is not None and build.project is not None:
                if name is not None:
                    raise self.fail(where, "give source (a folder here) or build.project, "
                                    "not both")
                return directory
            name = "." if name is None else name
            if not isinstance(name, str):
                raise self.fail(where, f"source must be a folder, got {name!r}")
            folder = self.inside(where, "source", name, directory)
            if not folder.is_dir():
                raise self.fail(where, f"source {name!r}: a build's source is a folder")
            return folder
        if not isinstance(name, str):
            raise self.fail(where, "source is required (a file next to case.toml)")
        inside = self.inside(where, "source", name, directory)
        source = inside if name.startswith("{") else directory / name
        if not source.is_file():
            raise self.fail(where, f"source file {source} does not exist")
        return source

    def build(self, where: str, raw: Any, frontend: str) -> BuildSpec | None:
        """[variant.build], checked: only the build frontend has one, and it must."""
        if not registered()[frontend].builds_project:
            if raw is not None:
                raise self.fail(where, f"the {frontend} frontend takes no build table "
                                "(frontend = \"build\" runs a project's own build)")
            return None
        if not isinstance(raw, dict):
            raise self.fail(where, "the build frontend needs a [variant.build] table with "
                            "its commands")
        check_keys(where, raw, BUILD_KEYS, self.fail)
        commands = self.strings(f"{where}.commands", raw.get("commands"))
        if not commands:
            raise self.fail(f"{where}.commands", "give at least one command")
        for command in commands:
            try:
                shlex.split(command)
            except ValueError as exc:
                raise self.fail(f"{where}.commands", f"{command!r}: {exc}") from None
        env = raw.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise self.fail(f"{where}.env", "expected a table of strings")
        texts = [*commands, *(str(raw.get("test", "")),), *env.values()]
        for text in texts:
            unknown = [n for n in re.findall(r"\{([a-z_]+)\}", text)
                       if n not in BUILD_PLACEHOLDERS]
            if unknown:
                known = ", ".join("{" + p + "}" for p in BUILD_PLACEHOLDERS)
                raise self.fail(where, f"unknown placeholder {{{unknown[0]}}} in {text!r} "
                                f"(known: {known})")
        table = {**declared_defaults(BUILD), **raw}
        outputs = self.strings(f"{where}.outputs", table["outputs"])
        for pattern in outputs:
            if not plain_relative(pattern):
                raise self.fail(f"{where}.outputs", f"{pattern!r}: outputs are patterns "
                                "inside the project's folder")
        project = raw.get("project")
        if project is not None:
            if not isinstance(project, str):
                raise self.fail(f"{where}.project", f"expected a source, got {project!r}")
            project = str(SourceSpec.parse(project, f"{self.path}: {where}.project"))
        return BuildSpec(
            commands=commands, project=project, outputs=outputs,
            test=self.strings(f"{where}.test", raw["test"])[0] if "test" in raw else None,
            requires=self.strings(f"{where}.requires", table["requires"]),
            env=tuple((str(k), str(v)) for k, v in env.items()))


# A case's [variant.defines] makes a variant per combination of values, and a cell per
# variant, toolkit and arch: more than this is a typo's or a hostile file's, not a matrix
# (10^9 was a MemoryError, 10^5 a minute of validate).
MAX_DEFINE_COMBINATIONS = 1024


def timing_spec(raw: Mapping[str, Any]) -> TimingSpec:
    """A checked [variant.time] as the GPU stages receive it, its declared defaults filled."""
    table = {**declared_defaults(TIME), **raw}
    slowdown = table.get("max_slowdown")
    return TimingSpec(l2=str(table["l2"]), noise=float(table["noise"]),
                      max_seconds=float(table["max_seconds"]),
                      max_us=None if table.get("max_us") is None else float(table["max_us"]),
                      bytes=None if table.get("bytes") is None else int(table["bytes"]),
                      max_slowdown=None if slowdown is None else SlowdownBudget(
                          str(slowdown["toolkit"]), float(slowdown["ratio"])))


def with_defines(variant: Variant) -> list[Variant]:
    """A variant with [variant.defines] as one variant per combination of their values,
    each named after its values (``cmake-flags.GGML_CUDA_FORCE_MMQ-1``), so the cell id
    and the tables say which build option a cell had; -DNAME=VALUE in its flags."""
    if not variant.defines:
        return [variant]
    combinations: list[list[tuple[str, str]]] = [[]]
    for name, values in variant.defines:
        combinations = [[*done, (name, value)] for done in combinations for value in values]
    several = {name for name, values in variant.defines if len(values) > 1}
    return [replace(variant, defines=tuple((n, (v,)) for n, v in chosen),
                    name=".".join([variant.name, *(f"{n}-{v}" for n, v in chosen
                                                   if n in several)]))
            for chosen in combinations]


def load_case(directory: Path, root: Path | None = None,
              trees: Mapping[str, Path] | None = None) -> Case:
    """The case in `directory`; its files must lie inside `root` (its corpus folder) or a
    tree of the project's [paths] (`trees`), named {NAME}."""
    path = directory / CASE_FILE
    raw = load_toml(path)
    reader = _Reader(path, root if root is not None else directory.parent, trees)
    check_keys("case", raw, CASE_KEYS, reader.fail)
    reader.links_stay_inside(directory)
    title = raw.get("title")
    if not isinstance(title, str) or not title:
        raise reader.fail("title", "a case needs a title")
    variants = raw.get("variant")
    if not isinstance(variants, list) or not variants:
        raise reader.fail("variant", "a case needs at least one [[variant]]")
    parsed = tuple(expanded for i, v in enumerate(variants)
                   for expanded in with_defines(reader.variant(i, v, directory)))
    names = [v.name for v in parsed]
    duplicate = {n for n, count in Counter(names).items() if count > 1}
    if duplicate:
        raise reader.fail("variant", f"duplicate variant name(s) {sorted(duplicate)}")
    return Case(
        id=directory.name,
        title=title,
        directory=directory,
        variants=parsed,
        upstream=reader.links("upstream", raw.get("upstream", [])),
        description=str(raw.get("description", "")),
    )


def load_corpus(directories: Iterable[Path], trees: Mapping[str, Path] | None = None
                ) -> list[Case]:
    """Every case under the given folders; a case id may appear only once. `trees`: the
    project's [paths], which its cases may name as {NAME}."""
    cases: dict[str, Case] = {}
    for directory in directories:
        if not directory.is_dir():
            raise UserError(f"{directory}: corpus folder not found")
        found = sorted(p.parent for p in directory.glob("*/case.toml"))
        if not found:
            raise UserError(f"{directory}: no cases (expected <case-id>/case.toml folders)")
        for case_dir in found:
            if not CASE_ID.fullmatch(case_dir.name):
                raise UserError(f"{str(case_dir)!a}: a case folder's name is its id: "
                                "letters, digits, '.', '_' or '-' only")
            case = load_case(case_dir, directory, trees)
            if case.id in cases:
                raise UserError(f"{case_dir}: case id {case.id!r} already defined in "
                                f"{cases[case.id].directory}")
            cases[case.id] = case
    return sorted(cases.values(), key=lambda c: c.id)


def select_cases(cases: Sequence[Case], wanted: Sequence[str]) -> list[Case]:
    if not wanted:
        return list(cases)
    known = {c.id for c in cases}
    missing = [w for w in wanted if w not in known]
    if missing:
        raise UserError(f"unknown case(s) {', '.join(missing)} (known: {', '.join(sorted(known))})")
    return [c for c in cases if c.id in wanted]
