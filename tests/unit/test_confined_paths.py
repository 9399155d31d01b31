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

from pathlib import Path

import pytest

from conftest import cudamatrix_in_process as read
from conftest import write_case
from cudamatrix.config.corpus import load_case
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
