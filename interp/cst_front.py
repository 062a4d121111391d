"""The libcst front-end: default deny over libcst's syntax tree.

:data:`HANDLERS` is the whole accepted language, one handler per libcst node type.
A node type without a handler is rejected through :func:`_reject`, so syntax added
by future Python or libcst versions is refused until someone writes (and reviews) a
handler for it. Imported lazily by :mod:`interp.text` (libcst is a heavy import,
and the fast path handles most texts without it).
"""

from __future__ import annotations

import unicodedata
from typing import Any, Callable, NoReturn

import libcst as cst

from bfcl_safe.interp import budget, limits
from bfcl_safe.interp.budget import LIBCST_CHARS
from bfcl_safe.interp.callspec import (
    NOT_CALL,
    CallSpec,
    Failure,
    NameRef,
    Operation,
    SourceString,
    dict_value,
    make_spec,
    sequence_value,
)
from bfcl_safe.interp.errors import RejectedInput
from bfcl_safe.interp.lexical import REWRITE_PATTERN, bracket_depth

_CONSTANTS = {"True": True, "False": False, "None": None}
_EMPTY_MODULE = cst.Module(body=[])


class _Context:
    __slots__ = ("source", "elements", "root", "offset")

    def __init__(self, source: str):
        self.source = source
        self.elements = 0
        self.root: cst.BaseExpression | None = None  # the parsed expression
        self.offset = 0  # where it starts in ``source`` (eval strips leading blanks)

    def count(self, n: int, node: cst.CSTNode) -> None:
        self.elements += n
        if self.elements > limits.MAX_LITERAL_ELEMENTS:
            _reject(self, node, f"literal has more than {limits.MAX_LITERAL_ELEMENTS} elements")


def _describe(node: cst.CSTNode) -> str:
    return _DESCRIPTIONS.get(type(node), type(node).__name__)


_DESCRIPTIONS = {
    cst.Attribute: "attribute access",
    cst.Subscript: "subscript",
    cst.BinaryOperation: "binary operator",
    cst.BooleanOperation: "boolean operator",
    cst.Comparison: "comparison",
    cst.Lambda: "lambda",
    cst.ListComp: "list comprehension",
    cst.SetComp: "set comprehension",
    cst.DictComp: "dict comprehension",
    cst.GeneratorExp: "generator expression",
    cst.FormattedString: "f-string",
    cst.IfExp: "conditional expression",
    cst.NamedExpr: "assignment expression",
    cst.Await: "await",
    cst.Yield: "yield",
    cst.Ellipsis: "ellipsis",
    cst.StarredElement: "starred element",
    cst.StarredDictElement: "'**' in a dict",
}


def _reject(ctx: _Context, node: cst.CSTNode | None, reason: str) -> NoReturn:
    raise RejectedInput(reason, ctx.source, None if node is None else _position(ctx, node))


def _position(ctx: _Context, node: cst.CSTNode) -> int | None:
    """Offset of ``node`` in the source (error path only: position metadata is computed
    on the tree already parsed, so an identical snippet elsewhere cannot be mistaken)."""
    if ctx.root is not None:
        from libcst.metadata import MetadataWrapper, PositionProvider

        module = cst.Module(body=[cst.SimpleStatementLine(body=[cst.Expr(value=ctx.root)])])
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        if node in positions:
            start = positions[node].start
            # Lines count from where the expression's own text starts (blank lines
            # before it are not part of the tree).
            root_code = _EMPTY_MODULE.code_for_node(ctx.root)
            base = ctx.source.find(root_code, ctx.offset) if root_code else -1
            if base < 0:
                base = ctx.offset
            lines = ctx.source[base:].split("\n")
            return base + sum(len(line) + 1 for line in lines[: start.line - 1]) + start.column
    snippet = _EMPTY_MODULE.code_for_node(node).strip()
    found = ctx.source.find(snippet) if snippet else -1
    return found if found >= 0 else None


def _identifier(name: str) -> str:
    # CPython NFKC-normalises identifiers while parsing.
    return name if name.isascii() else unicodedata.normalize("NFKC", name)


