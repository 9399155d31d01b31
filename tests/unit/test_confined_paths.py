"""Every name a case, a compiler's message or a preprocessor's line marker gives a path
through is confined (common/confined.py), and each capability goes through that one
home (issue 79, breaks 3, 8 and 9):

- torch-extension's `sources` and `cxx_flags` passed `validate` and were compiled
  (``../../outside.cpp``, ``-include /etc/hostname``) while `flags = ["-I/etc"]` was
  refused: a frontend's path options are now held to the check `flags` is;
- the since-which-release look-up tested ``cuda/../../etc/hostname``, a header name read
  off the compiler's message, in the run's own process, and kept it in its cache;
- the since-which-arch search read whatever file a line marker named (``#line 1
  "/dev/zero"``: 3.8 GB, MemoryError): only bounded regular files of the case, the
  toolkit and the include folders are read, the preprocessor's output bounded too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import tomli_w

import cudamatrix
from conftest import cudamatrix_in_process as read
from conftest import write_case
from cudamatrix.config.corpus import load_case
from cudamatrix.config.declarations import STRING, STRINGS, VARIANT, Key, Table
from cudamatrix.errors import UserError
from cudamatrix.stages.frontends import registered

EXTENSION = """title = "t"
[[variant]]
name = "v"
source = "k.cu"
frontend = "torch-extension"
options = {options}
"""
# What each kind of path option (registry.PATHS, FLAGS) is given to leave the corpus, and
# what must be said.
HOSTILE = {"paths": ('["../../outside.cpp"]', "'../../outside.cpp' leads outside"),
           "flags": ('["-include", "/etc/hostname"]', "'/etc/hostname' is an absolute path")}


def _extension_case(tmp_path: Path, options: str) -> Path:
    folder = tmp_path / "corpus" / "ext"
    write_case(tmp_path / "corpus", "ext", EXTENSION.format(options=options),
               {"k.cu": "__global__ void k() {}\n", "bind.cpp": "int f() { return 1; }\n"})
    (tmp_path / "outside.cpp").write_text("int g() { return 2; }\n")
    return folder


@pytest.mark.parametrize("options, key, says", [
    ('{ sources = ["../../outside.cpp"] }', "sources", "leads outside the corpus folder"),
    ('{ sources = ["/etc/hostname"] }', "sources", "is an absolute path"),
    ('{ cxx_flags = ["-include", "/etc/hostname"] }', "cxx_flags", "is an absolute path"),
    ('{ cxx_flags = ["-I../../.."] }', "cxx_flags", "leads outside the corpus folder"),
    ('{ cxx_flags = ["-I{toolkit_root}/../.."] }', "cxx_flags", "leads outside the folder"),
])
def test_torch_extension_paths_are_refused_as_flags_are(tmp_path: Path, options: str, key: str,
                                                        says: str) -> None:
    folder = _extension_case(tmp_path, options)
    run = read("validate", "--corpus", str(folder.parent))
    assert run.code == 2, run.output[-2000:]
    lines = run.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.output, run.output
    assert f"{folder / 'case.toml'}: variant 'v'.options.{key}: " in lines[0], lines[0]
    assert says in lines[0], lines[0]


def test_torch_extension_paths_inside_the_case_are_kept_as_written(tmp_path: Path) -> None:
    folder = _extension_case(tmp_path, '{ sources = ["bind.cpp"], cxx_flags = ["-I.", '
                                       '"-include", "bind.cpp", "-O2"] }')
    options = load_case(folder).variants[0].options
    assert options["sources"] == ["bind.cpp"]
    assert options["cxx_flags"] == ["-I.", "-include", "bind.cpp", "-O2"]


@pytest.mark.parametrize("name", sorted(registered()))
def test_every_declared_path_option_is_held_to_the_one_check(tmp_path: Path, name: str) -> None:
    """Each frontend's path options, as it declares them (Frontend.path_options): a new one
    is tested by being declared."""
    for key, kind in getattr(registered()[name], "path_options", ()):
        value, says = HOSTILE[kind]
        folder = tmp_path / name / key / "corpus" / "c"
        write_case(folder.parent, "c", EXTENSION.replace('"torch-extension"', f'"{name}"')
                   .format(options=f"{{ {key} = {value} }}"), {"k.cu": "\n"})
        with pytest.raises(UserError, match=f"options.{key}: ") as refused:
            load_case(folder)
        assert says in str(refused.value) and "\n" not in str(refused.value)


def test_the_one_check_follows_links_and_names_the_folder(tmp_path: Path) -> None:
    from cudamatrix.common.confined import Outside, confined

    corpus = tmp_path / "corpus"
    (corpus / "c").mkdir(parents=True)
    (corpus / "c" / "out").symlink_to(tmp_path)
    assert confined("../c", corpus / "c", [corpus]) == corpus / "c"
    with pytest.raises(Outside, match="leads outside the corpus folder"):
        confined("out/x", corpus / "c", [corpus], "the corpus folder")
    with pytest.raises(Outside, match="absolute"):
        confined("/etc/hostname", corpus / "c", [corpus])


# -- the one home, by construction ------------------------------------------------------

# The package as imported (a mutated copy, under tests/mutations.py, is the one walked).
PACKAGE = Path(cudamatrix.__file__).resolve().parent
HOME = PACKAGE / "common" / "confined.py"
# Where a case's folder is held: joined with a name anywhere but through the home, a name
# the case wrote becomes a path no check saw (torch-extension's `sources` did so).
_CASE_FOLDERS = ("case_folder", "case_dir")
# The calls that make a case-named value a path through the home: case_path (a name from
# the case folder) and resolve_flags (each path option of compiler flags, by case_path).
_THROUGH = ("case_path", "resolve_flags")
# The floors that read what a case, a compiler or a preprocessor names: none of their
# modules decides by itself whether a path lies in a folder.
_FLOORS = ("config", "stages", "providers")


def _called(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _names_case_folder(node: ast.AST) -> bool:
    return any(name in ast.unparse(node) for name in _CASE_FOLDERS)


def _path_option_reads(tree: ast.Module, options: set[str]) -> list[ast.Constant]:
    """Each place a declared path option is read by its name: an argument of a call
    (``_listed(job, "sources")``, ``options.get("cxx_flags")``) or a subscript's key."""
    found = []
    for node in ast.walk(tree):
        keys: list[ast.expr] = []
        if isinstance(node, ast.Call):
            keys = list(node.args)
        elif isinstance(node, ast.Subscript):
            keys = [node.slice]
        found += [k for k in keys if isinstance(k, ast.Constant) and k.value in options]
    return found


