"""Pure builtins and operators on plain values, with CPython's semantics, sizes checked first.

The reference ``eval``s model text, so a model may write ``len('abc')``, ``round(2.5)``,
``'%d files' % 3`` or ``{...} | {...}`` and get what CPython computes. This module
computes exactly that, for a small explicit table of *pure* builtins and for the
operators, on *plain values* only — never anything that touches files, imports,
attributes or the interpreter — and checks the size of every result before
computing it.

Public API (used by the interpreter's executor and by the eval-emulating decoders):

- :data:`PURE_BUILTINS` — ``{name: function}``, the table (documented in SECURITY.md,
  "Pure builtins"; a test keeps the two in sync).
- :func:`call_builtin(name, args, kwargs) <call_builtin>` — the value of
  ``name(*args, **kwargs)``. ``name`` may be written in any Unicode compatibility form
  (it is NFKC-normalised as CPython's parser does). For a refused builtin (``exec``,
  ``open``, ``getattr``, ...) it raises the ``TypeError`` CPython raises *before running
  anything* when the arguments cannot even be parsed (``exec()`` ->
  ``exec() takes at least 1 positional argument (0 given)``).
- :func:`binary_op(op, left, right) <binary_op>` and :func:`unary_op(op, operand) <unary_op>`
  — ``op`` is the operator's source text (``"+"``, ``"%"``, ``"**"``, ``"|"``, ``"not"``, ...).
- :func:`compare_op(op, left, right) <compare_op>` (one comparison: ``"=="``, ``"<"``,
  ``"in"``, ``"is"`` against None/True/False ...), :func:`truth` (``bool`` for ``and``/``or``/
  ``if``), :func:`subscript(value, key) <subscript>` with :func:`make_slice` for ``[a:b:c]``.
- :func:`check_plain`, :func:`check_depth`, :func:`value_size`, :func:`rendered_size` — the
  checks themselves (``check_depth`` is what to call on model-given JSON arguments before
  anything copies them).

Errors, in the order a caller must catch them:

1. :class:`~bfcl_safe.interp.errors.BudgetExceeded` — the result would be larger than
   :data:`~bfcl_safe.interp.limits.ENTRY_BUDGETS` ``["computed_size"]`` (one value), or
   the entry's computed values together would be (charged against the active budget).
   The reference would exhaust memory or time; never turn it into a result string.
2. :class:`NotComputable` (a :class:`~bfcl_safe.interp.errors.RejectedInput`) — the name
   is no pure builtin, an operand is not a plain value, or a refused builtin would get
   as far as running: keep refusing the way the caller did before.
3. Any other exception is exactly the one CPython raises for this call (type and
   message), e.g. ``TypeError("object of type 'int' has no len()")``: the caller reports
   it as the reference's ``eval`` would.

Plain values: ``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``, and
``list``, ``tuple``, ``dict``, ``set``, ``frozenset`` of plain values (exact types, no
subclasses), nested at most :data:`~bfcl_safe.interp.limits.MAX_NESTING_DEPTH` deep.

Sizes: :func:`value_size` is what ``str()`` of a value costs, roughly — characters of a
string, digits of an int, one per element of a container plus its items' sizes (a
shared item counted at every appearance, as rendering would). Every result is measured
(or, for ``*``, ``**``, ``<<``, ``%`` and ``format``, predicted) before it is computed.
"""

from __future__ import annotations

import math
import operator
import re
import sys
import unicodedata
from typing import Any, Callable, Iterable, Mapping

from bfcl_safe.interp import budget, limits
from bfcl_safe.interp.errors import BudgetExceeded, RejectedInput

__all__ = [
    "NotComputable", "PURE_BUILTINS", "REFUSED_BUILTINS", "binary_op", "call_builtin", "check_depth",
    "check_plain", "compare_op", "is_builtin_name", "make_slice", "rendered_size", "subscript", "truth", "unary_op",
    "value_size",
]

#: The budget kind charged here (see interp/limits.py).
COMPUTED_SIZE = "computed_size"
COMPUTED_INT_DIGITS = "computed_int_digits"
INT_WORK = "int_work"


class NotComputable(RejectedInput):
    """This builtin or operation is not computed here (not in the table, an operand that
    is not a plain value, or a refused builtin that would run): ``name`` says which."""

    def __init__(self, reason: str, name: str = ""):
        self.name = name
        super().__init__(reason)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.name))


# --------------------------------------------------------------------------- plain values

_SCALARS = frozenset({type(None), type(Ellipsis), bool, int, float, complex, str, bytes})
_CONTAINERS = frozenset({list, tuple, dict, set, frozenset})
#: Digits per bit of an int (log10 2), for sizes of ints without converting them.
_DIGITS_PER_BIT = math.log10(2)


def _int_digits(value: int) -> int:
    return int(abs(value).bit_length() * _DIGITS_PER_BIT) + 1


