"""Handler decoders against the reference handlers' own ``decode_execute`` (pinned wheel).

Each decoder gets Hypothesis-generated steps in its handler's format, well-formed and
mangled, decoded by ours and by every reference handler it stands for: the same call
texts (our ``display``), calls that parse to the same thing (our ``decode``), or a
failure on both sides. The reference's handler modules import SDKs (openai, anthropic,
...) that the reference folder does not hold; they are imported here with inert
stand-ins for those SDK modules (test-only; only ``decode_execute`` is called, on
instances made without ``__init__``). Where a reference handler would ``eval`` text,
the generated text is checked first and handed to the reference only when that is
harmless (``_eval_is_harmless``); otherwise ours must refuse it.
"""

from __future__ import annotations

import ast
import builtins
import importlib.abc
import importlib.machinery
import inspect
import json
import sys
import types
from functools import lru_cache
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, strategies as st

from bfcl_safe.checker.decoders import prompting as checker_prompting
from bfcl_safe.checker.decoders import DECODERS, DecodeError, decode_step
from bfcl_safe.checker.decoders.models import DECODER_OF_HANDLER as HANDLER_DECODERS, INHERITED_FROM, decoder_for_handler, decoder_for_model
from bfcl_safe.interp.callspec import CallSpec
from bfcl_safe.interp.errors import RejectedInput
from bfcl_safe.interp.text import parse_call
from tests.checker_support import dataset
from tests.refenv import reference_dir, reference_package_dir

# ------------------------------------------------------------ reference handlers

_SDK_MODULES = frozenset({
    "overrides", "openai", "anthropic", "cohere", "boto3", "google", "mistralai", "writerai",
    "transformers", "qwen_agent", "datamodel_code_generator", "requests", "httpx",
})


class _InertMeta(type):
    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _InertMeta(name, (_Inert,), {})

    def __getitem__(cls, item: Any) -> Any:
        return cls


class _Inert(metaclass=_InertMeta):
    """Any SDK name: a class, subclassable; used as a decorator it returns the function."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return object.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


class _InertModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _InertMeta(name, (_Inert,), {})
        setattr(self, name, value)
        return value


class _InertFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on ``sys.meta_path``: only SDK modules that are not installed are stood in for."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in _SDK_MODULES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _InertModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


@lru_cache(maxsize=None)
def reference_handler_classes() -> dict[str, type]:
    """Every handler class defined under the reference's ``model_handler`` package."""
    root = reference_package_dir() / "model_handler"
    path = str(reference_dir())
    if path not in sys.path:
        sys.path.append(path)
    finder = _InertFinder()
    sys.meta_path.append(finder)
    try:
        base = importlib.import_module("bfcl_eval.model_handler.base_handler").BaseHandler
        classes = {}
        for file in sorted(root.rglob("*.py")):
            module_name = ".".join(file.relative_to(reference_dir()).with_suffix("").parts)
            module = importlib.import_module(module_name)
            for name, value in vars(module).items():
                if inspect.isclass(value) and issubclass(value, base) and value.__module__ == module_name:
                    classes[name] = value
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n, m in sys.modules.items() if isinstance(m, _InertModule)]:
            del sys.modules[name]
    return classes


@lru_cache(maxsize=None)
def reference_handler(class_name: str, is_fc_model: bool) -> Any:
    cls = reference_handler_classes()[class_name]
    handler = cls.__new__(cls)
    handler.is_fc_model = is_fc_model
    return handler


def handlers_for(decoder: str) -> list[tuple[str, bool]]:
    """The (handler class, is_fc_model) pairs our table serves with ``decoder``."""
    pairs = []
    for handler, modes in HANDLER_DECODERS.items():
        for is_fc, name in zip((True, False), modes):
            if name == decoder and (handler, not is_fc) not in pairs:
                pairs.append((handler, is_fc))
    return pairs


# ----------------------------------------------------------------- comparison

FAILED = "<failed>"
_UTILS_GLOBALS = {"json", "re", "ast", "os", "builtins", "inspect", "time", "copy"}