def _goes_through(tree: ast.Module, read: ast.Constant) -> bool:
    """Whether the statement that reads `read` hands it to the home: it sits inside a call
    of _THROUGH, or inside a comprehension whose element is one."""
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    node: ast.AST = read
    while node in parents and not isinstance(node, ast.stmt):
        node = parents[node]
        if isinstance(node, ast.Call) and _called(node) in _THROUGH:
            return True
        if isinstance(node, ast.GeneratorExp | ast.ListComp) and isinstance(node.elt, ast.Call) \
                and _called(node.elt) in _THROUGH:
            return True
    return False


def _joins_case_folder(node: ast.AST) -> bool:
    """A case folder joined with a name: ``case_folder / name``, os.path.join(case_dir, ...),
    ``Path(case_dir).joinpath(...)``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _names_case_folder(node.left)
    if isinstance(node, ast.Call) and _called(node) in ("join", "joinpath"):
        joined = [*node.args, getattr(node.func, "value", node.func)]
        return any(_names_case_folder(part) for part in joined)
    return False


def bypasses(path: Path, path_options: set[str], package: Path = PACKAGE) -> list[str]:
    """Where the module at `path` (of `package`) makes a case-named path, or decides
    containment, around common/confined.py: a case folder joined with a name, a
    frontend's path option read without going through the home, and (in config/,
    stages/, providers/) a path's containment decided by is_relative_to."""
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(package)
    said = []
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        if _joins_case_folder(node):
            said.append(f"{line}: a case folder joined with a name ({ast.unparse(node)})")
        elif isinstance(node, ast.Call) and _called(node) == "is_relative_to" \
                and where.parts[0] in _FLOORS:
            said.append(f"{line}: containment decided here ({ast.unparse(node)}), not by "
                        "common/confined.py's inside or confined")
    if where.parts[:2] == ("stages", "frontends"):
        for option in _path_option_reads(tree, path_options):
            if not _goes_through(tree, option):
                said.append(f"{where}:{option.lineno}: path option {option.value!r} read "
                            "around case_path/resolve_flags")
    return sorted(said, key=lambda line: int(line.split(":")[1]))