def _deepest(value: Any, limit: int) -> Any:
    """The first object found nested ``limit`` deep in ``value`` (an object met again
    is explored again only when met deeper, so a shared item is measured at its deepest
    and a value containing itself reaches the limit), else None. Iterative."""
    stack = [(value, 0)]
    reached: dict[int, int] = {}
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict:
            children: Iterable[Any] = [*item.keys(), *item.values()]
        elif kind is list or kind is tuple or kind is set or kind is frozenset:
            children = item
        else:
            continue
        if depth >= limit:
            return item
        if reached.get(id(item), -1) >= depth:
            continue
        reached[id(item)] = depth
        stack.extend((child, depth + 1) for child in children)
    return None


def check_depth(value: Any, limit: int = limits.MAX_NESTING_DEPTH) -> None:
    """Refuse (:class:`~bfcl_safe.interp.errors.RejectedInput`) a value of lists, tuples,
    dicts and sets nested deeper than ``limit`` (or containing itself); iterative, so it
    never recurses itself. Call it on model-given arguments before anything copies or
    renders them."""
    if _deepest(value, limit) is not None:
        raise RejectedInput(f"nesting deeper than {limit}")


def check_plain(value: Any, limit: int = limits.MAX_NESTING_DEPTH) -> None:
    """Raise :class:`NotComputable` unless ``value`` is a plain value (see the module
    docstring) nested at most ``limit`` deep."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind in _SCALARS:
            continue
        if kind not in _CONTAINERS:
            raise NotComputable(f"a value of type {kind.__name__} is not computed on")
        if id(item) in seen:
            continue
        seen.add(id(item))
        stack.extend([*item.keys(), *item.values()] if kind is dict else item)
    if _deepest(value, limit) is not None:
        raise NotComputable(f"nesting deeper than {limit}")


def value_size(value: Any, text: Callable[[Any], int] = len) -> int:
    """The size of a plain value (see the module docstring); linear in its distinct
    objects. ``text`` sizes a str or bytes (default: its length)."""
    sizes: dict[int, int] = {}
    keep = []  # the containers measured, alive while their ids are keys of ``sizes``
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, done = stack.pop()
        kind = type(item)
        if kind is str or kind is bytes:
            sizes[id(item)] = text(item)
            continue
        if kind is int:
            sizes[id(item)] = _int_digits(item)
            continue
        if kind not in _CONTAINERS:
            sizes[id(item)] = 1 if kind is not complex else 2
            continue
        if id(item) in sizes:
            continue
        children = [*item.keys(), *item.values()] if kind is dict else item
        if done:
            sizes[id(item)] = len(item) + sum(sizes[id(child)] for child in children)
            keep.append(item)
        else:
            stack.append((item, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
    return max(1, sizes[id(value)])


def _repr_length(text: str | bytes) -> int:
    """At most how long ``repr`` of a str or bytes is: printable text escapes a quote
    or backslash into two characters; anything else at most ten (``\\U0001f600``)."""
    if type(text) is str and text.isprintable():
        return 2 * len(text) + 2
    return (10 if type(text) is str else 4) * len(text) + 3


def _ascii_length(text: str | bytes) -> int:
    if type(text) is str and text.isascii() and text.isprintable():
        return 2 * len(text) + 2
    return 10 * len(text) + 3


def rendered_size(value: Any) -> int:
    """At most how many characters ``repr``/``str`` of a plain value has, in units of
    :func:`value_size` (strings as their ``repr``, at most)."""
    return value_size(value, _repr_length)


def _charge(size: int) -> None:
    """A value of ``size`` is about to be made: refuse it past the per-entry limit even
    with no active budget (one value alone), else count it."""
    limit = limits.ENTRY_BUDGETS[COMPUTED_SIZE]
    if size > limit:
        raise BudgetExceeded(COMPUTED_SIZE, limit, min(size, _PY_SSIZE_T_MAX))
    budget.charge(COMPUTED_SIZE, size)


def _charge_int(digits: int) -> None:
    """An int of about ``digits`` digits is about to be computed: past
    :data:`~bfcl_safe.interp.limits.MAX_COMPUTED_INT_DIGITS` CPython needs many seconds
    to minutes (``3 ** 10 ** 7``), so it is refused like any value past its budget."""
    if digits > limits.MAX_COMPUTED_INT_DIGITS:
        raise BudgetExceeded(COMPUTED_INT_DIGITS, limits.MAX_COMPUTED_INT_DIGITS, min(digits, _PY_SSIZE_T_MAX))
    budget.charge(COMPUTED_INT_DIGITS, digits)
    _charge(digits)


def _charge_int_work(left: int, right: int) -> None:
    """A multiplication or division of two ints: the product of their sizes in limbs."""
    work = (abs(left).bit_length() // 30 + 1) * (abs(right).bit_length() // 30 + 1)
    if work > 1000:
        limit = limits.ENTRY_BUDGETS[INT_WORK]
        if work > limit:
            raise BudgetExceeded(INT_WORK, limit, work)
        budget.charge(INT_WORK, work)


def _plain_operands(*values: Any) -> None:
    for value in values:
        check_plain(value)


# --------------------------------------------------------------------------- % formatting

#: Precision kept in the dry run (CPython's own texts do not depend on it below this).
_DRY_PRECISION = 50
_PY_SSIZE_T_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1
#: Conversions whose precision adds characters (digits).
_PRECISION_PADS = frozenset("diouxXeEfFgG")


def _percent(template: str | bytes, args: Any) -> Any:
    """``template % args`` with the result's size bounded first.

    The template is scanned as CPython scans it (mapping key with nested parentheses,
    flags, width or ``*``, precision or ``*``, length modifier, type), each ``*`` and
    each conversion taking the next positional argument. Without widths or large
    precisions, each conversion writes at most its argument's :func:`rendered_size` plus
    320 (``%f`` of 1e308). Otherwise a dry run of the same conversions -- every width,
    and every precision past 50 that adds digits, replaced by zeros of the same length
    (zero flags and precision 0: the error messages' indices stay those of the
    template), such ``*`` arguments by 0 -- raises exactly the errors the real run
    raises, from the same conversion (CPython's checks do not depend on the sizes), and
    the real result is at most the dry one plus each width and precision replaced."""
    text = template if type(template) is str else template.decode("latin-1")  # type: ignore[union-attr]
    dry_args = list(args) if type(args) is tuple else None
    extra = 0
    conversions = 0
    pieces: list[str] = []
    next_arg = 0
    index = 0
    length = len(text)
    marks: list[tuple[int, int, int]] = []  # after each conversion: pieces, extra so far, arguments taken

    def star_argument(position: int, pads: bool, is_width: bool) -> None:
        nonlocal extra
        if dry_args is None or position >= len(dry_args) or type(dry_args[position]) is not int:
            return
        value = dry_args[position]
        if is_width and abs(value) <= _PY_SSIZE_T_MAX:
            extra += abs(value)
            dry_args[position] = 0
        elif not is_width and pads and _DRY_PRECISION < value <= _INT_MAX:
            extra += value + 2
            dry_args[position] = 0

    while True:
        start = text.find("%", index)
        if start < 0:
            pieces.append(text[index:])
            break
        pieces.append(text[index:start])
        at = start + 1
        keyed = at < length and text[at] == "("
        if keyed:  # a mapping key, parentheses nested
            depth, at = 1, at + 1
            while at < length and depth:
                depth += {"(": 1, ")": -1}.get(text[at], 0)
                at += 1
            if depth:
                pieces.append(text[start:])  # "incomplete format key": CPython stops here
                break
        while at < length and text[at] in "-+ #0":
            at += 1
        piece = text[start:at]
        width_star = None
        if at < length and text[at] == "*":
            piece += "*"
            at += 1
            width_star = next_arg
            next_arg += 1
        else:
            digits = at
            while at < length and text[at].isdigit():
                at += 1
            width = text[digits:at]
            if width and int(width) <= _PY_SSIZE_T_MAX // 10:  # larger: "width too big", kept
                extra += int(width)
                width = "0" * len(width)  # zero flags: no width, and every index unchanged
            piece += width
        precision = None
        precision_star = None
        if at < length and text[at] == ".":
            at += 1
            if at < length and text[at] == "*":
                precision, precision_star = "*", next_arg
                next_arg += 1
                at += 1
            else:
                digits = at
                while at < length and text[at].isdigit():
                    at += 1
                precision = text[digits:at]
        modifiers = at
        while at < length and text[at] in "hlL":
            at += 1
        kind = text[at : at + 1]
        pads = kind != "" and kind in _PRECISION_PADS
        if precision and precision != "*" and pads and _DRY_PRECISION < int(precision) <= _INT_MAX:
            # (Kept past INT_MAX, which CPython refuses at once: "precision too big".
            # For %s, %r, %a a precision only truncates.)
            extra += int(precision) + 2
            precision = "0" * len(precision)
        if width_star is not None:
            star_argument(width_star, pads, True)
        if precision_star is not None:
            star_argument(precision_star, pads, False)
        if precision is not None:
            piece += "." + precision
        pieces.append(piece + text[modifiers : at + 1])
        if kind == "":
            marks.append((len(pieces), extra, next_arg))
            break  # "incomplete format"
        if kind != "%":
            conversions += 1
            if not keyed:
                next_arg += 1
        marks.append((len(pieces), extra, next_arg))
        index = at + 1
    if type(args) is dict:
        largest = max((rendered_size(v) for v in args.values()), default=0)
        natural = len(text) + conversions * (largest + 320)
    elif type(args) is tuple:
        natural = len(text) + rendered_size(args) + 320 * len(args)
    else:
        natural = len(text) + rendered_size(args) + 320
    if extra == 0:
        _charge(natural)
        return template % args
    limit = limits.ENTRY_BUDGETS[COMPUTED_SIZE]
    if extra > limit:
        # CPython writes conversion after conversion: where the one that takes the result
        # past the limit would be written, the reference has used that memory before any
        # later error (even "not all arguments converted"). Errors up to and within that
        # conversion come first (its checks precede its padding).
        count, spent, taken = next(mark for mark in marks if mark[1] > limit)
        head = "".join(pieces[:count])
        head_template = head if type(template) is str else head.encode("latin-1")
        head_args = tuple(dry_args[:taken]) if dry_args is not None else args
        head_template % head_args  # raises what the real run raises before that point
        raise BudgetExceeded(COMPUTED_SIZE, limit, spent)
    dry_text = "".join(pieces)
    dry_template = dry_text if type(template) is str else dry_text.encode("latin-1")
    dry = dry_template % (tuple(dry_args) if dry_args is not None else args)  # raises what the real run raises
    _charge(min(len(dry) + extra, natural + extra))
    return template % args


# --------------------------------------------------------------------------- format()

_FORMAT_SPEC = re.compile(
    r"(?P<head>(?:.?[<>=^])?[-+ ]?z?#?0?)(?P<width>\d*)(?P<grouping>[,_]?)"
    r"(?:\.(?P<precision>\d+))?(?P<type>[a-zA-Z%]?)",
    re.DOTALL,
)


def _format(*args: Any, **kwargs: Any) -> Any:
    given = _bind(args, kwargs, ("value", "format_spec"), 1, positional_only=2)
    if given is None:
        return format(*args, **kwargs)  # CPython's argument error
    value, spec = given["value"], given.get("format_spec", "")
    if type(spec) is not str:
        return format(value, spec)  # CPython's TypeError
    found = _FORMAT_SPEC.fullmatch(spec)
    if found is None:
        if re.search(r"\d{7}", spec):
            raise NotComputable("format spec not understood", "format")
        return format(value, spec)
    extra = 0
    width, precision = found.group("width"), found.group("precision")
    dry_spec = spec
    if width and len(width) < 19:
        extra += int(width)
    pads = type(value) is not str  # a string's precision only truncates
    if pads and precision and len(precision) < 19 and int(precision) > _DRY_PRECISION:
        extra += int(precision) + 2
    if extra:
        # The width dropped (zeros there would be the zero-padding flag) and large
        # precisions replaced by zeros: CPython's errors do not depend on the sizes.
        dry_precision = precision
        if pads and precision and len(precision) < 19 and int(precision) > _DRY_PRECISION:
            dry_precision = "0" * len(precision)
        dry_spec = (found.group("head") + ("" if width and len(width) < 19 else width)
                    + found.group("grouping") + ("." + dry_precision if precision is not None else "")
                    + found.group("type"))
    dry = format(value, dry_spec)  # raises what the real call raises
    _charge(len(dry) + extra)
    return format(value, spec) if extra else dry


# --------------------------------------------------------------------------- operators

#: CPython's largest int, in 30-bit digits (``_PyLong_New``: "too many digits in integer").
_MAX_LONG_DIGITS = (_PY_SSIZE_T_MAX - 24) // 4


def _sequence_times(sequence: Any, count: Any) -> None:
    if type(count) is int or type(count) is bool:
        if count > _PY_SSIZE_T_MAX:
            return  # CPython: "cannot fit 'int' into an index-sized integer", at once
        if type(sequence) in (str, bytes) and count > 0 and len(sequence) > _PY_SSIZE_T_MAX // count:
            return  # CPython: "repeated string is too long" / "repeated bytes are too long", at once
        _charge(max(0, int(count)) * value_size(sequence) if count > 0 else 1)


def _shift_overflows(left: int, count: int) -> bool:
    """Whether CPython refuses ``left << count`` at once ("too many digits in integer":
    ``divmod_shift`` clips a huge word shift, ``_PyLong_New`` refuses the size); below
    that it tries to allocate the result."""
    words = count // 30
    if words >= _PY_SSIZE_T_MAX // 4:
        return True
    size = (abs(left).bit_length() + 29) // 30 + words + (1 if count % 30 else 0)
    return size > _MAX_LONG_DIGITS


def _check_binary(op: str, left: Any, right: Any) -> None:
    lt, rt = type(left), type(right)
    if op == "*":
        if lt in (str, bytes, list, tuple):
            _sequence_times(left, right)
        elif rt in (str, bytes, list, tuple):
            _sequence_times(right, left)
        elif lt in (int, bool) and rt in (int, bool):
            _charge_int(_int_digits(left) + _int_digits(right))
            _charge_int_work(left, right)
    elif op in ("//", "%") and lt in (int, bool) and rt in (int, bool):
        _charge_int_work(left, right)
    elif op == "**":
        if lt in (int, bool) and rt in (int, bool) and right > 0 and abs(left) > 1:
            # (in ints: the exponent may be far past what a float holds)
            _charge_int(right * (int(math.log10(abs(left)) * 10**9) + 1) // 10**9 + 1)
    elif op == "<<":
        if lt in (int, bool) and rt in (int, bool) and right > 0 and left != 0 and not _shift_overflows(left, right):
            _charge_int(_int_digits(left) + int(right * _DIGITS_PER_BIT) + 1)
    elif op == "+":
        if lt is rt and lt in (str, bytes, list, tuple):
            _charge(value_size(left) + value_size(right))
        elif lt in (int, bool) and rt in (int, bool):
            _charge_int(max(_int_digits(left), _int_digits(right)) + 1)
    elif op == "|":
        if lt in (dict, set, frozenset):
            _charge(value_size(left) + value_size(right))


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "<<": operator.lshift,
    ">>": operator.rshift, "&": operator.and_, "|": operator.or_, "^": operator.xor, "@": operator.matmul,
}


def binary_op(op: str, left: Any, right: Any) -> Any:
    """``left <op> right`` as CPython computes it; ``op`` is the operator's text."""
    function = _BINARY.get(op)
    if function is None:
        raise NotComputable(f"operator {op!r} is not computed", op)
    _plain_operands(left, right)
    if op == "%" and type(left) in (str, bytes):
        return _percent(left, right)
    _check_binary(op, left, right)
    return function(left, right)


_UNARY: dict[str, Callable[[Any], Any]] = {
    "-": operator.neg, "+": operator.pos, "~": operator.invert, "not": operator.not_,
}


def unary_op(op: str, operand: Any) -> Any:
    """``<op> operand`` as CPython computes it (``op``: ``-``, ``+``, ``~``, ``not``)."""
    function = _UNARY.get(op)
    if function is None:
        raise NotComputable(f"unary operator {op!r} is not computed", op)
    _plain_operands(operand)
    return function(operand)


_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "in": lambda a, b: a in b, "not in": lambda a, b: a not in b,
    "is": operator.is_, "is not": operator.is_not,
}
#: Values whose identity is the same in every run (``x is None``); ``is`` between other
#: values depends on how CPython shares constants, so it is not computed.
_SINGLETONS = (None, True, False)


