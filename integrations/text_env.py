"""BFCL multi-turn entries as text-in / text-out environments, for trainers that hand the
environment the model's raw text (SkyRL, OpenRLHF agent instances, verl's agent loop,
gymnasium-style loops).

::

    from bfcl_safe import Dataset
    from bfcl_safe.integrations.text_env import TextEnv

    env = TextEnv(Dataset.open(None), decoder="prompting", mode="prompting")
    chat, info = env.reset(options={"entry_id": "multi_turn_base_0"})
    while True:
        text = generate(chat)                          # the model's raw reply text
        chat.append({"role": "assistant", "content": text})
        observation, reward, terminated, truncated, info = env.step(text)
        chat += observation                            # tool results, then the next turn's user messages
        if terminated:
            break                                      # reward: the official verdict (1.0 / 0.0)

- :class:`TextEnv` — gymnasium's API (``reset(seed=, options=) -> (observation, info)``,
  ``step(text) -> (observation, reward, terminated, truncated, info)``) without needing
  gymnasium installed. The observation is the list of chat messages the model gets next
  (``observation="text"``: their contents joined by blank lines).
- :class:`BfclSkyRLEnv` — a ``skyrl_gym`` ``BaseTextEnv`` (``pip install
  'bfcl-safe[skyrl]'``): ``init(prompt)`` and ``step(action: str)`` returning
  ``observations`` (messages), ``reward``, ``done``, ``metadata``;
  :func:`register_skyrl` registers it as ``bfcl_multi_turn`` for ``skyrl_gym.make``.
- :class:`Player` — what both use: one :class:`~bfcl_safe.checker.play.Episode` driven a
  model step at a time (also used by ``bfcl-safe serve``).

Each step is ``Episode.step(text, decoder=...)``: ``decoder`` is the name of the model
handler's decoder (``checker.decoders.DECODERS``) that reads the text, exactly as
``bfcl-safe evaluate`` reads that model's result files; a text that decodes to no call, or
does not decode, ends the turn, as in BFCL inference. Which decoder fits which chat
template is in the README ("Text-action environments").

``mode`` is how the chat is set up, as BFCL's inference does it: ``"prompting"`` starts
with BFCL's system prompt holding the tool docs (held-out docs are announced in the user
message of their turn); ``"fc"`` sends the user messages only, the tools going through the
chat template (:meth:`TextEnv.tools`: the OpenAI tools list of the current turn).
``results`` is how tool results come back: ``"prompting"`` — BFCL's prompting text (one
``user`` message holding the ``repr()`` of the results, as BFCL's prompting handlers send
it); ``"tool"`` — one ``{"role": "tool", "name": ..., "content": result}`` message per
call, for chat templates with a tool role; None — as BFCL does for the step's kind.

Rewards come when the episode ends: the official verdict of the steps played (1.0/0.0:
what ``bfcl-safe evaluate`` gives :meth:`Player.result`), or with
``partial_credit=True`` what ``evaluate --partial-credit`` counts; 0.0 before. Each turn's
own checks (a 0/1 reward per turn) are in ``info["turn_reward"]`` when a turn ends.
"""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

import attrs

from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES
from bfcl_safe.checker.episode import MAXIMUM_STEP_LIMIT
from bfcl_safe.checker.openai_format import inference_docs, prompting_results_message
from bfcl_safe.checker.play import Episode, StepResult, TurnOutcome
from bfcl_safe.checker.verdict import Verdict
from bfcl_safe.interp.errors import BfclSafeError

#: ``mode``: how the chat is set up (see the module docstring).
MODES = ("fc", "prompting")
#: ``results``: how tool results come back (None: as BFCL does for the step's kind).
RESULT_FORMATS = ("prompting", "tool")
#: ``observation`` of :class:`TextEnv`.
OBSERVATIONS = ("messages", "text")


class TextEnvError(BfclSafeError, ValueError):
    """A text environment's argument out of its range; ``name`` is the argument."""

    def __init__(self, name: str, message: str):
        self.name = name
        super().__init__(message[:500])

    def __reduce__(self):
        return (type(self), (self.name, str(self)))


