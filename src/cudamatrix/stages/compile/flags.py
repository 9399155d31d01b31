"""A case's compiler flags as the compiler must see them.

Relative include folders are the case's own: ``-Iinclude`` means the ``include``
folder beside case.toml, wherever the tool was started and wherever the case is
mounted (a container sees the corpus at another path). A case names the toolkit's
folders by placeholder, never by an absolute path that holds on one machine only.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence

from ...common.confined import case_path
from ..cell.environment import Environment

# {toolkit_includes}, a flag of its own, stands for one -I per include folder of the toolkit.
PLACEHOLDERS = ("toolkit_root", "toolkit_include", "toolkit_includes")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_]+)\}")
# Options whose value is a path the compiler reads (an include folder, a header included
# first, a library folder): (option, the joined form's prefix or None where only the
# next word is its value). Every one of them is a path from the case folder.
_PATH_OPTIONS: tuple[tuple[str, str | None], ...] = (
    ("-I", "-I"), ("-isystem", "-isystem"), ("-iquote", "-iquote"),
    ("-idirafter", "-idirafter"), ("--include-path", "--include-path="),
    ("--system-include", "--system-include="), ("-include", None),
    ("--pre-include", "--pre-include="), ("-L", "-L"), ("--library-path", "--library-path="),
)


def unknown_placeholders(flag: str) -> list[str]:
    """The ``{names}`` in a flag that are not placeholders this tool fills in."""
    return [name for name in _PLACEHOLDER.findall(flag) if name not in PLACEHOLDERS]


def _fill(flag: str, env: Environment | None) -> str:
    if env is None:
        return flag
    values = {"toolkit_root": env.root,
              "toolkit_include": env.include_dirs[0] if env.include_dirs else env.root}
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), flag)


def _path_option(flag: str) -> tuple[str, str | None] | None:
    """The path option `flag` is: (option, None) when its value is the next word,
    (prefix, value) when joined; None when it names no path."""
    for option, joined in _PATH_OPTIONS:
        if flag == option:
            return option, None
        if joined and flag.startswith(joined) and len(flag) > len(joined):
            return joined, flag[len(joined):]
    return None


def resolve_flags(flags: Sequence[str], case_dir: str, env: Environment | None) -> list[str]:
    """Placeholders filled in, every path an option names made absolute against the case
    folder."""
    resolved: list[str] = []
    takes_path = False
    for raw in flags:
        if raw == "{toolkit_includes}":
            resolved += [f"-I{d}" for d in (env.include_dirs if env else ())]
            continue
        flag = _fill(raw, env)
        if takes_path:
            resolved.append(case_path(flag, case_dir))
            takes_path = False
            continue
        option = _path_option(flag)
        if option is not None and option[1] is None:
            takes_path = True
        elif option is not None and option[1] is not None:
            flag = option[0] + case_path(option[1], case_dir)
        resolved.append(flag)
    return resolved


# nvcc's options whose value is a comma list it splits (-Xcompiler a,b passes a and b to
# the host compiler; --pre-include=a,b includes both).
_LIST_OPTIONS = ("--pre-include", "--include-path", "--system-include", "--library-path")
_HOST_OPTIONS = ("-Xcompiler", "--compiler-options")


def _host_words(flags: Sequence[str]) -> list[str]:
    """What nvcc hands the host compiler: each -Xcompiler value, split at its commas."""
    words: list[str] = []
    for index, flag in enumerate(flags):
        for option in _HOST_OPTIONS:
            if flag == option and index + 1 < len(flags):
                words += flags[index + 1].split(",")
            elif flag.startswith(option + "="):
                words += flag[len(option) + 1:].split(",")
    return words


def path_values(flags: Sequence[str]) -> list[str]:
    """The path each path option names, as the compilers read it (``-Ifoo``, ``-I foo``,
    ``--include-path=foo``, ``-include pre.h``, ``-Llib``; each piece of nvcc's comma lists,
    ``--pre-include=a.h,b.h``; and the same options inside ``-Xcompiler`` values, which
    nvcc splits at commas for the host compiler)."""
    found: list[str] = []
    for index, flag in enumerate(flags):
        option = _path_option(flag)
        if option is None or (index > 0 and flags[index - 1] in _HOST_OPTIONS):
            continue  # an -Xcompiler value is the host compiler's: read below
        value = option[1] if option[1] is not None else (
            flags[index + 1] if index + 1 < len(flags) else None)
        if value is None:
            continue
        listed = option[0].rstrip("=") in _LIST_OPTIONS
        found += value.split(",") if listed else [value]
    host = _host_words(flags)
    if host:
        found += path_values(host)
    return found


def include_folders(flags: Sequence[str], case_dir: str, env: Environment | None) -> list[str]:
    """The paths the flags name (include and library folders, headers included first),
    the toolkit's own left out (its package versions stand for them): what a case's
    compile reads besides its folder."""
    found = path_values(resolve_flags(flags, case_dir, env))
    root = env.root.rstrip("/") + "/" if env is not None and env.root else None
    return [f for f in found if root is None or not (f + "/").startswith(root)]


def shown(command: Sequence[str], env: Environment | None = None) -> str:
    """A command line for the log exactly as it ran, each word shell-quoted: pasted into a
    shell in the cell's folder it runs the same compile (with `env`, the toolkit's library
    folders on LD_LIBRARY_PATH first, as the cell's process had them: NVRTC loads its
    builtins by name). Every path is the machine's own: no placeholder to fill in."""
    words = shlex.join(command)
    if env is not None and env.library_dirs:
        words = f"LD_LIBRARY_PATH={shlex.quote(os.pathsep.join(env.library_dirs))} {words}"
    return words