def compare_op(op: str, left: Any, right: Any) -> Any:
    """``left <op> right`` for one comparison (``==``, ``<``, ``in``, ``is`` ...)."""
    function = _COMPARE.get(op)
    if function is None:
        raise NotComputable(f"comparison {op!r} is not computed", op)
    _plain_operands(left, right)
    if op in ("is", "is not") and not any(left is s or right is s for s in _SINGLETONS):
        raise NotComputable(f"'{op}' between values other than None, True, False is not computed", op)
    _charge(1)
    return function(left, right)


def truth(value: Any) -> bool:
    """``bool(value)`` of a plain value (for ``and``, ``or``, ``if`` and ``not``)."""
    _plain_operands(value)
    return bool(value)


def make_slice(lower: Any, upper: Any, step: Any) -> slice:
    """The slice ``lower:upper:step`` of a subscript (parts plain values)."""
    _plain_operands(lower, upper, step)
    return slice(lower, upper, step)


def subscript(value: Any, key: Any) -> Any:
    """``value[key]`` on a plain value (``key`` plain, or a slice of plain values)."""
    check_plain(value)
    if type(key) is slice:
        _plain_operands(key.start, key.stop, key.step)
        if type(value) in (str, bytes, list, tuple):
            _charge(len(value) + 1)  # a slice copies at most every item
    else:
        for part in key if type(key) is tuple else (key,):
            if type(part) is slice:
                _plain_operands(part.start, part.stop, part.step)
            else:
                check_plain(part)
        _charge(1)
    return value[key]


