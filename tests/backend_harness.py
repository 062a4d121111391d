"""Shared machinery for differential backend tests: ours vs the reference's classes.

Used by ``tests/test_backend_*.py``. A *pair* is one of our backend instances and
the reference instance built from the same ``initial_config`` entry; every call is
made on both, and result strings and compared state must be equal.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import inspect
import json
import re
import weakref
from functools import lru_cache
from typing import Any, Iterable

from bfcl_safe.interp.budget import Budget
from bfcl_safe.interp.errors import BudgetExceeded
from bfcl_safe.interp.result_text import format_error, format_result
from tests.callparse import parse_trusted_call
from tests.refenv import BACKEND_MODULES, reference_backend_class, reference_package_dir

CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
STATELESS = {"MathAPI"}


@lru_cache(maxsize=None)
def dataset() -> list[tuple[dict, list[list[str]]]]:
    """All 800 multi-turn entries with their ground truth, in file order."""
    data = reference_package_dir() / "data"
    out = []
    for category in CATEGORIES:
        name = f"BFCL_v4_multi_turn_{category}.json"
        entries = [json.loads(line) for line in (data / name).read_text().splitlines() if line.strip()]
        answers = [
            json.loads(line)
            for line in (data / "possible_answer" / name).read_text().splitlines()
            if line.strip()
        ]
        assert len(entries) == len(answers)
        for entry, answer in zip(entries, answers):
            assert entry["id"] == answer["id"]
            out.append((entry, answer["ground_truth"]))
    return out


@lru_cache(maxsize=None)
def long_context_data():
    from bfcl_safe.backends.long_context import load_long_context

    return load_long_context(reference_package_dir())


def our_backend_class(class_name: str) -> type:
    module = importlib.import_module(f"bfcl_safe.backends.{BACKEND_MODULES[class_name]}")
    return getattr(module, class_name)


def make_ours(class_name: str, config: dict, long_context: bool = False):
    cls = our_backend_class(class_name)
    return cls.from_config(config, long_context=long_context, long_context_data=long_context_data())


def make_reference(class_name: str, config: dict, long_context: bool = False):
    instance = reference_backend_class(class_name)()
    if class_name not in STATELESS:
        instance._load_scenario(copy.deepcopy(config), long_context=long_context)
    return instance


#: id(our instance) -> the Budget its calls are charged to (one per instance, as one per
#: entry when scoring), dropped with the instance.
_BUDGETS: dict[int, Budget] = {}


def budget_of(instance: Any) -> Budget:
    """The budget the harness charges our ``instance``'s calls to (made on first use)."""
    key = id(instance)
    if key not in _BUDGETS:
        _BUDGETS[key] = Budget()
        weakref.finalize(instance, _BUDGETS.pop, key, None)
    return _BUDGETS[key]


def call(instance: Any, name: str, args: tuple = (), kwargs: dict | None = None) -> str:
    """Call like the reference runner does and render the result string. Our instances
    are called with their budget active, as when scoring: the charges must never change
    a result (a BudgetExceeded would propagate and fail the test)."""
    ours = type(instance).__module__.startswith("bfcl_safe.")
    with budget_of(instance).active() if ours else contextlib.nullcontext():
        try:
            return format_result(getattr(instance, name)(*copy.deepcopy(args), **copy.deepcopy(kwargs or {})))
        except BudgetExceeded:
            raise
        except RecursionError as exc:  # (a tree containing itself: the reference recurses too)
            return format_error(RecursionError(recursion_wording(str(exc))))
        except Exception as exc:  # noqa: BLE001 - tool errors are data
            return format_error(exc)


def recursion_wording(text: str) -> str:
    """CPython's RecursionError text cut after "exceeded": what follows (" while calling a
    Python object", " in comparison", ...) names the kind of call the limit was hit in,
    which depends on how deep the caller's stack already was and on the Python version —
    for the reference as for us (SECURITY.md, deliberate differences)."""
    return re.sub(r"(maximum recursion depth exceeded)[^\"]*", r"\1", text)


def reference_public_methods(instance: Any) -> list[str]:
    return [n for n, _ in inspect.getmembers(instance, predicate=inspect.ismethod) if not n.startswith("_")]


def reference_state(instance: Any) -> dict:
    return {k: v for k, v in vars(instance).items() if not k.startswith("_")}


def assert_same_state(ours: Any, reference: Any, context: str = "") -> None:
    """Same public attribute names in the same order, equal values (by repr: the
    reference's values may be its own classes, e.g. Directory)."""
    mine = ours.public_state()
    theirs = reference_state(reference)
    assert list(mine) == list(theirs), f"{context}: attribute names differ: {list(mine)} != {list(theirs)}"
    for key in theirs:
        assert repr(mine[key]) == repr(theirs[key]), (
            f"{context}: attribute {key!r} differs:\n ours: {repr(mine[key])[:2000]}\n  ref: {repr(theirs[key])[:2000]}"
        )


