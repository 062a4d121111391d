"""The play API: an entry played turn by turn, as BFCL inference plays it — for agents,
RL rollouts and eval frameworks.

::

    from bfcl_safe import Dataset, Episode

    ep = Episode.from_entry("multi_turn_miss_func_0", Dataset.open(None))
    while True:
        chat += ep.messages()                       # this turn's user messages
        tools = ep.tools(format="openai")           # the OpenAI tools list BFCL sends now
        while not ep.turn_over:
            reply = client.chat.completions.create(..., tools=tools).choices[0].message
            chat.append(reply)
            step = ep.step(reply)                   # or its tool_calls, or a result-file step
            chat += step.messages                   # the tool messages BFCL sends back
        outcome = ep.end_turn()                     # per-turn reward + official verdict so far
        if ep.done:
            break

**Steps** (:meth:`Episode.step`) take an assistant message (a dict, or an SDK object with
``.tool_calls``), its OpenAI ``tool_calls`` list, a Responses API answer (its ``output``
list, the ``Response`` or one ``function_call`` item), or a step as a BFCL result file
holds it (FC ``[{name: arguments}]``, or call text). Each returns a :class:`StepResult`:
the calls that ran and their results, the messages BFCL inference sends back (``tool``
messages in FC — ``function_call_output`` items for a Responses answer — one ``user``
message in prompting), and whether the turn ended and why (:class:`TurnEnd`; an
undecodable step says why in ``decode_error``).

**asyncio** (:meth:`Episode.astep`, :meth:`Episode.aend_turn`, ...): the same work in a
worker thread, so that an event loop driving many rollouts stays responsive.

**Rewards** (:meth:`Episode.turn_outcome`, :meth:`Episode.end_turn`): a
:class:`TurnOutcome` holds

- ``passed`` — *this turn's checks in isolation*: BFCL's three per-turn checks (the
  turn's steps are not empty when the ground truth has calls; every backend's compared
  state equals the ground truth's after the same number of turns; the ground truth's
  results of this turn are all among the model's results of all turns so far, as a
  multiset) applied to this turn as the model's backends stand at its end, whether or
  not an earlier turn failed. ``reward`` is 1.0 or 0.0 from it.
- ``verdict`` — *the official cumulative verdict*: what ``bfcl-safe evaluate`` gives the
  steps played so far (the first failing turn stops the checks; a force-termination
  before the last turn fails the entry with ``multi_turn:force_terminated``). After the
  last turn it equals the score file's verdict on :meth:`Episode.result`.

**Errors**: every method raises only the project's documented exceptions
(:class:`~bfcl_safe.interp.errors.BfclSafeError` subclasses): :class:`StepInputError`
(not a step: a date, a set, bytes, an object inside it), :class:`StepRefused` (nested
deeper than :data:`~bfcl_safe.interp.limits.MAX_RESULT_LINE_DEPTH`),
:class:`TurnOverError`, :class:`EpisodeOverError`, :class:`EpisodeBusyError` (an async
call while another of the episode runs), :class:`EpisodeLimitError` (a state too large or
deep to copy, compare or show) and :class:`ArgumentError` (a ``ValueError``: an argument
of the wrong type or range — an entry whose fields have the wrong types or nest deeper
than :data:`~bfcl_safe.interp.limits.MAX_EPISODE_COPY_DEPTH`, a snapshot of another
entry or shape, an unknown format). Work is counted against one
:class:`~bfcl_safe.interp.budget.Budget` per episode; when it runs out the episode ends
with ``bfcl_safe:resource_limit`` (the step says :attr:`TurnEnd.RESOURCE_LIMIT`), never a
crash.

Episodes pickle (``pickle.dumps(ep)``) and have :meth:`~Episode.snapshot` /
:meth:`~Episode.restore`: a restored episode continues exactly as the original would.
Episodes share nothing; many can run in threads at the same time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import enum
import os
import threading
import weakref
from typing import Any, Callable, Mapping, NamedTuple, TypeVar

import attrs

from bfcl_safe.checker import openai_format
from bfcl_safe.checker.boundary import EntryBoundary
from bfcl_safe.checker.episode import (
    MAXIMUM_STEP_LIMIT,
    EpisodeError,
    Side,
    mpmath_lock,
    turn_messages,
    visible_tools,
)
from bfcl_safe.checker.error_types import ErrorType
from bfcl_safe.checker.openai_format import missed_docs
from bfcl_safe.checker.verdict import Verdict, force_terminated_verdict, is_empty_response, new_sides, turn_failure
from bfcl_safe.interp import limits
from bfcl_safe.interp.budget import Budget
from bfcl_safe.interp.errors import BfclSafeError, BudgetExceeded

# Dataset's lazy indexes are not safe to build from several threads at once.
_DATASET_LOCK = threading.Lock()

#: ``tools(format=...)``: the dataset's own docs, or the OpenAI tools list in one of
#: :data:`~bfcl_safe.checker.openai_format.STYLES` (``"openai"`` is Chat Completions).
TOOL_FORMATS = ("bfcl", "openai", *openai_format.STYLES)

#: Worker threads the async methods (:meth:`Episode.astep`, ...) run steps and checks in,
#: shared by every episode of the process. Steps are pure Python: the GIL lets one run at
#: a time whatever the count, and each more thread is one more the event loop waits for
#: to hand the GIL back (256 concurrent rollouts: loop lag p50 1.9 ms with one worker,
#: 15-18 ms with two; benchmarks/bench_async_play.py).
ASYNC_WORKERS = 1

_T = TypeVar("_T")


# --------------------------------------------------------------------------- errors


class TurnOverError(EpisodeError):
    """A step after its turn ended (call :meth:`Episode.next_turn`). ``turn``: that turn."""

    def __init__(self, entry_id: str, turn: int):
        self.entry_id, self.turn = entry_id, turn
        super().__init__(f"{entry_id}: turn {turn} is over; call next_turn()")

    def __reduce__(self):
        return (type(self), (self.entry_id, self.turn))


class EpisodeOverError(EpisodeError):
    """A step after the episode ended."""

    def __init__(self, entry_id: str):
        self.entry_id = entry_id
        super().__init__(f"{entry_id}: the episode is over")

    def __reduce__(self):
        return (type(self), (self.entry_id,))


class StepInputError(EpisodeError, TypeError):
    """``step()`` was given something that is not a step; ``kind`` names its type,
    ``where`` the place inside it."""

    def __init__(self, kind: str, where: str = "step"):
        self.kind, self.where = kind, where
        super().__init__(
            f"{where}: {kind} is not part of a step (an assistant message, its OpenAI tool_calls, "
            "FC calls [{name: arguments}] or call text)")

    def __reduce__(self):
        return (type(self), (self.kind, self.where))


class StepRefused(EpisodeError, ValueError):
    """A step refused before it runs: nested deeper than ``limit``."""

    def __init__(self, limit: int):
        self.limit = limit
        super().__init__(f"step refused: nested deeper than {limit}")

    def __reduce__(self):
        return (type(self), (self.limit,))


class EpisodeBusyError(EpisodeError):
    """An async method (:meth:`Episode.astep`, ...) called while another one of the same
    episode is still running: an episode plays one step at a time."""

    def __init__(self, entry_id: str):
        self.entry_id = entry_id
        super().__init__(f"{entry_id}: a step or check of this episode is still running; await it first")

    def __reduce__(self):
        return (type(self), (self.entry_id,))


class EpisodeLimitError(EpisodeError):
    """The episode's state is too large or too deep for ``operation`` (``"state"``,
    ``"snapshot"``, ...); ``cause`` names the exception that stopped it."""

    def __init__(self, operation: str, cause: str):
        self.operation, self.cause = operation, cause
        super().__init__(f"{operation}: the episode's state is too large or too deep ({cause})")

    def __reduce__(self):
        return (type(self), (self.operation, self.cause))


class ArgumentError(EpisodeError, ValueError):
    """A method argument of the wrong type or out of its range (an entry that is not a
    dataset entry, a foreign snapshot, an unknown format, ...); ``name`` is the argument."""

    def __init__(self, name: str, message: str):
        self.name = name
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.name, str(self)))


# --------------------------------------------------------------------------- typed results


class TurnEnd(str, enum.Enum):
    """Why a step ended its turn."""

    #: The step decoded to no call (the model's text reply, ``[]``): BFCL's next turn.
    NO_CALLS = "no_calls"
    #: The step did not decode (``StepResult.decode_error`` says why): BFCL's next turn.
    UNDECODABLE = "undecodable"
    #: The turn's steps with calls exceeded BFCL's step limit: the episode is force-terminated.
    STEP_LIMIT = "step_limit"
    #: The episode's resource budget ran out: the episode ends, failed (``bfcl_safe:resource_limit``).
    RESOURCE_LIMIT = "resource_limit"
    #: bfcl-safe could not run the step (a bug): the episode ends, failed (``bfcl_safe:internal_error``).
    INTERNAL_ERROR = "internal_error"


@attrs.frozen
class CallResult:
    """One call of a step: ``call`` as BFCL's decoder renders it (the text the reference
    executes), ``result`` the string BFCL inference sends back, ``tool_call_id`` the id
    the model gave it (OpenAI input), else None."""

    call: str
    result: str
    tool_call_id: str | None = None


@attrs.frozen
class StepResult:
    """What one step did. ``calls`` ran (empty when none did); ``messages`` are what
    BFCL inference appends to the chat next (FC: one ``tool`` message per call that has
    a ``tool_call_id``, as BFCL pairs them; prompting: one ``user`` message with the
    ``repr()`` of the results; nothing when no call ran). ``turn_over``/``ended`` say
    whether and why the turn ended; ``done`` whether the episode did."""

    calls: tuple[CallResult, ...]
    messages: tuple[dict, ...]
    turn: int
    step_in_turn: int
    turn_over: bool
    ended: TurnEnd | None
    done: bool
    decode_error: str | None = None

    @property
    def results(self) -> list[str]:
        """The result strings, one per call that ran."""
        return [call.result for call in self.calls]


@attrs.frozen
class TurnOutcome:
    """A turn's outcome, usable as a reward (see the module docstring for the exact
    meaning): ``passed``/``failure`` — this turn's checks in isolation; ``verdict`` —
    the official cumulative verdict so far."""

    turn: int
    passed: bool
    failure: Verdict | None
    verdict: Verdict

    @property
    def reward(self) -> float:
        return 1.0 if self.passed else 0.0


def _shown(value: Any) -> str:
    """An argument as an error message shows it: a str's repr (cut to 80 characters),
    else its type name (a repr may be huge, deep or raise)."""
    if isinstance(value, str):
        return repr(value[:80])
    return f"a {type(value).__name__}"


def _snapshot_entry_id(instance: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, str):
        raise ArgumentError("entry_id", f"a snapshot's entry_id must be a str, not {type(value).__name__}")


def _snapshot_state(instance: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, dict):
        raise ArgumentError("state", f"a snapshot's state must be a dict, not {type(value).__name__}")


@attrs.frozen
class Snapshot:
    """An episode's state at one moment (:meth:`Episode.snapshot`); restore it any number
    of times. Opaque: :meth:`Episode.restore` refuses (:class:`ArgumentError`) a snapshot
    of another entry or one whose state is not an episode's."""

    entry_id: str = attrs.field(validator=_snapshot_entry_id)
    state: Any = attrs.field(repr=False, validator=_snapshot_state)