# --------------------------------------------------------------------------- pure builtins

#: Codecs ``str(bytes, encoding)`` may use: looked up without importing anything new.
_SAFE_CODECS = frozenset({"utf-8", "utf8", "ascii", "latin-1", "latin1", "iso-8859-1", "utf-16", "utf-32"})


def _bind(args: tuple[Any, ...], kwargs: Mapping[str, Any], parameters: tuple[str, ...], required: int,
          positional_only: int = 0) -> dict[str, Any] | None:
    """``{parameter: value}`` when the call fits the signature, else None (the builtin
    itself then raises its own argument error, before computing anything)."""
    if len(args) > len(parameters):
        return None
    given = dict(zip(parameters, args))
    for key, value in kwargs.items():
        if key not in parameters or key in given or parameters.index(key) < positional_only:
            return None
        given[key] = value
    if any(parameter not in given for parameter in parameters[:required]):
        return None
    return given


def _sized(function: Callable[..., Any]) -> Callable[..., Any]:
    """A builtin whose result is at most as large as its arguments (``abs``, ``int``,
    ``divmod``): charge that before computing."""
    def call(*args: Any, **kwargs: Any) -> Any:
        _charge(sum(value_size(a) for a in args) + sum(value_size(v) for v in kwargs.values()) + 1)
        return function(*args, **kwargs)

    call.__name__ = function.__name__
    call.__wrapped__ = function  # type: ignore[attr-defined]
    return call


