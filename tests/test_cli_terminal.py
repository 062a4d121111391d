"""Output nobody can hijack (issue 14 item 6): checker/terminal.py's escaping, the
progress line, and hostile names and texts through the CLI (CliRunner and a child
process): no control character reaches stdout or stderr."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bfcl_safe.cli import main
from bfcl_safe.checker.replay import ground_truth_as_fc, ground_truth_as_prompting
from bfcl_safe.checker.terminal import ProgressLine, json_shown, shown, shown_lines
from tests.checker_support import dataset
from tests.refenv import ROOT, wheel

#: What must never reach a terminal from a model or a file (newline aside, which our
#: own output uses between lines).
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                     "\ud800-\udfff]")

ESCAPES = [
    ("plain", "multi_turn_base_1", "multi_turn_base_1"),
    ("newline-and-tab", "a\nb\tc\rd", "a\\nb\\tc\\rd"),
    ("nul-and-bell", "x\x00y\x07", "x\\x00y\\x07"),
    ("ansi-clear-screen", "\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),
    ("ansi-colour", "\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
    ("osc-window-title", "\x1b]0;owned\x07", "\\x1b]0;owned\\x07"),
    ("osc-hyperlink-st", "\x1b]8;;http://x\x1b\\link", "\\x1b]8;;http://x\\x1b\\link"),
    ("del", "a\x7fb", "a\\x7fb"),
    ("c1-csi", "\x9b2J", "\\x9b2J"),
    ("c1-nel", "a\x85b", "a\\x85b"),
    ("bidi-override", "abc\u202eevil", "abc\\u202eevil"),
    ("bidi-isolate", "\u2066x\u2069", "\\u2066x\\u2069"),
    ("line-separator", "a\u2028b", "a\\u2028b"),
    ("non-utf8-byte", "bad-\udcff-name", "bad-\\xff-name"),
    ("lone-surrogate", "x\ud800y", "x\\ud800y"),
    ("accents-cjk-emoji-kept", "café 東京 🦍 ｌｓ", "café 東京 🦍 ｌｓ"),
    ("backslash-kept", "C:\\path\\x1b", "C:\\path\\x1b"),
]


@pytest.mark.parametrize("text, expected", [case[1:] for case in ESCAPES], ids=[case[0] for case in ESCAPES])
def test_shown_escapes_controls_visibly_and_keeps_unicode(text, expected):
    assert shown(text) == expected
    assert not CONTROL.search(shown(text)) and "\n" not in shown(text)


def test_shown_lines_keeps_only_newlines():
    assert shown_lines("row 1\x1b[2J\nrow 2\t\u202e") == "row 1\\x1b[2J\nrow 2\\t\\u202e"


@pytest.mark.parametrize("value", ["\x1b]0;t\x07", "a\x85\u202eb\udcff", "\x7f\u2028", "plain é"],
                         ids=["osc", "c1-bidi-surrogate", "del-separator", "plain"])
def test_json_shown_is_still_the_same_json(value):
    text = json.dumps({"k": value, "l": [value]}, ensure_ascii=False, indent=2)
    safe = json_shown(text)
    assert not CONTROL.search(safe)
    assert json.loads(safe) == {"k": value, "l": [value]}


@given(st.text(max_size=200))
def test_shown_never_leaves_a_control_character(text):
    assert not CONTROL.search(shown(text))
    assert "\n" not in shown(text)
    safe = json_shown(json.dumps(text, ensure_ascii=False))
    assert not CONTROL.search(safe) and json.loads(safe) == text


def test_progress_line_prints_messages_above_the_bar():
    stream = io.StringIO()
    with ProgressLine(stream, total=4) as bar:
        bar.update(1)
        bar.message("warning: a\x1b[2J message")
        bar.update(3)
    out = stream.getvalue()
    # The message sits on a line of its own, after the bar was cleared, and the bar is drawn again.
    cleared, rest = out.split("warning: ", 1)
    assert cleared.endswith("\r")
    assert rest.startswith("a\\x1b[2J message\n\rScoring [")
    assert "4/4" in out
    assert out.endswith("\r")  # left erased
    assert "\x1b" not in out


def test_progress_line_redraws_only_when_it_changes():
    stream = io.StringIO()
    bar = ProgressLine(stream, total=3000)
    bar.__enter__()
    for _ in range(3000):
        bar.update(1)
    assert stream.getvalue().count("\r") <= ProgressLine.STEPS + 2  # not one per entry
    assert stream.getvalue().endswith("3000/3000")


# --------------------------------------------------------------------------- through the command

#: A model folder name and result texts a hostile file could carry.
HOSTILE_MODEL = "evil\x1b]0;TITLE\x07\x1b[2J\u202e\x9b31m-model"
HOSTILE_FOLDER_TEXT = "\x1b[2J\x1b]0;pwned\x07\u202e"


def _hostile_tree(root: Path) -> Path:
    """Two models (one named with escape sequences), a few replayed entries each, and
    lines whose ids and argument values carry escape sequences."""
    data = dataset()
    result_dir = root / "result"
    for model, render in ((HOSTILE_MODEL, ground_truth_as_fc), ("plain-prompting", ground_truth_as_prompting)):
        folder = result_dir / model / "multi_turn"
        folder.mkdir(parents=True)
        lines = []
        for entry in data.entries("multi_turn_base")[:3]:
            result = render(data.ground_truth_for(entry["id"]), entry["involved_classes"])
            lines.append(json.dumps({"id": entry["id"], "result": result}))
        entry = data.entries("multi_turn_base")[3]
        result = render(data.ground_truth_for(entry["id"]), entry["involved_classes"])
        hostile_step = ([{"cd": json.dumps({"folder": HOSTILE_FOLDER_TEXT})}] if render is ground_truth_as_fc
                        else f"[cd(folder='{HOSTILE_FOLDER_TEXT}')]")  # raw escape characters in the text
        result[0] = [hostile_step, *result[0]]
        lines.append(json.dumps({"id": entry["id"], "result": result}, ensure_ascii=False))
        lines.append(json.dumps({"id": "multi_turn_base_\x1b[2J\u202e", "result": []}, ensure_ascii=False))
        lines.append("{not json \x1b]0;x\x07")
        (folder / "BFCL_v4_multi_turn_base_result.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return result_dir


def _streams(out) -> tuple[str, str]:
    return out.stdout, (out.stderr if hasattr(out, "stderr") else "")


def test_evaluate_and_explain_escape_hostile_names_and_texts(runner, tmp_path):
    result_dir = _hostile_tree(tmp_path)
    out = runner.invoke(main, ["evaluate", "--result-dir", str(result_dir), "--score-dir", str(tmp_path / "score"),
                               "--data", str(wheel()), "--partial-eval"])
    stdout, stderr = _streams(out)
    assert out.exit_code == 0, (stdout, stderr, out.exception)
    assert "evil\\x1b]0;TITLE\\x07\\x1b[2J\\u202e\\x9b31m-model" in stdout
    for text in (stdout, stderr):
        assert not CONTROL.search(text), text
    for as_json in ((), ("--json",)):
        for model in (HOSTILE_MODEL, "plain-prompting"):
            out = runner.invoke(main, ["explain", "--result-dir", str(result_dir), "--data", str(wheel()),
                                       "--model", model, "--id", "multi_turn_base_3", *as_json])
            stdout, stderr = _streams(out)
            assert out.exit_code == 0, (stdout, stderr, out.exception)
            for text in (stdout, stderr):
                assert not CONTROL.search(text), text
            if as_json:
                assert json.loads(stdout)["model"] == model  # the same value, escaped the JSON way
            else:
                assert "\\x1b[2J\\x1b]0;pwned\\x07\\u202e" in stdout
                assert model != HOSTILE_MODEL or "evil\\x1b]0;TITLE\\x07\\x1b[2J\\u202e\\x9b31m-model" in stdout


def test_an_error_message_quoting_a_hostile_path_is_escaped(runner, tmp_path):
    out = runner.invoke(main, ["evaluate", "--result-dir", str(tmp_path / "no\x1b[2Jsuch"), "--data", str(wheel())])
    stdout, stderr = _streams(out)
    assert out.exit_code == 2
    assert "no\\x1b[2Jsuch does not exist" in stderr
    assert not CONTROL.search(stdout + stderr)


def test_the_command_process_prints_no_control_character(tmp_path):
    """The same tree through ``python -m bfcl_safe`` in a child process: what a terminal gets."""
    result_dir = _hostile_tree(tmp_path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    for args in (["evaluate", "--result-dir", str(result_dir), "--score-dir", str(tmp_path / "score"),
                  "--partial-eval"],
                 ["explain", "--result-dir", str(result_dir), "--model", HOSTILE_MODEL, "--id", "multi_turn_base_3"]):
        done = subprocess.run([sys.executable, "-m", "bfcl_safe", *args, "--data", str(wheel())],
                              capture_output=True, env=env, cwd=tmp_path, timeout=120)
        stdout, stderr = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
        assert done.returncode == 0, stderr[-2000:]
        assert "Traceback" not in stderr
        assert not CONTROL.search(stdout), stdout
        assert not CONTROL.search(stderr), stderr


def test_a_non_utf8_model_folder_and_a_bad_score_file_are_shown_escaped(tmp_path):
    """A folder name that is not UTF-8 and a planted score file that is not JSON: the run
    completes, both are named with escapes, nothing else is lost."""
    result_dir = _hostile_tree(tmp_path)
    os.rename(os.path.join(os.fsencode(result_dir), b"plain-prompting"),
              os.path.join(os.fsencode(result_dir), b"bad-\xff-name"))
    planted = tmp_path / "score" / "planted" / "multi_turn" / "BFCL_v4_multi_turn_base_score.json"
    planted.parent.mkdir(parents=True)
    planted.write_text("not json \x1b[2J\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-m", "bfcl_safe", "evaluate", "--result-dir", str(result_dir),
                           "--score-dir", str(tmp_path / "score"), "--partial-eval", "--data", str(wheel())],
                          capture_output=True, env=env, cwd=tmp_path, timeout=120)
    stdout, stderr = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert done.returncode == 0, stderr[-2000:]
    assert "Traceback" not in stderr and "Internal error" not in stderr
    assert not CONTROL.search(stdout) and not CONTROL.search(stderr)
    assert "bad-\\xff-name" in stdout + stderr
    assert re.search(r"planted/multi_turn/BFCL_v4_multi_turn_base_score\.json: .*not JSON", stderr), stderr
    assert (tmp_path / "score" / HOSTILE_MODEL / "multi_turn" / "BFCL_v4_multi_turn_base_score.json").is_file()


def test_messages_are_printed_cleanly_above_the_progress_bar(tmp_path):
    """On a terminal (stderr is a pseudo-terminal here) the progress bar is drawn in place
    and every message lands on a line of its own: what a terminal finally shows on each
    line (the text after its last carriage return) is a whole message or the bar."""
    import pty

    result_dir = _hostile_tree(tmp_path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    leader, follower = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "bfcl_safe", "evaluate", "--result-dir", str(result_dir),
                               "--score-dir", str(tmp_path / "score"), "--partial-eval", "--data", str(wheel())],
                              stdout=subprocess.PIPE, stderr=follower, env=env, cwd=tmp_path, timeout=120)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the other side is closed and everything was read
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    assert done.returncode == 0
    screen = b"".join(chunks).decode("utf-8").replace("\r\n", "\n")
    assert "Scoring [" in screen  # the bar was drawn
    shown_lines_ = [line.rsplit("\r", 1)[-1] for line in screen.split("\n")]
    messages = [line for line in shown_lines_ if line.strip()]
    assert any(line.startswith("warning: ") for line in messages)
    for line in messages:
        assert line.startswith(("warning: ", "note: ")), repr(line)
        assert "Scoring [" not in line, repr(line)
    assert not CONTROL.search(screen.replace("\r", ""))
