"""Ray (bfcl_safe.integrations.ray), on this machine only: ``ray.init(num_cpus=2)`` bound to
loopback, usage stats off. Score files written with a RayPool are byte-identical to a
serial run's; episodes sent through Ray tasks and actors give the verdicts of episodes
played in this process; a dead actor loses only its batch's lines."""

from __future__ import annotations

import json
import os
import re

os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # before ray is imported: no usage reporting
# Ray's node fails to start when its agent takes over its default wait to come up, as on a
# loaded machine (measured: 72 s from ray.init to a running task under load 18).
os.environ.setdefault("RAY_agent_register_timeout_ms", "300000")
os.environ.setdefault("RAY_raylet_start_wait_time_s", "300")

import pytest  # noqa: E402
import ray  # noqa: E402  (the ray extra is in the test extra: no skip)

from bfcl_safe.checker import runner  # noqa: E402
from bfcl_safe.checker.parallel import Lost  # noqa: E402
from bfcl_safe.checker.play import Episode  # noqa: E402
from bfcl_safe.checker.scoring import Options  # noqa: E402
from bfcl_safe.checker.scoring import Context  # noqa: E402
from bfcl_safe.integrations.ray import EpisodeActor, RayPool, score_tree_on_ray  # noqa: E402
from bfcl_safe.integrations.session import assistant_message  # noqa: E402
from tests.checker_support import CATEGORIES, dataset, real_results_subset  # noqa: E402
from tests.integration_policies import MODEL, scripts  # noqa: E402
from tests.refenv import wheel  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
             configure_logging=False)
    yield
    ray.shutdown()


def _messages(replies):
    out = []
    for number, (kind, value) in enumerate(replies):
        if kind == "text":
            out.append(assistant_message(value, None))
        else:
            out.append(assistant_message(None, [{"id": f"call_{number}_{i}", "name": name,
                                                 "arguments": json.dumps(args)}
                                                for i, (name, args) in enumerate(value)]))
    return out


def _play(episode: Episode, messages: list[dict]) -> Episode:
    """Give ``messages`` one by one, ending turns as they end, until none is left or done."""
    for message in messages:
        if episode.done:
            break
        if episode.step(message).turn_over:
            episode.end_turn()
    return episode


def _verdict(episode: Episode) -> tuple:
    v = episode.check_turn()
    return (v.valid, None if v.error_type is None else v.error_type.value, v.turns_passed, v.failing_turn,
            episode.result())


@ray.remote
def _continue(episode: Episode, messages: list[dict]) -> Episode:
    return _play(episode, messages)


def _sample_scripts():
    return [(entry_id, kind, replies) for i, (entry_id, kind, replies)
            in enumerate(scripts(CATEGORIES, seed="ray-20261201")) if i % 20 == 0]


def test_episodes_round_trip_through_ray_tasks_with_identical_verdicts(local_ray):
    table = _sample_scripts()
    assert len(table) >= 300
    local, remote = [], []
    for entry_id, _, replies in table:
        messages = _messages(replies)
        local.append(_verdict(_play(Episode.from_entry(entry_id, dataset(), owner=MODEL), messages)))
        half = len(messages) // 2
        started = _play(Episode.from_entry(entry_id, dataset(), owner=MODEL), messages[:half])
        remote.append(_continue.remote(started, messages[half:]))
    finished = ray.get(remote)
    assert [_verdict(episode) for episode in finished] == local
    assert sum(1 for v in local if v[0]) > 0 and sum(1 for v in local if not v[0]) > 0


def test_episode_actor_plays_like_a_local_episode(local_ray):
    table = _sample_scripts()[::40]  # (an actor is a worker process of its own: slow to start)
    for entry_id, kind, replies in table:
        messages = _messages(replies)
        local = _play(Episode.from_entry(entry_id, dataset(), owner=MODEL), messages)
        actor = EpisodeActor.remote(entry_id, str(wheel()), MODEL)
        for message in messages:
            if ray.get(actor.done.remote()):
                break
            if ray.get(actor.step.remote(message)).turn_over:
                ray.get(actor.end_turn.remote())
        assert _verdict(ray.get(actor.episode.remote())) == _verdict(local), (entry_id, kind)
        ray.kill(actor)


def _files(root):
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def test_score_files_on_ray_are_byte_identical_to_a_serial_run(local_ray, tmp_path):
    result_dir = real_results_subset(tmp_path, 150)  # every real result line
    options = Options(partial=True)  # (the real result files hold 150 of each category's 200 entries)
    serial = runner.score_tree(result_dir, tmp_path / "serial", dataset(), options)
    on_ray = score_tree_on_ray(result_dir, tmp_path / "ray", data=wheel(), actors=2, options=options)
    assert sum(s.total for s in serial) == sum(s.total for s in on_ray) >= 450
    serial_files, ray_files = _files(tmp_path / "serial"), _files(tmp_path / "ray")
    assert len(serial_files) >= 4 and serial_files == ray_files  # score files and the CSV


