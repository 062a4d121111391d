"""Hostile play (issue 14.7): attacker-chosen steps played through the Episode API in a
child process under a 2 GB address-space limit and 120 s — every method returns or
raises one of bfcl-safe's documented errors; the process never crashes, hangs or
exhausts memory, and an ordinary episode beside the hostile ones keeps its verdict."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.refenv import ROOT, wheel

# Each: (id, entry, calls of one step, copies of them per step, steps). Steps are what a
# model could send; many calls per step get past BFCL's 20 steps a turn.
SCENARIOS = [
    ("deep-directory-chain", "multi_turn_base_0", "mkdir(dir_name='d'), cd(folder='d')", 600, 3),
    ("content-nested-per-call", "multi_turn_base_0", "echo(content=cat(file_name='f'), file_name='f')", 400, 3),
    ("int-beyond-str-limit", "multi_turn_base_0", "echo(content=10 ** 5000, file_name='f')", 1, 3),
    ("huge-format", "multi_turn_base_0", "echo(content='%1900000000d' % 1, file_name='f')", 1, 2),
    ("tuple-key-argument", "multi_turn_base_0", "echo(content={(1, 2): 3}, file_name='f')", 1, 3),
    ("repeated-large-cat", "multi_turn_base_0", "echo(content='x' * 10 ** 6, file_name='f'), cat(file_name='f')",
     50, 20),
    ("deep-fc-arguments", "multi_turn_base_0", "DEEP", 1, 3),
    ("mentions-extended-with-themselves", "multi_turn_base_0",
     "post_tweet(content='a', mentions=get_tweet_comments(tweet_id=0)['comments'])", 100, 20),
    ("copy-into-itself", "multi_turn_base_0", "cp(source='document', destination='document')", 60, 5),
]

CHILD = textwrap.dedent('''
    import json, pickle, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    from bfcl_safe import Dataset
    from bfcl_safe.checker.play import Episode
    from bfcl_safe.checker.replay import ground_truth_as_fc
    from bfcl_safe.interp.errors import BfclSafeError

    wheel, scenarios = sys.argv[1], json.loads(sys.argv[2])
    ds = Dataset.open(wheel)
    seen = {}
    def attempt(name, work):
        try:
            work()
            seen.setdefault(name, set()).add("ok")
        except BfclSafeError as exc:
            seen.setdefault(name, set()).add(type(exc).__name__)
    for key, entry_id, calls, copies, times in scenarios:
        ep = Episode.from_entry(entry_id, ds)
        step = "[" + ", ".join([calls] * copies) + "]"
        if calls == "DEEP":
            value = {"file_name": "f"}
            for _ in range(5000):
                value = {"content": value}
            step = [{"echo": value}]
        else:
            ep.step("[touch(file_name='f')]")
        for _ in range(times):
            if ep.done:
                break
            if ep.turn_over:
                attempt("next_turn", ep.next_turn)
                continue
            attempt("step", lambda: ep.step(step))
        for name in ("state", "check_turn", "turn_outcome", "snapshot", "result"):
            attempt(name, getattr(ep, name))
        attempt("pickle", lambda: pickle.loads(pickle.dumps(ep)).check_turn())
        print(json.dumps({"scenario": key, "seen": {k: sorted(v) for k, v in seen.items()},
                          "verdict": str(ep.check_turn().error_type)}), flush=True)
        seen.clear()
    # An ordinary episode after them: the ground truth still passes.
    entry_id = "multi_turn_base_0"
    ep = Episode.from_entry(entry_id, ds)
    for steps in ground_truth_as_fc(ds.ground_truth_for(entry_id), ds.entry(entry_id)["involved_classes"]):
        for s in steps:
            if not ep.turn_over:
                ep.step(s)
        ep.next_turn()
    print(json.dumps({"ordinary": ep.check_turn().valid}), flush=True)
''')


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_hostile_steps_in_a_child_under_limits(scenario):
    out = subprocess.run([sys.executable, "-c", CHILD, str(wheel()), json.dumps([scenario])],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    report, ordinary = lines[0], lines[-1]
    assert report["scenario"] == scenario[0]
    assert ordinary == {"ordinary": True}
    # Each view ran; where one refused, it was with a documented error (the child lets
    # anything else escape as a traceback, failing the assertions above).
    assert {"state", "check_turn", "turn_outcome", "snapshot", "result", "pickle"} <= set(report["seen"])
