"""Corpora the benchmarks score: copies of result trees, and the ground truth rendered as a
prompting model's results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from bfcl_safe.checker.dataset import Dataset
from bfcl_safe.checker.replay import ground_truth_as_prompting
from tests.refenv import wheel

CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")


def prompting_corpus(out: Path) -> Path:
    """Ground truth of all four categories rendered as a prompting model's result files."""
    dataset = Dataset.open(wheel())
    folder = out / "replay-prompting" / "multi_turn"
    folder.mkdir(parents=True, exist_ok=True)
    for category in CATEGORIES:
        with open(folder / f"BFCL_v4_{category}_result.json", "w") as handle:
            for entry in dataset.entries(category):
                result = ground_truth_as_prompting(dataset.ground_truth_for(entry["id"]), entry["involved_classes"])
                handle.write(json.dumps({"id": entry["id"], "result": result}) + "\n")
    return out


def replicate(result_dir: Path, out: Path, copies: int) -> Path:
    """``copies`` copies of every result file of ``result_dir``, under model folders of
    their own (so the entries are really scored ``copies`` times over). ``out`` must not
    be inside ``result_dir``."""
    for copy in range(copies):
        for path in result_dir.rglob("BFCL_v4_multi_turn_*_result.json"):
            relative = path.relative_to(result_dir)
            target = out / f"{relative.parts[0]}-copy{copy}" / Path(*relative.parts[1:])
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return out