def _eval_is_harmless(text: str) -> bool:
    """True when the reference may ``eval`` pieces of ``text`` safely: no calls,
    attributes, subscripts, lambdas or comprehensions anywhere, and no bare name
    that would resolve (builtins or the handler modules' globals), so every eval
    either computes literals or raises ``NameError``."""
    for candidate in (text, text.lstrip(" \t"), "[" + text.strip("`\n ").strip().strip("'") + "]"):
        try:
            tree = ast.parse(candidate, mode="exec")
            break
        except (SyntaxError, ValueError, RecursionError):
            continue
    else:
        return True  # does not parse: nothing is evaluated
    for node in ast.walk(tree):
        if isinstance(node, (ast.BinOp, ast.Lambda)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Call, ast.Attribute, ast.Subscript, ast.Lambda, ast.NamedExpr,
                                      ast.comprehension, ast.Await, ast.Yield, ast.JoinedStr)):
                    return False
                if isinstance(inner, ast.Name) and (hasattr(builtins, inner.id) or inner.id in _UTILS_GLOBALS):
                    return False
    return True


def _llama_eval_is_harmless(text: str) -> bool:
    """The Llama handler ``eval``s the whole step (no ``;``): literals only."""
    text = text.replace("<|python_tag|>", "")
    if ";" in text:
        return True
    try:
        tree = ast.parse(text.lstrip(" \t"), mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return True
    allowed = (ast.Expression, ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp,
               ast.Load, ast.operator, ast.unaryop)
    return all(isinstance(node, allowed) for node in ast.walk(tree))


def reference_decode(handler: Any, step: Any) -> Any:
    try:
        return handler.decode_execute(step, has_tool_call_tag=False)
    except Exception:  # noqa: BLE001 - the scorer skips a step whose decoding raises
        return FAILED


def our_decode(decoder: str, step: Any) -> tuple[Any, Any]:
    try:
        calls = decode_step(step, decoder)
    except DecodeError:
        calls = FAILED
    try:
        texts = DECODERS[decoder][1](step)
    except Exception:  # noqa: BLE001 - as the score files: an undecodable step is left out
        texts = FAILED
    return calls, texts


def _same_call(ours: Any, text: str) -> bool:
    if isinstance(ours, str):
        return ours == text
    try:
        theirs = parse_call(text)
    except RejectedInput:
        return isinstance(ours, RejectedInput)
    return isinstance(ours, CallSpec) and ours == theirs


#: Decoders built on the shared prompting decoder (``checker.decoders.prompting``).
PROMPTING_FAMILY = frozenset({"prompting", "gemini_tool_code", "phi", "nemotron"})


def fast_path_gap(decoder: str, step: Any) -> bool:
    """True when only the prompting decoder's fast path (``interp.fastparse``) accepts the
    step: a known gap there (a dict display without commas between items), outside this
    issue's files; pinned by ``test_prompting_fast_path_dict_without_comma``."""
    if decoder not in PROMPTING_FAMILY:
        return False
    with mock.patch.object(checker_prompting, "parse_tree", lambda text: None):
        return our_decode(decoder, step)[1] == FAILED


def check_step(decoder: str, step: Any) -> None:
    calls, texts = our_decode(decoder, step)
    for handler_name, is_fc in handlers_for(decoder):
        expected = reference_decode(reference_handler(handler_name, is_fc), step)
        where = f"{handler_name}(is_fc_model={is_fc}) on {step!r}"
        if expected == FAILED:
            if texts != FAILED and fast_path_gap(decoder, step):
                continue
            assert calls == FAILED and texts == FAILED, f"{where}: reference fails, ours gave {texts!r}"
            continue
        assert texts == expected, where
        assert calls != FAILED and len(calls) == len(expected), where
        for ours, text in zip(calls, expected):
            assert _same_call(ours, text), f"{where}: {ours!r} is not {text!r}"


# ----------------------------------------------------------------- strategies

NAMES = st.sampled_from(["cd", "ls", "mv_file", "get_stock_info", "post_tweet", "a.b", "", "x y", "def", "f1"])
KEYS = st.sampled_from(["a", "b", "file_name", "folder", "x y", "1a", "class", "", "None", "k_2"])
TEXTS = st.one_of(
    st.text(alphabet="ab '\"\\(),;:[]{}\n", max_size=6),
    st.sampled_from(["ls(", "cd(folder='x')", "it's", "back\\slash", "<tool_call>", "None", "true"]),
)
JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True), TEXTS,
)
JSON_VALUES = st.recursive(
    JSON_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3), max_leaves=6,
)
ARGUMENTS = st.dictionaries(KEYS, JSON_VALUES, max_size=3)
def mostly(good, *odd):
    """``good`` most of the time, else one of ``odd``."""
    return st.one_of(good, good, good, good, good, st.one_of(*odd))


