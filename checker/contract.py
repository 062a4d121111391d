"""The data contract with BFCL, in one place: the pinned release, the four scored
categories, file names and entry ids. Every other module takes these from here."""

from __future__ import annotations

import re

#: The pinned reference release and its wheel (PyPI's sha256 of the wheel file).
PINNED_VERSION = "2026.3.23"
PINNED_REQUIREMENT = f"bfcl-eval=={PINNED_VERSION}"
WHEEL_NAME = f"bfcl_eval-{PINNED_VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"

#: The BFCL version in data, result and score file names, and their prefix.
VERSION = "v4"
VERSION_PREFIX = f"BFCL_{VERSION}"
#: The subfolder of a model folder holding its multi-turn result or score files.
MULTI_TURN_GROUP = "multi_turn"

#: The four scored multi-turn categories, in BFCL's order (also the CSV's column order).
MULTI_TURN_CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)

#: An entry id: ``{category}_{number}``.
ENTRY_ID = re.compile(r"^(multi_turn_[a-z_]+?)_(\d+)$")


#: A result file's name, as written by BFCL v4 and (read with a notice) v3: version, category.
_RESULT_FILE_NAME = re.compile(r"^BFCL_(v[34])_(\w+?)_result\.json$")


def result_file_name(category: str) -> str:
    """``BFCL_v4_{category}_result.json``: the name ``generate`` writes and BFCL reads."""
    return f"{VERSION_PREFIX}_{category}_result.json"


def parse_result_file_name(name: str) -> tuple[str, str] | None:
    """``(version, category)`` of a result file's name (``v4``, or ``v3`` for BFCL v3's
    names); None for any other name. The category is not checked here."""
    match = _RESULT_FILE_NAME.match(name)
    return (match.group(1), match.group(2)) if match else None


def score_file_name(category: str) -> str:
    """``BFCL_v4_{category}_score.json``, whatever version the result file's name had."""
    return f"{VERSION_PREFIX}_{category}_score.json"


def category_of(entry_id: str) -> str:
    """``multi_turn_base_12`` -> ``multi_turn_base``; KeyError for an id of no scored category."""
    category = entry_id.rsplit("_", 1)[0] if isinstance(entry_id, str) else None
    if category not in MULTI_TURN_CATEGORIES:
        raise KeyError(f"{entry_id!r} is not the id of a multi-turn entry")
    return category


def is_long_context(category: str) -> bool:
    """Whether the reference scores this category with the long-context backends' setup."""
    return "long_context" in category or "composite" in category