def _convert(node: cst.CSTNode, ctx: _Context, depth: int) -> Any:
    if depth > limits.MAX_NESTING_DEPTH:
        _reject(ctx, node, f"nesting deeper than {limits.MAX_NESTING_DEPTH}")
    handler = HANDLERS.get(type(node))
    if handler is None:
        _reject(ctx, node, f"{_describe(node)} is not allowed")
    return handler(node, ctx, depth)


def _call(node: cst.Call, ctx: _Context, depth: int) -> CallSpec:
    if not isinstance(node.func, cst.Name):
        _reject(ctx, node.func, f"only plain names can be called, not {_describe(node.func)}")
    name = _identifier(node.func.value)
    if name.startswith("__"):
        _reject(ctx, node.func, f"dunder name {name!r} is not allowed")
    # The callee keeps its written form: the reference's prefix regex never matches a
    # non-ASCII name, so eval looks the NFKC form up as a bare name (MethodTable.lookup).
    name = node.func.value
    _check_repeated_keywords(node, ctx)
    args: list[Any] = []
    kwargs: list[tuple[str, Any]] = []
    for arg in node.args:
        if arg.star:
            _reject(ctx, arg, f"'{arg.star}' argument unpacking is not allowed")
        value = _convert(arg.value, ctx, depth + 1)
        if arg.keyword is None:
            if kwargs:
                _reject(ctx, arg, "positional argument follows keyword argument")
            args.append(value)
        else:
            kwargs.append((_identifier(arg.keyword.value), value))
    ctx.count(len(node.args), node)
    return CallSpec(name=name, args=tuple(args), kwargs=tuple(kwargs))


def _check_repeated_keywords(node: cst.Call, ctx: _Context) -> None:
    """CPython's compiler checks a call's keywords before it visits the arguments (an
    outer call's repeat is reported before an inner one's) and names the earliest keyword
    that is repeated, at its first repetition."""
    first: dict[str, int] = {}
    found: tuple[int, str, cst.Arg] | None = None
    for arg in node.args:
        if arg.keyword is None:
            continue
        key = _identifier(arg.keyword.value)
        if key not in first:
            first[key] = len(first)
        elif found is None or first[key] < found[0]:
            found = (first[key], key, arg)
    if found is not None:
        _reject(ctx, found[2], f"keyword argument repeated: {found[1]}")


def _number(node: cst.Integer | cst.Float | cst.Imaginary, ctx: _Context, depth: int) -> Any:
    if isinstance(node, cst.Integer) and len(node.value) > limits.MAX_INT_DIGITS:
        _reject(ctx, node, f"integer literal longer than {limits.MAX_INT_DIGITS} digits")
    return node.evaluated_value


def _string_source_value(part: cst.SimpleString, ctx: _Context) -> Any:
    if len(part.value) > limits.MAX_STRING_LENGTH:
        _reject(ctx, part, f"string literal longer than {limits.MAX_STRING_LENGTH} characters")
    return part.evaluated_value


def _simple_string(node: cst.SimpleString, ctx: _Context, depth: int) -> Any:
    value = _string_source_value(node, ctx)
    if REWRITE_PATTERN.search(node.value):
        return SourceString((node.value,))
    return value


def _concatenated_string(node: cst.ConcatenatedString, ctx: _Context, depth: int) -> Any:
    parts: list[cst.SimpleString] = []
    stack: list[cst.BaseExpression] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.ConcatenatedString):
            stack.append(current.right)
            stack.append(current.left)
        elif isinstance(current, cst.SimpleString):
            parts.append(current)
        else:
            _reject(ctx, current, f"{_describe(current)} is not allowed")
    values = [_string_source_value(p, ctx) for p in parts]
    if len({type(v) for v in values}) > 1:
        _reject(ctx, node, "cannot mix bytes and nonbytes literals")
    if any(REWRITE_PATTERN.search(p.value) for p in parts):
        return SourceString(tuple(p.value for p in parts))
    return values[0][:0].join(values)