def _choice(name: str, value: Any, allowed: Sequence[Any]) -> Any:
    if not (value is None or isinstance(value, str)) or value not in allowed:
        raise TextEnvError(name, f"{name} must be one of {', '.join(map(repr, allowed))}, not {value!r}"[:300])
    return value


def check_decoder(decoder: Any) -> str:
    """``decoder`` if it names one of ``checker.decoders.DECODERS``; TextEnvError otherwise."""
    from bfcl_safe.checker.decoders import DECODERS

    if not isinstance(decoder, str) or decoder not in DECODERS:
        raise TextEnvError("decoder", f"unknown decoder {decoder!r}"[:200]
                           + f"; expected one of {', '.join(sorted(DECODERS))}")
    return decoder


def prompting_system_prompt(dataset: Any) -> Any:
    """The prompt templates BFCL's prompting inference uses, read from ``dataset``'s wheel
    as data (:mod:`bfcl_safe.checker.system_prompt`): pass them to :class:`Player` to share
    one read between many episodes."""
    from bfcl_safe.checker.system_prompt import load_prompt_templates

    return load_prompt_templates(dataset)


def summary(verdict: Verdict, episode: Episode, steps: int) -> dict:
    """The verdict as plain data: ``valid``, ``error_type``, ``turns_passed``,
    ``first_failing_turn``, ``turns``, ``force_terminated``, ``steps``."""
    return {
        "id": episode.id,
        "valid": verdict.valid,
        "error_type": None if verdict.error_type is None else verdict.error_type.value,
        "turns_passed": verdict.turns_passed,
        "first_failing_turn": verdict.failing_turn,
        "turns": episode.turn_count,
        "force_terminated": episode.force_terminated,
        "steps": steps,
    }


@attrs.frozen
class Move:
    """What one model step did: ``step`` (the play API's :class:`StepResult`),
    ``messages`` the chat gets next (tool results, then the next turn's user messages
    when a turn ended), ``outcome`` of the turn that ended with it (None when none did),
    ``new_turn`` whether a turn started."""

    step: StepResult
    messages: tuple[dict, ...]
    outcome: TurnOutcome | None
    new_turn: bool


class Player:
    """One episode driven a model step at a time (see the module docstring): ``mode``
    and ``results`` as there; ``templates`` the prompting templates
    (:func:`prompting_system_prompt`; read from ``dataset`` when None and needed)."""

    def __init__(self, episode: Episode, *, mode: str = "fc", results: str | None = None,
                 templates: Any = None, dataset: Any = None):
        self.episode = episode
        self.mode = _choice("mode", mode, MODES)
        self.results = _choice("results", results, (*RESULT_FORMATS, None))
        if self.mode == "prompting" and templates is None:
            if dataset is None:
                raise TextEnvError("templates", "mode='prompting' needs the dataset or its prompt templates")
            templates = prompting_system_prompt(dataset)
        self.templates = templates
        #: Steps given (one per model reply).
        self.steps = 0
        #: The outcome of each turn that ended.
        self.outcomes: list[TurnOutcome] = []

    @property
    def done(self) -> bool:
        return self.episode.done

    def opening(self) -> list[dict]:
        """The first turn's messages (``mode="prompting"``: BFCL's system prompt first)."""
        messages = self.episode.messages(0, mode=self.mode)
        if self.mode == "prompting":
            from bfcl_safe.checker.system_prompt import system_prompt, with_system_prompt

            docs, _ = inference_docs(self.episode.prompt)
            messages = with_system_prompt(messages, system_prompt(self.templates, docs))
        return messages

    def tools(self) -> list[dict]:
        """The OpenAI Chat Completions tools list BFCL sends at the current turn."""
        return self.episode.tools(format="openai")

    def play(self, step_input: Any, decoder: str | None = None) -> Move:
        """One model step (``Episode.step(step_input, decoder=decoder)``) and what follows it."""
        step = self.episode.step(step_input, decoder=decoder)
        self.steps += 1
        messages = self._result_messages(step)
        outcome = None
        new_turn = False
        if step.turn_over:
            outcome = self.episode.end_turn()
            self.outcomes.append(outcome)
            if not self.episode.done:
                messages.extend(self.episode.messages(mode=self.mode))
                new_turn = True
        return Move(step, tuple(messages), outcome, new_turn)

    def _result_messages(self, step: StepResult) -> list[dict]:
        if not step.calls:
            return []
        fc_step = any(message.get("role") == "tool" for message in step.messages) or not step.messages
        if self.results is None or (self.results == "tool" and fc_step):
            return [dict(message) for message in step.messages]
        if self.results == "prompting":
            return [prompting_results_message([c.result for c in step.calls], [c.call for c in step.calls])]
        return [{"role": "tool", "name": call.call.split("(", 1)[0], "content": call.result} for call in step.calls]

    def verdict(self) -> Verdict:
        """The official verdict of the steps played so far."""
        return self.episode.check_turn()

    def reward(self, partial_credit: bool = False) -> float:
        """1.0 when the official verdict passes; else 0.0, or with ``partial_credit``
        ``turns_passed / turns``."""
        verdict = self.verdict()
        if verdict.valid:
            return 1.0
        return verdict.turns_passed / self.episode.turn_count if partial_credit else 0.0

    def summary(self) -> dict:
        return summary(self.verdict(), self.episode, self.steps)

    def result(self) -> list[list[Any]]:
        """The steps played, as a BFCL result file's ``result`` holds them."""
        return self.episode.result()


