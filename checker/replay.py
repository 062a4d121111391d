"""Ground truth rendered as model output, in FC and prompting form.

Used by the built-in demo and by tests: ground truth replayed as a model must
score 100%. Positional arguments of the ground truth (e.g. ``sort('x')``) are
given their parameter names, since neither result format carries positional
arguments through the reference's decoders.
"""

from __future__ import annotations

import inspect
import json
from functools import lru_cache
from typing import Any, Sequence

from bfcl_safe.checker.episode import backend_class
from bfcl_safe.interp import CallSpec, parse_call


@lru_cache(maxsize=None)
def _parameters(class_names: tuple[str, ...], name: str) -> tuple[str, ...]:
    owner = None
    for class_name in class_names:  # the last class defining the name wins
        if name in vars(backend_class(class_name)):
            owner = backend_class(class_name)
    if owner is None:
        return ()
    signature = inspect.signature(getattr(owner, name))
    return tuple(p for p in signature.parameters if p != "self")


def keyword_arguments(spec: CallSpec, involved: Sequence[str]) -> dict[str, Any]:
    names = _parameters(tuple(involved), spec.name)
    arguments = dict(zip(names, spec.args))
    arguments.update(spec.kwargs)
    return arguments


def ground_truth_calls(ground_truth: Sequence[Sequence[str]], involved: Sequence[str]) -> list[list[tuple[str, dict]]]:
    """Per turn, each ground-truth call as its name and keyword arguments."""
    turns = []
    for turn in ground_truth:
        calls = []
        for text in turn:
            spec = parse_call(text)
            calls.append((spec.name, keyword_arguments(spec, involved)))
        turns.append(calls)
    return turns


def ground_truth_as_fc(ground_truth: Sequence[Sequence[str]], involved: Sequence[str]) -> list:
    """One step per turn with all its calls, then an empty step (the model's text reply)."""
    turns = []
    for turn in ground_truth_calls(ground_truth, involved):
        calls = [{name: json.dumps(arguments)} for name, arguments in turn]
        turns.append([calls, []] if calls else [[]])
    return turns


def ground_truth_as_prompting(ground_truth: Sequence[Sequence[str]], involved: Sequence[str]) -> list:
    turns = []
    for turn in ground_truth_calls(ground_truth, involved):
        rendered = [f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})" for name, arguments in turn]
        turns.append([f"[{', '.join(rendered)}]"] if rendered else ["I cannot do that with the tools I have."])
    return turns
