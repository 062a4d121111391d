"""The built-in demo result set: ground truth replayed as a model, plus a few
deliberately wrong and hostile entries, for every multi-turn category."""

from __future__ import annotations

import json
from pathlib import Path

from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES
from bfcl_safe.checker.dataset import Dataset
from bfcl_safe.checker.replay import ground_truth_as_fc, ground_truth_as_prompting

DEMO_MODEL_FC = "demo-replay-FC"
DEMO_MODEL_PROMPT = "demo-replay-prompting"
#: Entries per category in the demo (the first ones of each file).
DEMO_ENTRIES = 20

HOSTILE_FC_STEPS = [
    [{"__import__('os').system('echo pwned') or ls": "{}"}],
    [{"ls": json.dumps({"a": True, "x": "__import__('os').system('echo pwned')"})}],
    [{"open": json.dumps({"file": "/etc/passwd"})}],
    [{"_load_scenario": json.dumps({"scenario": {}})}],
]
HOSTILE_PROMPT_STEPS = [
    "[__import__('os').system('echo pwned')]",
    "[ls(a=9**9**9**9)]",
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
                result = render(truth, entry["involved_classes"])
                if index % 10 == 3:  # wrong: no calls in the last turn
                    result[-1] = [[]] if model == DEMO_MODEL_FC else ["Done."]
                elif index % 10 == 6:  # hostile steps before the right calls
                    result[0] = [hostile[index // 10 % len(hostile)], *result[0]]
                elif index % 10 == 8:  # a turn lost: force-terminated
                    result = result[:-1]
                lines.append(json.dumps({"id": entry["id"], "result": result}))
            (folder / f"BFCL_v4_{category}_result.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return result_dir
