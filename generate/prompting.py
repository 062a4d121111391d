"""What BFCL's prompting inference adds to the chat: its system prompt, and the texts of
its decoding failures as the inference log records them.

The system prompt's wording is BFCL's own data: it is read from the dataset's wheel
(``bfcl_eval/constants/default_prompts.py``), parsed with :mod:`ast` and only its literal
assignments taken — nothing from the wheel is imported or executed — and assembled the
way BFCL assembles its default format (``ret_fmt=python&tool_call_tag=False&
func_doc_fmt=json&prompt_fmt=plaintext&style=classic``; the multi-turn categories use no
other).
"""

from __future__ import annotations

import ast
import json
from typing import Any, Mapping, Sequence

from bfcl_safe.interp.errors import BfclSafeError

#: Where the prompt templates live inside the ``bfcl_eval`` package.
PROMPTS_PATH = "constants/default_prompts.py"

#: The one system-prompt format of the multi-turn categories (BFCL's
#: ``DEFAULT_SYSTEM_PROMPT_FORMAT``): Python call syntax, no tag, docs as JSON,
#: plain text, the classic wording.
RETURN_FORMAT = "python"
DOC_FORMAT = "json"
PROMPT_FORMAT = "plaintext"
PROMPT_STYLE = "classic"

#: The module-level names the prompt is assembled from.
_NEEDED = ("OUTPUT_FORMAT_MAPPING", "PARAM_TYPE_MAPPING", "PROMPT_STYLE_TEMPLATES", "PROMPT_TEMPLATE_MAPPING")


class PromptTemplateError(BfclSafeError, ValueError):
    """The wheel's prompt templates cannot be read; ``name`` is the missing or bad one."""

    def __init__(self, name: str, reason: str):
        self.name = name
        self.reason = reason
        super().__init__(f"{PROMPTS_PATH}: {name}: {reason}")

    def __reduce__(self):
        return (type(self), (self.name, self.reason))


class _NotLiteral(Exception):
    pass