def _divmod(*args: Any, **kwargs: Any) -> Any:
    if len(args) == 2 and not kwargs and type(args[0]) in (int, bool) and type(args[1]) in (int, bool):
        _charge_int_work(args[0], args[1])
    _charge(sum(value_size(a) for a in args) + 1)
    return divmod(*args, **kwargs)  # type: ignore[misc]


def _small(function: Callable[..., Any]) -> Callable[..., Any]:
    """A builtin whose result is one small value (``len``, ``any``, ``ord``, ...), read
    from values already counted when they were made."""
    def call(*args: Any, **kwargs: Any) -> Any:
        _charge(1)
        return function(*args, **kwargs)

    call.__name__ = function.__name__
    call.__wrapped__ = function  # type: ignore[attr-defined]
    return call


def _str(*args: Any, **kwargs: Any) -> Any:
    given = _bind(args, kwargs, ("object", "encoding", "errors"), 0)
    if given is not None and ("encoding" in given or "errors" in given) and type(given.get("object")) is bytes \
            and given["object"]:
        # Only non-empty bytes get as far as the codec lookup (CPython refuses other
        # objects first, and decodes b'' to '' without one).
        encoding = given.get("encoding")
        if type(encoding) is str and encoding.lower().replace("_", "-") not in _SAFE_CODECS:
            raise NotComputable(f"codec {encoding!r} is not looked up", "str")
    _charge(sum(rendered_size(a) for a in args) + sum(rendered_size(v) for v in kwargs.values()) + 1)
    return str(*args, **kwargs)


