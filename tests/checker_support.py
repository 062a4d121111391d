"""Shared pieces for checker tests: the dataset, and the reference's verdict for an entry."""

from __future__ import annotations

import copy
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from bfcl_safe.checker.dataset import Dataset
from tests.refenv import REAL_RESULTS, import_reference, wheel

CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
#: The real model run kept in tests/fixtures/real-results and its model folder.
REAL_RUN = REAL_RESULTS / "gpt-oss-120b-vllm-0.10.2"
REAL_MODEL = "openai_gpt-oss-120b"

#: ``BFCL_SAFE_FULL=1``: the long framework tests (verifiers, Inspect AI) replay everything
#: they cover — the figures the closing notes report. By default each takes a fixed, evenly
#: spread share (every k-th script, the same ones every run), so the suite stays short.
FULL = os.environ.get("BFCL_SAFE_FULL", "") == "1"


def every(k: int) -> int:
    """The stride of a long test's share: 1 under ``BFCL_SAFE_FULL=1``, else ``k``."""
    return 1 if FULL else k


def real_results_subset(tmp_path: Path, lines: int) -> Path:
    """A result tree with the first ``lines`` entries of each of the real result files."""
    result_dir = tmp_path / "result"
    for source in (REAL_RUN / "result" / REAL_MODEL / "multi_turn").glob("*.json"):
        target = result_dir / REAL_MODEL / "multi_turn" / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(source.read_text(encoding="utf-8").splitlines(keepends=True)[:lines]), encoding="utf-8")
    return result_dir


@lru_cache(maxsize=None)
def dataset() -> Dataset:
    return Dataset.open(wheel())


def reference_verdict(entry: dict, model_result: Any, ground_truth: list, model_name: str, decoder: str) -> str | None:
    """The reference's error type for one entry (None when it passes).

    Reproduces ``_evaluate_single_multi_turn_entry`` with the reference's own
    decoder functions and its ``multi_turn_checker`` (imported from the pinned
    wheel, test-only). Instances it leaves in its module globals are removed after.
    """
    utils = import_reference("model_handler.utils")
    checker = import_reference("eval_checker.multi_turn_eval.multi_turn_checker")
    mt_utils = import_reference("eval_checker.multi_turn_eval.multi_turn_utils")
    if type(model_result) is not list:
        return "multi_turn:inference_error"
    if len(model_result) != len(ground_truth):
        return "multi_turn:force_terminated"
    decode = {
        "fc": utils.convert_to_function_call,
        "prompting": utils.default_decode_execute_prompting,
    }[decoder]
    decoded = []
    for turn in model_result:
        steps = []
        for step in turn:
            try:
                calls = decode(step)
                if mt_utils.is_empty_execute_response(calls):
                    continue
                steps.append(calls)
            except Exception:  # noqa: BLE001 - as the reference: skip undecodable steps
                continue
        decoded.append(steps)
    prompt = copy.deepcopy(entry)
    try:
        result = checker.multi_turn_checker(decoded, ground_truth, prompt, entry["id"].rsplit("_", 1)[0], model_name)
    finally:
        namespace = vars(mt_utils)
        for key in [k for k in namespace if k.endswith("_instance")]:
            del namespace[key]
    return None if result["valid"] else result["error_type"]


def no_other_threads(timeout: float = 60.0) -> None:
    """Before a test forks in this process (``--jobs 2`` in process, ``ForkPool``): end the
    play API's async worker thread and wait for threads earlier tests left behind (a scripted
    server's handler still dripping to a child that is gone). The fork pool refuses to fork
    beside other threads, so with pytest-xdist running files one after another in a worker
    this made the outcome depend on which file ran before."""
    import threading
    import time

    from bfcl_safe.checker import play

    executor = play._EXECUTOR
    if executor is not None:
        executor.shutdown(wait=True)
        play._forget_executor()
    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    others = [thread.name for thread in threading.enumerate() if thread is not threading.current_thread()]
    assert not others, f"threads still running after {timeout} s: {others}"
