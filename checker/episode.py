"""Episodes: the backends of one entry, with their state carried over between turns.

Two ways to build one:

- :meth:`Episode.create` — one side (the model's or the ground truth's) of an entry:
  its backends and method table. The scorer (:mod:`checker.verdict`) uses it.
- :meth:`Episode.from_entry` — an episode a model plays turn by turn, as in BFCL
  inference (for agents and RL rollouts): per turn the user messages and the tool
  docs visible then, :meth:`~Episode.step` to run the model's calls, BFCL's step
  limit, :meth:`~Episode.check_turn` for the verdict so far (the scorer's own checks,
  against a ground-truth episode of its own), :meth:`~Episode.state` as plain data.

An episode owns all its state: many episodes, of the same entry too, can run in
threads at the same time. (MathAPI's ``logarithm`` sets mpmath's process-wide
precision, as in the reference; steps of episodes involving MathAPI are serialised
by one lock so that a result is computed and rendered at the precision it set.)
"""

from __future__ import annotations

from bfcl_safe.interp.errors import BfclSafeError

import copy
import threading
from typing import Any, Callable, Iterable, Mapping, Sequence

import attrs

from bfcl_safe.interp import MethodTable, run_step
from bfcl_safe.interp.execute import Call

#: BFCL's ``MAXIMUM_STEP_LIMIT`` (``constants/default_prompts.py``). Inference counts the
#: steps of a turn that ran calls; when the count exceeds the limit (at the 21st such
#: step, after it ran) the model is force-quit: the turn and the whole entry end there.
MAXIMUM_STEP_LIMIT = 20

#: The user message of a held-out turn of ``multi_turn_miss_func`` in FC inference
#: (BFCL's ``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC``). Prompting inference
#: puts the list of the new docs, then a newline, before it.
ADDITIONAL_FUNCTION_PROMPT = "I have updated some more functions you can choose from. What about now?"

MESSAGE_MODES = ("fc", "prompting")

# mpmath's context is process-wide (see the module docstring).
_MPMATH_LOCK = threading.Lock()
# Dataset's lazy indexes are not safe to build from several threads at once.
_DATASET_LOCK = threading.Lock()


def _backend_classes() -> dict[str, type]:
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


_CLASSES: dict[str, type] | None = None


def backend_class(class_name: str) -> type:
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
    """The turn protocol was not followed (a step after its turn or the episode ended, or
    a turn method on an episode not built by :meth:`Episode.from_entry`)."""


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
    from bfcl_safe.backends.gorilla_file_system import Directory, File

    if isinstance(value, Directory):
        return {"name": plain(value.name), "contents": plain(value.contents)}
    if isinstance(value, File):
        return {"name": plain(value.name), "content": plain(value.content)}
    for base in (bool, int, float, str):  # subclasses (e.g. an IntEnum): their plain value
        if isinstance(value, base):
            return base(value)
    return str(value)


# --------------------------------------------------------------------------- per-turn views


def turn_messages(entry: Mapping[str, Any], missed: Mapping[int, Sequence[dict]], turn: int,
                  mode: str = "fc") -> list[dict]:
    """The user messages BFCL inference sends at ``turn``: the entry's question for that
    turn, except at a held-out turn of ``multi_turn_miss_func`` (whose question is empty),
    where it sends :data:`ADDITIONAL_FUNCTION_PROMPT` — in ``prompting`` mode preceded by
    the new tool docs (the ``str()`` of their list) and a newline."""
    if mode not in MESSAGE_MODES:
        raise ValueError(f"mode must be one of {', '.join(MESSAGE_MODES)}, not {mode!r}")
    if turn in missed:
        text = ADDITIONAL_FUNCTION_PROMPT if mode == "fc" else f"{list(missed[turn])}\n{ADDITIONAL_FUNCTION_PROMPT}"
        return [{"role": "user", "content": text}]
    return copy.deepcopy(list(entry["question"][turn]))


def visible_tools(docs: Sequence[dict], missed: Mapping[int, Sequence[dict]], turn: int) -> list[dict]:
    """The tool docs a model has at ``turn``: every doc of the involved classes except the
    held-out ones, then the held-out docs of each turn up to ``turn``, in turn order (BFCL
    appends them to the tool list when their turn starts)."""
    out = list(docs)
    for held_turn in sorted(missed):
        if held_turn <= turn:
            out.extend(missed[held_turn])
    return copy.deepcopy(out)


