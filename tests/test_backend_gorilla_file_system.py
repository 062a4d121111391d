"""GorillaFileSystem: ours against the reference (tool set, ground truth, fuzzing, quirks)."""

from __future__ import annotations

import json

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from bfcl_safe.backends.gorilla_file_system import Directory, File, GorillaFileSystem
from tests.backend_harness import (
    assert_same_signatures,
    assert_same_state,
    assert_same_tool_set,
    call,
    dataset,
    long_context_data,
    make_ours,
    make_reference,
    reference_public_methods,
    replay_ground_truth,
)

CLASS = "GorillaFileSystem"


def test_same_tool_set():
    assert_same_tool_set(CLASS)


def test_same_signatures():
    assert_same_signatures(CLASS)


def test_ground_truth_replay():
    n = replay_ground_truth({CLASS})
    print(f"{CLASS}: {n} ground-truth calls compared")
    assert n > 0


def test_ground_truth_replay_long_context():
    n = replay_ground_truth({CLASS}, long_context_only=True)
    print(f"{CLASS}: {n} long-context ground-truth calls compared")
    assert n > 0


# -- helpers -----------------------------------------------------------------------


def _configs() -> list[dict]:
    """Distinct initial configs of the class in the dataset, plus the empty one (default root)."""
    seen, out = set(), [{}]
    for entry, _ in dataset():
        config = entry["initial_config"].get(CLASS)
        if config is None:
            continue
        key = json.dumps(config, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(config)
    return out


def _pair(config: dict | None = None, long_context: bool = False):
    config = {} if config is None else config
    return make_ours(CLASS, config, long_context), make_reference(CLASS, config, long_context)


def _run_both(ours, ref, steps):
    """Run ``steps`` ((name, args, kwargs) triples) on both; return the result strings."""
    results = []
    for name, args, kwargs in steps:
        got, expected = call(ours, name, args, kwargs), call(ref, name, args, kwargs)
        assert got == expected, f"{name}{args}{kwargs}: ours {got!r} != ref {expected!r}"
        assert_same_state(ours, ref, f"{name}{args}{kwargs}")
        results.append(got)
    return results


SMALL_TREE = {
    "root": {
        "alex": {
            "type": "directory",
            "contents": {
                "notes.txt": {"type": "file", "content": "b line\na line\nc word word"},
                "old.txt": {"type": "file", "content": "a line\nX\nc word"},
                "docs": {
                    "type": "directory",
                    "contents": {
                        "inner.md": {"type": "file", "content": "deep"},
                        "sub": {"type": "directory", "contents": {}},
                    },
                },
                "empty": {"type": "directory", "contents": {}},
            },
        }
    }
}


# -- Hypothesis state machine ----------------------------------------------------

WRONG_TYPES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.sampled_from(["a", ".", "/", "x"]), max_size=2),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 2), max_size=2),
    st.tuples(st.sampled_from(["a", ".", "docs"])),
    st.sets(st.sampled_from(["a", "."]), max_size=1),
)
SPECIAL_NAMES = [".", "..", "/", "", "//", "./", "../", "a/b", "x|y", "q?", ".hidden", "new", "new.txt"]
PLAIN_TEXT = st.text(alphabet="ab.x/ \n", max_size=6)


def _tree_names(ref) -> tuple[list, list]:
    """(names in the reference's current directory, names one level below it)."""
    here = list(ref._current_dir.contents)
    below = []
    for item in ref._current_dir.contents.values():
        if hasattr(item, "parent"):  # a reference Directory
            below.extend(item.contents)
    return here, below


@st.composite
def item_names(draw, ref, wrong: bool = True):
    here, below = _tree_names(ref)
    # Mostly names that exist here, so that the tools get past their "missing" checks.
    # (A weighted list of kinds: ``st.one_of`` does not weight repeated branches.)
    kinds = ["here"] * 12 * bool(here) + ["below"] * 2 * bool(below) + ["special", "special", "plain"]
    kinds += ["wrong"] * wrong
    kind = draw(st.sampled_from(kinds))
    if kind == "here":
        return draw(st.sampled_from(here))
    if kind == "below":
        return draw(st.sampled_from(below))
    if kind == "special":
        return draw(st.sampled_from(SPECIAL_NAMES))
    if kind == "plain":
        return draw(PLAIN_TEXT)
    return draw(WRONG_TYPES)


