"""The built-in demo result set: ground truth replayed as a model, plus a few
deliberately wrong and hostile entries, for every multi-turn category.

Of every ten entries of a category (by position in the dataset): entry 3 fails on
purpose (its last turn has no calls: ``multi_turn:empty_turn_model_response`` or a
state/response mismatch), entry 8 fails on purpose (its last turn is missing:
``multi_turn:force_terminated``), and entry 6 starts with a hostile step (code
injection through a function name, an argument value, a builtin, a private method,
``9**9**9**9``, 5,000 nested brackets, ...) followed by the right calls: it passes,
which shows that the hostile calls ran nothing and only got error results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES
from bfcl_safe.checker.dataset import Dataset
from bfcl_safe.checker.outputs import write_text
from bfcl_safe.checker.replay import ground_truth_as_fc, ground_truth_as_prompting

DEMO_MODEL_FC = "demo-replay-FC"
DEMO_MODEL_PROMPT = "demo-replay-prompting"
#: Entries per category in the demo (the first ones of each file).
DEMO_ENTRIES = 20
#: Position of an entry among every ten: last turn emptied, hostile step first, last turn dropped.
WRONG, HOSTILE, TRUNCATED = 3, 6, 8

HOSTILE_FC_STEPS = [
    [{"__import__('os').system('echo pwned') or ls": "{}"}],
    [{"ls": json.dumps({"a": True, "x": "__import__('os').system('echo pwned')"})}],
    [{"open": json.dumps({"file": "/etc/passwd"})}],
    [{"_load_scenario": json.dumps({"scenario": {}})}],
]
HOSTILE_PROMPT_STEPS = [
    "[__import__('os').system('echo pwned')]",
    "[ls(a=(lambda: __import__('os').system('echo pwned'))())]",
    "[().__class__.__bases__[0].__subclasses__()]",
    "[cd(folder=" + "[" * 5000 + "]" * 5000 + ")]",
]


def write_demo_results(dataset: Dataset, result_dir: Path, entries: int = DEMO_ENTRIES) -> Path:
    """Write the demo result files under ``result_dir``; return it."""
    for model, render, hostile in (
        (DEMO_MODEL_FC, ground_truth_as_fc, HOSTILE_FC_STEPS),
        (DEMO_MODEL_PROMPT, ground_truth_as_prompting, HOSTILE_PROMPT_STEPS),
    ):
        folder = result_dir / model / "multi_turn"
        folder.mkdir(parents=True, exist_ok=True)
        for category in MULTI_TURN_CATEGORIES:
            lines = []
            for index, entry in enumerate(dataset.entries(category)[:entries]):
                truth = dataset.ground_truth_for(entry["id"])
                result: list[Any] = render(truth, entry["involved_classes"])
                if index % 10 == WRONG:  # wrong: no calls in the last turn
                    last: list[Any] = [[]] if model == DEMO_MODEL_FC else ["Done."]
                    result[-1] = last
                elif index % 10 == HOSTILE:  # hostile steps before the right calls
                    result[0] = [hostile[index // 10 % len(hostile)], *result[0]]
                elif index % 10 == TRUNCATED:  # a turn lost: force-terminated
                    result = result[:-1]
                lines.append(json.dumps({"id": entry["id"], "result": result}))
            write_text(folder / f"BFCL_v4_{category}_result.json", "\n".join(lines) + "\n")
    return result_dir


def _positions(entries: int, offset: int) -> list[int]:
    return list(range(offset, entries, 10))


def describe(entries: int = DEMO_ENTRIES) -> str:
    """What the demo shows, for the terminal: which entries fail on purpose and what the
    hostile ones prove."""
    wrong, hostile, truncated = (_positions(entries, offset) for offset in (WRONG, HOSTILE, TRUNCATED))

    def numbers(positions: list[int]) -> str:
        return ", ".join(f"_{p}" for p in positions) or "none (fewer entries)"

    expected = entries - len(wrong) - len(truncated)
    return "\n".join([
        f"The demo replays the ground truth of the first {entries} entries of each multi-turn category as two "
        f"models, {DEMO_MODEL_FC} (FC steps) and {DEMO_MODEL_PROMPT} (Python call text), and changes some on "
        "purpose:",
        f"  - entries {numbers(wrong)} fail: their last turn holds no calls;",
        f"  - entries {numbers(truncated)} fail: their last turn is missing (force_terminated);",
        f"  - entries {numbers(hostile)} begin with a hostile step ({len(HOSTILE_FC_STEPS)} FC and "
        f"{len(HOSTILE_PROMPT_STEPS)} text payloads: os.system through a function name or an argument, open(), "
        "a private method, a dunder escape, a lambda, 5,000 nested brackets) and then the right calls.",
        f"Expected: {expected} of {entries} correct per category and model. The hostile entries pass: their "
        "payloads ran nothing (no 'pwned' is printed, no file is read), each only got an error result, and "
        "scoring finished at once.",
    ])