def _repr_like(function: Callable[[Any], Any]) -> Callable[..., Any]:
    text = _ascii_length if function is ascii else _repr_length

    def call(*args: Any, **kwargs: Any) -> Any:
        _charge(sum(value_size(a, text) for a in args) + 1)
        return function(*args, **kwargs)

    call.__name__ = function.__name__
    call.__wrapped__ = function  # type: ignore[attr-defined]
    return call


def _round(*args: Any, **kwargs: Any) -> Any:
    given = _bind(args, kwargs, ("number", "ndigits"), 1) or {}
    number: Any = given.get("number")
    ndigits: Any = given.get("ndigits")
    if type(number) in (int, bool) and type(ndigits) in (int, bool) and ndigits < 0:
        _charge_int(-ndigits)  # CPython computes 10 ** -ndigits
    return round(*args, **kwargs)


def _pow(*args: Any, **kwargs: Any) -> Any:
    given = _bind(args, kwargs, ("base", "exp", "mod"), 2)
    if given is not None and given.get("mod") is None:
        base, exp = given["base"], given["exp"]
        _check_binary("**", base, exp)
    return pow(*args, **kwargs)


def _sum(*args: Any, **kwargs: Any) -> Any:
    given = _bind(args, kwargs, ("iterable", "start"), 1, positional_only=1) or {}
    items: Any = given.get("iterable")
    start: Any = given.get("start", 0)
    if type(items) in _CONTAINERS and type(start) not in (int, bool, float, complex):
        # Sequences added one by one: each partial sum is a new object (quadratic).
        total = value_size(start)
        work = 0
        for item in items:
            total += value_size(item)
            work += total
        _charge(work)
    elif type(items) in _CONTAINERS:
        _charge(sum(_int_digits(i) if type(i) is int else 1 for i in items) + 1)
    return sum(*args, **kwargs)


def _length(value: Any) -> int:
    return len(value) if type(value) in (str, bytes, list, tuple, dict, set, frozenset) else 1


def _sorting(function: Callable[..., Any]) -> Callable[..., Any]:
    """``sorted`` makes a new list of its argument's items; ``min``/``max`` return one of
    them (n log n or n comparisons of plain values, each bounded by their size)."""
    def call(*args: Any, **kwargs: Any) -> Any:
        _charge(sum(_length(a) for a in args) + 1 if function is sorted else 1)
        return function(*args, **kwargs)

    call.__name__ = function.__name__
    call.__wrapped__ = function  # type: ignore[attr-defined]
    return call


def _elements(function: Callable[..., Any]) -> Callable[..., Any]:
    """list/tuple/set/frozenset/dict: a new container of the argument's items (a string
    becomes one new object per character)."""
    def call(*args: Any, **kwargs: Any) -> Any:
        _charge(sum(_length(a) for a in args) + len(kwargs) + 1)
        return function(*args, **kwargs)

    call.__name__ = function.__name__
    call.__wrapped__ = function  # type: ignore[attr-defined]
    return call


#: The table: every builtin computed on plain values, name -> function. Each one was
#: decided by differential tests against ``eval`` (tests/test_builtins.py). Left out on
#: purpose: anything touching files, imports, attributes, the interpreter or the
#: terminal (see REFUSED_BUILTINS), values whose text holds an address (``reversed``,
#: ``iter``, ``map``, ``zip``, ``enumerate``, ``filter``), per-process values (``hash``,
#: ``id``), lazy values a tool could iterate without end (``range``), and builtins
#: that need type objects as arguments (``isinstance``, ``issubclass``, ``type``).
PURE_BUILTINS: Mapping[str, Callable[..., Any]] = {
    "abs": _sized(abs),
    "all": _small(all),
    "any": _small(any),
    "ascii": _repr_like(ascii),
    "bin": _repr_like(bin),
    "bool": _small(bool),
    "callable": _small(callable),
    "chr": _small(chr),
    "dict": _elements(dict),
    "divmod": _divmod,
    "float": _sized(float),
    "format": _format,
    "frozenset": _elements(frozenset),
    "hex": _repr_like(hex),
    "int": _sized(int),
    "len": _small(len),
    "list": _elements(list),
    "max": _sorting(max),
    "min": _sorting(min),
    "oct": _repr_like(oct),
    "ord": _small(ord),
    "pow": _pow,
    "repr": _repr_like(repr),
    "round": _round,
    "set": _elements(set),
    "sorted": _sorting(sorted),
    "str": _str,
    "sum": _sum,
    "tuple": _elements(tuple),
}


