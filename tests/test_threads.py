"""Scoring the same files in 8 threads at once gives identical output: no shared state."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from bfcl_safe.checker.runner import score_tree
from bfcl_safe.checker.scoring import Options
from tests.checker_support import dataset
from tests.refenv import REAL_RESULTS, wheel

RUN = REAL_RESULTS / "gpt-oss-120b-vllm-0.10.2"


def test_eight_threads_scoring_the_same_files_write_identical_score_files(tmp_path):
    data = dataset()
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            score_tree(RUN / "result", tmp_path / f"s{index}", data, Options())
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    files = sorted(p.relative_to(tmp_path / "s0") for p in (tmp_path / "s0").rglob("*") if p.is_file())
    assert len(files) == 9  # three score files and the six leaderboard CSVs
    for index in range(1, 8):
        for relative in files:
            assert (tmp_path / f"s{index}" / relative).read_bytes() == (tmp_path / "s0" / relative).read_bytes(), (
                f"thread {index}: {relative} differs"
            )