@lru_cache(maxsize=None)
def _sampled(options: tuple) -> st.SearchStrategy:
    return st.sampled_from(options)


def pick(draw, options: tuple) -> Any:
    """One of ``options`` (strategies are built once: Hypothesis caches work per strategy)."""
    return draw(_sampled(options))


def now_and_then(draw) -> bool:
    """True about once in four draws (Hypothesis favours the first choice)."""
    return pick(draw, (False, False, False, True))


ODD_NAMES = mostly(NAMES, st.integers(0, 9), st.none(), st.lists(st.integers(0, 2), max_size=2))
ODD_ARGUMENTS = mostly(ARGUMENTS, ARGUMENTS.map(json.dumps), JSON_VALUES)


def mangle(draw, text: str, vocabulary: tuple[str, ...] = ()) -> str:
    """``text`` as is (about half the time), or cut, with a slice deleted, or with a token inserted."""
    kind = pick(draw, ("keep",) * 5 + ("cut", "delete", "insert", "quotes"))
    if kind == "keep" or not text:
        return text
    i = draw(st.integers(0, len(text)))
    if kind == "cut":
        return text[:i]
    if kind == "delete":
        return text[:i] + text[draw(st.integers(i, min(len(text), i + 4))):]
    if kind == "quotes":
        return text.replace('"', "'")
    token = pick(draw, vocabulary + ("[", "]", "{", "}", ",", ";", ":", '"', "'", "\n", " ", "```"))
    return text[:i] + token + text[i:]


@lru_cache(maxsize=None)
def xlam_object(arguments_key: str = "arguments"):
    return st.builds(lambda n, a: {"name": n, arguments_key: a}, NAMES, ARGUMENTS)


@lru_cache(maxsize=None)
def odd_xlam_object(arguments_key: str = "arguments"):
    """A call object that may be malformed: odd name or arguments, keys missing, not an object."""
    full = st.builds(lambda n, a: {"name": n, arguments_key: a}, ODD_NAMES, ODD_ARGUMENTS)
    partial = st.dictionaries(st.sampled_from(["name", arguments_key, "tool_name", "parameters"]),
                              st.one_of(NAMES, ARGUMENTS), max_size=2)
    return st.one_of(full, partial, JSON_SCALARS)


@lru_cache(maxsize=None)
def xlam_lists(arguments_key: str = "arguments", min_size: int = 0, max_size: int = 3) -> st.SearchStrategy:
    return _xlam_lists(st.lists(xlam_object(arguments_key), min_size=min_size, max_size=max_size), arguments_key)


@st.composite
def _xlam_lists(draw, lists: st.SearchStrategy, arguments_key: str) -> list:
    """Well-formed call objects; one in four lists has one object that may be malformed."""
    calls = draw(lists)
    if calls and now_and_then(draw):
        calls[draw(st.integers(0, len(calls) - 1))] = draw(odd_xlam_object(arguments_key))
    return calls


@st.composite
def json_calls_text(draw, arguments_key: str = "arguments") -> str:
    """A JSON list of xLAM objects, one object, or objects joined by ``;``."""
    calls = draw(xlam_lists(arguments_key, min_size=1))
    shape = pick(draw, ("list", "single", "semicolons"))
    if shape == "list":
        return json.dumps(calls)
    if shape == "single":
        return json.dumps(calls[0])
    return pick(draw, (";", "; ", " ;\n")).join(json.dumps(c) for c in calls)


# Python call text for the prompting family (literal values only).
PY_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-1000, 1000), st.floats(allow_nan=False, allow_infinity=False, width=32),
    TEXTS,
)
PY_VALUES = st.recursive(
    PY_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.lists(inner, max_size=2).map(tuple)
    | st.dictionaries(st.sampled_from(["a", "b", "k"]), inner, max_size=2),
    max_leaves=5,
)
PY_ARGUMENTS = st.dictionaries(st.sampled_from(["a", "b", "file_name", "k"]), PY_VALUES, max_size=3)
PY_NAMES = st.sampled_from(["cd", "ls", "mv_file", "get_stock_info", "api.post_tweet", "f1"])