# --------------------------------------------------------------------------- refused builtins

def _expected(name: str, low: int, high: int | None) -> Callable[[int, list[str]], str | None]:
    """Builtins parsed by ``_PyArg_CheckPositional``: ``name expected at least 1 argument,
    got 0`` (no keywords accepted: ``name() takes no keyword arguments``)."""
    def check(positional: int, keywords: list[str]) -> str | None:
        if keywords:
            return f"{name}() takes no keyword arguments"
        if high is not None and low == high and positional != low:
            return f"{name} expected {low} argument{'s' * (low != 1)}, got {positional}"
        if positional < low:
            return f"{name} expected at least {low} argument{'s' * (low != 1)}, got {positional}"
        if high is not None and positional > high:
            return f"{name} expected at most {high} argument{'s' * (high != 1)}, got {positional}"
        return None

    return check


def _no_arguments(name: str) -> Callable[[int, list[str]], str | None]:
    def check(positional: int, keywords: list[str]) -> str | None:
        if keywords:
            return f"{name}() takes no keyword arguments"
        if positional:
            return f"{name}() takes no arguments ({positional} given)"
        return None

    return check


#: CPython 3.13 changed some argument-parsing texts of the builtins (see REFUSED_BUILTINS).
_PYTHON_3_13 = sys.version_info >= (3, 13)


def _clinic(name: str, parameters: tuple[str, ...], positional_only: int, required: int,
            keyword_only: tuple[str, ...] = ()) -> Callable[[int, list[str]], str | None]:
    """Argument Clinic's keyword parsing (``_PyArg_UnpackKeywords``), in its order:
    too many arguments, too many or too few positionals, a missing required argument, one given by name
    and position, an unknown keyword."""
    maximum = len(parameters)
    every = parameters + keyword_only

    def check(positional: int, keywords: list[str]) -> str | None:
        total = positional + len(keywords)
        if total > len(every):
            return (f"{name}() takes at most {len(every)} {'keyword ' * (positional == 0)}"
                    f"argument{'s' * (len(every) != 1)} ({total} given)")
        if positional > maximum:
            how = "at most" if required < maximum else "exactly"
            return f"{name}() takes {how} {maximum} positional argument{'s' * (maximum != 1)} ({positional} given)"
        least = min(required, positional_only)
        if positional < least:
            how = "at least" if least < maximum else "exactly"
            return f"{name}() takes {how} {least} positional argument{'s' * (least != 1)} ({positional} given)"
        left = list(keywords)
        for index in range(max(positional, positional_only), len(every)):
            if every[index] in left:
                left.remove(every[index])
            elif index < required:
                return f"{name}() missing required argument '{every[index]}' (pos {index + 1})"
        for index in range(positional_only, positional):
            if every[index] in left:
                return f"argument for {name}() given by name ('{every[index]}') and position ({index + 1})"
        for key in left:
            if _PYTHON_3_13:
                return f"{name}() got an unexpected keyword argument '{key}'"
            return f"'{key}' is an invalid keyword argument for {name}()"
        return None

    return check


_OPEN_PARAMETERS = ("file", "mode", "buffering", "encoding", "errors", "newline", "closefd", "opener")
_COMPILE_PARAMETERS = ("source", "filename", "mode", "flags", "dont_inherit", "optimize")

#: Builtins never run: name -> the check of CPython's argument parsing, which fails
#: before the builtin does anything (its TypeError text), or says nothing (the call
#: would run: it stays refused, as an undefined name).
REFUSED_BUILTINS: Mapping[str, Callable[[int, list[str]], str | None]] = {
    # Python 3.13 lets exec's and eval's globals and locals be given by name (eval moved
    # to Argument Clinic) and words Clinic's unknown-keyword error differently: the
    # reference on each Python says what that Python says.
    "exec": _clinic("exec", ("source", "globals", "locals"), 1 if _PYTHON_3_13 else 3, 1, ("closure",)),
    "eval": _clinic("eval", ("source", "globals", "locals"), 1, 1) if _PYTHON_3_13 else _expected("eval", 1, 3),
    "compile": _clinic("compile", _COMPILE_PARAMETERS, 0, 3, ("_feature_version",)),
    "open": _clinic("open", _OPEN_PARAMETERS, 0, 1),
    "getattr": _expected("getattr", 2, 3),
    "setattr": _expected("setattr", 3, 3),
    "delattr": _expected("delattr", 2, 2),
    "hasattr": _expected("hasattr", 2, 2),
    "globals": _no_arguments("globals"),
    "locals": _no_arguments("locals"),
    "vars": _expected("vars", 0, 1),
    "dir": _expected("dir", 0, 1),
    "input": _expected("input", 0, 1),
}