@st.composite
def paths(draw, ref):
    """A path for find/cd: names, absolute and relative chains of existing directories, junk."""
    here, below = _tree_names(ref)
    known = [n for n in here + below + list(ref.root.contents) if isinstance(n, str)]  # tuple names exist too
    parts = draw(st.lists(st.sampled_from(known + [".", ".."]), max_size=3))
    chain = "/".join(parts)
    lead = draw(st.sampled_from(["", "/", "./"]))
    trail = draw(st.sampled_from(["", "/"]))
    return draw(st.one_of(st.just(lead + chain + trail), item_names(ref)))


@st.composite
def contents(draw):
    return draw(st.one_of(
        st.text(alphabet="ab \n\tx.", max_size=12),
        st.sampled_from(["", "one\ntwo\nthree\n", "é ü\r\nz", "\ud800"]),
        WRONG_TYPES,
    ))


FLAGS = st.one_of(st.booleans(), st.none(), st.integers(-1, 2), st.sampled_from(["", "yes", []]))
LINE_COUNTS = st.one_of(st.integers(-4, 12), st.floats(-2, 3), st.none(), st.sampled_from(["2", True, [1]]))
WC_MODES = st.sampled_from(["l", "w", "c"] * 3 + ["x", "", "L", "wrong"]).flatmap(
    lambda mode: WRONG_TYPES if mode == "wrong" else st.just(mode)
)


@st.composite
def tool_calls(draw, ref):
    """(name, args, kwargs) for one random call on the reference's current state."""
    name = draw(st.sampled_from(sorted(reference_public_methods(ref))))
    names = item_names(ref)
    params = {
        "pwd": [],
        "ls": [("a", FLAGS, False)],
        "cd": [("folder", paths(ref), True)],
        "mkdir": [("dir_name", names, True)],
        "touch": [("file_name", names, True)],
        "echo": [("content", contents(), True), ("file_name", st.one_of(st.none(), names), False)],
        "cat": [("file_name", names, True)],
        "find": [("path", paths(ref), False), ("name", st.one_of(st.none(), PLAIN_TEXT, WRONG_TYPES), False)],
        "wc": [("file_name", names, True), ("mode", WC_MODES, False)],
        "sort": [("file_name", names, True)],
        "grep": [("file_name", names, True), ("pattern", st.one_of(PLAIN_TEXT, WRONG_TYPES), True)],
        "du": [("human_readable", FLAGS, False)],
        "tail": [("file_name", names, True), ("lines", LINE_COUNTS, False)],
        "diff": [("file_name1", names, True), ("file_name2", names, True)],
        "mv": [("source", names, True), ("destination", names, True)],
        "rm": [("file_name", names, True)],
        "rmdir": [("dir_name", names, True)],
        "cp": [("source", names, True), ("destination", names, True)],
    }[name]
    args, kwargs = [], {}
    positional = draw(st.booleans())
    for param, strategy, required in params:
        # Occasionally leave out a required argument (TypeError text must match).
        if not draw(st.booleans() if not required else st.sampled_from([True] * 15 + [False])):
            positional = False
            continue
        value = draw(strategy)
        if positional:
            args.append(value)
        else:
            kwargs[param] = value
    extra = draw(st.sampled_from([None] * 12 + ["kw", "pos"]))
    if extra == "kw":
        kwargs["bogus"] = 1
    elif extra == "pos":
        args = [*args, *[kwargs.pop(p) for p, _, _ in params if p in kwargs], "extra"]
    return name, tuple(args), kwargs


class FileSystemMachine(RuleBasedStateMachine):
    @initialize(data=st.data())
    def build(self, data):
        config = data.draw(st.sampled_from(_configs()), label="config")
        long_context = data.draw(st.booleans(), label="long_context")
        self.ours, self.ref = _pair(config, long_context)
        assert_same_state(self.ours, self.ref, "after loading")

    @rule(data=st.data())
    def random_call(self, data):
        name, args, kwargs = data.draw(tool_calls(self.ref), label="call")
        got = call(self.ours, name, args, kwargs)
        expected = call(self.ref, name, args, kwargs)
        assert got == expected, f"{name}{args}{kwargs}:\n ours: {got[:2000]}\n  ref: {expected[:2000]}"
        assert_same_state(self.ours, self.ref, f"{name}{args}{kwargs}")

    @invariant()
    def same_current_directory(self):
        if hasattr(self, "ref"):
            assert repr(self.ours._current_dir) == repr(self.ref._current_dir)
            assert call(self.ours, "pwd") == call(self.ref, "pwd")


