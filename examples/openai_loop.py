"""A minimal agent loop: a model behind an OpenAI-compatible chat endpoint plays BFCL
multi-turn entries against bfcl-safe's simulated backends, in FC mode.

    export OPENAI_BASE_URL=http://localhost:8000/v1   # vLLM, llama.cpp, OpenAI, ...
    export OPENAI_API_KEY=...                         # if the endpoint needs one
    python examples/openai_loop.py --model MODEL [--data WHEEL] multi_turn_base_0 ...

Per turn it sends the turn's user messages with the tool docs visible at that turn,
runs the returned tool calls with ``Episode.step`` and sends back their results, until
the model answers without tool calls (or BFCL's step limit force-terminates the entry).
It prints the verdict of each turn, and can write a BFCL result file (``--out``) to
score with ``bfcl-safe evaluate``.

Not BFCL's inference pipeline: no retries, no handler-specific prompts; the tool docs
are converted to OpenAI's schema the simple way. Only the standard library is used
(``urllib``); nothing here runs in the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.request
from typing import Any

from bfcl_safe.checker.dataset import Dataset
from bfcl_safe.checker.episode import Episode

#: BFCL doc types -> JSON Schema types.
_TYPES = {"dict": "object", "float": "number", "tuple": "array", "list": "array", "any": "string",
          "bool": "boolean", "int": "integer"}


def _schema(node: Any) -> Any:
    if isinstance(node, dict):
        out = {key: _schema(value) for key, value in node.items()}
        if isinstance(out.get("type"), str):
            out["type"] = _TYPES.get(out["type"], out["type"])
        return out
    if isinstance(node, list):
        return [_schema(item) for item in node]
    return node


def openai_tools(docs: list[dict]) -> list[dict]:
    return [{"type": "function", "function": {"name": doc["name"], "description": doc.get("description", ""),
                                              "parameters": _schema(doc.get("parameters", {}))}}
            for doc in docs]


def chat(base_url: str, api_key: str | None, model: str, messages: list[dict], tools: list[dict]) -> dict:
    body = json.dumps({"model": model, "messages": messages, "tools": tools, "temperature": 0.001}).encode()
    request = urllib.request.Request(f"{base_url.rstrip('/')}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {api_key}"} if api_key else {})})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.load(response)["choices"][0]["message"]


def play(dataset: Dataset, entry_id: str, model: str, base_url: str, api_key: str | None) -> Episode:
    episode = Episode.from_entry(entry_id, dataset, owner=model.replace("/", "_"))
    messages: list[dict] = []
    while True:
        messages.extend(episode.messages())
        tools = openai_tools(episode.tools())
        while not episode.turn_over:
            reply = chat(base_url, api_key, model, messages, tools)
            calls = reply.get("tool_calls") or []
            messages.append({"role": "assistant", "content": reply.get("content") or "",
                             **({"tool_calls": calls} if calls else {})})
            # A reply without tool calls is an empty step: it ends the turn.
            results = episode.step([{c["function"]["name"]: c["function"]["arguments"]} for c in calls])
            for call, result in zip(calls, results):
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        verdict = episode.check_turn()
        print(f"{entry_id} turn {episode.turn}: {'pass' if verdict['valid'] else verdict['error_type']}")
        if not episode.next_turn():
            return episode


def main() -> int:
    parser = argparse.ArgumentParser(description="Play BFCL multi-turn entries with an OpenAI-compatible model.")
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", default=None, help="bfcl-eval wheel or bfcl_eval folder (default: the cache)")
    parser.add_argument("--out", default=None, help="write a BFCL result file (JSON lines) here")
    parser.add_argument("ids", nargs="+")
    args = parser.parse_args()
    base_url = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
    dataset = Dataset.open(args.data)
    lines = []
    for entry_id in args.ids:
        episode = play(dataset, entry_id, args.model, base_url, os.environ.get("OPENAI_API_KEY"))
        verdict = episode.check_turn()
        print(f"{entry_id}: {'PASS' if verdict['valid'] else 'FAIL ' + verdict['error_type']}")
        lines.append(json.dumps({"id": entry_id, "result": episode.result()}))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