def missed_docs(prompt: Mapping[str, Any]) -> dict[int, list[dict]]:
    """``{turn: docs held out until then}`` of a prompt entry (``Dataset.prompt_entry``)."""
    return {int(turn): list(docs) for turn, docs in (prompt.get("missed_function") or {}).items()}


# --------------------------------------------------------------------------- the play


@attrs.define(eq=False)
class _Play:
    """Turn bookkeeping of an episode built by :meth:`Episode.from_entry`."""

    entry: Mapping[str, Any]
    ground_truth: list[list[str]]
    docs: list[dict]
    missed: dict[int, list[dict]]
    truth: "Episode"
    turn: int = 0
    turn_over: bool = False
    done: bool = False
    force_terminated: bool = False
    steps_in_turn: int = 0
    #: Per turn: every step given, as a result file holds it.
    raw: list[list[Any]] = attrs.Factory(lambda: [[]])
    #: Per turn: the decoded calls of each step that ran.
    decoded: list[list[list[Call]]] = attrs.Factory(lambda: [[]])
    #: Per turn: the result strings of each step that ran.
    results: list[list[list[str]]] = attrs.Factory(lambda: [[]])
    all_results: list[str] = attrs.Factory(list)
    #: Per turn run so far: the ground truth's result strings.
    truth_results: list[list[str]] = attrs.Factory(list)
    #: Turns whose checks are final (their turn ended).
    closed: int = 0
    failure: dict | None = None
    failure_turn: int | None = None


def _as_step(calls: Any, decoder: str | None) -> tuple[Any, str]:
    """The step as a result file would hold it, and the decoder for it."""
    from bfcl_safe.checker.decoders import DECODERS

    if decoder is not None:
        if decoder not in DECODERS:
            raise ValueError(f"unknown decoder {decoder!r}; expected one of {', '.join(sorted(DECODERS))}")
        return calls, decoder
    if isinstance(calls, dict):
        return [calls], "fc"
    if isinstance(calls, str):
        return calls, "prompting"
    if isinstance(calls, (list, tuple)):
        items = list(calls)
        if all(isinstance(item, dict) for item in items):
            return items, "fc"
        if all(isinstance(item, str) for item in items):
            return f"[{', '.join(item.strip() for item in items)}]", "prompting"
    raise TypeError(
        "calls must be FC calls ([{name: arguments}], arguments a JSON object or its text) "
        f"or call text (a str, or a list of str of one call each), not {type(calls).__name__}"
    )