def _literal(node: ast.AST, known: Mapping[str, Any]) -> Any:
    """The value of a literal expression; names of earlier literal assignments and
    ``+`` of two strings are allowed (the module builds some templates that way)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return node.value
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_literal(k, known): _literal(v, known) for k, v in zip(node.keys, node.values)}
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_literal(item, known) for item in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Name) and node.id in known:
        return known[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left, known), _literal(node.right, known)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
    raise _NotLiteral


def parse_prompt_templates(source: str) -> dict[str, Any]:
    """The literal module-level assignments of ``default_prompts.py``, by name."""
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        raise PromptTemplateError("<module>", f"does not parse ({exc})") from None
    known: dict[str, Any] = {}
    for statement in module.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            try:
                known[statement.targets[0].id] = _literal(statement.value, known)
            except (_NotLiteral, TypeError):
                continue
    for name in _NEEDED:
        if name not in known:
            raise PromptTemplateError(name, "missing, or not a literal")
    return known


def load_prompt_templates(dataset: Any) -> dict[str, Any]:
    """The prompt templates of the dataset's wheel (a :class:`~bfcl_safe.checker.dataset.Dataset`)."""
    # The dataset's source reads members of the wheel or package folder it was opened from.
    raw = dataset._source.read(PROMPTS_PATH)
    try:
        return parse_prompt_templates(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise PromptTemplateError("<module>", f"not UTF-8 ({exc.reason})") from None


def system_prompt(templates: Mapping[str, Any], docs: Sequence[Mapping[str, Any]]) -> str:
    """BFCL's default system prompt for a prompting model with the tool ``docs``
    (``formulate_system_prompt`` with the default format)."""
    try:
        style = templates["PROMPT_STYLE_TEMPLATES"][PROMPT_STYLE]
        tool_call_format = style["tool_call_no_tag"].format(
            output_format=templates["OUTPUT_FORMAT_MAPPING"][RETURN_FORMAT],
            param_types=templates["PARAM_TYPE_MAPPING"][RETURN_FORMAT],
        )
        available_tools = style["available_tools"].format(format=DOC_FORMAT, functions=json.dumps(list(docs), indent=4))
        return templates["PROMPT_TEMPLATE_MAPPING"][PROMPT_FORMAT].format(
            persona=style["persona"],
            task=style["task"],
            tool_call_format=tool_call_format,
            multiturn_behavior=style["multiturn_behavior"],
            available_tools=available_tools,
        )
    except (KeyError, TypeError, IndexError, ValueError, AttributeError) as exc:
        raise PromptTemplateError("PROMPT_STYLE_TEMPLATES", f"not the expected templates ({type(exc).__name__}: {exc})") from None


def with_system_prompt(messages: Sequence[Mapping[str, Any]], prompt: str) -> list[dict]:
    """The first turn's messages with the system prompt: put before the content of a
    system message that comes first, else inserted as a new first message (BFCL's
    ``system_prompt_pre_processing_chat_model``)."""
    out = [dict(message) for message in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = prompt + "\n\n" + out[0]["content"]
    else:
        out.insert(0, {"role": "system", "content": prompt})
    return out


# --------------------------------------------------------------------------- decoding failures


def prompting_decode_error(step: Any) -> str | None:
    """The ``str()`` of the exception BFCL's prompting decoder raises on ``step`` (the
    inference log's ``error``), for the failures decided by the text's syntax tree; None
    when none is found (the caller then gives its own reason).

    BFCL strips backticks, newlines and spaces, wraps the text in brackets, strips
    quotes, and ``ast.parse``\\ s it as an expression; then it expects a call or a list of
    calls and reads their keyword arguments. Only the parse runs here (``ast.parse``
    builds a tree; nothing is evaluated).
    """
    if not isinstance(step, str):
        return f"'{type(step).__name__}' object has no attribute 'strip'"
    from bfcl_safe.checker.decoders.prompting import bracketed
    from bfcl_safe.interp import limits
    from bfcl_safe.interp.lexical import bracket_depth

    text = bracketed(step)

    if len(text) > limits.MAX_SOURCE_LENGTH or bracket_depth(text) > limits.MAX_NESTING_DEPTH:
        return None
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        return str(exc)
    except (ValueError, RecursionError, MemoryError):
        return None
    body = tree.body
    if isinstance(body, ast.Call):
        calls = [body]
    else:
        calls = getattr(body, "elts", None)
        if calls is None:
            return f"'{type(body).__name__}' object has no attribute 'elts'"
    try:
        decoded = []
        for call in calls:
            if not isinstance(call, ast.Call):
                raise _ReferenceError("")  # BFCL asserts each element is a call: no message
            decoded.append(_resolve_call(call))
        for function_call in decoded:
            for arguments in function_call.values():
                for value in arguments.values():
                    _render(value)
    except _ReferenceError as exc:
        return exc.text
    except _Unknown:
        return None
    return None


class _ReferenceError(Exception):
    """The text of the exception BFCL's decoder raises here."""

    def __init__(self, text: str):
        self.text = text


#: Stands for the value BFCL computes from literal arithmetic (it renders).
_EVALUATED = 0


class _Unknown(Exception):
    """BFCL would evaluate the node (``eval`` of arithmetic or a lambda): not emulated."""


def _resolve_call(node: ast.Call) -> dict:
    """BFCL's ``resolve_ast_call`` on a tree (keyword arguments only)."""
    parts = []
    func = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    arguments = {}
    for keyword in node.keywords:
        arguments[keyword.arg] = _resolve(keyword.value)
    return {".".join(reversed(parts)): arguments}


def _resolve(node: Any) -> Any:
    """BFCL's ``resolve_ast_by_type``, failing where it fails, with its message; the
    evaluated kinds (arithmetic, lambdas) raise :class:`_Unknown`. Only literals are
    built (no evaluation of model text)."""
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        operand = node.operand
        if not isinstance(operand, ast.Constant):
            raise _ReferenceError(f"'{type(operand).__name__}' object has no attribute 'value'")
        value = operand.value
        if isinstance(value, (int, float, complex)):  # bool included
            return -value
        raise _ReferenceError(f"bad operand type for unary -: '{type(value).__name__}'")
    if isinstance(node, ast.List):
        return [_resolve(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for key, value in zip(node.keys, node.values):
            key_value = _resolve(key)
            item = _resolve(value)
            try:
                out[key_value] = item
            except TypeError as exc:
                raise _ReferenceError(str(exc)) from None
        return out
    if isinstance(node, ast.BinOp):
        # BFCL evaluates it. A name in it fails first (none of BFCL's module names is a
        # model's word); literals alone: the value only matters if it fails, not emulated.
        for leaf in _in_evaluation_order(node):
            if isinstance(leaf, ast.Name):
                raise _ReferenceError(f"name '{leaf.id}' is not defined")
            if not isinstance(leaf, (ast.BinOp, ast.UnaryOp, ast.Constant, ast.operator, ast.unaryop)):
                raise _Unknown
        return _EVALUATED
    if isinstance(node, ast.Lambda):
        raise _Unknown
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        if not node.keywords:
            return ast.unparse(node)
        return _resolve_call(node)
    if isinstance(node, ast.Tuple):
        return tuple(_resolve(item) for item in node.elts)
    if isinstance(node, ast.Subscript):
        return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"
    raise _ReferenceError(f"Unsupported AST type: {type(node)}")


def _in_evaluation_order(node: ast.AST):
    """The nodes of an expression depth first, left before right (Python's order)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(ast.iter_child_nodes(current))))


def _render(value: Any) -> None:
    """BFCL's ``parse_nested_value``, for its failures only."""
    if isinstance(value, dict):
        if all(isinstance(item, dict) for item in value.values()):
            if not value:
                raise _ReferenceError("list index out of range")
            for item in next(iter(value.values())).values():
                _render(item)
        else:
            for item in value.values():
                _render(item)
        return
    if isinstance(value, (list, tuple)):
        return  # repr() of a list renders
    try:
        repr(value)
    except ValueError as exc:  # an int too long to render
        raise _ReferenceError(str(exc)) from None


def fc_decode_error(step: Any) -> str | None:
    """The ``str()`` of the exception BFCL's FC decoder (``convert_to_function_call``)
    raises on ``step``, for failures decided by the step's shape and its arguments'
    JSON; None when none is found."""
    if type(step) is dict:
        step = [step]
    try:
        iterator = iter(step)
    except TypeError:
        return f"'{type(step).__name__}' object is not iterable"
    for call in iterator:
        if not isinstance(call, dict):
            return f"'{type(call).__name__}' object has no attribute 'items'"
        for _name, value in call.items():
            if type(value) is str:
                try:
                    value = json.loads(value)
                except json.JSONDecodeError as exc:
                    return str(exc)
                except (ValueError, RecursionError) as exc:
                    return str(exc)
            if not isinstance(value, dict):
                return f"'{type(value).__name__}' object has no attribute 'items'"
    return None
