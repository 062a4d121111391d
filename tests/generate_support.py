"""Shared pieces of the generate tests: the reference's inference environment, runs of
the reference's and of our generate against a scripted server, and result comparison."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any, Sequence

from bfcl_safe.generate.client import RetryPolicy
from bfcl_safe.generate.inference import VOLATILE_FIELDS
from bfcl_safe.generate.result_writer import result_path
from bfcl_safe.generate.run import RunSummary, make_client, plan_run, run_plan
from tests.refenv import REF_DIR, reference_dir

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "tests" / "reference_generate.py"
#: The reference's inference needs the OpenAI SDK and three small packages beside the
#: wheel (the same SDK release as ours, so both send and parse alike).
SDK_DIR = REF_DIR.parent / f"{REF_DIR.name}-sdk"
SDK_REQUIREMENTS = [f"openai=={version('openai')}", "tqdm", "overrides", "requests"]
#: Short waits for the retry tests (the SDK honours the scripted server's retry-after-ms).
FAST_RETRY = RetryPolicy(min_wait=0.01, max_wait=0.05)
#: Seconds a reference child may take (a few hundred requests at most per run).
CHILD_TIMEOUT = 1800


def reference_sdk_dir() -> Path:
    """Install the reference's SDK dependencies into SDK_DIR once (never into .venv)."""
    marker = SDK_DIR / ".complete"
    requirement_file = SDK_DIR / ".requirements"
    wanted = "\n".join(SDK_REQUIREMENTS)
    if marker.exists() and requirement_file.exists() and requirement_file.read_text() == wanted:
        return SDK_DIR
    SDK_DIR.parent.mkdir(parents=True, exist_ok=True)
    with open(SDK_DIR.parent / f".{SDK_DIR.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (marker.exists() and requirement_file.exists() and requirement_file.read_text() == wanted):
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--upgrade",
                 "--target", str(SDK_DIR), *SDK_REQUIREMENTS],
                check=True,
            )
            requirement_file.write_text(wanted)
            marker.write_text("ok\n")
    return SDK_DIR


def registry_name(mode: str) -> str:
    """A model name outside BFCL's registry; the reference decides FC by ``FC`` in it."""
    return "scripted-model-FC" if mode == "fc" else "scripted-model"


def run_reference(base_url: str, mode: str, categories: Sequence[str], ids: Sequence[str], work: Path,
                  num_threads: int = 4, **flags: bool) -> Path:
    """Run the reference's generate; return its result folder."""
    work.mkdir(parents=True, exist_ok=True)
    config = {
        "ref_dir": str(reference_dir()), "sdk_dir": str(reference_sdk_dir()), "base_url": base_url,
        "registry_name": registry_name(mode), "api_name": registry_name(mode), "mode": mode,
        "categories": list(categories), "result_dir": str(work / "result"), "num_threads": num_threads,
        "project_root": str(work), "ids": list(ids), **flags,
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "BFCL_"))}
    done = subprocess.run([sys.executable, str(HARNESS), json.dumps(config)], capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT, env=env, cwd=str(work))
    assert done.returncode == 0, f"reference generate failed:\n{done.stderr[-4000:]}"
    return work / "result"


def run_ours(dataset: Any, base_url: str, mode: str, categories: Sequence[str], ids: Sequence[str], work: Path,
             num_threads: int = 4, retry: RetryPolicy = FAST_RETRY, **flags: bool) -> tuple[Path, RunSummary]:
    plan = plan_run(dataset, model=registry_name(mode), mode=mode, categories=categories, ids=ids,
                    result_dir=work / "result")
    client = make_client(plan, base_url=base_url, api_key="scripted-key", retry=retry)
    try:
        summary = run_plan(plan, dataset, client, num_threads=num_threads, **flags)
    finally:
        client.close()
    return work / "result", summary


def result_lines(result_dir: Path, mode: str, category: str) -> list[dict]:
    path = result_path(result_dir, registry_name(mode), category)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def without_volatile(line: dict) -> dict:
    """A result line without the fields that depend on the clock or the machine
    (:data:`bfcl_safe.generate.inference.VOLATILE_FIELDS`: ``latency``, ``traceback``)."""
    return {key: value for key, value in line.items() if key not in VOLATILE_FIELDS}


def first_difference(a: Any, b: Any, path: str = "") -> str:
    """Where two JSON values first differ, for assertion messages."""
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} {str(a)[:200]!r} != {type(b).__name__} {str(b)[:200]!r}"
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys {list(a)} != {list(b)}"
        for key in a:
            if a[key] != b[key]:
                return first_difference(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
    elif a != b:
        return f"{path}: {str(a)[:300]!r} != {str(b)[:300]!r}"
    return f"{path}: equal"


def canonical_requests(requests: Sequence[dict]) -> list[str]:
    """Request bodies as sorted canonical JSON (a multiset: threads reorder them)."""
    return sorted(json.dumps(request, sort_keys=True) for request in requests)


def stratified(ids: Sequence[str], count: int) -> list[str]:
    """``count`` ids spread evenly over ``ids`` (all of them when count >= len)."""
    if count <= 0 or count >= len(ids):
        return list(ids)
    return [ids[(i * len(ids)) // count] for i in range(count)]


def logged_decoding(step: Any, mode: str, entry_id: str = "multi_turn_base_0") -> tuple[str, Any]:
    """What generate logs for ``step`` as a fresh entry's first step
    (:func:`bfcl_safe.generate.inference.play_step` on an inference episode):
    ``("ok", call texts)`` or ``("error", BFCL's decoding-error text)``."""
    from bfcl_safe.checker.play import Episode
    from bfcl_safe.generate.inference import UNDECODABLE, play_step
    from tests.checker_support import dataset

    data = dataset()
    episode = Episode.for_inference(data.entry(entry_id), data.prompt_entry(entry_id), owner="m")
    _result, log = play_step(episode, step, "fc" if mode == "fc" else "prompting")
    if log[0]["content"] == UNDECODABLE:
        return "error", log[0]["error"]
    return "ok", log[0]["model_response_decoded"]
