"""The verifiers 0.4 environment (bfcl_safe.integrations.verifiers), played offline through
verifiers' own loop: ``Env.serving()`` and ``Env.run_episode`` (the env's ``run`` sending
user turns with ``interaction.turn()``, the rollout, its interception server forwarding
every model call to ``vf.EvalClientConfig``'s endpoint, the task's scoring), against the
scripted OpenAI-compatible server of tests/scripted_server.py on 127.0.0.1.

Ground truth gets reward 1 and the valid verdict of ``bfcl-safe evaluate`` (a share of each
category; all 800 with ``BFCL_SAFE_FULL=1``); mutated scripts get the reward, metrics and
result ``evaluate`` gives the same steps; malformed replies end in a documented failure."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from typing import Any, Callable

import attrs
import pytest
import verifiers.v1 as vf  # the verifiers extra is in the test extra: no skip

from bfcl_safe.integrations.verifiers import REPLY_REFUSED, load_environment
from tests.checker_support import CATEGORIES, dataset, every, wheel
from tests.integration_policies import DONE, MODEL, Player, evaluate_verdict, reference_error_type, result_of, scripts
from tests.scripted_server import EntryScript, Reply, ScriptedServer, completion, error_body

#: Episodes in flight at once (the scripted server answers each request on its own thread).
CONCURRENCY = 8


def message_of(reply: tuple[str, Any], number: int) -> dict:
    kind, value = reply
    if kind == "text":
        return {"role": "assistant", "content": value}
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{number}_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(value)]}


class ScriptResponder:
    """Answers each conversation with the next reply of its entry's script (one script per
    entry), found from the conversation's user messages."""

    def __init__(self, table: dict[str, list], reply_to_message: Callable[[Any, int], dict] = message_of):
        self.player = Player(table)
        self.finder = EntryScript(dataset(), list(table), "fc", lambda view: {})
        self.reply_to_message = reply_to_message

    def __call__(self, request: dict) -> Reply:
        entries = {view.entry_id for view in self.finder.views(request)}
        if len(entries) != 1:
            return Reply(599, error_body(599, f"no single scripted entry for this conversation: {sorted(entries)}"))
        (entry_id,) = entries
        reply = self.player.next(entry_id)
        message = self.reply_to_message(reply, len(self.player.sent[entry_id]))
        return message if isinstance(message, Reply) else Reply(200, completion(request, message))


class Played:
    """What the scripted server saw over the rounds of one ``play``: ``player.sent`` (the
    replies sent, per entry), ``requests`` and, per request, ``views`` (entry id, turn)."""

    def __init__(self) -> None:
        self.player = Player({})
        self.requests: list[dict] = []
        self.views: list[tuple[str, int]] = []


def apart(table: dict[str, Any]) -> list[dict[str, Any]]:
    """``table`` split so that no two entries of a group open with the same user messages
    (the scripted server tells conversations apart by their user messages only)."""
    groups: list[tuple[set, dict]] = []
    for entry_id, value in table.items():
        opening = json.dumps(dataset().entry(entry_id)["question"][0])
        for openings, group in groups:
            if opening not in openings:
                openings.add(opening)
                group[entry_id] = value
                break
        else:
            groups.append(({opening}, {entry_id: value}))
    return [group for _, group in groups]


def play(table: dict[str, list], **env_args: Any) -> tuple[dict[str, Any], Played]:
    """One episode per entry of ``table`` through verifiers' loop; ``({entry id: trace}, Played)``."""
    env = load_environment(ids=list(table), data=str(wheel()), owner=MODEL,
                           categories=sorted({entry_id.rsplit("_", 1)[0] for entry_id in table}), **env_args)
    tasks = {task.data.entry_id: task for task in env.taskset}
    assert set(tasks) == set(table)
    traces: dict[str, Any] = {}
    played = Played()
    for group in apart(table):
        responder = ScriptResponder(group)
        with ScriptedServer(responder) as server:
            ctx = vf.ModelContext(client=vf.EvalClientConfig(base_url=server.base_url,
                                                             api_key_var="BFCL_SAFE_NO_KEY"), model="scripted")

            async def run_all(group: dict[str, Any] = group, ctx: vf.ModelContext = ctx) -> dict[str, Any]:
                gate = asyncio.Semaphore(CONCURRENCY)

                async def one(entry_id: str) -> tuple[str, Any]:
                    async with gate:
                        episode = await env.run_episode(tasks[entry_id], ctx)
                    assert episode.errors == [], episode.errors
                    (trace,) = episode.traces
                    return entry_id, trace

                async with env.serving():
                    return dict(await asyncio.gather(*(one(entry_id) for entry_id in group)))

            traces.update(asyncio.run(run_all()))
            played.player.sent.update(responder.player.sent)
            for request in server.requests:
                played.requests.append(request)
                played.views.append(next((v.entry_id, v.turn) for v in responder.finder.views(request)))
    return traces, played