# --------------------------------------------------------------------------- the episode


def _plain_step(value: Any, depth_limit: int, name: str = "step") -> Any:
    """``value`` copied into plain JSON-like data (dicts with str keys, lists; tuples
    become lists), iteratively; StepInputError for anything else (its ``where`` starts
    with ``name``), StepRefused past ``depth_limit``."""
    root: list[Any] = [None]
    # (the value, the dict or list its copy goes into, its key there, its depth, where it is)
    stack: list[tuple[Any, dict[str, Any] | list[Any], Any, int, str]] = [(value, root, 0, 0, name)]
    while stack:
        item, parent, key, depth, where = stack.pop()
        if isinstance(item, bool) or item is None:
            parent[key] = item
            continue
        if isinstance(item, str):
            parent[key] = str(item)
            continue
        if isinstance(item, int):
            parent[key] = int(item)
            continue
        if isinstance(item, float):
            parent[key] = float(item)
            continue
        if depth >= depth_limit:
            raise StepRefused(depth_limit)
        if isinstance(item, Mapping):
            out: dict = {}
            parent[key] = out
            for name in list(item.keys()):
                if not isinstance(name, str):
                    raise StepInputError(f"a {type(name).__name__} key", where)
                out[str(name)] = None
                stack.append((item[name], out, str(name), depth + 1, f"{where}[{name[:40]!r}]"))
        elif isinstance(item, (list, tuple)):
            items = list(item)
            out_list: list = [None] * len(items)
            parent[key] = out_list
            for index, child in enumerate(items):
                stack.append((child, out_list, index, depth + 1, f"{where}[{index}]"))
        else:
            raise StepInputError(type(item).__name__, where)
    return root[0]


