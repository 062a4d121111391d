"""A minimal agent loop: a model behind an OpenAI-compatible chat endpoint plays BFCL
multi-turn entries against bfcl-safe's simulated backends, in FC mode.

    export OPENAI_BASE_URL=http://localhost:8000/v1   # vLLM, llama.cpp, OpenAI, ...
    export OPENAI_API_KEY=...                         # if the endpoint needs one
    python examples/openai_loop.py --model MODEL [--data WHEEL] multi_turn_base_0 ...

Per turn it sends the turn's user messages with the tools visible at that turn (exactly
the OpenAI tools list BFCL's own FC handler sends: ``Episode.tools(format="openai")``),
runs the reply with ``Episode.step`` and sends back the tool messages the step returns
(as BFCL does), until the model answers without tool calls (or BFCL's step limit
force-terminates the entry). It prints each turn's reward and the verdict so far
(``end_turn``; ``check_turn`` gives the verdict alone), and can write a BFCL result file
(``--out``) to score with ``bfcl-safe evaluate``.

Not BFCL's whole inference pipeline (``bfcl-safe generate`` is): no retries. Only the
standard library is used (``urllib``); nothing here runs in the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.request

from bfcl_safe import Dataset, Episode

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
        tools = episode.tools(format="openai")
        while not episode.turn_over:
            reply = chat(base_url, api_key, model, messages, tools)
            messages.append(reply)
            # A reply without tool calls ends the turn (step.ended says why).
            step = episode.step(reply)
            messages.extend(step.messages)
        outcome = episode.end_turn()
        verdict = outcome.verdict
        print(f"{entry_id} turn {outcome.turn}: reward {outcome.reward}, "
              f"so far {'pass' if verdict.valid else verdict.error_type}")
        if episode.done:
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
        print(f"{entry_id}: {'PASS' if verdict.valid else 'FAIL ' + verdict.error_type.value}")
        lines.append(json.dumps({"id": entry_id, "result": episode.result()}))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