def pick_entry(dataset: Any, *, entry_id: Any = None, category: Any = None, index: Any = None,
               seed: Any = None, categories: Sequence[str] | None = None) -> str:
    """The id of the entry to play: ``entry_id``; else entry ``index`` of ``category``;
    else one drawn with ``random.Random(seed)`` from ``category`` (or from
    ``categories``, default all four). TextEnvError for anything out of range."""
    if entry_id is not None:
        if not isinstance(entry_id, str) or len(entry_id) > 200:
            raise TextEnvError("entry_id", f"entry_id must be an entry id (str), not {type(entry_id).__name__}")
        return entry_id
    if category is not None:
        _choice("category", category, MULTI_TURN_CATEGORIES)
    pool = [category] if category is not None else list(categories or MULTI_TURN_CATEGORIES)
    ids = [entry_id for name in pool for entry_id in dataset.ids(name)]
    if index is not None:
        if type(index) is not int or not 0 <= index < len(ids):
            raise TextEnvError("index", f"index must be an int in 0..{len(ids) - 1}, not {index!r}"[:200])
        return ids[index]
    if seed is not None and (type(seed) is not int or seed < 0):
        raise TextEnvError("seed", f"seed must be a non-negative int, not {seed!r}"[:200])
    return random.Random(seed).choice(ids)


# --------------------------------------------------------------------------- gymnasium-style


