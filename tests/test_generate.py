"""``bfcl-safe generate``: its pieces against the reference's functions, the command over
real HTTP (a scripted server on 127.0.0.1), API errors, hostile answers, resume.

The whole pipeline against the reference's own inference is in
``tests/test_generate_differential.py``.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bfcl_safe.cli import main
from bfcl_safe.generate.client import RetryPolicy
from bfcl_safe.generate.inference import serializable
from bfcl_safe.checker.system_prompt import (
    PromptTemplateError, load_prompt_templates, parse_prompt_templates, system_prompt, with_system_prompt,
)
from bfcl_safe.generate.result_writer import ResultFileError, ResultWriter, existing_ids, result_path, sort_file
from bfcl_safe.generate.run import GenerateError, plan_run, resolve_model
from tests.checker_support import dataset as load_dataset
from tests.generate_support import (
    first_difference, logged_decoding, result_lines, run_ours, run_reference, without_volatile,
)
from tests.refenv import import_reference
from tests.scripted_server import (
    EntryScript, Reply, ScriptedServer, always_failing, completion, flaky, mixed_policy, slow, text_message,
    tool_calls_message, truth_policy,
)

ROOT = Path(__file__).resolve().parent.parent
BASE = "multi_turn_base"


@pytest.fixture(scope="module")
def dataset():
    return load_dataset()


def truth_server(dataset, mode: str, category: str = BASE) -> ScriptedServer:
    return ScriptedServer(EntryScript(dataset, dataset.ids(category), mode, truth_policy))


# --------------------------------------------------------------------------- the system prompt


SYSTEM_PROMPT_CASES = {
    "base": ("multi_turn_base_0", None),
    "miss_func": ("multi_turn_miss_func_3", None),
    "long_context": ("multi_turn_long_context_7", None),
    "question_with_a_system_message": ("multi_turn_base_1", "Answer briefly."),
}


@pytest.mark.parametrize("entry_id, system", list(SYSTEM_PROMPT_CASES.values()), ids=list(SYSTEM_PROMPT_CASES))
def test_system_prompt_is_the_references(dataset, entry_id, system):
    from bfcl_safe.checker.openai_format import inference_docs

    utils = import_reference("model_handler.utils")
    docs, _ = inference_docs(dataset.prompt_entry(entry_id))
    question = copy.deepcopy(dataset.entry(entry_id)["question"][0])
    if system is not None:
        question.insert(0, {"role": "system", "content": system})
    theirs = utils.system_prompt_pre_processing_chat_model(copy.deepcopy(question), copy.deepcopy(docs), entry_id)
    ours = with_system_prompt(question, system_prompt(load_prompt_templates(dataset), docs))
    assert ours == theirs


def test_prompt_templates_missing_a_name_are_refused():
    with pytest.raises(PromptTemplateError) as caught:
        parse_prompt_templates("OUTPUT_FORMAT_MAPPING = {}\nPARAM_TYPE_MAPPING = {}\n")
    assert caught.value.name == "PROMPT_STYLE_TEMPLATES"


def test_prompt_templates_are_read_as_literals_only():
    source = "import os\nX = os.system('true')\n" + "\n".join(
        f"{name} = {{'a': 'b' + 'c'}}" for name in
        ("OUTPUT_FORMAT_MAPPING", "PARAM_TYPE_MAPPING", "PROMPT_STYLE_TEMPLATES", "PROMPT_TEMPLATE_MAPPING"))
    templates = parse_prompt_templates(source)
    assert "X" not in templates and templates["PARAM_TYPE_MAPPING"] == {"a": "bc"}


# --------------------------------------------------------------------------- decoding, as the log shows it


PROMPTING_STEPS = {
    "calls": "[cd(folder='document'), ls(a=True)]",
    "one_call_no_brackets": "pwd()",
    "backticks": "```\n[ls()]\n```",
    "chat_text": "I have completed the task.",
    "empty": "",
    "unclosed": "[ls(a=True), cd(folder='x'",
    "not_calls": "[1, 2]",
    "name": "hello",
    "set_argument": "ls(a={1, 2})",
    "conditional_argument": "ls(a=b if c else d)",
    "arithmetic_argument": "ls(a=1 + 2)",
    "nested_call": "ls(a=cd(folder='x'))",
    "positional_dropped": "cd('x', folder='y')",
    "none": None,
    "quoted": "'ls()'",
    "empty_dict_argument": "ls(a={})",
    "unhashable_key": "ls(a={[1]: 2})",
    "negated_string": "ls(a=-'x')",
    "negated_name": "ls(a=-x)",
    "attribute_argument": "ls(a=b.c)",
    "name_in_arithmetic": "ls(a=(x + 1) + y)",
    "starred_dict": "ls(a={**b})",
    "element_not_a_call_after_a_call": "[ls(a=b.c), 3]",
    # found by tests/test_generate_properties.py (the reference names such a call "")
    "constant_as_call_name": "[True()]",
}


def _reference_outcome(function, step):
    try:
        return ("ok", function(copy.deepcopy(step)))
    except Exception as exc:  # noqa: BLE001 - the reference's error text is what is compared
        return ("error", str(exc))


def _our_outcome(step, mode):
    return logged_decoding(step, mode)


@pytest.mark.parametrize("step", list(PROMPTING_STEPS.values()), ids=list(PROMPTING_STEPS))
def test_prompting_decoding_and_its_errors_are_the_references(step):
    utils = import_reference("model_handler.utils")
    assert _our_outcome(step, "prompting") == _reference_outcome(utils.default_decode_execute_prompting, step)


FC_STEPS = {
    "calls": [{"cd": '{"folder": "document"}'}, {"ls": '{"a": true}'}],
    "no_arguments": [{"pwd": "{}"}],
    "dict_step": {"ls": "{}"},
    "arguments_as_object": [{"ls": {"a": True}}],
    "text": "I have completed the task.",
    "empty_text": "",
    "empty_list": [],
    "none": None,
    "bad_json": [{"ls": '{"a": '}],
    "json_list": [{"ls": "[1]"}],
    "json_number": [{"ls": "3"}],
    "string_item": ["ls()"],
    "unicode_and_floats": [{"echo": '{"content": "\\u00e9t\\u00e9", "x": 1.5e3}'}],
}


@pytest.mark.parametrize("step", list(FC_STEPS.values()), ids=list(FC_STEPS))
def test_fc_decoding_and_its_errors_are_the_references(step):
    utils = import_reference("model_handler.utils")
    assert _our_outcome(step, "fc") == _reference_outcome(utils.convert_to_function_call, step)


SERIALIZABLE_VALUES = {
    "plain": {"a": [1, 2.5, "x", None, True]},
    "tuple": {"t": (1, 2)},
    "set": {"s": {3}},
    "object": {"o": object.__new__(type("Thing", (), {"__str__": lambda self: "<thing>"}))},
    "nested_object_in_list": [[{"k": {1, 2}.__class__}]],
    "nan": {"n": float("nan")},
}


@pytest.mark.parametrize("value", list(SERIALIZABLE_VALUES.values()), ids=list(SERIALIZABLE_VALUES))
def test_values_are_written_as_the_reference_writes_them(value):
    utils = import_reference("utils")
    assert json.dumps(serializable(value)) == json.dumps(utils.make_json_serializable(value))


# --------------------------------------------------------------------------- model and mode


MODEL_CASES = {
    # name, flag -> (api name, mode) or the error's start
    "registered_fc": ("Qwen/Qwen3-8B-FC", None, ("Qwen/Qwen3-8B", "fc")),
    "registered_prompting": ("Qwen/Qwen3-8B", None, ("Qwen/Qwen3-8B", "prompting")),
    "registered_with_its_own_mode": ("gpt-4o-2024-11-20-FC", "fc", ("gpt-4o-2024-11-20", "fc")),
    "registered_with_the_other_mode": ("Qwen/Qwen3-8B", "fc", "'Qwen/Qwen3-8B' is a prompting model"),
    "unregistered_fc": ("my-model", "fc", ("my-model", "fc")),
    "unregistered_prompting": ("org/my-model", "prompting", ("org/my-model", "prompting")),
    "unregistered_without_mode": ("my-model", None, "'my-model' is not in BFCL's model registry"),
}


@pytest.mark.parametrize("name, mode, expected", list(MODEL_CASES.values()), ids=list(MODEL_CASES))
def test_the_registry_decides_the_mode_of_registered_models(dataset, name, mode, expected):
    if isinstance(expected, str):
        with pytest.raises(GenerateError, match=expected.replace("(", r"\(")):
            resolve_model(dataset, name, mode, 0.001)
    else:
        spec, _registered = resolve_model(dataset, name, mode, 0.001)
        assert (spec.api_name, spec.mode) == expected


# --------------------------------------------------------------------------- result files


def _line(entry_id: str, value: str = "x") -> dict:
    return {"id": entry_id, "result": [[value]]}


def test_lines_are_appended_one_by_one_and_sorted_at_the_end(tmp_path):
    writer = ResultWriter(tmp_path, "m")
    path = result_path(tmp_path, "m", BASE)
    for count, number in enumerate((3, 1, 2), 1):
        writer.write(_line(f"{BASE}_{number}"))
        assert len(path.read_text().splitlines()) == count  # on disk at once
    assert [json.loads(x)["id"] for x in path.read_text().splitlines()] == [f"{BASE}_3", f"{BASE}_1", f"{BASE}_2"]
    writer.finish()
    assert [json.loads(x)["id"] for x in path.read_text().splitlines()] == [f"{BASE}_1", f"{BASE}_2", f"{BASE}_3"]
    assert path.read_text() == "".join(json.dumps(_line(f"{BASE}_{n}")) + "\n" for n in (1, 2, 3))


def test_a_line_cut_short_by_a_kill_is_dropped(tmp_path):
    path = result_path(tmp_path, "m", BASE)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(_line(f"{BASE}_0")) + "\n" + '{"id": "multi_turn_base_1", "res')
    assert existing_ids(path) == {f"{BASE}_0"}
    writer = ResultWriter(tmp_path, "m")
    writer.write(_line(f"{BASE}_2"))
    writer.finish()
    assert [json.loads(x)["id"] for x in path.read_text().splitlines()] == [f"{BASE}_0", f"{BASE}_2"]


def test_update_mode_replaces_a_line_in_place(tmp_path):
    writer = ResultWriter(tmp_path, "m")
    for number in (0, 1, 2):
        writer.write(_line(f"{BASE}_{number}"))
    writer.finish()
    updater = ResultWriter(tmp_path, "m", update=True)
    updater.write(_line(f"{BASE}_1", "new"))
    lines = [json.loads(x) for x in result_path(tmp_path, "m", BASE).read_text().splitlines()]
    assert lines == [_line(f"{BASE}_0"), _line(f"{BASE}_1", "new"), _line(f"{BASE}_2")]


def test_sorting_keeps_the_last_line_of_an_id(tmp_path):
    path = result_path(tmp_path, "m", BASE)
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in (_line(f"{BASE}_10"), _line(f"{BASE}_2", "old"),
                                                              _line(f"{BASE}_2", "new"))))
    assert sort_file(path) == 2
    assert [json.loads(x) for x in path.read_text().splitlines()] == [_line(f"{BASE}_2", "new"), _line(f"{BASE}_10")]


def test_a_corrupt_line_stops_resuming_with_its_place(tmp_path):
    path = result_path(tmp_path, "m", BASE)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(_line(f"{BASE}_0")) + "\nnot json\n")
    with pytest.raises(ResultFileError) as caught:
        existing_ids(path)
    assert (caught.value.path, caught.value.line) == (path, 2)


def test_plan_skips_present_ids_and_overwrite_starts_afresh(dataset, tmp_path):
    writer = ResultWriter(tmp_path, "m")
    writer.write(_line(f"{BASE}_0"))
    writer.finish()
    plan = plan_run(dataset, model="m", mode="fc", categories=[BASE], result_dir=tmp_path)
    assert (len(plan.ids), plan.skipped, plan.ids[0]) == (199, 1, f"{BASE}_1")
    plan = plan_run(dataset, model="m", mode="fc", categories=[BASE], ids=[f"{BASE}_0"], result_dir=tmp_path,
                    allow_overwrite=True)
    assert (plan.ids, plan.update) == ((f"{BASE}_0",), True)
    assert result_path(tmp_path, "m", BASE).exists()
    plan = plan_run(dataset, model="m", mode="fc", categories=[BASE], result_dir=tmp_path, allow_overwrite=True)
    assert (len(plan.ids), plan.update) == (200, False)
    assert not result_path(tmp_path, "m", BASE).exists()


# --------------------------------------------------------------------------- the command


def _generate(runner, dataset, server, tmp_path, *args):
    return runner.invoke(main, ["generate", "--base-url", server.base_url, "--result-dir", str(tmp_path / "result"),
                                "--data", str(dataset.location), *args], catch_exceptions=False)


@pytest.mark.parametrize("mode", ["fc", "prompting"])
def test_generate_then_evaluate_ground_truth_scores_full_marks(runner, dataset, tmp_path, mode):
    ids = f"{BASE}_0,{BASE}_1,{BASE}_2"
    with truth_server(dataset, mode) as server:
        done = _generate(runner, dataset, server, tmp_path, "--model", "my/model", f"--{mode}", "--ids", ids,
                         "--num-threads", "3", "--evaluate", "--score-dir", str(tmp_path / "score"))
        assert done.exit_code == 0, done.output + done.stderr
        assert "3 entries to play, 0 already" in done.stderr
        lines = [json.loads(x) for x in result_path(tmp_path / "result", "my_model", BASE).read_text().splitlines()]
        assert [line["id"] for line in lines] == ids.split(",")
        score = (tmp_path / "score" / "my_model" / "multi_turn" / f"BFCL_v4_{BASE}_score.json").read_text()
        assert json.loads(score.splitlines()[0])["accuracy"] == 1.0
        # Resume: nothing left to play, nothing sent.
        sent = len(server.requests)
        again = _generate(runner, dataset, server, tmp_path, "--model", "my/model", f"--{mode}", "--ids", ids)
        assert again.exit_code == 0 and "0 entries to play, 3 already" in again.stderr
        assert len(server.requests) == sent


COMMAND_ERRORS = {
    "unregistered_without_mode": (["--model", "my-model"], 1, "is not in BFCL's model registry"),
    "registered_with_the_other_mode": (["--model", "Qwen/Qwen3-8B-FC", "--prompting"], 1, "function-calling model"),
    "unknown_id": (["--model", "m", "--fc", "--ids", "multi_turn_base_999"], 1, "no multi-turn entry"),
    "not_a_multi_turn_id": (["--model", "m", "--fc", "--ids", "simple_python_0"], 2, "not a multi-turn entry id"),
    "unknown_category": (["--model", "m", "--fc", "--test-category", "nope"], 2, "unknown test category"),
}


@pytest.mark.parametrize("args, status, message", list(COMMAND_ERRORS.values()), ids=list(COMMAND_ERRORS))
def test_command_errors_are_one_line(runner, dataset, tmp_path, args, status, message):
    with truth_server(dataset, "fc") as server:
        done = _generate(runner, dataset, server, tmp_path, *args)
    assert done.exit_code == status
    assert message in done.stderr
    assert "Traceback" not in done.stderr + done.output
    assert server.requests == []


def test_no_endpoint_is_a_usage_error(runner, dataset, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    done = runner.invoke(main, ["generate", "--model", "m", "--fc", "--data", str(dataset.location)])
    assert done.exit_code == 2 and "--base-url" in done.stderr


# --------------------------------------------------------------------------- transient errors, slow answers


FAULTS = {
    "rate_limited_twice": lambda inner: flaky(inner, 429, 2),
    "server_error_twice": lambda inner: flaky(inner, 500, 2),
    "bad_gateway_once": lambda inner: flaky(inner, 502, 1),
    "slow_answers": lambda inner: slow(inner, 0.2),
}


@pytest.mark.parametrize("fault", list(FAULTS.values()), ids=list(FAULTS))
def test_transient_errors_and_slow_answers_change_nothing(dataset, tmp_path, fault):
    ids = [f"{BASE}_{n}" for n in (4, 5)]
    with truth_server(dataset, "fc") as server:
        clean, _ = run_ours(dataset, server.base_url, "fc", [BASE], ids, tmp_path / "clean")
    script = EntryScript(dataset, dataset.ids(BASE), "fc", truth_policy)
    with ScriptedServer(fault(script)) as server:
        faulty, summary = run_ours(dataset, server.base_url, "fc", [BASE], ids, tmp_path / "faulty")
    assert summary.errors == 0
    a = [without_volatile(x) for x in result_lines(clean, "fc", BASE)]
    b = [without_volatile(x) for x in result_lines(faulty, "fc", BASE)]
    assert a == b


def test_rate_limits_past_the_retries_end_the_entry_with_the_error(dataset, tmp_path):
    with ScriptedServer(always_failing(429)) as server:
        _, summary = run_ours(dataset, server.base_url, "fc", [BASE], [f"{BASE}_0"], tmp_path,
                              retry=RetryPolicy(max_retries=1, rate_limit_retries=2, min_wait=0.001, max_wait=0.002))
        assert len(server.requests) == 2 * 3  # (1 + 1 SDK retry) x (1 + 2 rate-limit retries)
    (line,) = result_lines(tmp_path / "result", "fc", BASE)
    assert summary.errors == 1
    assert line["result"].startswith("Error during inference: Error code: 429 - ")


def test_a_request_timing_out_ends_the_entry_with_the_error(dataset, tmp_path):
    script = EntryScript(dataset, dataset.ids(BASE), "fc", truth_policy)
    with ScriptedServer(slow(script, 1.0)) as server:
        run_ours(dataset, server.base_url, "fc", [BASE], [f"{BASE}_0"], tmp_path,
                 retry=RetryPolicy(max_retries=0, timeout=0.2))
    (line,) = result_lines(tmp_path / "result", "fc", BASE)
    assert line["result"] == "Error during inference: Request timed out."


# API errors the reference meets too: the entry's result is the same text.
def _api_error_policy(view):
    number = int(view.entry_id.rsplit("_", 1)[1])
    if number == 0:
        return Reply(500, {"error": {"message": "boom", "type": "server_error", "param": None, "code": None}},
                     headers={"retry-after-ms": "1"})
    if number == 1:  # no usage: BFCL reads usage.prompt_tokens
        body = completion({"messages": []}, text_message("hi"))
        del body["usage"]
        return Reply(200, body)
    if number == 2:  # no choices
        body = completion({"messages": []}, text_message("hi"))
        body["choices"] = []
        return Reply(200, body)
    if number == 3:  # a 400 (not retried)
        return Reply(400, {"error": {"message": "context too long", "type": "invalid_request_error",
                                     "param": "messages", "code": "context_length_exceeded"}})
    return truth_policy(view)


@pytest.mark.parametrize("mode", ["fc", "prompting"])
def test_api_errors_are_written_as_the_reference_writes_them(dataset, tmp_path, mode):
    ids = [f"{BASE}_{n}" for n in range(5)]
    with ScriptedServer(EntryScript(dataset, dataset.ids(BASE), mode, _api_error_policy)) as server:
        theirs = run_reference(server.base_url, mode, [BASE], ids, tmp_path / "reference", num_threads=2)
        ours, summary = run_ours(dataset, server.base_url, mode, [BASE], ids, tmp_path / "ours", num_threads=2)
    assert summary.errors == 4
    for mine, reference in zip(result_lines(ours, mode, BASE), result_lines(theirs, mode, BASE)):
        assert list(mine) == list(reference)
        assert without_volatile(mine) == without_volatile(reference), first_difference(mine, reference)


@pytest.mark.parametrize("mode", ["fc", "prompting"])
def test_input_log_and_no_state_log_are_the_references(dataset, tmp_path, mode):
    """bfcl's --include-input-log (what was sent, as its handler's repr) and --exclude-state-log."""
    ids = [f"{BASE}_{n}" for n in (2, 11)]
    flags = {"include_input_log": True, "exclude_state_log": True}
    with ScriptedServer(EntryScript(dataset, dataset.ids(BASE), mode, mixed_policy)) as server:
        theirs = run_reference(server.base_url, mode, [BASE], ids, tmp_path / "reference", 2, **flags)
        ours, _ = run_ours(dataset, server.base_url, mode, [BASE], ids, tmp_path / "ours", 2, **flags)
    lines = result_lines(ours, mode, BASE)
    assert all("inference_input" in json.dumps(line["inference_log"]) for line in lines)
    assert all("state_info" not in json.dumps(line["inference_log"]) for line in lines)
    for mine, reference in zip(lines, result_lines(theirs, mode, BASE)):
        assert without_volatile(mine) == without_volatile(reference), first_difference(mine, reference)


# --------------------------------------------------------------------------- hostile answers


def _payloads(canary: Path) -> list[tuple[str, str, object]]:
    """(kind, name or text, arguments) of every payload of the breakout tests."""
    from tests.test_breakout import FC_PAYLOADS, T, TEXT_PAYLOADS

    def fill(value):
        if isinstance(value, str):
            return value.replace(T, str(canary))
        if isinstance(value, dict):
            return {fill(k): fill(v) for k, v in value.items()}
        return value

    out = [("text", fill(text), None) for _id, text, _pattern in TEXT_PAYLOADS]
    out += [("fc", fill(name), fill(arguments)) for _id, name, arguments, _pattern in FC_PAYLOADS]
    return out


def _int_text(value: int) -> str:
    """Digits of an int of any size (``str()`` refuses ints past 4,300 digits)."""
    sign, value, parts = "-" if value < 0 else "", abs(value), []
    while True:
        value, part = divmod(value, 10 ** 1000)
        parts.append(part)
        if not value:
            break
    return sign + str(parts[-1]) + "".join(f"{part:01000d}" for part in reversed(parts[:-1]))


def _json_text(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, dict, list)):
        return json.dumps(value)
    if isinstance(value, int):
        return _int_text(value)
    if isinstance(value, list):
        return "[" + ", ".join(_json_text(item) for item in value) + "]"
    return "{" + ", ".join(f"{json.dumps(str(k))}: {_json_text(v)}" for k, v in value.items()) + "}"


def _python_text(value) -> str:
    return _int_text(value) if isinstance(value, int) and not isinstance(value, bool) else repr(value)


def _hostile_policy(payloads, mode, served: set):
    """Each answer is the next payload, in turn; ``served`` collects the indices sent."""
    counter = itertools.count()
    lock = threading.Lock()

    def policy(view):
        with lock:
            index = next(counter) % len(payloads)
        served.add(index)
        kind, name, arguments = payloads[index]
        if mode == "prompting":
            if kind == "text":
                return text_message(name)
            if isinstance(arguments, dict):
                return text_message(f"{name}({', '.join(f'{k}={_python_text(v)}' for k, v in arguments.items())})")
            return text_message(f"{name}({_python_text(arguments)})")
        if kind == "text":
            # the payload as a tool name, as an argument value and as the reply's text
            return tool_calls_message([(name, "{}"), ("ls", json.dumps({"a": name}))], view, content=name)
        return tool_calls_message([(name, arguments if isinstance(arguments, str) else _json_text(arguments))], view)

    return policy


@pytest.mark.parametrize("mode", ["fc", "prompting"])
def test_hostile_answers_run_nothing_and_the_run_completes(dataset, tmp_path, monkeypatch, mode):
    canary = tmp_path / "canary"
    canary.mkdir()
    monkeypatch.chdir(canary)  # relative paths in payloads land here too
    payloads = _payloads(canary)
    # FC entries take 21 steps (the payloads are calls); prompting ones end a turn at each
    # payload that does not decode. (Entries 40 and 43 share their first turn: not used.)
    ids = [f"{BASE}_{n}" for n in range(8 if mode == "fc" else 40)]
    served: set = set()
    policy = _hostile_policy(payloads, mode, served)
    with ScriptedServer(EntryScript(dataset, dataset.ids(BASE), mode, policy)) as server:
        result_dir, summary = run_ours(dataset, server.base_url, mode, [BASE], ids, tmp_path / "run")
        assert server.failures == []
    lines = result_lines(result_dir, mode, BASE)
    assert sorted(line["id"] for line in lines) == sorted(ids)
    assert summary.written == len(ids)
    assert sorted(p.name for p in canary.iterdir()) == []
    assert served == set(range(len(payloads)))  # every payload was sent at least once


# --------------------------------------------------------------------------- resume after a kill


def _command(server, tmp_path, result_dir, ids):
    return [sys.executable, "-m", "bfcl_safe", "generate", "--model", "killed/model", "--fc",
            "--base-url", server.base_url, "--result-dir", str(result_dir), "--ids", ",".join(ids),
            "--num-threads", "2", "--data", str(load_dataset().location)]


def test_resume_after_a_killed_run_equals_an_uninterrupted_run(dataset, tmp_path):
    ids = [f"{BASE}_{n}" for n in range(10)]
    script = EntryScript(dataset, dataset.ids(BASE), "fc", truth_policy)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    path = result_path(tmp_path / "killed", "killed_model", BASE)
    with ScriptedServer(slow(script, 0.05)) as server:
        child = subprocess.Popen(_command(server, tmp_path, tmp_path / "killed", ids), env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                if path.exists() and len(path.read_bytes().splitlines()) >= 3:
                    break
                if child.poll() is not None:
                    break
                time.sleep(0.05)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=60)
        written = existing_ids(path)
        assert 3 <= len(written) < len(ids), "the run should have been killed part-way"
        with open(path, "a") as handle:  # and a write cut short
            handle.write('{"id": "multi_turn_base_9", "result": [[')
        before = len(server.requests)
        resumed = subprocess.run(_command(server, tmp_path, tmp_path / "killed", ids), env=env,
                                 capture_output=True, text=True, timeout=600)
        assert resumed.returncode == 0, resumed.stderr
        assert f"{len(ids) - len(written)} entries to play, {len(written)} already" in resumed.stderr
        assert len(server.requests) > before
        whole = subprocess.run(_command(server, tmp_path, tmp_path / "whole", ids), env=env,
                               capture_output=True, text=True, timeout=600)
        assert whole.returncode == 0, whole.stderr
    killed_lines = [without_volatile(json.loads(x)) for x in path.read_text().splitlines()]
    whole_lines = [without_volatile(json.loads(x)) for x in
                   result_path(tmp_path / "whole", "killed_model", BASE).read_text().splitlines()]
    assert [x["id"] for x in killed_lines] == ids
    assert killed_lines == whole_lines


# --------------------------------------------------------------------------- the example


def test_the_generate_example_scores_full_marks_on_ground_truth(dataset):
    import importlib.util

    spec = importlib.util.spec_from_file_location("example_generate_scripted", ROOT / "examples" / "generate_scripted.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    lines: list[str] = []
    assert example.main(["--data", str(dataset.location), "multi_turn_base_3", "multi_turn_miss_param_5"],
                        log=lines.append) == 0
    assert lines[-1] == "2/2 entries passed"


def test_ctrl_c_stops_at_once_and_says_what_was_written(dataset, tmp_path):
    # Thirty entries on two threads leave work after the first line whatever the machine's
    # load (with ten, a loaded machine once saw the run end before the signal arrived).
    ids = [f"{BASE}_{n}" for n in range(30)]
    script = EntryScript(dataset, dataset.ids(BASE), "fc", truth_policy)
    path = result_path(tmp_path / "run", "killed_model", BASE)
    with ScriptedServer(slow(script, 0.3)) as server:
        # (SIGINT set back to its default in the child: a disposition of "ignored" is
        # inherited through exec, and Python then never turns SIGINT into Ctrl-C.)
        child = subprocess.Popen(_command(server, tmp_path, tmp_path / "run", ids),
                                 env={**os.environ, "PYTHONPATH": str(ROOT)},
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        sigint = signal.getsignal(signal.SIGINT)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and child.poll() is None:
            if path.exists() and path.read_bytes().count(b"\n") >= 1:
                break
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        _out, err = child.communicate(timeout=60)
    assert child.returncode == 130, f"(SIGINT here: {sigint!r}) {err}"
    assert "Interrupted:" in err and "Run the same command again to resume" in err
    assert "Traceback" not in err
    written = existing_ids(path)
    assert 1 <= len(written) < len(ids)
    assert [json.loads(x)["id"] for x in path.read_text().splitlines()] == sorted(written, key=lambda i: int(i.rsplit("_", 1)[1]))


# --------------------------------------------------------------------------- budgets


class _OneReply:
    """A client (no HTTP) answering every request with the same assistant text."""

    def __init__(self, text: str):
        self.text = text
        self.calls = 0

    def complete(self, messages, tools):
        from types import SimpleNamespace

        self.calls += 1
        message = SimpleNamespace(content=self.text, tool_calls=None)
        return SimpleNamespace(choices=[SimpleNamespace(message=message)],
                               usage=SimpleNamespace(prompt_tokens=1, completion_tokens=1)), 0.0


def test_replies_past_the_budget_end_the_entry_with_the_budget_named(dataset):
    from bfcl_safe.generate.inference import REPLY_BUDGET, ModelSpec, play_entry
    from bfcl_safe.interp.limits import ENTRY_BUDGETS

    entry_id = f"{BASE}_0"
    client = _OneReply("x" * (ENTRY_BUDGETS[REPLY_BUDGET] + 1))
    line = play_entry(dataset.entry(entry_id), dataset.prompt_entry(entry_id), ModelSpec("m", "prompting"), client,
                      templates=load_prompt_templates(dataset))
    assert client.calls == 1
    # The whole message is charged: its text, plus one per value (the message, content, tool_calls).
    assert line["result"] == (f"Error during inference: resource budget {REPLY_BUDGET!r} exceeded: "
                              f"{ENTRY_BUDGETS[REPLY_BUDGET] + 4:,} > {ENTRY_BUDGETS[REPLY_BUDGET]:,}")
    assert line["traceback"].startswith("bfcl_safe.interp.errors.BudgetExceeded: ")


def test_replies_within_the_budget_add_up_per_entry(dataset):
    from bfcl_safe.generate.inference import REPLY_BUDGET, ModelSpec, play_entry
    from bfcl_safe.interp.limits import ENTRY_BUDGETS

    # One reply of 40% of the budget per turn: the third turn's reply exceeds it.
    entry_id = f"{BASE}_0"
    client = _OneReply("y" * (ENTRY_BUDGETS[REPLY_BUDGET] * 2 // 5))
    line = play_entry(dataset.entry(entry_id), dataset.prompt_entry(entry_id), ModelSpec("m", "prompting"), client,
                      templates=load_prompt_templates(dataset))
    assert client.calls == 3
    assert REPLY_BUDGET in line["result"]


def test_an_inference_episode_plays_without_ground_truth(dataset):
    """generate's episode (Episode.for_inference): instances named as BFCL inference names
    them, turns advance without checks, and asking for a verdict is a documented error."""
    from bfcl_safe.checker.episode import EpisodeError
    from bfcl_safe.checker.play import Episode, TurnEnd

    entry_id = f"{BASE}_0"
    episode = Episode.for_inference(dataset.entry(entry_id), dataset.prompt_entry(entry_id), owner="my_model")
    assert episode.model.table is not None and episode.truth is None
    assert episode.turn_count == len(dataset.entry(entry_id)["question"])
    step = episode.step([{"pwd": "{}"}], decoder="fc")
    assert step.ended is None and len(step.calls) == 1
    assert episode.step([], decoder="fc").ended is TurnEnd.NO_CALLS
    with pytest.raises(EpisodeError, match="no ground truth"):
        episode.check_turn()
    turns = 1
    while episode.next_turn():
        turns += 1
    assert turns == episode.turn_count and episode.done
