"""checker/contract.py: the one place result and score file names are built and read."""

from __future__ import annotations

import pytest

from bfcl_safe.checker import contract



@pytest.mark.parametrize("name, parsed", [
    ("BFCL_v4_multi_turn_base_result.json", ("v4", "multi_turn_base")),
    ("BFCL_v3_multi_turn_miss_func_result.json", ("v3", "multi_turn_miss_func")),
    ("BFCL_v4_simple_result.json", ("v4", "simple")),  # any category: the reader checks it
    ("BFCL_v2_multi_turn_base_result.json", None),
    ("BFCL_v4_multi_turn_base_score.json", None),
    ("BFCL_v4_multi_turn_base_result.jsonl", None),
    ("x_BFCL_v4_multi_turn_base_result.json", None),
    ("BFCL_v4__result.json", None),
])
def test_result_file_names_are_parsed_in_one_place(name, parsed):
    assert contract.parse_result_file_name(name) == parsed


@pytest.mark.parametrize("category", contract.MULTI_TURN_CATEGORIES)
def test_result_and_score_file_names_round_trip(category):
    assert contract.parse_result_file_name(contract.result_file_name(category)) == (contract.VERSION, category)
    assert contract.score_file_name(category) == f"BFCL_v4_{category}_score.json"
