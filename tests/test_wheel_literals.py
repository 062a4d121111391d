"""interp.wheel_literals: the one reader of Python literals in the dataset wheel's source
(long_context.py, default_prompts.py, model_config.py): what it accepts, what it refuses,
and its bounds (source length, nesting depth, work)."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from bfcl_safe.interp import limits
from bfcl_safe.interp.wheel_literals import LiteralError, LiteralReader


def read(expression: str, names: dict[str, Any] | None = None, dotted_names: bool = False) -> Any:
    reader = LiteralReader("f.py", dotted_names=dotted_names)
    statement = reader.parse(f"X = {expression}\n").body[0]
    assert isinstance(statement, ast.Assign)
    return reader.value(statement.value, "X", names)


@pytest.mark.parametrize("expression, expected", [
    ("'a'", "a"),
    ("b'a'", b"a"),
    ("1", 1),
    ("-1", -1),
    ("+2.5", 2.5),
    ("-1j", -1j),
    ("True", True),
    ("None", None),
    ("...", ...),
    ("[1, 'a', [None]]", [1, "a", [None]]),
    ("(1,)", (1,)),
    ("{1, 2}", {1, 2}),
    ("{'k': {'j': []}, 2: (3,)}", {"k": {"j": []}, 2: (3,)}),
    ("'a' + 'b' + 'c'", "abc"),
    ("'''x\ny'''", "x\ny"),
])
def test_accepted_literals(expression: str, expected: Any) -> None:
    value = read(expression)
    assert value == expected and type(value) is type(expected)


def test_names_bound_earlier_and_dotted_names() -> None:
    assert read("A + 'b'", names={"A": "a"}) == "ab"
    assert read("[A]", names={"A": {"k": 1}}) == [{"k": 1}]
    assert read("pkg.mod.Handler", dotted_names=True) == "pkg.mod.Handler"
    assert read("Handler", dotted_names=True) == "Handler"
    assert read("A", names={"A": 3}, dotted_names=True) == 3  # a known name is its value


@pytest.mark.parametrize("expression, refused", [
    ("f()", "Call"),
    ("os.system('x')", "Call"),
    ("A", "Name"),  # not bound earlier, no dotted names
    ("a.b", "Attribute"),
    ("f().b", "Attribute"),
    ("1 + 2", "BinOp"),
    ("'a' * 3", "BinOp"),
    ("'a' + 1", "BinOp"),
    ("-'a'", "UnaryOp"),
    ("-True", "UnaryOp"),
    ("not 1", "UnaryOp"),
    ("[x for x in y]", "ListComp"),
    ("lambda: 1", "Lambda"),
    ("f'{x}'", "JoinedStr"),
    ("x if y else z", "IfExp"),
    ("a[0]", "Subscript"),
])
def test_refused_nodes(expression: str, refused: str) -> None:
    with pytest.raises(LiteralError, match=rf"^f\.py: X: line 1: {refused} is not a literal$") as caught:
        read(expression)
    assert not caught.value.bound


@pytest.mark.parametrize("expression, message", [
    ("{**a}", r"^f\.py: X: '\*\*' in a dict literal is not data$"),
    ("{[1]: 2}", r"^f\.py: X: line 1: a dict key that is not hashable$"),
    ("{[1]}", r"^f\.py: X: line 1: a set item that is not hashable$"),
    ("f() .b", r"Attribute is not a literal"),
])
def test_refused_containers(expression: str, message: str) -> None:
    with pytest.raises(LiteralError, match=message):
        read(expression, dotted_names=expression.startswith("f()"))


def test_invalid_python_is_one_error_naming_the_file() -> None:
    with pytest.raises(LiteralError, match=r"^f\.py: not valid Python: .* \(line 1\)$"):
        LiteralReader("f.py").parse("X = [\n")
    # (a NUL is a ValueError on 3.11, a SyntaxError since 3.12: one error either way)
    with pytest.raises(LiteralError, match=r"^f\.py: not valid Python: "):
        LiteralReader("f.py").parse("X = '\x00'\n")


def test_depth_bound() -> None:
    depth = limits.MAX_WHEEL_LITERAL_DEPTH
    value = read("[" * (depth - 1) + "{'k': -1}" + "]" * (depth - 1))
    for _ in range(depth - 1):
        value = value[0]
    assert value == {"k": -1}
    with pytest.raises(LiteralError, match=rf"nested more than the {depth} levels") as caught:
        read("[" * (depth + 1) + "]" * (depth + 1))
    assert caught.value.bound
    # Unary minus and + nest no container.
    assert read("-" * 150 + "1") == 1


def test_source_length_bound() -> None:
    source = "X = 1\n" + "#" * limits.MAX_WHEEL_SOURCE_CHARS
    with pytest.raises(LiteralError, match=rf"^f\.py: {len(source)} characters, more than the "
                                           rf"{limits.MAX_WHEEL_SOURCE_CHARS}") as caught:
        LiteralReader("f.py").parse(source)
    assert caught.value.bound


def test_work_bound_covers_names_reused_in_doubling_concatenations() -> None:
    # Each line doubles the string: 40 lines would build a terabyte; the work bound stops
    # it once the strings built add up past the limit.
    lines = ["A0 = 'xxxxxxxx'"] + [f"A{i} = A{i - 1} + A{i - 1}" for i in range(1, 40)]
    reader = LiteralReader("f.py")
    known: dict[str, Any] = {}
    with pytest.raises(LiteralError, match=r"more than the \d+ units of work") as caught:
        for statement in reader.parse("\n".join(lines)).body:
            assert isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name)
            known[statement.targets[0].id] = reader.value(statement.value, statement.targets[0].id, known)
    assert caught.value.bound
    assert sum(len(value) for value in known.values()) < 2 * limits.MAX_WHEEL_LITERAL_UNITS


def test_work_bound_counts_nodes_across_the_reader() -> None:
    reader = LiteralReader("f.py")
    node = reader.parse("X = [" + "1, " * 1000 + "]").body[0].value  # type: ignore[attr-defined]
    reads = limits.MAX_WHEEL_LITERAL_UNITS // 1001
    for _ in range(reads):
        reader.value(node, "X")
    with pytest.raises(LiteralError, match="units of work"):
        reader.value(node, "X")


def test_errors_survive_pickling() -> None:
    import pickle

    error = pickle.loads(pickle.dumps(LiteralError("m", bound=True)))
    assert str(error) == "m" and error.bound