@st.composite
def python_call(draw) -> str:
    arguments = draw(PY_ARGUMENTS)
    parts = [f"{k}={v!r}" for k, v in arguments.items()]
    if draw(st.integers(0, 5)) == 0:
        parts.insert(0, "'positional'")
    if draw(st.integers(0, 5)) == 0:
        parts.append(f"inner={draw(PY_NAMES)}(x=1)")
    return f"{draw(PY_NAMES)}({pick(draw, (', ', ',')).join(parts)})"


PYTHON_CALL_LISTS = st.lists(python_call(), min_size=1, max_size=3)


@st.composite
def python_calls_text(draw) -> str:
    calls = draw(PYTHON_CALL_LISTS)
    text = ", ".join(calls)
    if draw(st.booleans()):
        text = f"[{text}]"
    return text


@st.composite
def _mangle(draw, strategy, vocabulary: tuple[str, ...] = ()) -> str:
    return mangle(draw, draw(strategy), vocabulary)


FC_STEPS = mostly(
    st.lists(st.dictionaries(NAMES, ODD_ARGUMENTS, min_size=1, max_size=2), max_size=3),
    st.dictionaries(NAMES, ODD_ARGUMENTS, max_size=2),
    st.lists(JSON_VALUES, max_size=2),
    JSON_SCALARS,
)

PROMPTING_STEPS = _mangle(python_calls_text())


@st.composite
def fenced_python(draw) -> str:
    text = draw(python_calls_text())
    opening = pick(draw, ("", "```tool_code\n", "```json", "```python", "```python\n", "```json```python\n"))
    closing = pick(draw, ("", "\n```", "```"))
    return opening + text + closing


@st.composite
def nemotron_text(draw) -> str:
    text = draw(python_calls_text())
    return pick(draw, ("", "thinking... ")) + f"<TOOLCALL>{text}</TOOLCALL>" + pick(
        draw, ("", " done", "<TOOLCALL>[ls()]</TOOLCALL>"))


@st.composite
def falcon_text(draw) -> str:
    body = draw(json_calls_text())
    if draw(st.booleans()):
        body = pick(draw, ("```json\n", "```", "``` json ")) + body + "```"
    return pick(draw, ("", "Sure. ", "<tool_call>")) + f"<tool_call>{body}</tool_call>" + pick(
        draw, ("", " trailing", "<tool_call>[]</tool_call>"))


@st.composite
def qwen_text(draw) -> str:
    blocks = []
    for call in draw(xlam_lists()):
        if isinstance(call, dict) and "arguments" in call and draw(st.booleans()):
            call = dict(call, arguments=json.dumps(call["arguments"]))
        blocks.append(f"<tool_call>\n{json.dumps(call)}\n</tool_call>")
    return pick(draw, ("", "<think>\nok\n</think>\n\n")) + "\n".join(blocks)


@st.composite
def hammer_text(draw) -> str:
    calls = draw(xlam_lists())
    shape = pick(draw, ("list", "tool_calls", "single", "scalar"))
    value: Any = {"list": calls, "tool_calls": {"tool_calls": calls}, "single": {"tool_calls": calls[:1] and calls[0]},
                  "scalar": draw(JSON_SCALARS)}[shape]
    text = json.dumps(value)
    if draw(st.booleans()):
        text = pick(draw, ("```json\n", "```\n")) + text + "\n```"
    return text


@st.composite
def glm_text(draw) -> str:
    lines = [draw(NAMES), json.dumps(draw(ODD_ARGUMENTS))]
    if draw(st.booleans()):
        lines.append(draw(TEXTS))
    if now_and_then(draw):
        lines = lines[:1]
    return "\n".join(lines)


GRANITE_OBJECTS = mostly(xlam_object(), odd_xlam_object())


