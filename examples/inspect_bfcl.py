"""BFCL multi-turn as an Inspect AI eval (needs ``pip install 'bfcl-safe[inspect]'``).

    inspect eval examples/inspect_bfcl.py --model openai/gpt-4o-mini -T categories=multi_turn_base --limit 20
    inspect view                                  # per sample: the chat, the verdict and turns_passed

Offline, against bfcl-safe's scripted server (it answers chat completions with each
turn's ground truth; Inspect's ``openai`` provider must use chat completions, not the
Responses API, hence ``-M responses_api=false``; any API key will do)::

    python -m bfcl_safe.checker.scripted_server --policy truth --port 8000 &
    OPENAI_API_KEY=offline inspect eval examples/inspect_bfcl.py --model openai/scripted-model \\
        -M responses_api=false --model-base-url http://127.0.0.1:8000/v1 -T categories=multi_turn_base --limit 2

(Inspect's ``mockllm`` model counts tokens with tiktoken, which downloads its encoding
file on first use: it is not an offline choice.)

The task is ``bfcl_safe.integrations.inspect.bfcl_multi_turn``: one sample per entry, the
calls run on bfcl-safe's simulated backends (never as code), scored with the official
verdict; ``-T partial_credit=true`` scores ``turns_passed / turns`` for failed entries.
"""

from __future__ import annotations

from inspect_ai import Task, task

from bfcl_safe.integrations.inspect import bfcl_multi_turn


@task
def bfcl(categories: str = "multi_turn_base,multi_turn_miss_func,multi_turn_miss_param,multi_turn_long_context",
         partial_credit: bool = False, data: str | None = None) -> Task:
    """``categories``: comma-separated; ``data``: a bfcl-eval wheel (default: the cache)."""
    return bfcl_multi_turn(categories=[c for c in categories.split(",") if c], partial_credit=partial_credit,
                           data=data)