def _name(node: cst.Name, ctx: _Context, depth: int) -> Any:
    name = _identifier(node.value)
    if name in _CONSTANTS:  # 'Ｔｒｕｅ' is True too, after CPython's NFKC
        return _CONSTANTS[name]
    if name.startswith("__"):
        _reject(ctx, node, f"dunder name {name!r} is not allowed")
    return NameRef(name)


_UNARY_OPERATORS = {cst.Minus: "-", cst.Plus: "+", cst.BitInvert: "~", cst.Not: "not"}
_BINARY_OPERATORS = {
    cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.FloorDivide: "//",
    cst.Modulo: "%", cst.Power: "**", cst.LeftShift: "<<", cst.RightShift: ">>", cst.BitAnd: "&",
    cst.BitOr: "|", cst.BitXor: "^", cst.MatrixMultiply: "@",
}


def _unary(node: cst.UnaryOperation, ctx: _Context, depth: int) -> Any:
    operand = node.expression
    op = _UNARY_OPERATORS[type(node.operator)]
    if op in ("-", "+") and isinstance(operand, (cst.Integer, cst.Float, cst.Imaginary)):
        value = _number(operand, ctx, depth + 1)
        return -value if op == "-" else +value
    if op in ("-", "+") and isinstance(operand, cst.Name):
        value = _name(operand, ctx, depth + 1)
        if isinstance(value, NameRef):
            return value  # evaluating the name fails before the sign is applied
        if value is None:
            return Failure(TypeError, f"bad operand type for unary {op}: 'NoneType'")
        return -value if op == "-" else +value
    # Anything else is computed at run time, sizes checked (interp/builtins.py).
    return Operation(op, (_convert(operand, ctx, depth + 1),))


_COMPARISONS = {
    cst.Equal: "==", cst.NotEqual: "!=", cst.LessThan: "<", cst.LessThanEqual: "<=", cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=", cst.In: "in", cst.NotIn: "not in", cst.Is: "is", cst.IsNot: "is not",
}


def _comparison(node: cst.Comparison, ctx: _Context, depth: int) -> Any:
    # ("compare", left, op1, right1, op2, right2, ...): chained, each right evaluated
    # only while the comparisons so far hold, as in Python.
    operands: list[Any] = [_convert(node.left, ctx, depth + 1)]
    for target in node.comparisons:
        operands.append(_COMPARISONS[type(target.operator)])
        operands.append(_convert(target.comparator, ctx, depth + 1))
    return Operation("compare", tuple(operands))


def _boolean(node: cst.BooleanOperation, ctx: _Context, depth: int) -> Any:
    op = "and" if isinstance(node.operator, cst.And) else "or"
    return Operation(op, (_convert(node.left, ctx, depth + 1), _convert(node.right, ctx, depth + 1)))


def _conditional(node: cst.IfExp, ctx: _Context, depth: int) -> Any:
    return Operation("if", (_convert(node.test, ctx, depth + 1), _convert(node.body, ctx, depth + 1),
                            _convert(node.orelse, ctx, depth + 1)))


def _slice_part(part: cst.BaseExpression | None, ctx: _Context, depth: int) -> Any:
    return None if part is None else _convert(part, ctx, depth + 1)


def _subscript(node: cst.Subscript, ctx: _Context, depth: int) -> Any:
    # ("subscript", value, key) with a slice as ("slice", lower, upper, step) and
    # several elements as ("tuple", ...): built at run time.
    keys = []
    for element in node.slice:
        item = element.slice
        if isinstance(item, cst.Slice):
            keys.append(Operation("slice", (_slice_part(item.lower, ctx, depth), _slice_part(item.upper, ctx, depth),
                                            _slice_part(item.step, ctx, depth))))
        elif isinstance(item, cst.Index) and item.star is None:
            keys.append(_convert(item.value, ctx, depth + 1))
        else:
            _reject(ctx, element, "starred subscript is not allowed")
    single = len(keys) == 1 and node.slice[0].comma is cst.MaybeSentinel.DEFAULT
    key = keys[0] if single else Operation("tuple", tuple(keys))
    return Operation("subscript", (_convert(node.value, ctx, depth + 1), key))