@st.composite
def granite_text(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 3))):
        kind = pick(draw, ("call", "call", "no_function", "text", "scalar"))
        if kind == "call":
            value = draw(GRANITE_OBJECTS)
            if isinstance(value, dict) and isinstance(value.get("name"), str) and draw(st.booleans()):
                value["name"] = f" {value['name']} "
            parts.append(json.dumps(value))
        elif kind == "no_function":
            parts.append(json.dumps({"name": "no_function", "arguments": draw(ODD_ARGUMENTS)}))
        elif kind == "text":
            parts.append(draw(TEXTS))
        else:
            parts.append(json.dumps(draw(JSON_SCALARS)))
    return "".join(f"<function_call> {part}" for part in parts)


THINK_AGENT_VALUES = st.one_of(st.just([]), st.just({}), st.just(""), xlam_lists(max_size=2), JSON_SCALARS)


@st.composite
def think_agent_text(draw) -> str:
    value = draw(THINK_AGENT_VALUES)
    head = pick(draw, ("<think>hmm</think>", "</think>\n", "", "<think>no close"))
    return head + json.dumps(value).replace('"', pick(draw, ('"', "'")))


@st.composite
def llama_text(draw) -> str:
    calls = draw(xlam_lists("parameters", min_size=1))
    shape = pick(draw, ("json", "semicolons", "python_list", "python_single", "python_tuple"))
    if shape == "json":
        text = json.dumps(calls if len(calls) > 1 else calls[0])
    elif shape == "semicolons":
        text = "; ".join(json.dumps(c) for c in calls)
    elif shape == "python_list":
        text = repr(calls)
    elif shape == "python_single":
        text = repr(calls[0])
    else:
        text = repr(tuple(calls))
    return pick(draw, ("<|python_tag|>", "", " ")) + text


@st.composite
def minicpm_text(draw) -> str:
    statements = []
    for call in draw(PYTHON_CALL_LISTS):
        form = pick(draw, ("", "", "x = ", "return ", "x += ", "y: int = "))
        statements.append(form + call)
    if draw(st.integers(0, 6)) == 0:
        statements.append(pick(draw, ("pass", "import os", "if x:\n    ls()", "1 + 2", "ls()()")))
    body = pick(draw, ("\n", "; ")).join(statements)
    fence = pick(draw, (("", ""), ("```python\n", "\n```"), ("```\n", "```"), ("```py", "```")))
    thought = pick(draw, ("", "<|thought_start|>think<|thought_end|>", "",
                                    "<|thought_end|>x<|thought_start|>"))
    tools = pick(draw, (("<|tool_call_start|>", "<|tool_call_end|>"),) * 3 + (
        ("", ""), ("<|tool_call_end|>", "<|tool_call_start|>"),
    ))
    return thought + tools[0] + fence[0] + body + fence[1] + tools[1] + pick(draw, ("", "content"))


GEMMA_PIECES = st.sampled_from([
    "{", "}", "[", "]", ":", ",", "<escape>", "<escape>text<escape>", "<escape>a:b,{c}<escape>", "key", " spaced key ",
    "1", "-2", "1.5", "1e3", "nan", "inf", "true", "false", "null", "x", " ", "1_000", "٣",
])


GEMMA_VALUE = st.recursive(
    st.one_of(st.integers(-5, 5).map(str), st.sampled_from(["<escape>s<escape>", "word", "true", "null", "2.5"])),
    lambda inner: st.lists(inner, max_size=3).map(lambda xs: "[" + ",".join(xs) + "]")
    | st.lists(st.tuples(st.sampled_from(["a", "b", "key two", "<escape>q<escape>", "1", "true", "null"]), inner),
               max_size=3).map(lambda kv: "{" + ",".join(f"{k}:{v}" for k, v in kv) + "}"),
    max_leaves=6,
)
GEMMA_PIECE_LISTS = st.lists(GEMMA_PIECES, max_size=6)


@st.composite
def gemma_arguments(draw) -> str:
    value = draw(GEMMA_VALUE)
    if not value.startswith("{"):
        value = "{v:" + value + "}"
    if draw(st.booleans()):
        pieces = draw(GEMMA_PIECE_LISTS)
        i = draw(st.integers(0, len(value)))
        value = value[:i] + "".join(pieces) + value[i:]
    return value


GEMMA_ARGUMENTS = st.one_of(gemma_arguments(), st.just(""))