def test_no_module_makes_a_case_named_path_around_the_one_home() -> None:
    """Walks every module of the package: a deliberate bypass (torch-extension's
    `Path(job.case_folder) / s`, as it was) fails here (tests/mutations.py has it)."""
    options = {key for f in registered().values() for key, _ in f.path_options}
    assert options, "no frontend declares a path option: the walk would prove nothing"
    found = [said for path in sorted(PACKAGE.rglob("*.py")) if path != HOME
             for said in bypasses(path, options)]
    assert found == []


def test_the_walk_finds_a_bypass(tmp_path: Path) -> None:
    """The walk itself, on the bypasses it must find (the lines the fixes replaced), and
    not on the same reads made through the home."""
    module = tmp_path / "stages" / "frontends" / "bypass_example.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "from pathlib import Path\n"
        "def sources(job):\n"
        '    return [str(Path(job.case_folder) / s) for s in _listed(job, "sources")]\n'
        "def outputs(path, root):\n"
        "    return path.resolve().is_relative_to(root.resolve())\n"
        "def through(job):\n"
        '    return [case_path(s, job.case_folder) for s in _listed(job, "sources")]\n'
        "def flags(job):\n"
        '    return resolve_flags(job.options["sources"], job.case_folder, None)\n')
    found = bypasses(module, {"sources"}, tmp_path)
    assert [said.split(": ", 1)[1].split(" (")[0] for said in found] == [
        "a case folder joined with a name",
        "path option 'sources' read around case_path/resolve_flags",
        "containment decided here"]
    assert [said.split(":")[1] for said in found] == ["3", "3", "5"]


@pytest.mark.parametrize("at", [at for at in (("source",), ("flags",), ("flags_if", "flags"),
                                              ("build", "outputs"))])
def test_every_declared_path_key_is_refused_out_of_the_corpus(tmp_path: Path,
                                                              at: tuple[str, ...]) -> None:
    """Each case key declared as a path kind (declarations.Key.path) given a path out of the
    corpus is refused in one line naming the key."""
    key = _declared_key(at)
    assert key.path, f"{'.'.join(at)} names paths: declare its path kind"
    hostile = {"paths": "../../outside.cu", "flags": ["-include", "/etc/hostname"],
               "patterns": ["../../*.so"]}[key.path]
    variant: dict[str, object] = {"name": "v", "frontend": "nvcc", "source": "k.cu"}
    if at[0] == "flags_if":
        variant["flags_if"] = [{"when": {"toolkit": ">=12"}, "flags": hostile}]
    elif at[0] == "build":
        variant.update(frontend="build", source=".", build={"commands": ["true"],
                                                             "outputs": hostile})
    else:
        variant[at[0]] = hostile
    folder = tmp_path / "corpus" / "c"
    write_case(folder.parent, "c", tomli_w.dumps({"title": "t", "variant": [variant]}),
               {"k.cu": "\n"})
    (tmp_path / "outside.cu").write_text("\n")
    with pytest.raises(UserError) as refused:
        load_case(folder)
    said = str(refused.value)
    assert "\n" not in said and "variant 'v'" in said and at[-1] in said, said


def test_every_key_that_names_paths_is_declared_so() -> None:
    """The keys whose meaning is a path (their doc says so) are each declared with a path
    kind, and every declared one is in the test above."""
    declared, wordy = [], []
    for at, key in _all_keys(VARIANT):
        if key.path:
            declared.append(at)
        elif re.search(r"\b(file|folder|path|paths|globs?)\b", key.doc) and key.kind in (
                STRING, STRINGS) and at[-1] not in _NOT_PATHS:
            wordy.append(at)
    assert wordy == []
    assert sorted(declared) == sorted([("source",), ("flags",), ("flags_if", "flags"),
                                       ("build", "outputs")])


# Keys whose doc speaks of paths but whose value is none of the case's: each with why.
_NOT_PATHS = {
    "project": "a source spec (path:, file:, sdist:, git:), read by config/sources.py",
}


def _all_keys(table: Table, at: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Key]]:
    found = []
    for key in table.keys:
        found.append(((*at, key.name), key))
        if key.table is not None:
            found += _all_keys(key.table, (*at, key.name))
    return found


def _declared_key(at: tuple[str, ...]) -> Key:
    return dict(_all_keys(VARIANT))[at]