def rounds(items: list[tuple[str, str, list]]) -> list[dict[str, tuple[str, list]]]:
    """Scripts grouped so that each entry appears at most once per group (one live episode
    per entry: the scripted server tells conversations apart by entry)."""
    out: list[dict] = []
    for entry_id, kind, replies in items:
        for group in out:
            if entry_id not in group:
                group[entry_id] = (kind, replies)
                break
        else:
            out.append({entry_id: (kind, replies)})
    return out


@pytest.mark.parametrize("category", CATEGORIES)
def test_ground_truth_episodes_get_reward_one_and_equal_evaluate(category):
    table = {entry_id: replies for i, (entry_id, _, replies) in enumerate(scripts([category], mutants=False))
             if i % every(5) == 0}  # BFCL_SAFE_FULL=1: all 200
    traces, responder = play(table)
    assert len(traces) == 200 // every(5)
    disagreements = []
    for entry_id, trace in traces.items():
        sent = responder.player.sent[entry_id]
        verdict = evaluate_verdict(entry_id, result_of(sent))
        summary = trace.state.summary
        if (trace.reward, trace.metrics["valid"], verdict["valid"], summary["valid"]) != (1.0, 1.0, True, True) \
                or trace.state.result != result_of(sent):
            disagreements.append((entry_id, trace.reward, summary, verdict))
    assert disagreements == []
    # The tools offered at each call are BFCL's OpenAI tools for that turn (held-out ones from their turn on).
    from bfcl_safe.checker.openai_format import tools_for_turn

    for request, (entry_id, turn) in list(zip(responder.requests, responder.views))[::7]:
        assert request["tools"] == tools_for_turn(dataset().prompt_entry(entry_id), turn)


@pytest.mark.parametrize("category", CATEGORIES)
def test_mutated_episodes_reward_equals_evaluate_and_the_reference(category):
    chosen = [item for i, item in enumerate(scripts([category], ground_truth=False)) if i % (6 * every(5)) == 0]
    outcomes: Counter = Counter()
    disagreements = []
    played = 0
    for group in rounds(chosen):
        partial = played % 2 == 1
        traces, responder = play({entry_id: replies for entry_id, (_, replies) in group.items()},
                                 partial_credit=partial)
        for entry_id, trace in traces.items():
            result = result_of(responder.player.sent[entry_id])
            verdict = evaluate_verdict(entry_id, result)
            turns = len(dataset().ground_truth_for(entry_id))
            outcomes[verdict["error_type"]] += 1
            want_reward = 1.0 if verdict["valid"] else (verdict["turns_passed"] / turns if partial else 0.0)
            got = (trace.reward, trace.metrics["turns_passed"], trace.state.summary["error_type"], trace.state.result)
            want = (want_reward, float(verdict["turns_passed"]), verdict["error_type"], result)
            if got != want:
                disagreements.append((entry_id, group[entry_id][0], got[:3], want[:3]))
            if played % 4 == 0 and verdict["error_type"] != reference_error_type(entry_id, result):
                disagreements.append((entry_id, "reference", verdict["error_type"]))
            played += 1
    print(f"{category}: {played} mutated episodes; evaluate verdicts {dict(outcomes)}")
    assert played == len(chosen) >= 200 // every(5)
    assert outcomes["multi_turn:force_terminated"] > 0 and None in outcomes and len(outcomes) >= 4
    assert disagreements == []