@st.composite
def functiongemma_text(draw) -> str:
    blocks = []
    for _ in range(draw(st.integers(0, 3))):
        prefix = pick(draw, ("call:", "call:", " call:", "response:", ""))
        name = pick(draw, ("cd", "get_stock_info", " ls ", "a b", ""))
        arguments = draw(GEMMA_ARGUMENTS)
        blocks.append(f"<start_function_call>{prefix}{name}{arguments}<end_function_call>")
    return pick(draw, ("", "text ")) + "".join(blocks) + pick(draw, ("", "<start_function_call>call:x{"))


NON_TEXT = st.one_of(
    st.lists(st.dictionaries(NAMES, ARGUMENTS, max_size=1), max_size=2), st.none(), st.booleans(), st.integers(),
)

STEPS = {
    "fc": FC_STEPS,
    "fc_list": FC_STEPS,
    "gemini_fc": FC_STEPS,
    "prompting": mostly(PROMPTING_STEPS, NON_TEXT),
    "gemini_tool_code": _mangle(fenced_python(), ("```tool_code\n", "\n```")),
    "phi": _mangle(fenced_python(), ("```json", "```python")),
    "nemotron": mostly(_mangle(nemotron_text(), ("<TOOLCALL>", "</TOOLCALL>")), NON_TEXT),
    "cohere": mostly(
        st.lists(mostly(
            st.builds(lambda n, p: {"tool_name": n, "parameters": p}, NAMES, ARGUMENTS),
            st.builds(lambda n, p: {"tool_name": n, "parameters": p}, ODD_NAMES, ODD_ARGUMENTS),
            st.dictionaries(st.sampled_from(["tool_name", "parameters"]), ARGUMENTS, max_size=2), JSON_SCALARS,
        ), max_size=3),
        JSON_VALUES,
    ),
    "mining": mostly(xlam_lists(max_size=4), JSON_VALUES),
    "undecodable": st.one_of(PROMPTING_STEPS, FC_STEPS),
    "json": mostly(_mangle(json_calls_text()), NON_TEXT),
    "bitagent": mostly(_mangle(json_calls_text()), NON_TEXT),
    "falcon": mostly(_mangle(falcon_text(), ("<tool_call>", "</tool_call>", "json")), NON_TEXT),
    "qwen_tool_call": mostly(_mangle(qwen_text(), ("<tool_call>", "</tool_call>", "\n")), NON_TEXT),
    "hammer": mostly(_mangle(hammer_text()), NON_TEXT),
    "glm": mostly(_mangle(glm_text()), NON_TEXT),
    "granite": mostly(_mangle(granite_text(), ("<function_call>",)), NON_TEXT),
    "think_agent": mostly(_mangle(think_agent_text(), ("</think>",)), NON_TEXT),
    "llama_python_tag": mostly(_mangle(llama_text(), ("<|python_tag|>", "True", "None")), NON_TEXT),
    "minicpm": mostly(_mangle(minicpm_text(), ("<|tool_call_start|>", "<|tool_call_end|>", "\n", "python")), NON_TEXT),
    "functiongemma": mostly(_mangle(functiongemma_text(), ("<escape>", "<end_function_call>", "{")), NON_TEXT),
}

#: Decoders whose reference evaluates pieces of the step, and the check that keeps that harmless.
HARMLESS = {
    "prompting": _eval_is_harmless,
    "gemini_tool_code": _eval_is_harmless,
    "phi": _eval_is_harmless,
    "nemotron": _eval_is_harmless,
    "minicpm": _eval_is_harmless,
    "llama_python_tag": _llama_eval_is_harmless,
}


# ---------------------------------------------------------------------- tests


def test_every_decoder_has_a_step_strategy():
    served = {name for modes in HANDLER_DECODERS.values() for name in modes}
    assert served <= set(DECODERS)
    assert set(DECODERS) - {"auto"} <= served
    assert served <= set(STEPS)


@pytest.mark.parametrize("decoder", sorted(STEPS))
def test_decoder_matches_reference_handlers(decoder):
    harmless = HARMLESS.get(decoder)

    @given(step=STEPS[decoder])
    def run(step):
        if harmless is not None and isinstance(step, str) and not harmless(step):
            # The reference would evaluate model code here: not run; ours must just decode or refuse.
            our_decode(decoder, step)
            return
        check_step(decoder, step)

    run()