def _binary(node: cst.BinaryOperation, ctx: _Context, depth: int) -> Any:
    op = _BINARY_OPERATORS.get(type(node.operator))
    if op is None:
        _reject(ctx, node, "binary operator is not allowed")
    return Operation(op, (_convert(node.left, ctx, depth + 1), _convert(node.right, ctx, depth + 1)))


def _sequence(node: cst.List | cst.Tuple | cst.Set, ctx: _Context, depth: int) -> Any:
    kind = {cst.List: list, cst.Tuple: tuple, cst.Set: set}[type(node)]
    items = []
    for element in node.elements:
        if not isinstance(element, cst.Element):
            _reject(ctx, element, f"{_describe(element)} is not allowed")
        items.append(_convert(element.value, ctx, depth + 1))
    ctx.count(len(items), node)
    return sequence_value(kind, items)


def _dict(node: cst.Dict, ctx: _Context, depth: int) -> Any:
    pairs = []
    for element in node.elements:
        if not isinstance(element, cst.DictElement):
            _reject(ctx, element, f"{_describe(element)} is not allowed")
        key = _convert(element.key, ctx, depth + 1)
        value = _convert(element.value, ctx, depth + 1)
        pairs.append((key, value))
    ctx.count(len(pairs), node)
    return dict_value(pairs)


HANDLERS: dict[type, Callable[[Any, _Context, int], Any]] = {
    cst.Call: _call,
    cst.Integer: _number,
    cst.Float: _number,
    cst.Imaginary: _number,
    cst.SimpleString: _simple_string,
    cst.ConcatenatedString: _concatenated_string,
    cst.Name: _name,
    cst.UnaryOperation: _unary,
    cst.BinaryOperation: _binary,
    cst.Comparison: _comparison,
    cst.BooleanOperation: _boolean,
    cst.IfExp: _conditional,
    cst.Subscript: _subscript,
    cst.List: _sequence,
    cst.Tuple: _sequence,
    cst.Set: _sequence,
    cst.Dict: _dict,
}


def parse_with_libcst(text: str, handed: list[int] | None = None) -> CallSpec:
    """``text`` (one call, outside the fast parser's subset) parsed by libcst behind the
    length and depth guards. What libcst is handed is charged to the active budget's
    ``libcst_chars`` first, or, with ``handed``, appended to it for the caller to charge."""
    ctx = _Context(text)
    if len(text) > limits.MAX_SOURCE_LENGTH:
        raise RejectedInput(f"call text longer than {limits.MAX_SOURCE_LENGTH} characters")
    if len(text) > limits.MAX_LIBCST_SOURCE_LENGTH:
        raise RejectedInput(
            f"call text outside the simple subset and longer than {limits.MAX_LIBCST_SOURCE_LENGTH} characters"
        )
    if bracket_depth(text) > limits.MAX_NESTING_DEPTH:
        raise RejectedInput(f"nesting deeper than {limits.MAX_NESTING_DEPTH}")
    # eval() strips leading spaces and tabs; libcst would not.
    stripped = text.lstrip(" \t")
    if handed is None:
        budget.charge(LIBCST_CHARS, len(stripped))
    else:
        handed.append(len(stripped))
    offset = len(text) - len(stripped)
    try:
        node = cst.parse_expression(stripped)
    except cst.ParserSyntaxError as exc:
        lines = stripped.split("\n")
        position = sum(len(line) + 1 for line in lines[: exc.raw_line - 1]) + exc.raw_column + offset
        raise RejectedInput("invalid syntax", text, min(position, len(text))) from None
    except RecursionError:
        raise RejectedInput(f"nesting deeper than {limits.MAX_NESTING_DEPTH}") from None
    ctx.root, ctx.offset = node, offset
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return make_spec(NOT_CALL, args=(_unary(node, ctx, 0),))  # eval("not(x)") is `not (x)`
    if not isinstance(node, cst.Call):
        _reject(ctx, node, f"expected a function call, got {_describe(node)}")
    return _call(node, ctx, 0)