class TextEnv:
    """Gymnasium's API over BFCL multi-turn entries, the action being the model's raw text
    (see the module docstring). ``categories`` the entries :meth:`reset` draws from
    (``options`` names one otherwise); ``owner`` as in :meth:`Episode.from_entry`."""

    def __init__(self, dataset: Any, *, decoder: str = "prompting", mode: str = "prompting",
                 results: str | None = None, partial_credit: bool = False, observation: str = "messages",
                 categories: Sequence[str] | None = None, owner: str | None = None):
        self.dataset = dataset
        self.decoder = check_decoder(decoder)
        self.mode = _choice("mode", mode, MODES)
        self.results = _choice("results", results, (*RESULT_FORMATS, None))
        self.observation = _choice("observation", observation, OBSERVATIONS)
        for name in categories or ():
            _choice("categories", name, MULTI_TURN_CATEGORIES)
        self.categories = list(categories or MULTI_TURN_CATEGORIES)
        self.partial_credit = bool(partial_credit)
        self.owner = owner
        self.templates = prompting_system_prompt(dataset) if self.mode == "prompting" else None
        self.player: Player | None = None

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None) -> tuple[Any, dict]:
        """A new episode: ``options`` may hold ``entry_id``, or ``category`` and ``index``;
        otherwise one entry of ``categories`` drawn with ``seed``. Returns the first
        observation and ``info`` (``entry_id``, ``turn``, ``turns``, ``tools``)."""
        options = dict(options or {})
        unknown = sorted(set(options) - {"entry_id", "category", "index"})
        if unknown:
            raise TextEnvError("options", f"unknown options {unknown}; expected entry_id, category, index"[:300])
        entry_id = pick_entry(self.dataset, seed=seed, categories=self.categories, **options)
        episode = Episode.from_entry(entry_id, self.dataset, owner=self.owner)
        self.player = Player(episode, mode=self.mode, results=self.results, templates=self.templates)
        info = {"entry_id": entry_id, "turn": 0, "turns": episode.turn_count, "tools": self.player.tools()}
        return self._shown(self.player.opening()), info

    def tools(self) -> list[dict]:
        """The OpenAI tools list of the current turn (for a chat template's ``tools``)."""
        return self._require().tools()

    def step(self, action: str) -> tuple[Any, float, bool, bool, dict]:
        """Play the model's reply text: ``(observation, reward, terminated, truncated,
        info)``. ``terminated`` once the episode ended (BFCL's force-termination
        included); ``truncated`` is always False (BFCL's limits are the episode's own)."""
        player = self._require()
        if not isinstance(action, str):
            raise TextEnvError("action", f"the action is the model's reply text (str), not {type(action).__name__}")
        move = player.play(action, self.decoder)
        info: dict[str, Any] = {"entry_id": player.episode.id, "turn": move.step.turn,
                                "turn_ended": None if move.step.ended is None else move.step.ended.value,
                                "decode_error": move.step.decode_error,
                                "calls": [{"call": c.call, "result": c.result} for c in move.step.calls]}
        if move.outcome is not None:
            info["turn_reward"] = move.outcome.reward
        if move.new_turn:
            info["tools"] = player.tools()
        done = player.done
        reward = player.reward(self.partial_credit) if done else 0.0
        if done:
            info["verdict"] = player.summary()
        return self._shown(list(move.messages)), reward, done, False, info

    def result(self) -> list[list[Any]]:
        """The steps played, as a BFCL result file holds them (``bfcl-safe evaluate`` input)."""
        return self._require().result()

    def _require(self) -> Player:
        if self.player is None:
            raise TextEnvError("reset", "call reset() first")
        return self.player

    def _shown(self, messages: list[dict]) -> Any:
        if self.observation == "text":
            return "\n\n".join(str(message.get("content", "")) for message in messages)
        return messages


# --------------------------------------------------------------------------- SkyRL

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv as _BaseTextEnv
    from skyrl_gym.envs.base_text_env import BaseTextEnvStepOutput
except ImportError:  # pragma: no cover - only without the extra
    _BaseTextEnv = None


def _config_get(config: Any, key: str, default: Any = None) -> Any:
    if config is None:
        return default
    if isinstance(config, Mapping):
        return config.get(key, default)
    return getattr(config, key, default)


def _entry_of(extras: Mapping[str, Any]) -> Any:
    """The entry id a SkyRL dataset row names: ``extras["entry_id"]``, or ``id`` inside
    ``extras["extra_info"]``."""
    if "entry_id" in extras:
        return extras["entry_id"]
    extra_info = extras.get("extra_info")
    if isinstance(extra_info, Mapping) and "id" in extra_info:
        return extra_info["id"]
    raise TextEnvError("extras", "extras must name the entry: {'entry_id': ...} or {'extra_info': {'id': ...}}")


