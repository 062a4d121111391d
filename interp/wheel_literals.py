"""Python literals read from the dataset wheel's source, as data: the one reader behind
``long_context.py`` (:mod:`bfcl_safe.backends.long_context`, its ``ast`` path),
``default_prompts.py`` (:mod:`bfcl_safe.checker.system_prompt`) and ``model_config.py``
(:mod:`bfcl_safe.checker.dataset`).

``ast.parse`` builds the tree and :class:`LiteralReader` converts literal nodes itself:
nothing is imported, compiled or executed. Accepted: constants, lists, tuples, sets,
dicts (no ``**``), ``-``/``+`` on a number, ``+`` of two strings, a name bound earlier
(when the caller passes the names), and a name or dotted attribute as its text (when the
caller asks for it). One set of bounds (:mod:`bfcl_safe.interp.limits`) covers every
source: its length, the nesting of one literal, and the work over the whole source.
"""

from __future__ import annotations

import ast
from typing import Any, Mapping

from bfcl_safe.interp import limits
from bfcl_safe.interp.errors import BfclSafeError


class LiteralError(BfclSafeError, ValueError):
    """A wheel source is not the literal data expected, or is past a bound; the message
    names the file (and the assignment and line when there is one). ``bound`` is true
    when a bound of :mod:`~bfcl_safe.interp.limits` was passed (not a node refused)."""

    def __init__(self, message: str, *, bound: bool = False):
        super().__init__(message)
        self.bound = bound

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (str(self), self.bound))


def _rebuild(message: str, bound: bool) -> LiteralError:
    return LiteralError(message, bound=bound)


def _line(node: ast.AST) -> str:
    return f"line {getattr(node, 'lineno', '?')}"


class LiteralReader:
    """Reads the literals of one source; the work budget is shared by every value read
    with the same reader (names bound earlier can be reused without copying, but a
    string built with ``+`` is paid for by its length)."""

    def __init__(self, filename: str, *, dotted_names: bool = False):
        self.filename = filename
        #: A name or dotted attribute that is not a known name reads as its text.
        self.dotted_names = dotted_names
        self._units = 0

    def parse(self, source: str) -> ast.Module:
        """The module's syntax tree, within the source-length bound."""
        if len(source) > limits.MAX_WHEEL_SOURCE_CHARS:
            raise LiteralError(
                f"{self.filename}: {len(source)} characters, more than the "
                f"{limits.MAX_WHEEL_SOURCE_CHARS} a wheel source read as data may have",
                bound=True,
            )
        try:
            return ast.parse(source, filename=self.filename)
        except SyntaxError as exc:
            raise LiteralError(f"{self.filename}: not valid Python: {exc.msg} (line {exc.lineno})") from None
        except (ValueError, RecursionError, MemoryError) as exc:
            raise LiteralError(f"{self.filename}: not valid Python: {type(exc).__name__}") from None

    def value(self, node: ast.AST, where: str, names: Mapping[str, Any] | None = None) -> Any:
        """The value of the literal expression ``node`` (``where``: the assignment, for
        messages); ``names`` are the values of names bound earlier."""
        return self._value(node, f"{self.filename}: {where}", names or {}, 0)

    def _pay(self, units: int, node: ast.AST, where: str) -> None:
        self._units += units
        if self._units > limits.MAX_WHEEL_LITERAL_UNITS:
            raise LiteralError(
                f"{where}: {_line(node)}: more than the {limits.MAX_WHEEL_LITERAL_UNITS} units of "
                f"work reading a wheel source's literals may take",
                bound=True,
            )

    def _value(self, node: ast.AST, where: str, names: Mapping[str, Any], depth: int) -> Any:
        self._pay(1, node, where)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            if depth >= limits.MAX_WHEEL_LITERAL_DEPTH:
                raise LiteralError(
                    f"{where}: {_line(node)}: nested more than the {limits.MAX_WHEEL_LITERAL_DEPTH} "
                    f"levels a literal from the wheel may be",
                    bound=True,
                )
            inner = depth + 1
            if isinstance(node, ast.Dict):
                if any(key is None for key in node.keys):
                    raise LiteralError(f"{where}: '**' in a dict literal is not data")
                pairs = [(self._value(k, where, names, inner), self._value(v, where, names, inner))
                         for k, v in zip(node.keys, node.values) if k is not None]
                try:
                    return dict(pairs)
                except TypeError:
                    raise LiteralError(f"{where}: {_line(node)}: a dict key that is not hashable") from None
            items = [self._value(item, where, names, inner) for item in node.elts]
            if isinstance(node, ast.List):
                return items
            if isinstance(node, ast.Tuple):
                return tuple(items)
            try:
                return set(items)
            except TypeError:
                raise LiteralError(f"{where}: {_line(node)}: a set item that is not hashable") from None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self._value(node.operand, where, names, depth)
            if isinstance(operand, (int, float, complex)) and not isinstance(operand, bool):
                return -operand if isinstance(node.op, ast.USub) else +operand
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left = self._value(node.left, where, names, depth)
            right = self._value(node.right, where, names, depth)
            if isinstance(left, str) and isinstance(right, str):
                self._pay(len(left) + len(right), node, where)
                return left + right
        elif isinstance(node, ast.Name) and node.id in names:
            return names[node.id]
        elif isinstance(node, (ast.Name, ast.Attribute)) and self.dotted_names:
            parts = []
            current: ast.AST = node
            while isinstance(current, ast.Attribute):
                parts.append(current.attr)
                current = current.value
            if isinstance(current, ast.Name):
                parts.append(current.id)
                return ".".join(reversed(parts))
        raise LiteralError(f"{where}: {_line(node)}: {type(node).__name__} is not a literal")


__all__ = ["LiteralError", "LiteralReader"]
