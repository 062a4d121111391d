"""The examples in examples/: the ground-truth policy runs (the OpenAI loop needs a
server and is not run, nor imported, here)."""

from __future__ import annotations

import importlib.util

from tests.refenv import ROOT, wheel


def _load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_replay_policy_passes_every_turn():
    example = _load_example("replay_policy")
    lines: list[str] = []
    ids = ["multi_turn_base_0", "multi_turn_miss_func_0", "multi_turn_miss_param_3", "multi_turn_long_context_1"]
    assert example.main(["--data", str(wheel()), *ids], log=lines.append) == 0
    assert lines[-1] == "4/4 entries passed"
    for entry_id in ids:
        assert any(line.startswith(f"{entry_id}: PASS") for line in lines), lines
    assert not [line for line in lines if "multi_turn:" in line]


def test_openai_loop_is_documented():
    text = (ROOT / "examples" / "openai_loop.py").read_text(encoding="utf-8")
    assert "OPENAI_BASE_URL" in text and "Episode.from_entry" in text and "check_turn" in text