_LEAVES = frozenset({str, int, float, bool, type(None), bytes, complex})


def _children(item: Any) -> list:
    if isinstance(item, dict):
        return [*item.keys(), *item.values()]
    if isinstance(item, (list, tuple, set, frozenset)):
        return list(item)
    out = list(vars(item).values()) if hasattr(item, "__dict__") else []
    for klass in type(item).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if isinstance(slot, str) and slot not in ("__dict__", "__weakref__"):
                out.append(getattr(item, slot, None))
    return out


def _nests_deeper(roots: list, limit: int) -> bool:
    """Whether objects and containers reachable from ``roots`` nest deeper than ``limit``
    along some path (iterative; each object counted once, at the depth first reached)."""
    stack = [(root, 0) for root in roots]
    seen: set[int] = set()
    while stack:
        item, depth = stack.pop()
        if type(item) in _LEAVES or isinstance(item, (type, enum.Enum)):
            continue
        if depth > limit:
            return True
        if id(item) in seen:
            continue
        seen.add(id(item))
        stack.extend((child, depth + 1) for child in _children(item))
    return False


def _entry_problem(entry: dict) -> str | None:
    """What makes ``entry`` (plain data) no multi-turn dataset entry: the fields an episode
    reads, with their types (None when they are right)."""
    from bfcl_safe.checker.episode import backend_class

    if not isinstance(entry.get("id"), str):
        return "its id is not a str"
    question = entry.get("question")
    if not isinstance(question, list) or not all(isinstance(turn, list) for turn in question):
        return "its question is not a list of turns (lists of messages)"
    for turn in question:
        for message in turn:
            if not (isinstance(message, dict) and isinstance(message.get("role"), str)
                    and isinstance(message.get("content"), str)):
                return "a question message is not {'role': str, 'content': str}"
    involved = entry.get("involved_classes")
    if not isinstance(involved, list) or not all(isinstance(name, str) for name in involved):
        return "its involved_classes is not a list of class names"
    for name in involved:
        try:
            backend_class(name)
        except KeyError:
            return f"{name[:80]!r} is not a backend class"
    config = entry.get("initial_config")
    if config is not None and not (isinstance(config, dict) and all(isinstance(v, dict) for v in config.values())):
        return "its initial_config is not {class: {field: value}}"
    return None


def _checked_entry(entry: Any) -> dict:
    """``entry`` as plain data (copied) if it has a multi-turn entry's fields and types,
    nested no deeper than :data:`~bfcl_safe.interp.limits.MAX_EPISODE_COPY_DEPTH` (real
    entries: 12); else :class:`ArgumentError`."""
    if not isinstance(entry, Mapping):
        raise ArgumentError("entry", f"an entry must be a dataset entry (a dict), not {type(entry).__name__}")
    limit = limits.MAX_EPISODE_COPY_DEPTH
    try:
        plain = _plain_step(entry, limit, "entry")
    except StepInputError as exc:
        raise ArgumentError("entry", f"{exc.where[:200]}: a {exc.kind[:80]} is not JSON data") from None
    except StepRefused:
        raise ArgumentError("entry", f"the entry is nested deeper than {limit}") from None
    problem = _entry_problem(plain)
    if problem is not None:
        shown = plain.get("id") if isinstance(plain.get("id"), str) else "entry"
        raise ArgumentError("entry", f"{shown[:120]!r} is not a multi-turn dataset entry: {problem}")
    return plain


def _is_turns(value: Any) -> bool:
    """Whether ``value`` is ground truth: a list of turns, each a list of call texts."""
    return isinstance(value, list) and all(
        isinstance(turn, list) and all(isinstance(call, str) for call in turn) for turn in value)


def _has_tool_calls(value: Any) -> bool:
    try:
        return hasattr(value, "tool_calls")
    except Exception:  # noqa: BLE001 - an object whose attributes raise is not a message
        return False


def _is_openai_call(item: Any) -> bool:
    return isinstance(item, Mapping) and isinstance(item.get("function"), Mapping) and "name" in item["function"]


def _is_sdk_call(item: Any) -> bool:
    """Whether ``item`` is a Chat Completions tool call as an SDK object (``.function``)."""
    return not isinstance(item, (Mapping, str, bytes, list, tuple)) and _attribute(item, "function") is not None


def _attribute(value: Any, name: str) -> Any:
    """``value.name``, or None when it has none (or reading it raises)."""
    try:
        return getattr(value, name, None)
    except Exception:  # noqa: BLE001 - an object whose attributes raise has none we use
        return None


def _item_type(item: Any) -> Any:
    """The ``type`` of a Responses API output item: a dict's key, an SDK object's attribute."""
    if isinstance(item, Mapping):
        return item.get("type") if len(item) > 1 else None  # ({"type": "..."} alone is an FC call)
    if isinstance(item, (str, bytes, list, tuple)):
        return None
    return _attribute(item, "type")