def test_force_termination_ends_the_episode_at_bfcls_step_limit():
    script = next(replies for entry_id, kind, replies in scripts(["multi_turn_base"])
                  if entry_id == "multi_turn_base_0" and kind == "endless")
    traces, responder = play({"multi_turn_base_0": script})
    trace = traces["multi_turn_base_0"]
    assert len(responder.player.sent["multi_turn_base_0"]) == 21  # the 21st step ran, then BFCL force-quits
    assert trace.reward == 0.0 and trace.metrics["force_terminated"] == 1.0 and trace.metrics["steps"] == 21.0
    assert trace.state.summary["error_type"] == "multi_turn:force_terminated" == \
        evaluate_verdict("multi_turn_base_0", result_of(responder.player.sent["multi_turn_base_0"]))["error_type"]


def test_miss_func_tools_grow_when_the_held_out_turn_starts():
    entry_id = "multi_turn_miss_func_0"
    script = next(replies for e, kind, replies in scripts(["multi_turn_miss_func"], mutants=False) if e == entry_id)
    traces, responder = play({entry_id: script})
    counts = [len(request["tools"]) for request in responder.requests]
    assert counts == sorted(counts) and counts[0] < counts[-1] and traces[entry_id].reward == 1.0


MALFORMED = {
    "text-part-not-a-string": {"role": "assistant", "content": [{"type": "text", "text": 5}]},
    "call-without-arguments": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ls"}}]},
    "function-is-a-string": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": "ls"}]},
    "id-is-none": {"role": "assistant", "content": None, "tool_calls": [
        {"id": None, "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
    "arguments-an-object": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": {"a": 1}}}]},
    "arguments-not-json": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{not json"}}]},
    "name-not-a-string": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": 7, "arguments": "{}"}}]},
    "tool-calls-not-a-list": {"role": "assistant", "content": "x", "tool_calls": {"a": 1}},
    "deep-arguments": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "[" * 5000 + "]" * 5000}}]},
    "no-message": Reply(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                             "choices": [{"index": 0, "finish_reason": "stop"}]}),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_replies_end_in_a_documented_failure(name):
    """Each malformed reply is the first step of multi_turn_base_1, then the ground truth
    follows: the episode either ran it as BFCL's handler would (the step falls back to
    text, which ends the turn) and scored what evaluate scores, or verifiers refused the
    answer (the trace's error, a ProviderError), never an exception of bfcl-safe's."""
    entry_id = "multi_turn_base_1"
    script = next(replies for e, kind, replies in scripts(["multi_turn_base"], mutants=False) if e == entry_id)
    bad = MALFORMED[name]

    def reply_to_message(reply: Any, number: int) -> Any:
        return bad if number == 1 else message_of(reply, number)

    table = {entry_id: [("bad", None)] + script}
    responder = ScriptResponder(table, reply_to_message)
    env = load_environment(ids=[entry_id], data=str(wheel()), owner=MODEL, categories="multi_turn_base")
    (task,) = list(env.taskset)
    with ScriptedServer(responder) as server:
        ctx = vf.ModelContext(client=vf.EvalClientConfig(base_url=server.base_url, api_key_var="BFCL_SAFE_NO_KEY"),
                              model="scripted")

        async def run() -> Any:
            async with env.serving():
                return await env.run_episode(task, ctx)

        episode = asyncio.run(run())
    (trace,) = episode.traces
    errors = [*episode.errors, *trace.errors]
    assert all("bfcl_safe" not in (error.traceback or "") for error in errors), errors
    if errors:  # verifiers refused the upstream answer: the rollout failed in verifiers
        assert {error.type for error in errors} <= {"ProviderError", "HarnessError"}, errors
        assert trace.reward == 0.0
        return
    summary = trace.state.summary
    if summary["error_type"] == REPLY_REFUSED:
        assert trace.reward == 0.0 and trace.metrics["refused"] == 1.0
        return
    result = trace.state.result
    assert result[0][0] != script[0]  # the malformed step is kept as BFCL stores it
    verdict = evaluate_verdict(entry_id, result)
    assert (summary["valid"], summary["error_type"], trace.reward) == \
        (verdict["valid"], verdict["error_type"], 1.0 if verdict["valid"] else 0.0)