class Episode:
    """Backends of one entry for one side, state carried over between turns."""

    __slots__ = ("instances", "table", "_play")

    def __init__(self, instances: Mapping[str, Any], table: MethodTable):
        self.instances = instances
        self.table = table
        self._play: _Play | None = None

    @classmethod
    def create(
        cls,
        entry: Mapping[str, Any],
        *,
        owner: str | None = None,
        long_context: bool = False,
        long_context_data: Callable[[], Mapping[str, Any]] | Mapping[str, Any] | None = None,
    ) -> "Episode":
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
        return cls(instances, MethodTable(list(instances.values()), names))

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any] | str, dataset: Any, *, owner: str | None = None) -> "Episode":
        """An episode of ``entry`` (a dataset entry or its id) to play turn by turn.

        It owns its backends and a ground-truth episode of its own for
        :meth:`check_turn`. ``owner`` is a model name (a result folder's name): the
        backends' instances are then named as when ``bfcl-safe evaluate`` scores that
        model, which decides the reference's name rewrite inside string arguments; with
        None they get neutral names. ``excluded_function`` is ignored, as BFCL does.
        """
        from bfcl_safe.checker.contract import category_of, is_long_context
        from bfcl_safe.checker.verdict import new_sides

        with _DATASET_LOCK:
            if isinstance(entry, str):
                entry = dataset.entry(entry)
            entry_id = entry["id"]
            ground_truth = [list(turn) for turn in dataset.ground_truth_for(entry_id)]
            prompt = dataset.prompt_entry(entry_id)
            data = dataset.long_context_data() if is_long_context(category_of(entry_id)) else None
        model, truth = new_sides(entry, owner, data)
        episode = cls(model.instances, model.table)
        episode._play = _Play(entry=entry, ground_truth=ground_truth, docs=list(prompt["function"]),
                              missed=missed_docs(prompt), truth=truth)
        return episode

    # ------------------------------------------------------------------ running calls

    def run(self, calls: Iterable[Call]) -> list[str]:
        if "MathAPI" in self.instances:
            with _MPMATH_LOCK:
                return run_step(list(calls), self.table)
        return run_step(list(calls), self.table)

    def state(self) -> dict[str, dict[str, Any]]:
        """``{class: {attribute: value}}`` of the attributes the scorer compares, as plain data."""
        with _MPMATH_LOCK if "MathAPI" in self.instances else _NO_LOCK:
            return {name: plain(instance.public_state()) for name, instance in self.instances.items()}

    # ------------------------------------------------------------------ turn protocol

    def _require_play(self) -> _Play:
        if self._play is None:
            raise EpisodeError("this episode was built by Episode.create; use Episode.from_entry to play turns")
        return self._play

    @property
    def id(self) -> str:
        return self._require_play().entry["id"]

    @property
    def turn(self) -> int:
        """The current turn's index (the last turn once the episode is done)."""
        return self._require_play().turn

    @property
    def turn_count(self) -> int:
        return len(self._require_play().ground_truth)

    @property
    def turn_over(self) -> bool:
        """True once the current turn ended: a step decoded to no call (the model's text
        reply) or did not decode, or the step limit was hit. Call :meth:`next_turn`."""
        return self._require_play().turn_over

    @property
    def done(self) -> bool:
        """True after the last turn ended, or after a force-termination."""
        return self._require_play().done

    @property
    def force_terminated(self) -> bool:
        """True when a turn exceeded :data:`MAXIMUM_STEP_LIMIT` steps."""
        return self._require_play().force_terminated

    def messages(self, turn: int | None = None, *, mode: str = "fc") -> list[dict]:
        """The user messages of ``turn`` (default: the current one), as BFCL inference
        sends them in ``mode`` ``"fc"`` or ``"prompting"`` (see :func:`turn_messages`)."""
        play = self._require_play()
        return turn_messages(play.entry, play.missed, self._turn_index(turn), mode)

    def tools(self, turn: int | None = None) -> list[dict]:
        """The tool docs visible at ``turn`` (default: the current one); a copy."""
        play = self._require_play()
        return visible_tools(play.docs, play.missed, self._turn_index(turn))

    def _turn_index(self, turn: int | None) -> int:
        play = self._require_play()
        if turn is None:
            return play.turn
        if not isinstance(turn, int) or not 0 <= turn < len(play.ground_truth):
            raise IndexError(f"turn must be 0..{len(play.ground_truth) - 1}, not {turn!r}")
        return turn

    def step(self, calls: Any, *, decoder: str | None = None) -> list[str]:
        """Run one model step of the current turn; return one result string per call.

        ``calls``: FC calls (``[{name: arguments}]``, arguments a JSON object or its
        text; decoded like a result file's FC steps) or call text (a ``str`` such as
        ``"[cd(folder='x'), ls()]"``, or a list of ``str`` of one call each; decoded like
        a prompting model's steps). ``decoder`` forces one of ``checker.decoders.DECODERS``.

        As in BFCL inference, a step that decodes to no call (e.g. ``[]`` or plain text)
        or does not decode ends the turn and returns ``[]``; and the step that takes the
        turn past :data:`MAXIMUM_STEP_LIMIT` runs, then force-terminates the episode.
        Calls of held-out tools run even before their turn, as in BFCL.
        """
        from bfcl_safe.checker.decoders import DecodeError, decode_step
        from bfcl_safe.checker.verdict import is_empty_step

        play = self._require_play()
        if play.done:
            raise EpisodeError(f"{self.id}: the episode is over")
        if play.turn_over:
            raise EpisodeError(f"{self.id}: turn {play.turn} is over; call next_turn()")
        raw, decoder = _as_step(calls, decoder)
        play.raw[play.turn].append(copy.deepcopy(raw))
        try:
            decoded = decode_step(raw, decoder)
        except DecodeError:
            play.turn_over = True
            return []
        if is_empty_step(decoded):
            play.turn_over = True
            return []
        results = self.run(decoded)
        play.decoded[play.turn].append(decoded)
        play.results[play.turn].append(results)
        play.all_results.extend(results)
        play.steps_in_turn += 1
        if play.steps_in_turn > MAXIMUM_STEP_LIMIT:
            play.force_terminated = True
            play.turn_over = True
            play.done = True
            if play.turn == len(play.ground_truth) - 1:
                # Cut short in its last turn, the result still has every turn: scored as usual.
                self._close_turn()
        return list(results)

    def next_turn(self) -> bool:
        """End the current turn (its checks become final) and start the next one.
        False when there is none: the episode is done."""
        play = self._require_play()
        if play.done:
            return False
        self._close_turn()
        if play.turn + 1 >= len(play.ground_truth):
            play.done = True
            play.turn_over = True
            return False
        play.turn += 1
        play.turn_over = False
        play.steps_in_turn = 0
        play.raw.append([])
        play.decoded.append([])
        play.results.append([])
        return True

    def _close_turn(self) -> None:
        play = self._require_play()
        if play.closed > play.turn:
            return
        if play.failure is None:
            failure = self._check(play.turn)
            if failure is not None:
                play.failure, play.failure_turn = failure, play.turn
        play.closed = play.turn + 1

    def _check(self, turn: int) -> dict | None:
        """The scorer's checks of ``turn`` against the ground truth, the model's state and
        results as they are now."""
        from bfcl_safe.checker.verdict import turn_failure

        play = self._require_play()
        while len(play.truth_results) <= turn:
            play.truth_results.append(play.truth.run(play.ground_truth[len(play.truth_results)]))
        execution_results = [{"model": [list(r) for r in play.results[i]], "ground_truth": list(play.truth_results[i])}
                             for i in range(turn + 1)]
        with _MPMATH_LOCK if "MathAPI" in self.instances else _NO_LOCK:
            return turn_failure(turn, play.decoded[turn], play.ground_truth[turn], self, play.truth,
                                play.truth_results[turn], play.all_results, execution_results)

    def check_turn(self) -> dict:
        """The verdict so far, as plain data: the scorer's checks of every turn up to the
        current one (the current one as it stands now, even if unfinished).

        ``{"valid": True, "turns_passed": n, "first_failing_turn": None}``, or
        ``{"valid": False, "error_type", "error_message", "details", "first_failing_turn",
        "turns_passed"}`` with BFCL's error types. After a force-termination before the
        last turn the verdict is ``multi_turn:force_terminated``, as when scoring the
        result (``first_failing_turn`` is then the first turn that failed its checks, or
        the cut-short turn).
        """
        from bfcl_safe.checker.verdict import force_terminated_error

        play = self._require_play()
        last = len(play.ground_truth) - 1
        if play.force_terminated and play.turn < last:
            turn = play.failure_turn if play.failure is not None else play.turn
            return plain({"valid": False, **force_terminated_error(play.turn + 1, len(play.ground_truth)),
                          "first_failing_turn": turn, "turns_passed": turn})
        if play.failure is not None:
            turn = play.failure_turn
            return plain({**play.failure, "first_failing_turn": turn, "turns_passed": turn})
        if play.closed > play.turn:
            return {"valid": True, "turns_passed": play.closed, "first_failing_turn": None}
        failure = self._check(play.turn)
        if failure is not None:
            return plain({**failure, "first_failing_turn": play.turn, "turns_passed": play.turn})
        return {"valid": True, "turns_passed": play.turn + 1, "first_failing_turn": None}

    def result(self) -> list[list[Any]]:
        """The steps given so far, per turn, as a BFCL result file's ``result`` holds them
        (score it with :func:`checker.verdict.evaluate_entry` or ``bfcl-safe evaluate``)."""
        return copy.deepcopy(self._require_play().raw)


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> bool:
        return False


_NO_LOCK = _NoLock()