def _responses_output(value: Any) -> list | None:
    """``value``'s Responses API output items when it is a ``Response`` (an SDK object, or
    a dict with ``"object": "response"``), its ``output`` list, or one ``function_call`` /
    ``message`` item; else None. A list is an output list when every item has a ``type``
    (a dict with more keys than that: ``[{"type": arguments}]`` stays an FC call) and none
    is a Chat Completions tool call."""
    if isinstance(value, Mapping):
        if value.get("object") == "response" and isinstance(value.get("output"), (list, tuple)):
            return list(value["output"])
        kind = _item_type(value)
        if kind in (openai_format.RESPONSES_CALL_TYPE, openai_format.RESPONSES_MESSAGE_TYPE) \
                and "tool_calls" not in value:
            return [value]
        return None
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(_item_type(item), str) and not _is_openai_call(item) and not _is_sdk_call(item)
                         for item in value):
            return list(value)
        return None
    if isinstance(value, str):
        return None
    if _attribute(value, "object") == "response":
        output = _attribute(value, "output")
        return list(output) if isinstance(output, (list, tuple)) else None
    if _item_type(value) in (openai_format.RESPONSES_CALL_TYPE, openai_format.RESPONSES_MESSAGE_TYPE):
        return [value]
    return None


class _Step(NamedTuple):
    """A step as a result file holds it, its decoder, the ids of its calls (None: no ids)
    and the OpenAI style its tool messages take."""

    raw: Any
    decoder: str
    ids: list[Any] | None = None
    style: str = "openai-completions"


# Per episode, its tools lists by (format, held-out turns visible): they depend only on
# the dataset's prompt entry (kept out of the episode's state: not snapshotted or pickled).
_TOOLS_CACHE: "weakref.WeakKeyDictionary[Episode, dict[tuple[str, int], list[dict]]]" = weakref.WeakKeyDictionary()


def _copy_plain(value: Any) -> Any:
    """A copy of dataset data (dicts, lists, immutable leaves; nesting as shallow as the
    dataset's docs): twice as fast as ``copy.deepcopy`` on a tools list."""
    if type(value) is dict:
        return {key: _copy_plain(item) for key, item in value.items()}
    if type(value) is list:
        return [_copy_plain(item) for item in value]
    return value


# Episodes with an async step or check running (kept out of the episode's own state: not
# snapshotted, not pickled), and the worker threads those run in.
_BUSY: "weakref.WeakSet[Episode]" = weakref.WeakSet()
_BUSY_LOCK = threading.Lock()
_EXECUTOR: concurrent.futures.ThreadPoolExecutor | None = None


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _EXECUTOR
    with _BUSY_LOCK:
        if _EXECUTOR is None:
            _EXECUTOR = concurrent.futures.ThreadPoolExecutor(ASYNC_WORKERS, thread_name_prefix="bfcl-safe-episode")
        return _EXECUTOR


def _forget_executor() -> None:
    # A forked child has none of the parent's worker threads: it makes its own.
    global _EXECUTOR
    _EXECUTOR = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_executor)