TestFileSystemMachine = FileSystemMachine.TestCase
TestFileSystemMachine.settings = settings(TestFileSystemMachine.settings, stateful_step_count=30)


# -- targeted quirks -------------------------------------------------------------

QUIRKS = {
    "pwd-default-root-double-slash": (None, [("pwd", (), {})]),
    "pwd-includes-root-name": (SMALL_TREE, [("cd", ("docs",), {}), ("pwd", (), {})]),
    "cd-returns-name-not-path": (SMALL_TREE, [("cd", ("docs",), {}), ("cd", ("/",), {})]),
    "cd-dotdot-returns-empty-dict": (SMALL_TREE, [("cd", ("docs",), {}), ("cd", ("..",), {}), ("cd", ("..",), {})]),
    "cd-nested-path-refused": (SMALL_TREE, [("cd", ("docs/x",), {}), ("cd", ("../",), {}), ("cd", ("",), {})]),
    "cd-wrong-type": (SMALL_TREE, [("cd", (None,), {}), ("cd", (3,), {}), ("cd", (["docs"],), {})]),
    "ls-hidden-and-truthiness": (SMALL_TREE, [("touch", (".h",), {}), ("ls", (), {}), ("ls", ("no",), {})]),
    "mkdir-invalid-and-wrong-type": (SMALL_TREE, [("mkdir", ("a:b",), {}), ("mkdir", (5,), {}), ("mkdir", (["x"],), {})]),
    "mkdir-empty-name-allowed": (SMALL_TREE, [("mkdir", ("",), {}), ("find", ("///",), {})]),
    "echo-empty-name-prints": (SMALL_TREE, [("echo", ("hi", ""), {}), ("echo", ("hi", []), {})]),
    "echo-to-directory-attribute-error": (SMALL_TREE, [("echo", ("hi", "docs"), {})]),
    "echo-non-str-content-stored": (SMALL_TREE, [
        ("echo", ([1, 2], "notes.txt"), {}), ("cat", ("notes.txt",), {}), ("wc", ("notes.txt",), {}), ("du", (), {}),
    ]),
    "dot-file-resolves-to-directory": (SMALL_TREE, [
        ("touch", (".",), {}), ("cat", (".",), {}), ("echo", ("x", "."), {}), ("wc", (".",), {}),
        ("rmdir", (".",), {}), ("rm", (".",), {}),
    ]),
    "mv-dot-makes-cycle": (SMALL_TREE, [("touch", (".",), {}), ("mv", (".", "loop"), {}), ("ls", (), {}), ("du", (), {})]),
    "tail-zero-and-negative": (SMALL_TREE, [
        ("tail", ("notes.txt", 0), {}), ("tail", ("notes.txt", -1), {}), ("tail", ("notes.txt", 1.5), {}),
        ("tail", ("notes.txt", "2"), {}), ("tail", ("missing", "2"), {}),
    ]),
    "wc-mode-checked-first": (SMALL_TREE, [("wc", ("missing", "z"), {}), ("wc", (["x"], "w"), {}), ("wc", ("docs", "c"), {})]),
    "diff-short-circuit": (SMALL_TREE, [("diff", ("missing", ["x"]), {}), ("diff", ("notes.txt", "old.txt"), {})]),
    "sort-grep-no-validation": (SMALL_TREE, [("sort", ("notes.txt",), {}), ("grep", ("notes.txt", "line"), {}), ("grep", ("notes.txt", 1), {})]),
    "du-human-readable": (SMALL_TREE, [("du", (True,), {}), ("du", (), {"human_readable": 0})]),
    "find-from-root-and-errors": (SMALL_TREE, [
        ("find", ("/",), {}), ("find", ("/alex",), {}), ("find", ("docs/",), {"name": "in"}), ("find", (None,), {}),
        ("find", ("nowhere",), {}), ("find", (".",), {"name": 3}),
    ]),
    "mv-rename-directory-children-keep-parent": (SMALL_TREE, [
        ("mv", ("docs", "papers"), {}), ("cd", ("papers",), {}), ("pwd", (), {}), ("touch", ("t",), {}),
        ("cd", ("..",), {}), ("pwd", (), {}),
    ]),
    "mv-rename-stale-parent": (SMALL_TREE, [
        ("mv", ("docs", "papers"), {}), ("cd", ("papers",), {}), ("cd", ("sub",), {}), ("cd", ("..",), {}),
        ("pwd", (), {}), ("touch", ("seen-by-both",), {}), ("cd", ("..",), {}), ("find", (), {}),
    ]),
    "mv-into-directory": (SMALL_TREE, [("mv", ("notes.txt", "docs"), {}), ("mv", ("old.txt", "notes.txt"), {}), ("mv", ("old.txt", "docs"), {})]),
    "mv-errors": (SMALL_TREE, [("mv", ("old.txt", "a/b"), {}), ("mv", ("old.txt", 5), {}), ("mv", ("x", 5), {}), ("mv", ("docs", "docs"), {})]),
    "cp-existing-name-value-error": (SMALL_TREE, [("cp", ("old.txt", "docs"), {}), ("cp", ("old.txt", "docs"), {}), ("cp", ("docs", "empty"), {}), ("cp", ("docs", "empty"), {})]),
    "cp-directory-shares-children": (SMALL_TREE, [
        ("cp", ("docs", "copy"), {}), ("cd", ("copy",), {}), ("echo", ("changed", "inner.md"), {}),
        ("cd", ("..",), {}), ("cd", ("docs",), {}), ("cat", ("inner.md",), {}),
    ]),
    "cp-directory-into-itself": (SMALL_TREE, [("cp", ("docs", "docs"), {}), ("find", (), {})]),
    "rm-and-rmdir": (SMALL_TREE, [("rmdir", ("docs",), {}), ("rmdir", ("old.txt",), {}), ("rm", ("docs",), {}), ("rmdir", ("empty",), {})]),
    "bad-call-shapes": (SMALL_TREE, [("ls", (), {"x": 1}), ("cd", (), {}), ("pwd", (1,), {}), ("echo", (), {"file_name": "a"})]),
}