if _BaseTextEnv is not None:

    class BfclSkyRLEnv(_BaseTextEnv):
        """One BFCL multi-turn entry as a SkyRL text environment (see the module
        docstring). ``extras`` (the dataset row) names the entry (``entry_id``, or
        ``extra_info.id``); ``env_config`` may hold ``decoder``, ``mode``, ``results``,
        ``partial_credit``, ``owner`` and ``data`` (a bfcl-eval wheel or folder, when
        ``dataset`` is not given)."""

        def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None, *,
                     dataset: Any = None, templates: Any = None):
            super().__init__()
            from bfcl_safe.checker.dataset import Dataset

            extras = extras or {}
            if not isinstance(extras, Mapping):
                raise TextEnvError("extras", f"extras must be a mapping, not {type(extras).__name__}")
            self.dataset = dataset if dataset is not None else Dataset.open(_config_get(env_config, "data"))
            self.decoder = check_decoder(_config_get(env_config, "decoder", "prompting"))
            self.partial_credit = bool(_config_get(env_config, "partial_credit", False))
            mode = _config_get(env_config, "mode", "prompting")
            episode = Episode.from_entry(pick_entry(self.dataset, entry_id=_entry_of(extras)), self.dataset,
                                         owner=_config_get(env_config, "owner"))
            self.player = Player(episode, mode=mode, results=_config_get(env_config, "results"),
                                 templates=templates, dataset=self.dataset)
            # SkyRL's loops read max_turns: BFCL's own bound on model steps for this entry.
            self.max_turns = episode.turn_count * (MAXIMUM_STEP_LIMIT + 1)

        def init(self, prompt: Any = None) -> tuple[list[dict], dict]:
            """The first turn's messages (the dataset row's ``prompt`` is replaced by them:
            BFCL decides what the model sees) and ``{"entry_id", "tools"}``."""
            return self.player.opening(), {"entry_id": self.player.episode.id, "tools": self.player.tools()}

        def step(self, action: str) -> BaseTextEnvStepOutput:
            if not isinstance(action, str):
                raise TextEnvError("action", f"the action is the model's reply text (str), not {type(action).__name__}")
            self.turns += 1
            move = self.player.play(action, self.decoder)
            done = self.player.done
            metadata: dict[str, Any] = {
                "turn": move.step.turn, "decode_error": move.step.decode_error,
                "turn_ended": None if move.step.ended is None else move.step.ended.value}
            if move.outcome is not None:
                metadata["turn_reward"] = move.outcome.reward
            if done:
                metadata["verdict"] = self.player.summary()
            return BaseTextEnvStepOutput(observations=list(move.messages),
                                         reward=self.player.reward(self.partial_credit) if done else 0.0,
                                         done=done, metadata=metadata, postprocessed_action=None)

        def get_metrics(self) -> dict[str, Any]:
            verdict = self.player.summary()
            return {"valid": 1.0 if verdict["valid"] else 0.0, "turns_passed": float(verdict["turns_passed"]),
                    "turns": float(verdict["turns"]), "force_terminated": 1.0 if verdict["force_terminated"] else 0.0,
                    "steps": float(self.player.steps)}

    def register_skyrl(env_id: str = "bfcl_multi_turn", *, dataset: Any = None, data: str | None = None) -> str:
        """Register :class:`BfclSkyRLEnv` in ``skyrl_gym``'s registry as ``env_id`` (its
        entry point is the class itself, bound to one dataset opened now), for
        ``skyrl_gym.make(env_id, env_config=..., extras=...)``. Returns ``env_id``."""
        import skyrl_gym

        from bfcl_safe.checker.dataset import Dataset

        bound = dataset if dataset is not None else Dataset.open(data)
        templates = prompting_system_prompt(bound)

        def make(env_config: Any = None, extras: Mapping[str, Any] | None = None) -> BfclSkyRLEnv:
            return BfclSkyRLEnv(env_config, extras, dataset=bound, templates=templates)

        skyrl_gym.register(id=env_id, entry_point=make)
        return env_id


def __getattr__(name: str) -> Any:
    if name in ("BfclSkyRLEnv", "register_skyrl"):
        from bfcl_safe.integrations import MissingExtra

        raise MissingExtra("skyrl", "skyrl-gym>=0.4")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["MODES", "Move", "OBSERVATIONS", "Player", "RESULT_FORMATS", "TextEnv", "TextEnvError", "check_decoder",
           "pick_entry", "prompting_system_prompt", "summary"]