def replay_ground_truth(classes: Iterable[str], long_context_only: bool = False) -> int:
    """Replay every ground-truth call of every entry that involves any of ``classes``
    on ours and the reference; assert identical results and state after each call.
    Calls that resolve to other classes are made on the reference only (to keep its
    state right) and are not compared. Returns the number of calls compared."""
    wanted = set(classes)
    compared = 0
    for entry, ground_truth in dataset():
        involved = entry["involved_classes"]
        if not wanted & set(involved):
            continue
        is_long = "long_context" in entry["id"]
        if long_context_only and not is_long:
            continue
        pairs = {}
        owner = {}
        for class_name in involved:
            config = entry["initial_config"].get(class_name, {})
            ref = make_reference(class_name, config, long_context=is_long)
            ours = make_ours(class_name, config, long_context=is_long) if class_name in wanted else None
            pairs[class_name] = (ours, ref)
            for method in reference_public_methods(ref):
                owner[method] = class_name  # the last involved class wins, like the reference
        for turn_index, turn in enumerate(ground_truth):
            for text in turn:
                name, args, kwargs = parse_trusted_call(text)
                class_name = owner.get(name)
                assert class_name is not None, f"{entry['id']}: no class defines {name}"
                ours, ref = pairs[class_name]
                expected = call(ref, name, args, kwargs)
                if ours is None:
                    continue
                got = call(ours, name, args, kwargs)
                context = f"{entry['id']} turn {turn_index}: {text}"
                assert got == expected, f"{context}: result differs:\n ours: {got[:2000]}\n  ref: {expected[:2000]}"
                assert_same_state(ours, ref, context)
                compared += 1
    return compared


def assert_same_signatures(class_name: str) -> None:
    """Every tool is defined in our class itself, with the reference's parameters: names,
    order, kinds and defaults."""
    from bfcl_safe.interp.tools import tool_names

    ours_cls, ref_cls = our_backend_class(class_name), type(make_reference(class_name, {}))

    def shape(function: Any) -> list[tuple]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]

    for name in tool_names(ours_cls):
        assert name in vars(ours_cls), f"{class_name}.{name} is not defined directly in the class"
        ours, ref = getattr(ours_cls, name), getattr(ref_cls, name)
        assert shape(ours) == shape(ref), f"{class_name}.{name}: {shape(ours)} != {shape(ref)}"
        assert ours.__qualname__ == f"{class_name}.{name}" == ref.__qualname__, name


def assert_same_tool_set(class_name: str) -> None:
    """Our tools are exactly the reference's public methods (so that name resolution
    matches), and include every function in the wheel's tool docs."""
    from bfcl_safe.interp.tools import tool_names
    from tests.refenv import reference_package_dir

    ours = set(tool_names(our_backend_class(class_name)))
    ref = set(reference_public_methods(make_reference(class_name, {})))
    assert ours == ref, f"{class_name}: tools differ: only ours {ours - ref}, only ref {ref - ours}"
    doc_files = {
        "GorillaFileSystem": "gorilla_file_system.json", "MathAPI": "math_api.json",
        "MessageAPI": "message_api.json", "TwitterAPI": "posting_api.json",
        "TicketAPI": "ticket_api.json", "TradingBot": "trading_bot.json",
        "TravelAPI": "travel_booking.json", "VehicleControlAPI": "vehicle_control.json",
    }
    path = reference_package_dir() / "data" / "multi_turn_func_doc" / doc_files[class_name]
    documented = {json.loads(line)["name"] for line in path.read_text().splitlines() if line.strip()}
    assert documented <= ours, f"{class_name}: documented but missing: {documented - ours}"


def _call_args_strategy():
    from hypothesis import strategies as st

    @st.composite
    def call_args(draw, params, unknown_names=("x",)):
        """``(args, kwargs)`` for parameters ``[(name, strategy, required)]``: optional ones may be
        left out, a prefix may go positionally; rarely the call is broken (a missing argument, an
        unknown one drawn from ``unknown_names``, too many positionals, a value given twice)."""
        chosen = {}
        for name, strategy, required in params:
            if required or draw(st.booleans()):
                chosen[name] = draw(strategy)
        names = [name for name, _, _ in params]
        n_positional = 0
        while n_positional < len(names) and names[n_positional] in chosen and draw(st.booleans()):
            n_positional += 1
        args = [chosen.pop(name) for name in names[:n_positional]]
        kwargs = chosen
        breakage = draw(st.integers(0, 19))
        if breakage == 0 and kwargs:
            kwargs.pop(next(iter(kwargs)))
        elif breakage == 1:
            kwargs[draw(st.sampled_from(list(unknown_names)))] = 1
        elif breakage == 2:
            args.extend([0] * (len(names) - len(args) + 1))
            kwargs = {}
        elif breakage == 3 and args:
            kwargs[names[0]] = args[0]
        return tuple(args), kwargs

    return call_args


#: Hypothesis strategy shared by the backend state machines (see ``_call_args_strategy``).
call_args = _call_args_strategy()