EXAMPLES = [
    ("qwen_tool_call", '<tool_call>\n{"name": "cd", "arguments": {"folder": "docs"}}\n</tool_call>', ["cd(folder='docs')"]),
    ("qwen_tool_call", '<tool_call>\n{"name": "cd", "arguments": "{\\"folder\\": \\"a\\"}"}\n</tool_call>',
     ["cd(folder='a')"]),
    ("qwen_tool_call", '<tool_call>\n[1]\n</tool_call>', FAILED),
    ("llama_python_tag", '<|python_tag|>{"name": "ls", "parameters": {"a": true}}; {"name": "cd", "parameters": {}}',
     ["ls(a=True)", "cd()"]),
    ("llama_python_tag", "[{'name': 'ls', 'parameters': {'a': (1, -2.5)}}]", ["ls(a=(1, -2.5))"]),
    ("llama_python_tag", '{"name": "ls", "parameters": {"a": true}}', FAILED),  # NameError under eval
    ("llama_python_tag", "[]", []),
    ("hammer", '```\n{"tool_calls": [{"name": "ls", "arguments": {"a": 1}}, 5]}\n```', ["ls(a=1)"]),
    ("hammer", '```json\n[{"name": "ls", "arguments": {"a": 1}}]\n```', []),  # "json" is left in: not JSON
    ("hammer", "not json", []),
    ("granite", '<function_call> {"name": "ls", "arguments": {}} <function_call> hello', ["ls()", "hello"]),
    ("granite", '<function_call> {"name": "no_function"}', ["No function is called"]),
    ("mining", [{"name": "ls", "arguments": {"a": 1}}, "skip"], ["ls(a=1)"]),
    ("cohere", [{"tool_name": "ls", "parameters": {"a": [1]}}], ["ls(a=[1])"]),
    ("cohere", "text", []),
    ("gemini_fc", [{"ls": {"a": 1}}], ["ls(a=1)"]),
    ("gemini_fc", [{"ls": '{"a": 1}'}], FAILED),
    ("fc_list", {"ls": {"a": 1}}, FAILED),
    ("glm", 'cd\n{"folder": "x"}\nignored', ["cd(folder='x')"]),
    ("think_agent", "<think>x</think>[]", []),
    ("think_agent", "<think>x</think>[{'name': 'ls', 'arguments': {}}]", FAILED),
    ("undecodable", "ls()", FAILED),
    ("minicpm", "<|tool_call_start|>```python\nls(a=1)\nx = cd(folder='d')\n```<|tool_call_end|>",
     ["ls(a=1)", "cd(folder='d')"]),
    ("minicpm", "<|tool_call_start|>ls(a=1)\nimport os<|tool_call_end|>", []),
    ("functiongemma", "<start_function_call>call:cd{folder:<escape>docs<escape>,n:2}<end_function_call>",
     ["cd(folder='docs', n=2)"]),
    ("nemotron", "<TOOLCALL>[ls(a=1)]</TOOLCALL>", ["ls(a=1)"]),
    ("phi", "```json\n[ls(a=1)]\n```", ["ls(a=1)"]),
    ("gemini_tool_code", "```tool_code\nls(a=1)\n```", ["ls(a=1)"]),
    ("falcon", '<tool_call>```json\n[{"name": "ls", "arguments": {"a": 1}}]```</tool_call>', ["ls(a=1)"]),
    ("bitagent", '{"name": "ls", "arguments": {}}; {"name": "cd", "arguments": {}}', FAILED),
    ("json", '{"name": "ls", "arguments": {}}; {"name": "cd", "arguments": {}}', ["ls()", "cd()"]),
]


@pytest.mark.parametrize("decoder,step,expected", EXAMPLES, ids=[f"{d}-{i}" for i, (d, _, _) in enumerate(EXAMPLES)])
def test_examples(decoder, step, expected):
    assert our_decode(decoder, step)[1] == expected
    check_step(decoder, step)


