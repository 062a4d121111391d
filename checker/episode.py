"""The scoring core: the backends of one side of an entry, state carried over between turns.

:class:`Side` — one side (the model's or the ground truth's) of an entry: its backends
and the method table its calls run through (:meth:`Side.create`, :meth:`Side.run`,
:meth:`Side.state`). The scorer (:mod:`~bfcl_safe.checker.verdict`) runs two of them per
entry; the play API (:mod:`~bfcl_safe.checker.play`, :class:`~bfcl_safe.checker.play.Episode`,
what agents and RL use) is built on top.

A side owns all its state: many sides, of the same entry too, can run in threads at the
same time. (MathAPI's ``logarithm`` sets mpmath's process-wide precision, as in the
reference; steps of sides involving MathAPI are serialised by one lock so that a result
is computed and rendered at the precision it set.)
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterable, Mapping, Sequence

from bfcl_safe.backends.base import Backend
from bfcl_safe.checker.openai_format import docs_at_turn, messages_at_turn
from bfcl_safe.interp import MethodTable, run_step
from bfcl_safe.interp.errors import BfclSafeError
from bfcl_safe.interp.execute import Call

#: BFCL's ``MAXIMUM_STEP_LIMIT`` (``constants/default_prompts.py``). Inference counts the
#: steps of a turn that ran calls; when the count exceeds the limit (at the 21st such
#: step, after it ran) the model is force-quit: the turn and the whole entry end there.
MAXIMUM_STEP_LIMIT = 20


# mpmath's context is process-wide (see the module docstring).
_MPMATH_LOCK = threading.Lock()
_NO_LOCK = contextlib.nullcontext()  # (reusable: it holds nothing)


def _backend_classes() -> dict[str, type[Backend]]:
    from bfcl_safe.backends.gorilla_file_system import GorillaFileSystem
    from bfcl_safe.backends.math_api import MathAPI
    from bfcl_safe.backends.message_api import MessageAPI
    from bfcl_safe.backends.posting_api import TwitterAPI
    from bfcl_safe.backends.ticket_api import TicketAPI
    from bfcl_safe.backends.trading_bot import TradingBot
    from bfcl_safe.backends.travel_booking import TravelAPI
    from bfcl_safe.backends.vehicle_control import VehicleControlAPI

    return {
        cls.__name__: cls
        for cls in (GorillaFileSystem, MathAPI, MessageAPI, TwitterAPI, TicketAPI,
                    TradingBot, TravelAPI, VehicleControlAPI)
    }


_CLASSES: dict[str, type[Backend]] | None = None


def backend_class(class_name: str) -> type[Backend]:
    global _CLASSES
    if _CLASSES is None:
        _CLASSES = _backend_classes()
    try:
        return _CLASSES[class_name]
    except KeyError:
        raise KeyError(f"unknown backend class {class_name!r}") from None


def instance_name(owner: str, entry_id: str, class_name: str) -> str:
    """The name the reference gives a backend instance in its globals (``-./:`` become ``_``)."""
    name = f"{owner}_{entry_id}_{class_name}_instance"
    return name.replace("-", "_").replace(".", "_").replace("/", "_").replace(":", "_")


class EpisodeError(BfclSafeError, RuntimeError):
    """Misuse of an episode, or a step it refuses; the play API's subclasses
    (:mod:`~bfcl_safe.checker.play`) say which and carry the data."""


# --------------------------------------------------------------------------- plain data


def plain(value: Any) -> Any:
    """``value`` as JSON-safe plain data: dicts (keys as strings), lists, strings, numbers,
    booleans, None. Tuples and sets become lists, a file system's directories
    ``{"name", "contents"}`` and files ``{"name", "content"}``; anything else its ``str()``."""
    kind = type(value)
    if value is None or kind in (str, int, float, bool):
        return value
    if isinstance(value, dict):
        return {key if type(key) is str else str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return [plain(item) for item in sorted(value, key=repr)]
    from bfcl_safe.backends.gorilla_file_system import Directory, File, tree_as_plain

    if isinstance(value, Directory):
        return tree_as_plain(value, plain)  # iterative: any depth; a cycle is written "{...}"
    if isinstance(value, File):
        return {"name": plain(value.name), "content": plain(value.content)}
    for base in (bool, int, float, str):  # subclasses (e.g. an IntEnum): their plain value
        if isinstance(value, base):
            return base(value)
    return str(value)


# --------------------------------------------------------------------------- per-turn views


def turn_messages(entry: Mapping[str, Any], missed: Mapping[int, Sequence[dict]], turn: int,
                  mode: str = "fc") -> list[dict]:
    """The user messages BFCL inference sends at ``turn`` of ``entry`` with its held-out
    docs ``missed`` (:func:`~bfcl_safe.checker.openai_format.messages_at_turn`)."""
    return messages_at_turn(entry["question"], missed, turn, mode)


#: The tool docs a model has at a turn (held-out docs appended from their turn on).
visible_tools = docs_at_turn


# --------------------------------------------------------------------------- one side


def mpmath_lock(instances: Mapping[str, Any]):
    """The lock a side's work must hold (MathAPI: mpmath's process-wide precision), or a
    no-op context."""
    return _MPMATH_LOCK if "MathAPI" in instances else _NO_LOCK


class Side:
    """The backends of one side of an entry and their method table; state carried over
    between turns. Built by :meth:`create`; pickles (its backends are plain attrs
    objects; the table is rebuilt on load)."""

    __slots__ = ("instances", "table", "_names", "_lock")

    def __init__(self, instances: Mapping[str, Any], table: MethodTable, names: Sequence[str] | None = None):
        self.instances = instances
        self.table = table
        self._names = None if names is None else list(names)
        self._lock = mpmath_lock(instances)

    @classmethod
    def create(
        cls,
        entry: Mapping[str, Any],
        *,
        owner: str | None = None,
        long_context: bool = False,
        long_context_data: Callable[[], Mapping[str, Any]] | Mapping[str, Any] | None = None,
    ) -> "Side":
        """Build the backends of ``entry`` (its ``involved_classes`` and ``initial_config``).

        ``owner`` is the prefix of the reference's instance names (``{model}_eval`` or
        ``{model}_ground_truth_eval`` when scoring); it matters for the name rewrite
        inside string arguments. ``long_context_data`` may be a loader, called only
        when needed.
        """
        involved: Sequence[str] = entry["involved_classes"]
        config = entry.get("initial_config") or {}
        data = None
        if long_context:
            data = long_context_data() if callable(long_context_data) else long_context_data
        instances = {}
        for class_name in involved:
            backend = backend_class(class_name)
            instances[class_name] = backend.from_config(
                config.get(class_name, {}), long_context=long_context, long_context_data=data
            )
        names = None
        if owner is not None:
            names = [instance_name(owner, entry["id"], c) for c in instances]
        return cls(instances, MethodTable(list(instances.values()), names), names)

    def run(self, calls: Sequence[Call] | Iterable[Call]) -> list[str]:
        """Run one step's calls; one result string per call (BFCL's ``execute_multi_turn_func_call``)."""
        if self._lock is _NO_LOCK:
            return run_step(calls, self.table)
        with self._lock:
            return run_step(calls, self.table)

    def state(self) -> dict[str, dict[str, Any]]:
        """``{class: {attribute: value}}`` of the attributes the scorer compares, as plain data."""
        with self._lock:
            return {name: plain(instance.public_state()) for name, instance in self.instances.items()}

    def __getstate__(self) -> tuple:
        return (dict(self.instances), self._names)

    def __setstate__(self, state: tuple) -> None:
        instances, names = state
        self.instances = instances
        self._names = names
        self.table = MethodTable(list(instances.values()), names)
        self._lock = mpmath_lock(instances)
