"""A kernel named the way its author writes C++, found among a module's entries.

A case says ``kernel = "compute_gemm"`` or ``kernel = "Marlin<256, 1, 8, 8, 4, -1>"``
or ``kernel = "ns::scale"``, as in the source; the driver looks kernels up by the name
in the module (``_Z12compute_gemmPK6__half...``). NVRTC answers that itself (a name
expression, see compile.py); for every other module the entries are demangled and
matched here, by the full signature, the name with its template arguments, the
qualified name or the unique base name. Several matches are the case's ambiguity, not
a guess: the error lists them, as printed, for the case to copy.

The demangler is the C++ runtime's own ``abi::__cxa_demangle`` (libstdc++, which every
toolkit's host compiler brings), called through ctypes. Not the ``cxxfilt`` package:
this module runs in the cell's worker, and inside a container only the cudamatrix
package is mounted, never its dependencies; the call is one function.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@functools.cache
def _cxa_demangle() -> Any:
    for name in ("stdc++", "c++"):
        found = ctypes.util.find_library(name)
        for candidate in ([found] if found else []) + [f"lib{name}.so.6", f"lib{name}.so.1"]:
            try:
                library = ctypes.CDLL(candidate)
            except OSError:
                continue
            function = library.__cxa_demangle
            function.restype = ctypes.c_void_p
            function.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.POINTER(ctypes.c_int)]
            return function
    return None


@functools.cache
def _free() -> Any:
    function = ctypes.CDLL(None).free
    function.argtypes = [ctypes.c_void_p]
    return function


def demangle(symbol: str) -> str:
    """The C++ signature of a mangled name; anything else (an ``extern "C"`` name, a name
    the demangler does not take, no C++ runtime here) comes back as it is."""
    if not symbol.startswith("_Z"):
        return symbol
    function = _cxa_demangle()
    if function is None:
        return symbol
    status = ctypes.c_int()
    pointer = function(symbol.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not pointer:
        return symbol
    try:
        return ctypes.string_at(pointer).decode(errors="replace")
    finally:
        _free()(pointer)


# What the compile stage records of the case's kernel when its compiler named it (NVRTC):
# the KernelName, or the compiler's own line refusing the name.
KERNEL_RECORD = "kernel"
KERNEL_REFUSED = "kernel_refused"

_OPEN, _CLOSE = "<([", ">)]"


def _split_signature(signature: str) -> tuple[str, str]:
    """(the function's name with its qualifiers and template arguments, its parameters):
    ``void ns::f<(anonymous namespace)::X, 3>(int*)`` -> ``ns::f<(anonymous namespace)::X,
    3>``, ``(int*)``. The parameter list is the last bracket group at depth 0; the return
    type (templates print one) is what precedes the last space at depth 0."""
    depth, start_of_last_group = 0, -1
    for index, char in enumerate(signature):
        if char in _OPEN:
            if depth == 0 and char == "(":
                start_of_last_group = index
            depth += 1
        elif char in _CLOSE:
            depth = max(0, depth - 1)
    if start_of_last_group <= 0 or not signature.rstrip().endswith(")"):
        return signature, ""
    name, parameters = signature[:start_of_last_group], signature[start_of_last_group:]
    depth, last_space = 0, -1
    for index, char in enumerate(name):
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth = max(0, depth - 1)
        elif char == " " and depth == 0:
            last_space = index
    return name[last_space + 1:].strip(), parameters


def _strip_templates(name: str) -> str:
    out, depth = [], 0
    for char in name:
        if char == "<":
            depth += 1
        elif char == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(char)
    return "".join(out)


def _base(qualified: str) -> str:
    depth, last = 0, 0
    for index, char in enumerate(qualified):
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and qualified.startswith("::", index):
            last = index + 2
    return qualified[last:]


def _squeezed(text: str) -> str:
    return "".join(text.split())


@dataclass(frozen=True)
class KernelName:
    """A kernel as the case wrote it, as the module names it, and as C++ prints it."""

    written: str
    lowered: str
    signature: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.written, "lowered": self.lowered, "signature": self.signature}


class KernelNotFound(Exception):
    """The case's kernel is no entry of the module, or more than one (the message says)."""


def _listing(entries: Iterable[str]) -> str:
    shown = [demangle(e) for e in entries]
    return "; ".join(shown[:20]) + (f"; ... ({len(shown)} in all)" if len(shown) > 20 else "") \
        if shown else "none"


def resolve(written: str, entries: Sequence[str]) -> KernelName:
    """The one entry of `entries` (a module's kernels, by their names in the module) that
    `written` names: itself (mangled or ``extern "C"``), its full demangled signature, its
    name with template arguments, its qualified name, or its unique base name."""
    if written in entries:
        return KernelName(written, written, demangle(written))
    wanted = _squeezed(written)
    named = [(entry, demangle(entry)) for entry in entries]
    split = {entry: _split_signature(signature) for entry, signature in named}
    def signature_matches(entry: str, signature: str) -> bool:
        return wanted in (_squeezed(signature), _squeezed("".join(split[entry])))

    def templated_name_matches(entry: str, signature: str) -> bool:
        return _squeezed(split[entry][0]) == wanted

    def qualified_name_matches(entry: str, signature: str) -> bool:
        return _squeezed(_strip_templates(split[entry][0])) == wanted

    def base_name_matches(entry: str, signature: str) -> bool:
        return _squeezed(_base(_strip_templates(split[entry][0]))) == wanted

    def normalized_name_matches(entry: str, signature: str) -> bool:
        return _same_as_written(written, split[entry][0])

    rules = (signature_matches, templated_name_matches, qualified_name_matches,
             base_name_matches, normalized_name_matches)
    for rule in rules:
        found = [(entry, signature) for entry, signature in named if rule(entry, signature)]
        if len(found) == 1:
            entry, signature = found[0]
            return KernelName(written, entry, signature)
        if len(found) > 1:
            raise KernelNotFound(
                f"case error: kernel {written!r} names {len(found)} kernels of the built "
                f"module: {_listing(e for e, _ in found)}; give one of them in full "
                "(its signature or its template arguments)")
    raise KernelNotFound(f"case error: kernel {written!r} is not a kernel of the built module "
                         f"(its kernels: {_listing(entries)})")


# CUDA's own types as its headers typedef them: a case writes `half`, a module says `__half`.
_TYPEDEFS = (("__half2", "half2"), ("__half", "half"), ("__nv_bfloat162", "nv_bfloat162"),
             ("__nv_bfloat16", "nv_bfloat16"))


def _normalized(name: str) -> str:
    """A C++ name as a case may write it and as the demangler prints it, made one: no
    spaces, a function as a template argument by its name (`&(silu(float const&))`,
    `&act::silu`: `silu`, `act::silu`), integer literals without their `u`, CUDA's typedefs
    by the name the case writes."""
    text = _squeezed(name)
    text = re.sub(r"&\(([\w:]+)\([^()]*\)\)", r"\1", text)
    text = re.sub(r"&([\w:]+)", r"\1", text)
    text = re.sub(r"(?<![\w.])(-?\d+)[uU][lL]{0,2}(?![\w.])", r"\1", text)
    text = re.sub(r"(?<![\w.])(-?\d+)[lL]{1,2}(?![\w.])", r"\1", text)
    for typedef, written in _TYPEDEFS:
        text = re.sub(rf"\b{typedef}\b", written, text)
    return text


def _template_arguments(name: str) -> tuple[str, list[str]]:
    """`ns::f<a, b<c, d>>` as its name and its top-level template arguments."""
    start = name.find("<")
    if start < 0 or not name.endswith(">"):
        return name, []
    arguments, depth, current = [], 0, ""
    for char in name[start + 1:-1]:
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        if char == "," and depth == 0:
            arguments.append(current)
            current = ""
        else:
            current += char
    return name[:start], [*arguments, current]


def _same_as_written(written: str, demangled: str) -> bool:
    """Whether a module's kernel (its demangled name, without parameters) is the one a case
    wrote, where only the spelling differs: CUDA's typedefs, unsigned literals, a function
    passed as a template argument, a namespace the case left out of a function argument,
    trailing template arguments the case left to their defaults. For modules no compiler of
    the run built (a prebuilt cubin, a build's library): for its own compiles the compiler
    itself resolves the name (kernel_probe.py)."""
    base, arguments = _template_arguments(_normalized(written))
    entry_base, entry_arguments = _template_arguments(_normalized(demangled))
    if base != entry_base or len(arguments) > len(entry_arguments) or not arguments:
        return False
    return all(mine == theirs or theirs.endswith("::" + mine)
               for mine, theirs in zip(arguments, entry_arguments, strict=False))


def cpp_name(symbol: str) -> str:
    """A kernel's name as its author writes it: qualified, with template arguments, without
    the return type and parameters (``ns::Marlin<256, 1>`` for a mangled name)."""
    return _split_signature(demangle(symbol))[0]


def cpp_names(symbols: Sequence[str]) -> list[str]:
    """Each symbol's :func:`cpp_name`, with its parameters where two share it (overloads):
    one label per kernel in a table."""
    names = [cpp_name(symbol) for symbol in symbols]
    return [name if names.count(name) == 1 else "".join(_split_signature(demangle(symbol)))
            for name, symbol in zip(names, symbols, strict=True)]


def is_mangled(name: str) -> bool:
    """A name as the module holds it: the driver takes it as it is."""
    return name.startswith("_Z")


# What hides a kernel's name from a reading of the text: comments, strings, and the
# attributes written between `__global__` and the name, with their own parentheses.
_NOT_CODE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                       re.DOTALL)
_ATTRIBUTES = re.compile(r"\b(?:__launch_bounds__|__cluster_dims__|__maxnreg__)\s*\([^()]*\)"
                         r"|\b__attribute__\s*\(\([^()]*\)\)|\[\[[^\]]*\]\]")
_KERNEL = re.compile(r"\b__global__\b[^;{}()]*?\b([A-Za-z_]\w*)\s*\(")
_MACRO_KERNEL = re.compile(r"^[ \t]*#.*\b__global__\b", re.MULTILINE)


def kernels_defined(source: str) -> list[str] | None:
    """The names of the kernels (``__global__`` functions) a CUDA source declares, in
    order, each once: what `validate` names when a case's kernel is none of them. None
    where a macro makes kernels: their names are not in the text, so no reading of it
    can say a name is missing."""
    code = _NOT_CODE.sub(" ", source.replace("\\\n", " "))
    if _MACRO_KERNEL.search(code):
        return None
    return list(dict.fromkeys(_KERNEL.findall(_ATTRIBUTES.sub(" ", code))))


def written_base(written: str) -> str:
    """The bare name a case's kernel is written with (``void ns::f<3>(int*)``, ``ns::f``
    and ``f<3>`` are all ``f``): what a source's definition is found by."""
    return _squeezed(_base(_strip_templates(_split_signature(written)[0])))