@pytest.mark.parametrize("config, steps", list(QUIRKS.values()), ids=list(QUIRKS))
@pytest.mark.parametrize("long_context", [False, True], ids=["plain", "long"])
def test_quirk_matches_reference(config, steps, long_context):
    ours, ref = _pair(config, long_context)
    _run_both(ours, ref, steps)


def test_from_config_does_not_mutate_config():
    config = {"root": {"r": {"type": "directory", "contents": {"f": {"type": "file", "content": ["x"]}}}}}
    before = json.dumps(config)
    GorillaFileSystem.from_config(config, long_context=True, long_context_data=long_context_data())
    assert json.dumps(config) == before


def test_long_context_requires_data():
    with pytest.raises(ValueError, match="long_context_data"):
        GorillaFileSystem.from_config(SMALL_TREE, long_context=True)


@pytest.mark.parametrize(
    "left, right, equal",
    [
        (File("a", "x"), File("a", "x"), True),
        (File("a", "x"), File("a", "y"), False),
        (Directory("d", None), Directory("d", Directory("p")), True),  # parent is ignored
        (Directory("d"), File("d"), False),
    ],
    ids=["file-equal", "file-content-differs", "directory-ignores-parent", "directory-vs-file"],
)
def test_equality_like_reference(left, right, equal):
    assert (left == right) is equal


def test_items_unhashable_like_reference():
    with pytest.raises(TypeError):
        hash(File("a"))
    with pytest.raises(TypeError):
        hash(Directory("a"))


def test_doubling_copies_are_refused_before_the_tree_explodes():
    """cp shares children, so copy-and-move doubles the tree each round: 40 rounds would
    hold 2**40 entries once expanded (compared and printed), where the reference hangs."""
    import time

    from bfcl_safe.interp import MethodTable, run_call

    fs = make_ours("GorillaFileSystem", {"root": {"w": {"type": "directory", "contents": {
        "d": {"type": "directory", "contents": {"f.txt": {"type": "file", "content": "x"}}}}}}})
    table = MethodTable([fs])
    started = time.monotonic()
    results = []
    for i in range(40):
        results.append(run_call(f"cp(source='d', destination='e{i}')", table))
        run_call(f"mv(source='e{i}', destination='d')", table)
    assert any("refused: the file system would hold more than" in r for r in results)
    assert results[0] == "{\"result\": \"'d' copied to 'e0'\"}"
    assert len(repr(fs.public_state()["root"])) < 50_000_000
    assert time.monotonic() - started < 30