def test_a_dead_actor_loses_only_its_batches(local_ray):
    pool = RayPool(wheel(), actors=2)
    try:
        ray.kill(pool.actors[0])
        context = Context(MODEL, "multi_turn_base", "fc").to_text()
        line = '{"id": "multi_turn_base_0", "result": [[[]]]}'
        out = pool.map([(context, [line, line]), (context, [line])])
        lost = [item for batch in out for item in batch if isinstance(item, Lost)]
        scored = [item for batch in out for item in batch if isinstance(item, str)]
        assert len(out) == 2 and [len(b) for b in out] == [2, 1]
        assert lost and scored and len(lost) + len(scored) == 3
    finally:
        pool.close()


def test_bad_actor_count_says_what(local_ray):
    with pytest.raises(ValueError, match="actors must be a positive int"):
        RayPool(wheel(), actors=0)


def test_the_ray_rollouts_example_passes_every_entry(local_ray):
    import importlib.util

    from tests.refenv import ROOT

    spec = importlib.util.spec_from_file_location("example_ray_rollouts", ROOT / "examples" / "ray_rollouts.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    lines: list[str] = []
    assert example.main(["--data", str(wheel())], log=lines.append) == 0
    assert lines[-1] == "4/4 rollouts passed"


def test_evaluate_ray_address_writes_the_serial_runs_files(local_ray, tmp_path):
    from click.testing import CliRunner

    from bfcl_safe.cli import main

    result_dir = real_results_subset(tmp_path, 20)
    args = ["evaluate", "--result-dir", str(result_dir), "--data", str(wheel()), "--partial-eval"]
    serial = CliRunner().invoke(main, [*args, "--score-dir", str(tmp_path / "serial")])
    on_ray = CliRunner().invoke(main, [*args, "--score-dir", str(tmp_path / "ray"), "--ray-address", "local",
                                       "--jobs", "2"])
    assert serial.exit_code == on_ray.exit_code == 0, (serial.output, on_ray.output)
    counts = [re.search(r"Scored (\d+) entries", run.output).group(1) for run in (serial, on_ray)]
    assert counts[0] == counts[1] and int(counts[0]) >= 60
    assert _files(tmp_path / "serial") == _files(tmp_path / "ray")


@pytest.mark.parametrize(("address", "raised", "wanted"), [
    ("local", Exception("The current node timed out during startup. This could happen because some of the Ray "
                        "processes failed to startup.\nTraceback ..."),
     "Error: cannot start Ray: Exception: The current node timed out during startup."),
    ("local", RuntimeError("\x1b]0;owned\x07no resources"), "Error: cannot start Ray: RuntimeError: "),
    ("ray://10.0.0.1:10001", ConnectionError("ray client connection timeout"),
     "Error: cannot connect to Ray at 'ray://10.0.0.1:10001': ConnectionError: ray client connection timeout"),
], ids=["local-node-timeout", "local-control-characters", "remote-unreachable"])
def test_evaluate_when_ray_does_not_start_says_so_in_one_line(monkeypatch, runner, tmp_path, address, raised,
                                                              wanted):
    # Ray's node failing to start is simulated: ray.init raising what Ray raises then.
    from bfcl_safe.cli import main

    def failing_init(*args, **kwargs):
        raise raised

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", failing_init)
    result_dir = real_results_subset(tmp_path, 2)
    result = runner.invoke(main, ["evaluate", "--result-dir", str(result_dir), "--data", str(wheel()),
                                  "--score-dir", str(tmp_path / "score"), "--ray-address", address])
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(wanted), lines
    assert "Internal error" not in result.stderr and "\x1b" not in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "score").exists() or not any((tmp_path / "score").rglob("*.json"))


@pytest.mark.parametrize("arguments", [{"episode": {"not": "an episode"}}, {"entry_id": 5},
                                       {"entry_id": "multi_turn_base_0", "data": ["a", "list"]},
                                       {"entry_id": "multi_turn_base_0", "owner": 5}],
                         ids=["episode-dict", "entry-int", "data-list", "owner-int"])
def test_the_episode_actor_refuses_arguments_of_the_wrong_type(arguments):
    # The actor's class itself (Ray runs the same __init__ in the worker).
    from bfcl_safe.checker.play import ArgumentError
    from bfcl_safe.integrations.ray import _EpisodeActor

    with pytest.raises(ArgumentError):
        _EpisodeActor(**{"data": str(wheel()), **arguments})