class Episode:
    """One entry played turn by turn (see the module docstring). Build with
    :meth:`from_entry`."""

    def __init__(self, entry: Mapping[str, Any], prompt: Mapping[str, Any], ground_truth: list[list[str]],
                 model: Side, truth: Side):
        entry = _checked_entry(entry)
        if not isinstance(prompt, Mapping) or prompt.get("id") != entry["id"]:
            raise ArgumentError("prompt", f"prompt must be the prompt entry of {entry['id'][:120]!r}")
        if not _is_turns(ground_truth) or len(ground_truth) != len(entry["question"]):
            raise ArgumentError("ground_truth", f"ground_truth must be {len(entry['question'])} turns of call texts")
        for name, side in (("model", model), ("truth", truth)):
            if not isinstance(side, Side):
                raise ArgumentError(name, f"{name} must be a Side, not {type(side).__name__}")
        self._setup(entry, prompt, ground_truth, model, truth)

    def _setup(self, entry: Mapping[str, Any], prompt: Mapping[str, Any], ground_truth: list[list[str]],
               model: Side, truth: Side | None) -> None:
        """The fields of a new episode, from arguments already checked (:meth:`from_entry`:
        the dataset's own entry, or the caller's checked and copied; :meth:`for_inference`:
        no ground truth, ``truth`` None)."""
        self.entry = entry
        self.prompt = prompt
        self.ground_truth = ground_truth
        self.model = model
        self.truth = truth
        self.budget = Budget()
        self._turn = 0
        self._turn_over = False
        self._done = False
        self._force_terminated = False
        self._steps_in_turn = 0
        #: Per turn: every step given, as a result file holds it.
        self._raw: list[list[Any]] = [[]]
        #: Per turn: the decoded calls of each step that ran.
        self._decoded: list[list[list[Any]]] = [[]]
        #: Per turn: the result strings of each step that ran.
        self._results: list[list[list[str]]] = [[]]
        self._all_results: list[str] = []
        #: Per turn run so far: the ground truth's result strings.
        self._truth_results: list[list[str]] = []
        #: Turns whose checks are final (their turn ended).
        self._closed = 0
        self._failure: Verdict | None = None
        #: Set when the episode ended on a resource limit or an internal error.
        self._abort: Verdict | None = None

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any] | str, dataset: Any, *, owner: str | None = None) -> "Episode":
        """An episode of ``entry`` (a dataset entry or its id) to play turn by turn.

        It owns its backends and a ground-truth side of its own for the checks.
        ``owner`` is a model name (a result folder's name): the backends' instances are
        then named as when ``bfcl-safe evaluate`` scores that model, which decides the
        reference's name rewrite inside string arguments; with None they get neutral
        names. ``excluded_function`` is ignored, as BFCL does.
        """
        from bfcl_safe.backends import math_api
        from bfcl_safe.checker.contract import category_of, is_long_context
        from bfcl_safe.checker.dataset import DatasetError

        if owner is not None and not isinstance(owner, str):
            raise ArgumentError("owner", f"owner must be a model name (str) or None, not {type(owner).__name__}")
        if not all(callable(_attribute(dataset, name))
                   for name in ("entry", "ground_truth_for", "prompt_entry", "long_context_data")):
            raise ArgumentError("dataset", f"dataset must be a bfcl_safe Dataset, not {type(dataset).__name__}")
        given = None
        if isinstance(entry, str):
            entry_id = entry
        else:
            given = _checked_entry(entry)  # an entry of the caller's: its fields and types checked, copied
            entry_id = given["id"]
        try:
            with _DATASET_LOCK:
                stored = dataset.entry(entry_id)
                ground_truth = [list(turn) for turn in dataset.ground_truth_for(entry_id)]
                prompt = dataset.prompt_entry(entry_id)
                data = dataset.long_context_data() if is_long_context(category_of(entry_id)) else None
        except DatasetError:
            raise
        except Exception as exc:  # noqa: BLE001 - KeyError (no such id) or a dataset of the wrong kind
            raise ArgumentError("entry", f"not a multi-turn dataset entry: {_shown(entry_id)}"
                                + f" ({type(exc).__name__})") from None
        entry = stored if given is None else given
        if len(entry["question"]) != len(ground_truth):
            raise ArgumentError("entry", f"{entry_id[:120]!r}: the entry's question has {len(entry['question'])} "
                                f"turns, its ground truth {len(ground_truth)}")
        if "MathAPI" in entry["involved_classes"]:
            math_api.warm_up()  # here, not in the first logarithm call of a rollout
        try:
            model, truth = new_sides(entry, owner, data)
        except EpisodeError:
            raise
        except Exception as exc:  # noqa: BLE001 - an initial_config its backends cannot load
            raise ArgumentError("entry", f"{entry_id[:120]!r}: its initial_config does not load "
                                f"({type(exc).__name__}: {str(exc)[:200]})") from None
        episode = cls.__new__(cls)
        episode._setup(entry, prompt, ground_truth, model, truth)
        return episode

    @classmethod
    def for_inference(cls, entry: Mapping[str, Any], prompt: Mapping[str, Any], *, owner: str,
                      long_context_data: Any = None) -> "Episode":
        """An episode that only plays ``entry`` (``prompt`` its
        :meth:`~bfcl_safe.checker.dataset.Dataset.prompt_entry`), as BFCL inference plays it
        (``bfcl-safe generate``): the backends named as inference names them
        (``{owner}_{id}_{class}_instance``), no ground truth and no checks (the turn
        methods only advance; :meth:`check_turn` and :meth:`turn_outcome` raise
        :class:`EpisodeError`). ``long_context_data``: the dataset's long-context data
        or a loader of it, used for the long-context categories only."""
        from bfcl_safe.checker.contract import category_of, is_long_context

        long_context = is_long_context(category_of(entry["id"]))
        model = Side.create(entry, owner=owner, long_context=long_context, long_context_data=long_context_data)
        episode = cls.__new__(cls)
        episode._setup(entry, prompt, [[] for _ in entry["question"]], model, None)
        return episode

    # ------------------------------------------------------------------ views

    @property
    def id(self) -> str:
        return self.entry["id"]

    @property
    def instances(self) -> Mapping[str, Any]:
        """The model side's backend instances (live; read them, do not change them)."""
        return self.model.instances

    @property
    def turn(self) -> int:
        """The current turn's index (the last turn once the episode is done)."""
        return self._turn

    @property
    def turn_count(self) -> int:
        return len(self.ground_truth)

    @property
    def turn_over(self) -> bool:
        """True once the current turn ended (see :class:`TurnEnd`); call :meth:`next_turn`."""
        return self._turn_over

    @property
    def done(self) -> bool:
        """True after the last turn ended, a force-termination, or an abort."""
        return self._done

    @property
    def force_terminated(self) -> bool:
        """True when a turn exceeded :data:`MAXIMUM_STEP_LIMIT` steps."""
        return self._force_terminated

    def messages(self, turn: int | None = None, *, mode: str = "fc") -> list[dict]:
        """The user messages of ``turn`` (default: the current one), as BFCL inference
        sends them in ``mode`` ``"fc"`` or ``"prompting"``."""
        if mode not in openai_format.MESSAGE_MODES:
            raise ArgumentError("mode", f"mode must be one of {', '.join(openai_format.MESSAGE_MODES)}, "
                                f"not {_shown(mode)}")
        return turn_messages(self.entry, missed_docs(self.prompt), self._turn_index(turn), mode)

    def tools(self, turn: int | None = None, *, format: str = "bfcl", shared: bool = False) -> list[dict]:
        """The tools visible at ``turn`` (default: the current one): ``format="bfcl"`` the
        dataset's docs; ``"openai"`` (Chat Completions) or ``"openai-responses"`` the
        exact tools list BFCL's OpenAI FC handler sends then (hint added to the
        descriptions, types converted; :mod:`~bfcl_safe.checker.openai_format`).

        Built once per episode, format and set of visible tools (it changes only at a
        turn where held-out tools appear). A copy, unless ``shared=True``: then the
        episode's own list, the same object as long as the tools stay the same (for
        callers that only read it; do not change it)."""
        index = self._turn_index(turn)
        if not isinstance(format, str) or format not in TOOL_FORMATS:
            raise ArgumentError("format", f"format must be one of {', '.join(TOOL_FORMATS)}, not {_shown(format)}")
        if not isinstance(shared, bool):
            raise ArgumentError("shared", f"shared must be a bool, not {type(shared).__name__}")
        missed = missed_docs(self.prompt)
        key = (format, sum(1 for held_turn in missed if held_turn <= index))
        cache = _TOOLS_CACHE.get(self)
        if cache is None:
            cache = _TOOLS_CACHE.setdefault(self, {})
        tools = cache.get(key)
        if tools is None:
            if format == "bfcl":
                tools = visible_tools(list(self.prompt.get("function") or ()), missed, index)
            else:
                style = "openai-completions" if format == "openai" else format
                tools = openai_format.tools_for_turn(self.prompt, index, style=style)
            cache[key] = tools
        return tools if shared else _copy_plain(tools)

    def _turn_index(self, turn: int | None) -> int:
        if turn is None:
            return self._turn
        if type(turn) is not int or not 0 <= turn < len(self.ground_truth):
            shown = turn if type(turn) is int and abs(turn) < 10 ** 9 else _shown(turn)
            raise ArgumentError("turn", f"turn must be 0..{len(self.ground_truth) - 1}, not {shown}")
        return turn

    def state(self) -> dict[str, dict[str, Any]]:
        """``{class: {attribute: value}}`` of the model side's compared attributes, as plain data."""
        try:
            return self.model.state()
        except BfclSafeError:
            raise
        except Exception as exc:  # noqa: BLE001 - RecursionError, MemoryError ... on hostile state
            raise EpisodeLimitError("state", type(exc).__name__) from None

    def result(self) -> list[list[Any]]:
        """The steps given so far, per turn, as a BFCL result file's ``result`` holds them
        (score it with ``bfcl-safe evaluate``; the verdict equals :meth:`check_turn`'s
        after the last turn)."""
        try:
            return copy.deepcopy(self._raw)
        except (RecursionError, MemoryError) as exc:
            raise EpisodeLimitError("result", type(exc).__name__) from None

    # ------------------------------------------------------------------ steps

    def step(self, calls: Any, *, decoder: str | None = None) -> StepResult:
        """Run one model step of the current turn.

        ``calls``: an assistant message (dict with ``tool_calls``/``content``, or an SDK
        object with ``.tool_calls``) — stored as BFCL's FC handler stores it; its OpenAI
        ``tool_calls`` list; a Responses API answer — the ``Response`` (SDK object or
        dict), its ``output`` list (``function_call`` items beside ``message``,
        ``reasoning``, ... items, dicts or SDK objects) or one ``function_call`` item —
        stored as BFCL's Responses handler stores it (the calls, else the output text),
        its results given back as ``function_call_output`` items; FC calls as a result
        file holds them (``[{name: arguments}]``, arguments a JSON object or its text); or
        call text (a ``str``, or a list of ``str`` of one call each; decoded as a
        prompting model's steps). ``decoder`` forces one of
        ``checker.decoders.DECODERS`` for result-file steps.

        Plain data only (what JSON holds): a date, a set, bytes or an object inside a
        step is :class:`StepInputError`, a step nested deeper than
        :data:`~bfcl_safe.interp.limits.MAX_RESULT_LINE_DEPTH` :class:`StepRefused`;
        nothing runs then.

        As in BFCL inference, a step that decodes to no call or does not decode ends
        the turn; the step that takes the turn past :data:`MAXIMUM_STEP_LIMIT` runs,
        then force-terminates the episode. Calls of held-out tools run even before their
        turn, as in BFCL.
        """
        if self._done:
            raise EpisodeOverError(self.id)
        if self._turn_over:
            raise TurnOverError(self.id, self._turn)
        given = self._as_step(calls, decoder)
        turn = self._turn
        self._raw[turn].append(copy.deepcopy(given.raw))
        # (a step must never crash its caller; its documented argument errors reach it)
        boundary = EntryBoundary("run this step", turn=turn, budget=self.budget, passthrough=(BfclSafeError,))
        with boundary:
            return self._run_step(given)
        failure = boundary.failure
        assert failure is not None
        return self._abort_with(failure, TurnEnd.RESOURCE_LIMIT if failure.error_type is ErrorType.RESOURCE_LIMIT
                                else TurnEnd.INTERNAL_ERROR)

    def _as_step(self, calls: Any, decoder: str | None) -> _Step:
        """The step as a result file would hold it, its decoder, the tool-call ids and the
        style of the tool messages (plain data: copied, types and depth checked)."""
        from bfcl_safe.checker.decoders import DECODERS

        depth = limits.MAX_RESULT_LINE_DEPTH
        if decoder is not None:
            if not isinstance(decoder, str) or decoder not in DECODERS:
                raise ArgumentError("decoder", f"unknown decoder {_shown(decoder)}; expected a key of DECODERS")
            return _Step(_plain_step(calls, depth), decoder)
        responses = _responses_output(calls)
        if responses is not None:
            # Dict items are plain data: copied and checked before they are read. SDK objects
            # are read field by field; what they hold is checked below, in the step.
            responses = [_plain_step(item, depth - 1) if isinstance(item, Mapping) else item for item in responses]
            step, ids = openai_format.responses_step(responses)
            return _Step(_plain_step(step, depth), "fc", _plain_step(ids, depth), "openai-responses")
        if not isinstance(calls, (str, list, tuple, Mapping)) and _has_tool_calls(calls):
            step, ids = openai_format.reply_step(calls)  # an SDK message object
            return _Step(_plain_step(step, depth), "fc", _plain_step(ids, depth))
        if isinstance(calls, (list, tuple)) and calls and all(_is_sdk_call(item) for item in calls):
            step, ids = openai_format.reply_step({"tool_calls": list(calls)})  # an SDK message's tool_calls
            return _Step(_plain_step(step, depth), "fc", _plain_step(ids, depth))
        if isinstance(calls, Mapping) and ("tool_calls" in calls or calls.get("role") == "assistant"):
            message = _plain_step(calls, depth)
            step, ids = openai_format.reply_step(message)
            return _Step(step, "fc", ids)
        calls = _plain_step(calls, depth)
        if not isinstance(calls, (str, list, dict)):
            raise StepInputError(type(calls).__name__)
        if isinstance(calls, dict):
            return _Step([calls], "fc")
        if isinstance(calls, str):
            return _Step(calls, "prompting")
        if all(_is_openai_call(item) for item in calls) and calls:
            step, ids = openai_format.reply_step({"tool_calls": calls})
            return _Step(step, "fc", ids)
        if all(isinstance(item, dict) for item in calls):
            return _Step(calls, "fc")
        if all(isinstance(item, str) for item in calls):
            return _Step(f"[{', '.join(item.strip() for item in calls)}]", "prompting")
        raise StepInputError("a list mixing calls of different kinds")

    def _run_step(self, given: _Step) -> StepResult:
        from bfcl_safe.checker.decoders import DECODERS, DecodeError, decode_step

        raw, decoder, ids = given.raw, given.decoder, given.ids
        turn = self._turn
        try:
            decoded = decode_step(raw, decoder)
        except DecodeError as exc:
            return self._end_turn_result(TurnEnd.UNDECODABLE, str(exc)[:500])
        if is_empty_response(decoded):
            return self._end_turn_result(TurnEnd.NO_CALLS, None)
        results = self.model.run(decoded)
        self._decoded[turn].append(decoded)
        self._results[turn].append(results)
        self._all_results.extend(results)
        self._steps_in_turn += 1
        try:
            texts = DECODERS[decoder][1](raw)
        except BudgetExceeded:
            raise
        except Exception:  # noqa: BLE001 - shown text only; fall back to the call's own
            texts = []
        if len(texts) != len(results):
            texts = [str(call) for call in decoded]
        ids_list = list(ids) if ids is not None else []
        call_results = tuple(
            CallResult(text, result, ids_list[i] if i < len(ids_list) and isinstance(ids_list[i], str) else None)
            for i, (text, result) in enumerate(zip(texts, results)))
        if decoder == "fc":
            messages = tuple(openai_format.tool_messages(results, ids_list, style=given.style))
        else:
            messages = (openai_format.prompting_results_message(results, texts),)
        ended = None
        if self._steps_in_turn > MAXIMUM_STEP_LIMIT:
            self._force_terminated = True
            self._turn_over = True
            self._done = True
            ended = TurnEnd.STEP_LIMIT
            if turn == len(self.ground_truth) - 1:
                # Cut short in its last turn, the result still has every turn: scored as usual.
                self._close_turn()
        return StepResult(call_results, messages, turn, self._steps_in_turn, self._turn_over, ended, self._done)

    def _end_turn_result(self, ended: TurnEnd, reason: str | None) -> StepResult:
        self._turn_over = True
        return StepResult((), (), self._turn, self._steps_in_turn, True, ended, self._done, reason)

    def _abort_with(self, verdict: Verdict, ended: TurnEnd) -> StepResult:
        self._abort = verdict
        self._turn_over = True
        self._done = True
        return StepResult((), (), self._turn, self._steps_in_turn, True, ended, True)

    # ------------------------------------------------------------------ async

    async def astep(self, calls: Any, *, decoder: str | None = None) -> StepResult:
        """:meth:`step` for asyncio callers: the step runs in a worker thread
        (:data:`ASYNC_WORKERS` shared by all episodes), so the event loop keeps serving
        other rollouts. One step or check of an episode at a time
        (:class:`EpisodeBusyError` otherwise)."""
        return await self._in_worker(lambda: self.step(calls, decoder=decoder))

    async def aend_turn(self) -> TurnOutcome:
        """:meth:`end_turn` in a worker thread (the turn's checks replay the ground truth)."""
        return await self._in_worker(self.end_turn)

    async def anext_turn(self) -> bool:
        """:meth:`next_turn` in a worker thread."""
        return await self._in_worker(self.next_turn)

    async def aturn_outcome(self) -> TurnOutcome:
        """:meth:`turn_outcome` in a worker thread."""
        return await self._in_worker(self.turn_outcome)

    async def acheck_turn(self) -> Verdict:
        """:meth:`check_turn` in a worker thread."""
        return await self._in_worker(self.check_turn)

    async def _in_worker(self, work: Callable[[], _T]) -> _T:
        loop = asyncio.get_running_loop()
        with _BUSY_LOCK:
            if self in _BUSY:
                raise EpisodeBusyError(self.id)
            _BUSY.add(self)
        try:
            future = _executor().submit(work)
        except BaseException:
            with _BUSY_LOCK:
                _BUSY.discard(self)
            raise
        # Busy until the work itself ends (or is cancelled before it starts), not until this
        # coroutine does: a caller that stops waiting (a timeout) must not start a second
        # step beside the one still running.
        future.add_done_callback(lambda _: self._not_busy())
        return await asyncio.wrap_future(future, loop=loop)

    def _not_busy(self) -> None:
        with _BUSY_LOCK:
            _BUSY.discard(self)

    # ------------------------------------------------------------------ turns and checks

    def next_turn(self) -> bool:
        """End the current turn (its checks become final) and start the next one.
        False when there is none: the episode is done."""
        if self._done:
            return False
        self._guarded(self._close_turn)
        if self._done:
            return False
        if self._turn + 1 >= len(self.ground_truth):
            self._done = True
            self._turn_over = True
            return False
        self._turn += 1
        self._turn_over = False
        self._steps_in_turn = 0
        self._raw.append([])
        self._decoded.append([])
        self._results.append([])
        return True

    def end_turn(self) -> TurnOutcome:
        """The current turn's :class:`TurnOutcome`, then :meth:`next_turn` (a reward per
        turn, gym-style). The outcome is computed before the next turn starts."""
        outcome = self.turn_outcome()
        self.next_turn()
        return outcome

    def turn_outcome(self) -> TurnOutcome:
        """The current turn's outcome as it stands now (see the module docstring)."""
        turn = self._turn
        failure = self._guarded(lambda: self._check(turn))
        if self._abort is not None:
            failure = self._abort
        return TurnOutcome(turn, failure is None, failure, self.check_turn())

    def check_turn(self) -> Verdict:
        """The official verdict so far: the scorer's checks of every turn up to the
        current one (the current one as it stands now, even if unfinished). After a
        force-termination before the last turn the verdict is
        ``multi_turn:force_terminated``, as when scoring the result (``failing_turn`` is
        then the first turn that failed its checks, or the cut-short turn)."""
        if self._abort is not None:
            return self._abort
        last = len(self.ground_truth) - 1
        if self._force_terminated and self._turn < last:
            failure = self._failure
            turn = failure.failing_turn if failure is not None and failure.failing_turn is not None else self._turn
            return force_terminated_verdict(self._turn + 1, len(self.ground_truth), turn, failure)
        if self._failure is not None:
            return self._failure
        if self._closed > self._turn:
            return Verdict.passed(self._closed)
        failure = self._guarded(lambda: self._check(self._turn))
        if self._abort is not None:
            return self._abort
        if failure is not None:
            return failure
        return Verdict.passed(self._turn + 1)

    def _close_turn(self) -> None:
        if self._closed > self._turn:
            return
        if self._failure is None and self.truth is not None:
            self._failure = self._check(self._turn)
        self._closed = self._turn + 1

    def _check(self, turn: int) -> Verdict | None:
        """The scorer's checks of ``turn`` against the ground truth, the model's state and
        results as they are now."""
        if self.truth is None:
            raise EpisodeError(f"{self.id}: an inference episode has no ground truth to check against")
        while len(self._truth_results) <= turn:
            self._truth_results.append(self.truth.run(self.ground_truth[len(self._truth_results)]))
        execution_results = [{"model": [list(r) for r in self._results[i]],
                              "ground_truth": list(self._truth_results[i])} for i in range(turn + 1)]
        with mpmath_lock(self.model.instances):
            return turn_failure(turn, self._decoded[turn], self.ground_truth[turn], self.model, self.truth,
                                self._truth_results[turn], self._all_results, execution_results)

    def _guarded(self, work):
        """Run checking work under the episode's budget; a budget overrun or a state the
        checks cannot handle ends the episode with bfcl-safe's own error types."""
        boundary = EntryBoundary("check this turn", turn=self._turn, budget=self.budget,
                                 passthrough=(BfclSafeError,))
        with boundary:  # (RecursionError/ValueError on hostile state, too)
            return work()
        self._abort = boundary.failure
        self._turn_over = True
        self._done = True
        return None

    # ------------------------------------------------------------------ copies

    def snapshot(self) -> Snapshot:
        """The episode's whole state now (backends of both sides, turn bookkeeping, budget).
        :class:`EpisodeLimitError` when the state nests deeper than
        :data:`~bfcl_safe.interp.limits.MAX_EPISODE_COPY_DEPTH`."""
        self._check_copy_depth("snapshot")
        return Snapshot(self.id, self._copy_state(self.__dict__, "snapshot"))

    def _check_copy_depth(self, operation: str) -> None:
        limit = limits.MAX_EPISODE_COPY_DEPTH
        truth = list(self.truth.instances.values()) if self.truth is not None else []
        if _nests_deeper(list(self.model.instances.values()) + truth, limit):
            raise EpisodeLimitError(operation, f"state nested deeper than {limit}")

    def restore(self, snapshot: Snapshot) -> None:
        """Put the episode back to ``snapshot`` (one of an episode of the same entry); the
        snapshot stays usable. :class:`ArgumentError` for anything else: not a
        :class:`Snapshot`, one of another entry, or a state that is not an episode's."""
        if not isinstance(snapshot, Snapshot) or snapshot.entry_id != self.id:
            raise ArgumentError("snapshot", f"not a snapshot of {self.id}")
        problem = self._foreign_state(snapshot.state)
        if problem is not None:
            raise ArgumentError("snapshot", f"not a snapshot of {self.id}: {problem}")
        self.__dict__.update(self._copy_state(snapshot.state, "restore"))

    def _foreign_state(self, state: Any) -> str | None:
        """Why ``state`` is not the state of an episode of this entry (None when it is):
        the same fields with the same types, the same entry and backends, turn lists as
        long as its turn says."""
        mine = self.__dict__
        if not isinstance(state, dict) or set(state) != set(mine):
            return "its fields are not an episode's"
        for name, value in mine.items():
            other = state[name]
            if name in ("_failure", "_abort"):
                if other is not None and not isinstance(other, Verdict):
                    return f"{name} is a {type(other).__name__}"
            elif type(other) is not type(value):
                return f"{name} is a {type(other).__name__}, not a {type(value).__name__}"
        if state["entry"].get("id") != self.id or state["ground_truth"] != self.ground_truth:
            return "it is of another entry"
        for side in ("model", "truth"):
            if list(state[side].instances) != list(getattr(self, side).instances):
                return f"its {side} side has other backends"
        turn = state["_turn"]
        if not 0 <= turn < len(self.ground_truth) or not 0 <= state["_closed"] <= turn + 1:
            return "its turn is out of range"
        for name in ("_raw", "_decoded", "_results"):
            if len(state[name]) != turn + 1 or not all(isinstance(steps, list) for steps in state[name]):
                return f"{name} does not hold one list per turn"
        for name in ("_results", "_truth_results"):
            turns = state[name] if name == "_truth_results" else [r for steps in state[name] for r in steps]
            if not _is_turns(turns):
                return f"{name} does not hold result strings"
        if not all(isinstance(result, str) for result in state["_all_results"]):
            return "_all_results does not hold result strings"
        return None

    def _copy_state(self, state: Mapping[str, Any], operation: str) -> dict:
        # The dataset's values (entry, prompt, ground truth) are read-only: shared, not copied.
        memo = {id(state[name]): state[name] for name in ("entry", "prompt", "ground_truth")}
        try:
            with mpmath_lock(self.model.instances):
                return copy.deepcopy(dict(state), memo)
        except (RecursionError, MemoryError, ValueError, TypeError) as exc:
            raise EpisodeLimitError(operation, type(exc).__name__) from None

    def __getstate__(self) -> dict:
        # Pickling recurses on the stack: a state too deep is refused with our error.
        self._check_copy_depth("pickle")
        return dict(self.__dict__)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return f"<Episode {self.id} turn {self._turn}/{len(self.ground_truth)}{' done' if self._done else ''}>"


__all__ = [
    "ASYNC_WORKERS", "ArgumentError", "CallResult", "Episode", "EpisodeBusyError", "EpisodeError", "EpisodeLimitError",
    "EpisodeOverError",
    "MAXIMUM_STEP_LIMIT", "Snapshot", "StepInputError", "StepRefused", "StepResult", "TOOL_FORMATS", "TurnEnd",
    "TurnOutcome", "TurnOverError",
]
