"""Shipped code reads and writes files only through the two doors: ``checker/inputs.py``
(every untrusted file read: regular files only, size caps, bounded zip members and JSON
depth) and ``checker/outputs.py`` (every file created: no symlink followed, fresh temporary
names); JSON text is decoded by ``checker/codec.py`` (depth-bounded where it comes from a
file). Checked on the syntax tree of every shipped module, like the dynamic-code policy
(tests/test_shipped_code_policy.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.test_shipped_code_policy import ROOT, SHIPPED

#: The doors: the only modules that open, read or write files.
FILE_DOORS = {"checker/inputs.py", "checker/outputs.py"}
#: The JSON codec: the only module that decodes JSON text of files.
JSON_DOORS = {"checker/codec.py"}

#: Calls ``module.name(...)`` that open, read, write or decode a file.
FILE_CALLS = {
    ("os", "open"), ("os", "fdopen"), ("io", "open"), ("codecs", "open"), ("gzip", "open"), ("bz2", "open"),
    ("lzma", "open"), ("tarfile", "open"), ("zipfile", "ZipFile"), ("shutil", "copyfile"), ("shutil", "copy"),
    ("shutil", "copy2"), ("shutil", "copytree"), ("tempfile", "mkstemp"), ("tempfile", "NamedTemporaryFile"),
    ("tempfile", "TemporaryFile"), ("json", "load"), ("json", "dump"),
}
#: Methods of ``pathlib.Path`` (and of file-like objects) that open, read or write a file.
FILE_METHODS = {"open", "read_text", "read_bytes", "write_text", "write_bytes"}
#: Receivers whose ``.open``/``.read_bytes``/... are not files: the doors themselves, and
#: ``Dataset.open`` (a constructor: it reads through ``inputs``).
METHOD_RECEIVERS_ALLOWED = {"inputs", "outputs", "Dataset", "cls"}

#: Modules outside the doors allowed one kind of call, each with its reason.
EXCEPTIONS: dict[str, dict[str, str]] = {
    # ``load_long_context`` reads ``long_context.py`` of an installed reference package for
    # the tests' backend harness only (no command calls it: the commands read that file
    # through ``Dataset``, i.e. ``inputs``); ``backends/`` may import nothing but ``interp``.
    "backends/long_context.py": {".read_text": "test harness helper, not reached by any command"},
    # Decoders decode JSON inside a model's step text (a string already inside a result
    # line, inside the entry's fault boundary where RecursionError fails the entry): not a file.
    "checker/decoders/base.py": {"json.loads": "model step text, not a file"},
    "checker/decoders/json_text.py": {"json.loads": "model step text, not a file"},
    # Text frames sent back by bfcl-safe's own forked scorers (``--jobs N``): not a file.
    "checker/scoring.py": {"json.loads": "frames of our own forked processes"},
    # A tool call's argument text in a result line being checked (demo/prompting checks).
    "generate/decode_errors.py": {"json.loads": "a tool call's argument text, inside the entry's boundary"},
}


def _calls(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            found.append((node.lineno, "open"))
        elif isinstance(func, ast.Attribute):
            receiver = func.value.id if isinstance(func.value, ast.Name) else None
            if receiver is not None and (receiver, func.attr) in FILE_CALLS:
                found.append((node.lineno, f"{receiver}.{func.attr}"))
            elif receiver == "json" and func.attr == "loads":
                found.append((node.lineno, "json.loads"))
            elif func.attr in FILE_METHODS and receiver not in METHOD_RECEIVERS_ALLOWED:
                found.append((node.lineno, f".{func.attr}"))
    return found


@pytest.mark.parametrize("path", SHIPPED, ids=[str(p.relative_to(ROOT)) for p in SHIPPED])
def test_files_are_opened_only_through_the_doors(path: Path) -> None:
    name = path.relative_to(ROOT).as_posix()
    allowed = EXCEPTIONS.get(name, {})
    found = []
    for line, call in _calls(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if name in FILE_DOORS:
            continue  # (the doors themselves)
        if call == "json.loads" and name in JSON_DOORS:
            continue
        if call in allowed:
            continue
        found.append(f"{name}:{line}: {call}")
    assert found == [], "open, read, write or decode files through checker/inputs.py and checker/outputs.py"


def test_the_check_finds_what_it_looks_for() -> None:
    source = ("import os, json, zipfile\nfrom pathlib import Path\nopen('x')\nos.open('x', 0)\n"
              "Path('x').read_text()\np.write_bytes(b'')\njson.loads(t)\njson.load(f)\nzipfile.ZipFile(f)\n"
              "inputs.read_bytes(p, k)\nDataset.open(p)\n")
    assert [call for _, call in _calls(ast.parse(source))] == [
        "open", "os.open", ".read_text", ".write_bytes", "json.loads", "json.load", "zipfile.ZipFile"]


def test_every_exception_is_still_needed() -> None:
    """An exception whose module no longer makes that call is removed from the list."""
    for name, allowed in EXCEPTIONS.items():
        calls = {call for _, call in _calls(ast.parse((ROOT / name).read_text(encoding="utf-8")))}
        assert set(allowed) <= calls, name
