"""Result lines are read key by key, their ``inference_log`` kept as validated JSON text.

``loads_result_line`` must accept and reject exactly what ``json.loads`` does, with the
same error, and give the same values; ``dumps_line`` must write a line that decodes to
the same record as encoding the decoded value would (byte for byte when the result file
held the log as ``json.dumps(..., ensure_ascii=False)`` wrote it, as BFCL's generator does).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bfcl_safe.checker import result_files
from bfcl_safe.checker import codec
from bfcl_safe.checker.codec import RawJSON, dumps_line, loads_result_line, raw_value
from tests.refenv import REAL_RESULTS


def _loads_with_pieces(text: str):
    """loads_result_line also recording the line's pieces (element by element through the
    inference log): it must read exactly as it does without them."""
    return loads_result_line(text, pieces=[])


_readers = pytest.mark.parametrize("loads", [loads_result_line, _loads_with_pieces], ids=["plain", "pieces"])

_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=6)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=15,
)
_keys = st.sampled_from(["id", "result", "inference_log", "latency", "traceback", "inference_logs", ""])
_lines = st.tuples(
    st.lists(st.tuples(_keys, _json), max_size=6),
    st.booleans(),  # ensure_ascii
    st.sampled_from([None, 0, 2]),  # indent: the text may span "lines" and carry whitespace
    st.sampled_from([(", ", ": "), (",", ":"), (" , ", " : ")]),
    st.sampled_from(["", " ", "\n", " \t\r\n"]),
)


def _text(pairs, ensure_ascii, indent, separators, padding) -> str:
    # Duplicate keys are written as they come (json.dumps of a dict could not hold them).
    body = separators[0].join(
        json.dumps(key) + separators[1] + json.dumps(value, ensure_ascii=ensure_ascii, indent=indent)
        for key, value in pairs
    )
    return f"{padding}{{{padding}{body}{padding}}}{padding}"


def _same(ours, expected) -> bool:
    """Equal values (NaN, which a line may hold, is not equal to itself: compared as JSON)."""
    return ours == expected or json.dumps(ours) == json.dumps(expected)


def _materialised(value):
    if isinstance(value, dict):
        return {k: v.value() if isinstance(v, RawJSON) else v for k, v in value.items()}
    return value


@_readers
@settings(max_examples=300)
@given(_lines)
def test_same_values_as_json_loads(loads, case):
    text = _text(*case)
    ours = loads(text)
    assert _same(_materialised(ours), json.loads(text))
    if isinstance(ours, dict) and "inference_log" in ours:
        assert isinstance(ours["inference_log"], RawJSON)
    if isinstance(ours, dict) and "result" in ours:  # the result's text, for score files
        assert json.loads(raw_value(ours, "result").text) == ours["result"]


def _error(function, text):
    try:
        function(text)
    except Exception as exc:  # noqa: BLE001 - the point is comparing what is raised
        return type(exc), str(exc)
    return None


@_readers
@settings(max_examples=500)
@given(_lines, st.data())
def test_broken_lines_fail_exactly_like_json_loads(loads, case, data):
    text = _text(*case)
    cut = data.draw(st.integers(0, len(text)))
    junk = data.draw(st.sampled_from(["", "}", "]", ",", '"', ":", "x", "{", "[", "\\", "\x00", "NaN", " "]))
    broken = text[:cut] + junk + text[cut + data.draw(st.integers(0, 3)):]
    expected = _error(json.loads, broken)
    assert _error(loads, broken) == expected
    if expected is None:
        assert _same(_materialised(loads(broken)), json.loads(broken))


@pytest.mark.parametrize("text", [
    "", " ", "[]", "1", '"s"', "{", "{}", "{} {}", '{"a": 1,}', '{"inference_log": }', '{"inference_log": [1,]}',
    '{"inference_log": NaN}', '\ufeff{"id": 1}', '{"inference_log": ' + "[" * 100_000 + "]" * 100_000 + "}",
    '{"id": "x", "inference_log": "a\\ud800b"}', '{"id": 1} x',
])
@_readers
def test_edge_cases_match_json_loads(loads, text):
    expected = _error(json.loads, text)
    assert _error(loads, text) == expected
    if expected is None:
        assert _same(_materialised(loads(text)), json.loads(text))


_deep_json = st.recursive(
    st.one_of(st.none(), st.integers(), st.text("[]{}\"\\ab", max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text("[]{k", max_size=3), inner, max_size=3)),
    max_leaves=40,
)


@settings(max_examples=300)
@given(st.lists(st.tuples(_keys, _deep_json), max_size=5), st.booleans(), st.sampled_from([None, 1]),
       st.sampled_from([(", ", ": "), (",", ":")]), st.sampled_from(["", " \n"]))
def test_the_pieces_hold_every_value_and_give_the_line_depth(pairs, ensure_ascii, indent, separators, padding):
    text = _text(pairs, ensure_ascii, indent, separators, padding)
    pieces: list = []
    loads_result_line(text, pieces=pieces)
    depth = codec.nesting_depth(text)
    ends = [0]
    for start, end, above in pieces:
        assert start >= ends[-1] and above in (1, 2)  # in order, apart
        json.loads(text[start:end])  # each piece is one JSON value
        ends.append(end)
    assert max([1] + [above + codec.nesting_depth(text[start:end]) for start, end, above in pieces]) == depth
    if pieces:  # (none only for "{}", which parse_line then counts whole)
        for limit in range(depth + 2):
            assert codec.deeper_in_pieces(text, pieces, limit) == (depth > limit)


@settings(max_examples=300)
@given(_json, _json, st.booleans())
def test_raw_value_is_written_as_its_text(log, other, ensure_ascii):
    text = json.dumps({"id": "multi_turn_base_0", "inference_log": log}, ensure_ascii=ensure_ascii)
    record = {"id": "multi_turn_base_0", "error": other, "inference_log": loads_result_line(text)["inference_log"],
              "first_failing_turn": 0}
    line = dumps_line(record)
    plain = dict(record, inference_log=log)
    assert json.loads(line) == json.loads(json.dumps(plain))
    if not ensure_ascii:
        assert line == dumps_line(plain)  # byte for byte when the log was written like the reference writes


def test_real_result_lines_round_trip_byte_for_byte():
    paths = sorted((REAL_RESULTS / "gpt-oss-120b-vllm-0.10.2" / "result").rglob("*_result.json"))
    assert paths
    checked = 0
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            ours, plain = loads_result_line(line), json.loads(line)
            assert _materialised(ours) == plain
            record = {"id": plain["id"], "inference_log": ours.get("inference_log", ""), "first_failing_turn": 0}
            assert dumps_line(record) == dumps_line(dict(record, inference_log=plain.get("inference_log", "")))
            checked += 1
    assert checked == 600


def test_several_raw_values_are_each_written_as_their_text():
    record = {"id": "x", "prompt": RawJSON('{"a": [1, 2]}'), "error": {"k": "RawJSON"},
              "inference_log": RawJSON('[{"role": "user"}]'), "first_failing_turn": 0}
    line = dumps_line(record)
    assert line == ('{"id": "x", "prompt": {"a": [1, 2]}, "error": {"k": "RawJSON"}, '
                    '"inference_log": [{"role": "user"}], "first_failing_turn": 0}')


@settings(max_examples=300)
@given(st.lists(st.tuples(_keys, _deep_json), max_size=5), st.booleans(), st.sampled_from([(", ", ": "), (",", ":")]),
       st.integers(0, 12), st.booleans())
def test_a_line_is_refused_for_its_depth_at_any_limit(pairs, ensure_ascii, separators, limit, broken):
    # With small limits, parse_line meets pieces its bound lets through and pieces it counts
    # exactly, on deep and shallow lines, valid ones and ones cut short.
    text = _text([("id", "multi_turn_base_0"), ("result", [])] + pairs, ensure_ascii, None, separators, "")
    if broken:
        text = text[:-1]
    depth = codec.nesting_depth(text)
    saved = result_files.MAX_RESULT_LINE_DEPTH
    result_files.MAX_RESULT_LINE_DEPTH = limit
    try:
        result_files.parse_line(text, "multi_turn_base")
    except result_files.LineProblem as exc:
        assert (f"nested {depth:,} levels deep" in str(exc)) == (depth > limit), (str(exc), depth, limit)
    else:
        assert depth <= limit and not broken
    finally:
        result_files.MAX_RESULT_LINE_DEPTH = saved


def test_a_long_raw_array_is_one_piece_and_its_depth_still_counts():
    # A hostile [0,0,0,...] log must not cost a piece (and a Python step) per element.
    from bfcl_safe.checker.codec import MAX_ELEMENT_PIECES

    elements = ["0"] * (MAX_ELEMENT_PIECES * 3)
    line = '{"id": "multi_turn_base_0", "result": [], "inference_log": [' + ", ".join(elements) + "]}"
    pieces: list = []
    assert _materialised(loads_result_line(line, pieces=pieces)) == json.loads(line)
    assert len(pieces) == 3 and pieces[-1][2] == 1 and line[pieces[-1][0]] == "["  # the log, whole
    assert result_files.parse_line(line, "multi_turn_base")["id"] == "multi_turn_base_0"
    elements[-5] = "[" * 250 + "]" * 250  # deep, past the elements recorded one by one
    deep = '{"id": "multi_turn_base_0", "result": [], "inference_log": [' + ", ".join(elements) + "]}"
    with pytest.raises(result_files.LineProblem, match="nested 252 levels deep"):
        result_files.parse_line(deep, "multi_turn_base")


def test_a_line_of_too_many_values_keeps_no_pieces_and_is_counted_whole():
    from bfcl_safe.checker.codec import MAX_PIECES

    values = ", ".join(['"x": [0]'] * (MAX_PIECES + 1))
    line = '{"id": "multi_turn_base_0", "result": [], ' + values + ', "y": ' + "[" * 250 + "]" * 250 + "}"
    pieces: list = []
    loads_result_line(line, pieces=pieces)
    assert pieces == []
    with pytest.raises(result_files.LineProblem, match="nested 251 levels deep"):
        result_files.parse_line(line, "multi_turn_base")