@pytest.mark.parametrize("decoder", sorted(PROMPTING_FAMILY))
def test_prompting_fast_path_dict_without_comma(decoder):
    step = "<TOOLCALL>[cd(a={'x': 1 'y': 2})]</TOOLCALL>" if decoder == "nemotron" else "[cd(a={'x': 1 'y': 2})]"
    for handler_name, is_fc in handlers_for(decoder):
        assert reference_decode(reference_handler(handler_name, is_fc), step) == FAILED  # a SyntaxError
    assert our_decode(decoder, step) == (FAILED, FAILED)


def test_llama_refuses_what_eval_would_run():
    for text in ['{"name": "ls", "parameters": {"a": __import__("os").getcwd()}}',
                 '[{"name": "ls", "parameters": {"a": print}}]', "[x for x in ()]", "(lambda: 1)()",
                 '[{"name": "ls", "parameters": {"a": exec("1")}}]', '{"name": "ls", "parameters": {"a": "".join("ab")}}']:
        assert our_decode("llama_python_tag", text) == (FAILED, FAILED), text


def test_llama_computes_pure_builtins_like_eval():
    """``set()`` is the empty set in ``eval``: no call, as in the reference (pure builtins:
    interp/builtins.py; more in tests/test_decoders_eval.py)."""
    assert our_decode("llama_python_tag", "set()") == ([], [])
    assert our_decode("llama_python_tag", '{"name": "ls", "parameters": {"a": len("ab")}}')[1] == ["ls(a=2)"]


def test_minicpm_does_not_evaluate_arithmetic_on_names():
    step = "<|tool_call_start|>ls(a=__import__('os').getcwd() + 'x')<|tool_call_end|>"
    assert our_decode("minicpm", step) == ([], [])


# ------------------------------------------------------------- model mapping


def test_every_reference_handler_is_mapped():
    owners = {}
    for name, cls in reference_handler_classes().items():
        owner = cls.decode_execute.__qualname__.split(".")[0]
        owners[name] = owner
        if owner == name:
            assert name in HANDLER_DECODERS, f"{name} defines decode_execute: map it to a decoder"
        else:
            assert INHERITED_FROM.get(name) == owner, f"{name} inherits decode_execute from {owner}"
    defining = {name for name, owner in owners.items() if owner == name}
    assert len(defining) == 34
    assert defining == set(HANDLER_DECODERS)
    assert set(INHERITED_FROM) == {name for name, owner in owners.items() if owner != name}


def test_every_registry_model_has_a_decoder():
    for registry_name, info in dataset().models().items():
        decoder = decoder_for_handler(info.model_handler, info.is_fc_model)
        assert decoder in DECODERS, (registry_name, info.model_handler)


@pytest.mark.parametrize("folder,expected", [
    ("gpt-5.2-2025-12-11-FC", "fc"),
    ("gpt-5.2-2025-12-11", "prompting"),
    ("claude-opus-4-5-20251101", "prompting"),
    ("meta-llama_Llama-3.1-8B-Instruct-FC", "llama_python_tag"),
    ("meta-llama_Llama-3.1-8B-Instruct", "prompting"),
    ("meta-llama_Llama-3.2-1B-Instruct-FC", "prompting"),
    ("Qwen_Qwen3-0.6B-FC", "qwen_tool_call"),
    ("Salesforce_xLAM-2-32b-fc-r", "json"),
    ("MadeAgents_Hammer2.1-7b", "hammer"),
    ("gemini-2.5-flash-lite-FC", "gemini_fc"),
    ("gemini-2.5-flash-lite", "gemini_tool_code"),
    ("gorilla-openfunctions-v2", "undecodable"),
    ("DM-Cito-8B-v3", "mining"),
    ("mistralai_Ministral-8B-Instruct-2410", "fc_list"),
    ("openbmb_MiniCPM3-4B-FC", "minicpm"),
    ("google_functiongemma-270m-it-FC", "functiongemma"),
])
def test_decoder_for_model(folder, expected):
    notices = []
    assert decoder_for_model(folder, dataset(), notices.append) == expected
    assert notices == []


def test_unknown_model_falls_back_to_auto_with_one_notice():
    notices = []
    assert decoder_for_model("no-such-model_v9", dataset(), notices.append) == "auto"
    assert len(notices) == 1 and "\n" not in notices[0] and "auto" in notices[0]