#: Argument Clinic converters of the refused builtins' parameters, checked in order
#: after the arity (``object`` parameters are not converted).
_CONVERTERS: Mapping[str, Mapping[str, str]] = {
    "compile": {"filename": "path", "mode": "str", "flags": "int", "dont_inherit": "int", "optimize": "int",
                "_feature_version": "int"},
    "open": {"mode": "str", "buffering": "int", "encoding": "str?", "errors": "str?", "newline": "str?",
             "closefd": "int"},
}
_PARAMETERS = {"compile": _COMPILE_PARAMETERS + ("_feature_version",), "open": _OPEN_PARAMETERS}


def _converter_error(name: str, parameter: str, kind: str, value: Any) -> str | None:
    shown = "None" if value is None else type(value).__name__
    if kind == "str" and type(value) is not str:
        return f"{name}() argument '{parameter}' must be str, not {shown}"
    if kind == "str?" and value is not None and type(value) is not str:
        return f"{name}() argument '{parameter}' must be str or None, not {shown}"
    if kind == "int" and type(value) not in (int, bool):
        return f"'{type(value).__name__}' object cannot be interpreted as an integer"
    if kind == "path" and type(value) not in (str, bytes):
        return f"expected str, bytes or os.PathLike object, not {type(value).__name__}"
    return None


#: Plain types with ``__getitem__`` (what ``PyMapping_Check`` accepts).
_MAPPING_LIKE = frozenset({dict, list, tuple, str, bytes})


def _exec_eval_error(name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
    """The checks of ``exec``/``eval`` before they compile or run the source."""
    source = args[0]
    namespace = args[1] if len(args) > 1 else None
    local = args[2] if len(args) > 2 else None
    if name == "exec":
        if namespace is not None and local is None:
            local = namespace
        if namespace is not None and type(namespace) is not dict:
            return f"exec() globals must be a dict, not {type(namespace).__name__}"
        if local is not None and type(local) not in _MAPPING_LIKE:
            return f"locals must be a mapping or None, not {type(local).__name__}"
        if type(source) in (str, bytes) and kwargs.get("closure") is not None:
            return "closure can only be used when source is a code object"
    else:
        if local is not None and type(local) not in _MAPPING_LIKE:
            return "locals must be a mapping"
        if namespace is not None and type(namespace) is not dict:
            if type(namespace) in _MAPPING_LIKE:
                return "globals must be a real dict; try eval(expr, {}, mapping)"
            return "globals must be a dict"
    if type(source) not in (str, bytes):
        return f"{name}() arg 1 must be a string, bytes or code object"
    return None  # it would compile and run the source


#: Argument types the refused builtins check right after their arity, before running.
_ATTRIBUTE_NAME_POSITION = {"getattr": 1, "setattr": 1, "delattr": 1, "hasattr": 1}


def _refused_error(name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
    check = REFUSED_BUILTINS[name]
    message = check(len(args), list(kwargs))
    if message is not None:
        return message
    if name in _CONVERTERS:
        given = dict(zip(_PARAMETERS[name], args), **kwargs)
        for parameter in _PARAMETERS[name]:
            kind = _CONVERTERS[name].get(parameter)
            if kind is not None and parameter in given:
                message = _converter_error(name, parameter, kind, given[parameter])
                if message is not None:
                    return message
        if name == "open" and type(given["file"]) not in (str, bytes, int, bool):  # (an int is a descriptor)
            return f"expected str, bytes or os.PathLike object, not {type(given['file']).__name__}"
        return None
    if name in _ATTRIBUTE_NAME_POSITION:
        attribute = args[_ATTRIBUTE_NAME_POSITION[name]]
        if type(attribute) is not str:
            return f"attribute name must be string, not '{type(attribute).__name__}'"
    if name in ("exec", "eval"):
        return _exec_eval_error(name, args, kwargs)
    if name == "vars" and args:
        return "vars() argument must have __dict__ attribute"  # no plain value has one
    return None


# --------------------------------------------------------------------------- calls

def _builtin_name(name: str) -> str:
    return name if name.isascii() else unicodedata.normalize("NFKC", name)


def is_builtin_name(name: str) -> bool:
    """Whether ``name`` (in any compatibility form) is in either table."""
    name = _builtin_name(name)
    return name in PURE_BUILTINS or name in REFUSED_BUILTINS


def call_builtin(name: str, args: tuple[Any, ...] | list[Any] = (), kwargs: Mapping[str, Any] | None = None) -> Any:
    """``name(*args, **kwargs)`` for a builtin of the table, as CPython computes it."""
    kwargs = {} if kwargs is None else kwargs
    name = _builtin_name(name)
    function = PURE_BUILTINS.get(name)
    if function is None:
        if name in REFUSED_BUILTINS:
            message = _refused_error(name, tuple(args), kwargs)
            if message is not None:
                raise TypeError(message)
        raise NotComputable(f"builtin {name!r} is not computed", name)
    _plain_operands(*args, *kwargs.values())
    return function(*args, **kwargs)
