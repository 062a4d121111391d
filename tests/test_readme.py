"""Every code block of README.md does what it says, offline.

Python blocks run, one child process each, in a folder holding a result tree (the real
results, whole files) and with the dataset cache filled from the pinned wheel (``bfcl-safe
data fetch --wheel``); the OpenAI-compatible endpoint the framework snippets name
(``http://localhost:8000/v1``) is the shipped scripted server (``python -m
bfcl_safe.checker.scripted_server``) on a free port of its own, substituted for port 8000.
Every proxy points nowhere: nothing is downloaded. Bash blocks: each ``bfcl-safe`` command
line names a command and options that exist.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bfcl_safe.cli import main
from tests.refenv import REAL_RESULTS, ROOT, wheel
from tests.test_serve_env import serve_python

README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.M | re.S)
PYTHON_BLOCKS = [text for kind, text in BLOCK.findall(README) if kind == "python"]
BASH_BLOCKS = [text for kind, text in BLOCK.findall(README) if kind == "bash"]
OFFLINE = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
           "https_proxy": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9",
           "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", "OPENAI_API_KEY": "offline",
           "RAY_USAGE_STATS_ENABLED": "0", "INSPECT_LOG_DIR": "logs"}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("readme")
    cache = root / "cache"
    env = {**os.environ, **OFFLINE, "BFCL_SAFE_CACHE": str(cache), "TIKTOKEN_CACHE_DIR": str(root / "tiktoken"),
           "PYTHONPATH": str(ROOT)}
    out = CliRunner(env={"BFCL_SAFE_CACHE": str(cache)}).invoke(main, ["data", "fetch", "--wheel", str(wheel())])
    assert out.exit_code == 0, out.output
    shutil.copytree(REAL_RESULTS / "gpt-oss-120b-vllm-0.10.2" / "result", root / "result")
    server = subprocess.Popen([sys.executable, "-m", "bfcl_safe.checker.scripted_server", "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = re.match(r"serving (\S+) ", server.stdout.readline()).group(1)
        yield root, env, url
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_readme_has_the_blocks_this_file_runs():
    assert len(PYTHON_BLOCKS) >= 5 and len(BASH_BLOCKS) >= 5  # (the framework sections add theirs)


@pytest.mark.parametrize("number", range(len(PYTHON_BLOCKS)))
def test_python_block_runs(workspace, number):
    root, env, url = workspace
    code = PYTHON_BLOCKS[number].replace("http://localhost:8000/v1", url)
    # A block that defines test functions (the Hypothesis example) has them run too.
    # (with a small budget and no health checks: the machine is shared, the point is that it runs)
    code += ("\nfor _name, _value in list(globals().items()):\n    if _name.startswith('test_') and callable(_value):\n"
             "        from hypothesis import HealthCheck, settings\n"
             "        settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))(_value)()\n")
    # openenv (serve) and Inspect's openai providers cannot share an environment with
    # verifiers 0.4: their snippets run in the tests' second environment (tests/test_serve_env.py).
    second = "integrations.serve" in code or "inspect_ai" in code
    python = str(serve_python()) if second else sys.executable
    done = subprocess.run([python, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, (PYTHON_BLOCKS[number], done.stdout[-2000:], done.stderr[-3000:])
    if "Episode.from_entry" in code:
        assert done.stdout.startswith("True dict_keys(")  # the ground truth passes
    if "score_tree_on_ray" in code:
        assert done.stdout.strip().endswith("data_multi_turn.csv")


def _commands() -> list[list[str]]:
    commands = []
    for block in BASH_BLOCKS:
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            line = line.split(" #")[0].strip().rstrip("&").strip()
            if line.startswith("bfcl-safe "):
                commands.append(shlex.split(line)[1:])
    return commands


@pytest.mark.parametrize("args", _commands(), ids=lambda args: " ".join(args)[:60])
def test_bash_command_lines_name_real_commands_and_options(args):
    group: click.Group = main
    context = click.Context(main)
    command = group.get_command(context, args[0])
    rest = args[1:]
    while isinstance(command, click.Group):
        command, rest = command.get_command(context, rest[0]), rest[1:]
    assert command is not None, args
    names = {name for param in command.params for name in getattr(param, "opts", []) + getattr(param, "secondary_opts", [])}
    for token in rest:
        if token.startswith("-") and token not in ("-h",):
            option = token.split("=")[0]
            if option.startswith("[") or option in ("-T", "-M"):
                continue
            assert option in names, (args, option)