@pytest.mark.parametrize(("arguments", "message"), [
    ({"categories": ["simple"]}, "unknown categories"),
    ({"categories": "multi_turn_base", "ids": ["nope"]}, "no entries selected"),
    ({"categories": "multi_turn_base", "decoder": "nope"}, "unknown decoder"),
], ids=["unknown-category", "no-entries", "unknown-decoder"])
def test_bad_arguments_say_what(arguments, message):
    with pytest.raises(ValueError, match=message):
        load_environment(data=str(wheel()), **arguments)


def test_limit_and_ids_select_tasks():
    env = load_environment(categories=["multi_turn_long_context", "multi_turn_base"], limit=3, data=str(wheel()))
    assert [task.data.entry_id for task in env.taskset] == [f"multi_turn_long_context_{i}" for i in range(3)]
    assert [task.key for task in env.taskset][:1] == ["multi_turn_long_context_0"]


def test_missing_module_is_named():
    code = ("import sys; sys.modules['verifiers.v1'] = None\n"
            "try:\n    import bfcl_safe.integrations.verifiers\n"
            "except ImportError as exc:\n    print(type(exc).__name__, exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("MissingExtra ") and "cannot import verifiers.v1" in out.stdout, out
    assert "pip install 'bfcl-safe[verifiers]'" in out.stdout and out.stderr == ""


def test_a_text_reply_ends_the_turn_and_the_next_user_turn_follows():
    entry_id = "multi_turn_base_1"
    turns = len(dataset().ground_truth_for(entry_id))
    traces, responder = play({entry_id: [("text", DONE)] * turns})
    trace = traces[entry_id]
    users = [m for m in responder.requests[-1]["messages"] if m["role"] == "user"]
    assert len(responder.requests) == turns and len(users) >= turns
    assert trace.state.result == [[DONE]] * turns and trace.reward == 0.0


def test_the_example_runs_as_written(capsys):
    from examples.verifiers_eval import main
    from tests.scripted_server import truth_policy

    ids = ["multi_turn_base_3", "multi_turn_base_4"]
    with ScriptedServer(EntryScript(dataset(), ids, "fc", truth_policy)) as server:
        assert main(["--model", "scripted", "--base-url", server.base_url, "--api-key-var", "BFCL_SAFE_NO_KEY",
                     "--ids", ",".join(ids), "--data", str(wheel())]) == 0
    assert capsys.readouterr().out.strip().endswith("2 rollouts, mean reward 1.000, 0 failed")


@pytest.mark.parametrize("name", sorted(name for name, bad in MALFORMED.items() if isinstance(bad, dict)))
def test_the_harness_takes_any_json_reply_verifiers_would_pass_on(name):
    """verifiers 0.4 refuses most of MALFORMED before the harness sees it; the harness's own
    step (``_Chat.play``, what a future verifiers or another interception could hand it)
    takes each as BFCL's handler does (the turn ends; arguments given as an object run, as
    a result file's FC step runs them) or refuses it with the episode's documented errors
    only."""
    from bfcl_safe.checker.play import Episode, EpisodeError
    from bfcl_safe.integrations.verifiers import _Chat, assistant_reply

    chat = _Chat(Episode.from_entry("multi_turn_base_1", dataset(), owner=MODEL), None)
    message = assistant_reply({"choices": [{"message": json.loads(json.dumps(MALFORMED[name]))}]})
    try:
        results, following, turn_over = chat.play(message)
    except EpisodeError:
        return
    if turn_over:  # not readable as calls: BFCL's next turn
        assert results == [] and following == chat.episode.messages(1) and name not in ("arguments-an-object",)
    else:  # readable calls ran (their results as tool messages)
        assert [m["role"] for m in results] == ["tool"] and following == [] and name != "arguments-not-json"


@pytest.mark.parametrize("answer", [None, [], {"choices": []}, {"choices": [1]}, {"choices": [{"message": "x"}]}])
def test_an_answer_that_is_no_chat_completion_is_a_harness_error(answer):
    from verifiers.v1.errors import HarnessError

    from bfcl_safe.integrations.verifiers import assistant_reply

    with pytest.raises(HarnessError, match="not a chat completion"):
        assistant_reply(answer)


def test_vf_eval_runs_the_environment_package(tmp_path):
    """verifiers' own CLI (``vf-eval @ environments/bfcl_multi_turn/eval.toml``, its env-server
    pool) finds the package by its id and plays two entries to reward 1."""
    from pathlib import Path

    from tests.scripted_server import truth_policy

    root = Path(__file__).resolve().parent.parent
    ids = ["multi_turn_base_0", "multi_turn_base_1"]
    with ScriptedServer(EntryScript(dataset(), ids, "fc", truth_policy)) as server:
        env = {k: v for k, v in __import__("os").environ.items() if "API_KEY" not in k}
        env["PYTHONPATH"] = str(root / "environments" / "bfcl_multi_turn")
        out = subprocess.run(
            [sys.executable, "-c", "import sys; from verifiers.v1.cli.eval.main import main; main(sys.argv[1:])",
             "@", str(root / "environments" / "bfcl_multi_turn" / "eval.toml"), "--model", "scripted",
             "--client.base-url", server.base_url, "--client.api-key-var", "BFCL_SAFE_NO_KEY",
             "--env.taskset.limit", "2", "--env.taskset.data", str(wheel()), "--no-push", "--no-rich",
             "--output-dir", str(tmp_path)],
            capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    (traces,) = tmp_path.glob("*/traces.jsonl")
    episodes = [json.loads(line) for line in traces.read_text().splitlines()]
    rewards = sorted((episode["task"]["data"]["entry_id"], trace["rewards"]["bfcl_verdict"]["score"])
                     for episode in episodes for trace in episode["traces"])
    assert rewards == [(ids[0], 1.0), (ids[1], 1.0)]


@pytest.mark.parametrize("category", CATEGORIES)
def test_a_model_writing_calls_as_text_is_read_with_its_decoder(category):
    """``decoder="prompting"``: the tools are sent as for an FC model, the model's Python
    call text is decoded, results come back as one user message; the ground truth as text
    passes, as ``evaluate`` scores the same steps with that decoder."""
    from bfcl_safe.checker.scoring import Context, score_item
    from tests.scripted_server import truth_policy

    ids = [entry["id"] for entry in dataset().entries(category)][:: 25 * every(1)][:8]
    env = load_environment(ids=ids, categories=category, data=str(wheel()), owner=MODEL, decoder="prompting")
    tasks = list(env.taskset)
    def as_text(view: Any) -> dict:  # FC-mode turns, the ground truth written as Python call text
        return truth_policy(attrs.evolve(view, mode="prompting"))

    with ScriptedServer(EntryScript(dataset(), ids, "fc", as_text)) as server:
        ctx = vf.ModelContext(client=vf.EvalClientConfig(base_url=server.base_url, api_key_var="BFCL_SAFE_NO_KEY"),
                              model="scripted")

        async def run() -> list[Any]:
            async with env.serving():
                return list(await asyncio.gather(*(env.run_episode(task, ctx) for task in tasks)))

        episodes = asyncio.run(run())
        requests = list(server.requests)
    assert all(request["tools"] for request in requests)
    assert any(m["role"] == "user" and m["content"].startswith("[{'role': 'tool'")
               for request in requests for m in request["messages"])
    for task, episode in zip(tasks, episodes):
        assert episode.errors == []
        (trace,) = episode.traces
        entry_id = task.data.entry_id
        line = score_item(dataset(), Context(MODEL, category, "prompting"),
                          {"id": entry_id, "result": trace.state.result})
        assert (trace.reward, trace.state.summary["valid"], line.error_type) == (1.0, True, None), entry_id
        assert all(isinstance(step, str) for turn in trace.state.result for step in turn)


def test_a_reply_nested_too_deep_is_refused_with_the_episodes_error():
    """What the harness records as ``bfcl_safe:reply_refused``: the episode refuses the
    step with StepRefused (an EpisodeError), nothing else escapes."""
    from bfcl_safe.checker.play import Episode, StepRefused
    from bfcl_safe.integrations.verifiers import _Chat
    from bfcl_safe.interp.limits import MAX_RESULT_LINE_DEPTH

    deep: Any = "x"
    for _ in range(MAX_RESULT_LINE_DEPTH + 5):
        deep = {"a": deep}
    chat = _Chat(Episode.from_entry("multi_turn_base_1", dataset(), owner=MODEL), None)
    with pytest.raises(StepRefused):
        chat.play({"role": "assistant", "content": None,
                   "tool_calls": [{"id": "c", "type": "function", "function": {"name": "ls", "arguments": deep}}]})
