"""A case's reference check (`check = { y = "2.5 * x + y_in" }`): NumPy arithmetic over
its arguments, read by a small evaluator of its own, never Python's `eval`.

`eval` with empty builtins is no boundary (`np.__builtins__`, `np.ctypeslib`), and a check
runs beside other cells' verdicts. An expression may hold numbers and strings, the case's
argument names (and `NAME_in`, an in-place argument's input), `np`, arithmetic, comparisons,
indexing and slicing, tuples and lists, calls of the NumPy functions listed here and of an
array's methods listed here, with keywords. Nothing else: no other name, no attribute that
starts with `_`, no lambda, comprehension or assignment. A refused expression is refused
when the case is read, naming what it may not hold.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Collection, Mapping
from typing import Any

NUMPY = "np"
# What `np.X` may name: arithmetic, shapes, reductions, constructors, dtypes, constants.
NUMPY_NAMES = frozenset("""
abs absolute add all allclose amax amin angle any arange arccos arcsin arctan arctan2 argmax
argmin argsort around array asarray bitwise_and bitwise_or bitwise_xor bool_ broadcast_to
cbrt ceil clip complex128 complex64 concatenate conj copysign cos cosh count_nonzero cross
cumprod cumsum deg2rad diag divide dot e einsum equal exp exp2 expand_dims expm1 eye
float16 float32 float64 floor floor_divide fmax fmin fmod full full_like greater
greater_equal heaviside hstack hypot identity imag inf inner int16 int32 int64 int8 invert
isclose isfinite isinf isnan kron ldexp left_shift less less_equal linspace log log10 log1p
log2 logical_and logical_not logical_or logical_xor matmul max maximum mean min minimum mod
moveaxis multiply nan nan_to_num negative newaxis nonzero not_equal ones ones_like outer pad
pi power prod rad2deg real reciprocal remainder repeat reshape right_shift rint roll round
sign sin sinc sinh sort split sqrt square squeeze stack std subtract sum swapaxes take
take_along_axis tan tanh tensordot tile trace transpose tril triu true_divide trunc uint16
uint32 uint64 uint8 unique var vstack where zeros zeros_like
""".split())  # noqa: SIM905 (a list of words)
# `np.linalg.X` and `np.fft.X`.
NUMPY_MODULES = {"linalg": frozenset({"norm", "inv", "det", "solve", "pinv", "eig", "eigh",
                                      "svd", "qr", "cholesky", "matrix_power"}),
                 "fft": frozenset({"fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "fftn",
                                   "ifftn", "fftshift", "ifftshift"})}
# What `value.X` may name on an array (or a NumPy scalar).
ARRAY_ATTRIBUTES = frozenset("""
T all any argmax argmin astype clip conj copy cumprod cumsum dot dtype flatten imag max mean
min ndim prod ravel real reshape round shape size sort squeeze std sum swapaxes transpose var
""".split())  # noqa: SIM905 (a list of words)

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.MatMult: operator.matmul, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
    ast.Not: operator.not_}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge}
_LIMIT = 2000  # characters of an expression


class RefusedExpression(ValueError):
    """The expression holds something a check may not (the message says what)."""


def _numpy_path(node: ast.expr) -> list[str] | None:
    """`np.X` or `np.linalg.X` as its names; None for anything else."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == NUMPY:
        return names
    return None


class _Checker(ast.NodeVisitor):
    def __init__(self, names: Collection[str]) -> None:
        self.names = names

    def generic_visit(self, node: ast.AST) -> None:
        allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call, ast.Name,
                   ast.Constant, ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.List,
                   ast.keyword, ast.Load, ast.operator, ast.unaryop, ast.cmpop)
        if not isinstance(node, allowed):
            raise RefusedExpression(f"a check may not hold {type(node).__name__} "
                                    "(arithmetic, comparisons, indexing and NumPy calls only)")
        if (isinstance(node, ast.operator) and type(node) not in _BINARY) \
                or (isinstance(node, ast.cmpop) and type(node) not in _COMPARE):
            raise RefusedExpression(f"a check may not use {type(node).__name__}")
        super().generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if node.value is not None \
                and not isinstance(node.value, int | float | complex | str | bool):
            raise RefusedExpression(f"a check may not hold the constant {node.value!r}")

    def visit_Name(self, node: ast.Name) -> None:
        if node.id != NUMPY and node.id not in self.names:
            known = ", ".join(sorted(self.names)) or "none"
            raise RefusedExpression(f"{node.id!r} is no argument of the case (its arguments: "
                                    f"{known}; an in-place one's input is NAME_in; np is NumPy)")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("_"):
            raise RefusedExpression(f"a check may not reach {node.attr!r}")
        path = _numpy_path(node)
        if path is not None:
            if len(path) == 1 and path[0] in NUMPY_NAMES:
                return
            if len(path) == 2 and path[1] in NUMPY_MODULES.get(path[0], ()):
                return
            if len(path) == 1 and path[0] in NUMPY_MODULES:
                return
            raise RefusedExpression(f"np.{'.'.join(path)} is not among the NumPy functions a "
                                    "check may call")
        if node.attr not in ARRAY_ATTRIBUTES:
            raise RefusedExpression(f".{node.attr} is not among the array methods a check may "
                                    f"use ({', '.join(sorted(ARRAY_ATTRIBUTES))})")
        self.visit(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        if not isinstance(node.func, ast.Attribute):
            raise RefusedExpression("a check calls NumPy functions (np.X) and array methods "
                                    "only")
        for keyword in node.keywords:
            if keyword.arg is None:
                raise RefusedExpression("a check may not unpack keywords (**)")
        self.generic_visit(node)


def parse_check(text: str, names: Collection[str]) -> ast.Expression:
    """`text` read as a check over the arguments `names`; RefusedExpression says why not."""
    if not isinstance(text, str) or not text.strip():
        raise RefusedExpression("a check is an expression, such as \"2.5 * x + y_in\"")
    if len(text) > _LIMIT:
        raise RefusedExpression(f"a check of {len(text)} characters (at most {_LIMIT})")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise RefusedExpression(f"not an expression: {exc.msg}") from None
    _Checker(names).visit(tree)
    return tree


def evaluate(tree: ast.Expression, arrays: Mapping[str, Any], numpy: Any) -> Any:
    """The value of a parsed check, with the case's arrays and NumPy."""
    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return numpy if node.id == NUMPY else arrays[node.id]
        if isinstance(node, ast.Attribute):
            return getattr(value(node.value), node.attr)
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](value(node.operand))
        if isinstance(node, ast.Compare):
            result, left = None, value(node.left)
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                right = value(right_node)
                step = _COMPARE[type(op)](left, right)
                result = step if result is None else result & step
                left = right
            return result
        if isinstance(node, ast.Call):
            return value(node.func)(*(value(a) for a in node.args),
                                    **{k.arg: value(k.value) for k in node.keywords if k.arg})
        if isinstance(node, ast.Subscript):
            return value(node.value)[value(node.slice)]
        if isinstance(node, ast.Slice):
            return slice(*(None if part is None else value(part)
                           for part in (node.lower, node.upper, node.step)))
        if isinstance(node, ast.Tuple):
            return tuple(value(e) for e in node.elts)
        if isinstance(node, ast.List):
            return [value(e) for e in node.elts]
        raise RefusedExpression(f"a check may not hold {type(node).__name__}")

    return value(tree.body)
