"""The six leaderboard CSVs, cell for cell as ``bfcl evaluate`` writes them.

``bfcl evaluate`` ends with ``update_leaderboard_table_with_local_score_file`` and
``generate_leaderboard_csv`` (the reference's ``eval_runner_helper``): every score file
under the score folder, whatever tool wrote it and whatever its category, is read, and
six files are written next to them:

- ``data_overall.csv``: the weighted overall (non-live 10, live 10, irrelevance 10,
  multi-turn 30, agentic 40), the model's link, cost and latency, every section's
  summary, organisation and licence;
- ``data_non_live.csv``, ``data_live.csv``, ``data_multi_turn.csv``, ``data_agentic.csv``:
  one section each;
- ``data_format_sensitivity.csv``: the format-sensitivity statistics.

What goes into them, as the reference computes it:

- a category without a score file shows ``N/A`` and counts 0 in its section's overall;
  a summary shows ``N/A`` when one of its categories is missing; the live AST summary is
  weighted by entry counts (a missing live category counts with its dataset size,
  :data:`LIVE_ENTRY_COUNTS`), every other summary is a plain mean;
- cost and latency come from the result files scored in this run (``latency``,
  ``input_token_count``, ``output_token_count``; multi-turn lists of lists flattened;
  zeros and non-numbers left out): a model with prices in the registry costs its tokens
  times its prices, any other registered model ``sum(latency) / 3600 * 23.92 / 100``
  (BFCL's 8xH100 hour shared by 100 parallel requests); latency mean, standard deviation
  and 95th percentile (numpy's linear method) rounded to 2 places. A model not scored in
  this run shows ``N/A`` there, as in the reference;
- model name, link, organisation and licence come from the model registry of the dataset's
  wheel, read as data (``Dataset.model_metadata``).

Rows: the models scored in this run first (in the order the result folder lists them),
then the other model folders of the score folder in the order the file system lists
them; then sorted by the section's overall, descending (``N/A`` last), *stably*: models
with the same overall keep that order. That is the reference's order wherever it is
determined; a tie between two folders depends on the file system's listing order in both.

Where the reference fails, bfcl-safe writes the table and says so:

- a model folder that is not in the registry (the reference raises ``KeyError``): its
  folder name (or the ``--model-map``/``--model-name`` display name) in the Model column,
  ``N/A`` for link, organisation, licence and cost;
- one latency value (the reference's ``statistics.stdev`` raises): standard deviation
  ``N/A``;
- more than ``MAX_USAGE_NUMBERS`` latencies and token counts for one model (the exact
  statistics take time in proportion): its cost and latency cells ``N/A``, reported;
- a score file whose summary is not BFCL's (no finite ``accuracy`` in [0, 1], a live AST
  category without an integer ``total_count`` of at least 1, format-sensitivity figures
  that are not numbers): reported and left out; a summary without ``total_count``
  elsewhere (the reference raises ``KeyError``) counts 1 entry, which no cell shows.

Every text cell (names, links, organisations, licences) goes through the one cell rule,
:func:`bfcl_safe.checker.terminal.csv_cell`; numbers never do. On the pinned registry
that rule changes nothing, so the cells equal the reference's byte for byte
(``tests/test_leaderboard.py`` compares them with the reference's own function).
"""

from __future__ import annotations

import csv
import io
import math
import os
from itertools import chain
from operator import methodcaller, mul
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES
from bfcl_safe.checker.outputs import write_text
from bfcl_safe.checker.score_files import ScoreFileError, _score_line, _score_lines, read_score_summary, score_files
from bfcl_safe.checker.terminal import csv_cell, shown
from bfcl_safe.interp.errors import BfclSafeError
from bfcl_safe.interp.limits import MAX_USAGE_NUMBERS

NOT_AVAILABLE = "N/A"

#: The six files, in the order they are written (the overall last, as in the reference).
NON_LIVE_CSV = "data_non_live.csv"
LIVE_CSV = "data_live.csv"
MULTI_TURN_CSV = "data_multi_turn.csv"
AGENTIC_CSV = "data_agentic.csv"
FORMAT_SENSITIVITY_CSV = "data_format_sensitivity.csv"
OVERALL_CSV = "data_overall.csv"
CSV_FILES = (NON_LIVE_CSV, LIVE_CSV, MULTI_TURN_CSV, AGENTIC_CSV, FORMAT_SENSITIVITY_CSV, OVERALL_CSV)
#: Kept for callers of the multi-turn table alone.
CSV_NAME = MULTI_TURN_CSV

COLUMNS_NON_LIVE = ("Rank", "Model", "Non-Live Overall Acc", "AST Summary", "Simple AST", "Python Simple AST",
                    "Java Simple AST", "JavaScript Simple AST", "Multiple AST", "Parallel AST",
                    "Parallel Multiple AST", "Irrelevance Detection")
COLUMNS_LIVE = ("Rank", "Model", "Live Overall Acc", "AST Summary", "Python Simple AST", "Python Multiple AST",
                "Python Parallel AST", "Python Parallel Multiple AST", "Irrelevance Detection",
                "Relevance Detection")
COLUMNS_MULTI_TURN = ("Rank", "Model", "Multi Turn Overall Acc", "Base", "Miss Func", "Miss Param", "Long Context")
CSV_COLUMNS = COLUMNS_MULTI_TURN
COLUMNS_AGENTIC = ("Rank", "Model", "Agentic Overall Acc", "Web Search Summary", "Web Search Base",
                   "Web Search No Snippet", "Memory Summary", "Memory KV", "Memory Vector",
                   "Memory Recursive Summarization")
COLUMNS_FORMAT_SENSITIVITY_PREFIX = ("Rank", "Model", "Format Sensitivity Max Delta",
                                     "Format Sensitivity Standard Deviation")
COLUMNS_OVERALL = (
    "Rank", "Overall Acc", "Model", "Model Link", "Total Cost ($)", "Latency Mean (s)",
    "Latency Standard Deviation (s)", "Latency 95th Percentile (s)", "Non-Live AST Acc", "Non-Live Simple AST",
    "Non-Live Multiple AST", "Non-Live Parallel AST", "Non-Live Parallel Multiple AST", "Live Acc",
    "Live Simple AST", "Live Multiple AST", "Live Parallel AST", "Live Parallel Multiple AST", "Multi Turn Acc",
    "Multi Turn Base", "Multi Turn Miss Func", "Multi Turn Miss Param", "Multi Turn Long Context",
    "Web Search Acc", "Web Search Base", "Web Search No Snippet", "Memory Acc", "Memory KV", "Memory Vector",
    "Memory Recursive Summarization", "Relevance Detection", "Irrelevance Detection",
    "Format Sensitivity Max Delta", "Format Sensitivity Standard Deviation", "Organization", "License",
)
#: The non-official column ``evaluate --partial-credit`` appends to ``data_multi_turn.csv``.
TURN_ACCURACY_COLUMN = "Per-Turn Acc"


def format_sensitivity_configs() -> list[str]:
    """The 26 prompt-format configurations, in the reference's order (its
    ``get_all_format_sensitivity_configs``)."""
    configs = [
        f"ret_fmt={ret}&tool_call_tag={tag}&func_doc_fmt={doc}&prompt_fmt=plaintext&style=classic"
        for ret in ("python", "json", "verbose_xml", "concise_xml")
        for tag in ("True", "False")
        for doc in ("python", "xml", "json")
    ]
    configs.append("ret_fmt=python&tool_call_tag=False&func_doc_fmt=json&prompt_fmt=markdown&style=classic")
    configs.append("ret_fmt=python&tool_call_tag=False&func_doc_fmt=json&prompt_fmt=plaintext&style=experimental")
    return configs


FORMAT_SENSITIVITY_CONFIGS = tuple(format_sensitivity_configs())
COLUMNS_FORMAT_SENSITIVITY = (*COLUMNS_FORMAT_SENSITIVITY_PREFIX,
                              *(f"Config {config}" for config in FORMAT_SENSITIVITY_CONFIGS))

#: Entries of each live AST category in the pinned dataset (``bfcl-eval==2026.3.23``):
#: the weight of a missing one in the live AST summary (the only place where the size
#: of a missing category shows; tests/test_leaderboard.py checks them against the wheel).
LIVE_ENTRY_COUNTS = {"live_simple": 258, "live_multiple": 1053, "live_parallel": 16, "live_parallel_multiple": 24}

#: ``eval_config``: USD per hour of 8 H100s, and the parallel requests sharing them.
H100_X8_PRICE_PER_HOUR = 23.92
LOCAL_SERVER_MAX_CONCURRENT_REQUEST = 100
#: Result-line keys whose numbers go into cost and latency.
USAGE_KEYS = ("latency", "input_token_count", "output_token_count")


# --------------------------------------------------------------------------- usage


class Usage:
    """Token counts and latencies of one model's result lines (the reference's
    ``record_cost_latency``): ``input_tokens``, ``output_tokens``, ``latencies``."""

    __slots__ = ("input_tokens", "output_tokens", "latencies", "overflow")

    def __init__(self) -> None:
        self.input_tokens: list[int | float] = []
        self.output_tokens: list[int | float] = []
        self.latencies: list[int | float] = []
        #: More than ``MAX_USAGE_NUMBERS`` numbers were added: the lists are dropped and
        #: the model's cost and latency cells are ``N/A`` (the exact statistics of the
        #: reference take time in proportion to the numbers).
        self.overflow = False

    def add(self, entry: Mapping[str, Any]) -> None:
        """Add one result line's numbers (an object decoded from the line)."""
        for key, out in (("latency", self.latencies), ("input_token_count", self.input_tokens),
                         ("output_token_count", self.output_tokens)):
            if key in entry:
                _numbers(entry[key], out)

    def add_usage(self, usage: Sequence[Sequence[Any]] | None) -> None:
        """Add what :func:`line_usage` took from one line."""
        if usage and not self.overflow:
            latencies, inputs, outputs = usage
            self.latencies.extend(latencies)
            self.input_tokens.extend(inputs)
            self.output_tokens.extend(outputs)
            if len(self.latencies) + len(self.input_tokens) + len(self.output_tokens) > MAX_USAGE_NUMBERS:
                self.overflow = True
                self.latencies, self.input_tokens, self.output_tokens = [], [], []


def line_usage(entry: Mapping[str, Any]) -> tuple[list, list, list] | None:
    """``(latencies, input token counts, output token counts)`` of one parsed result line
    (the reference's ``record_cost_latency`` rule), or None when it has none. Taken by the
    scorer where it parses the line, and sent back with its result (no second parse)."""
    get = entry.get
    latency, inputs, outputs = get("latency", _ABSENT), get("input_token_count", _ABSENT), get(
        "output_token_count", _ABSENT)  # (USAGE_KEYS)
    if latency is _ABSENT and inputs is _ABSENT and outputs is _ABSENT:
        return None
    return (_json_numbers(latency) if latency is not _ABSENT else [],
            _json_numbers(inputs) if inputs is not _ABSENT else [],
            _json_numbers(outputs) if outputs is not _ABSENT else [])


_ABSENT = object()


def _json_numbers(value: Any) -> list:
    """:func:`_numbers` of a value a JSON decoder made (a dict, list, str, int, float,
    bool or None). The common case in three C-level passes: a list of lists, flattened,
    whose ``sum`` succeeds holds only numbers (int, float or bool: any other JSON type in
    it raises TypeError, an int too large to add to a float OverflowError)."""
    if type(value) is list and _LIST.issuperset(map(type, value)):
        flat = list(chain.from_iterable(value))
        try:
            sum(flat)
        except (TypeError, OverflowError):
            pass
        else:
            return list(filter(None, flat))  # (for int, float and bool, ``x != 0`` is ``bool(x)``)
    out: list = []
    _numbers(value, out)
    return out


def _numbers(value: Any, out: list) -> None:
    # As the reference: a list whose items are all lists is flattened one level, and its
    # numbers (not 0) kept; otherwise the value itself if it is a number (not 0).
    if isinstance(value, list) and all(isinstance(item, list) for item in value):
        out.extend([item for inner in value for item in inner if isinstance(item, (int, float)) and item != 0])
    elif isinstance(value, (int, float)) and value != 0:
        out.append(value)


_LIST = frozenset((list,))


def _numpy_round(value: float) -> float:
    """``round(numpy.float64(value), 2)``: ``rint(value * 100) / 100`` (numpy's method,
    which differs from Python's correctly rounded ``round`` on some values)."""
    scaled = value * 100.0
    if not math.isfinite(scaled):
        return scaled / 100.0
    whole = float(round(scaled))  # round half to even, as rint
    return math.copysign(whole, scaled) / 100.0 if whole == 0 else whole / 100.0


def percentile_95(values: Sequence[int | float]) -> float:
    """``numpy.percentile(values, 95)`` (method ``linear``), computed as numpy computes it."""
    data = sorted(map(float, values))
    if any(map(math.isnan, data)):
        return math.nan
    count = len(data)
    virtual = (count - 1) * 0.95
    if virtual >= count - 1:
        return data[-1]
    below = math.floor(virtual)
    gamma = virtual - below
    low, high = data[below], data[below + 1]
    diff = high - low
    return high - diff * (1 - gamma) if gamma >= 0.5 else low + diff * gamma


def _exact_sums(values: Sequence[Any]) -> tuple[int, int, int, bool] | None:
    """``(N, Q, s, all ints)`` with ``sum(values) == N / 2**s`` and
    ``sum(v * v for v in values) == Q / 2**(2*s)`` exactly, when every value is an
    ``int`` or a finite ``float`` (a float's denominator is a power of two, so every
    value is a whole number of ``2**-s``); None for anything else (bools, NaN,
    infinities, other types). The loops run in C (``map``)."""
    kinds = set(map(type, values))
    if not kinds <= _INT_FLOAT:
        return None
    if float not in kinds:
        return sum(values), sum(map(mul, values, values)), 0, True
    if int not in kinds:
        # Floats alone: scaled by one power of two that makes each a whole number (a
        # float of exponent e is a multiple of 2**(e - 53)), they are multiplied and
        # converted exactly, without a ratio per value.
        if not all(map(math.isfinite, values)):
            return None
        magnitudes = list(filter(None, map(abs, values)))
        if not magnitudes:
            return 0, 0, 0, False
        shift = max(53 - math.frexp(min(magnitudes))[1], 0)
        if shift <= 1000 and math.frexp(max(magnitudes))[1] + shift <= 1000:  # (no overflow on the way)
            scaled = list(map(int, map(math.ldexp(1.0, shift).__mul__, values)))
            return sum(scaled), sum(map(mul, scaled, scaled)), shift, False
    try:
        numerators, denominators = zip(*map(_RATIO, values))
    except (ValueError, OverflowError):  # NaN, infinity
        return None
    common = max(denominators)
    scaled = list(map(mul, numerators, map(common.__floordiv__, denominators)))
    return sum(scaled), sum(map(mul, scaled, scaled)), common.bit_length() - 1, False


_INT_FLOAT = frozenset((int, float))
_RATIO = methodcaller("as_integer_ratio")


def exact_mean(values: Sequence[Any]) -> Any:
    """``statistics.mean(values)`` (the reference's latency mean): the exact mean, correctly
    rounded to a float; an ``int`` when every value is an int and the mean is whole.
    Computed with integers for ints and finite floats; anything else goes to ``statistics``."""
    return _mean(values, _exact_sums(values))


def _mean(values: Sequence[Any], sums: tuple[int, int, int, bool] | None) -> Any:
    if sums is None or not values:
        import statistics
        return statistics.mean(values)
    total, _, shift, whole = sums
    count = len(values)
    if whole and total % count == 0:
        return total // count
    return total / (count << shift)


def exact_stdev(values: Sequence[Any]) -> float:
    """``statistics.stdev(values)``: the square root of the exact sample variance, correctly
    rounded to a float (as CPython 3.11 and later compute it). Integers for ints and finite
    floats; anything else goes to ``statistics``."""
    return _stdev(values, _exact_sums(values))


def _stdev(values: Sequence[Any], sums: tuple[int, int, int, bool] | None) -> float:
    count = len(values)
    if sums is None or count < 2:
        import statistics
        return statistics.stdev(values)
    total, squares, shift, _ = sums
    # variance = (count * Q - N**2) / (count * (count - 1) * 4**shift)
    return _sqrt_of_fraction(count * squares - total * total, (count * (count - 1)) << (2 * shift))


def _sqrt_of_fraction(numerator: int, denominator: int) -> float:
    """The square root of ``numerator / denominator`` (both >= 0, the denominator > 0),
    correctly rounded to a float: an integer root of at least 56 bits, its last bit set
    when it is inexact (rounding to odd keeps the information the final rounding needs),
    then one correctly rounded int-to-float step."""
    exponent = (numerator.bit_length() - denominator.bit_length() - 112) // 2
    if exponent >= 0:
        scaled_numerator, scaled_denominator = numerator, denominator << (2 * exponent)
    else:
        scaled_numerator, scaled_denominator = numerator << (-2 * exponent), denominator
    root = math.isqrt(scaled_numerator // scaled_denominator)
    if root * root * scaled_denominator != scaled_numerator:
        root |= 1
    return float(root << exponent) if exponent >= 0 else root / (1 << -exponent)


def cost_and_latency(info: Any, usage: Usage | None) -> tuple[Any, Any, Any, Any]:
    """``(cost, latency mean, standard deviation, 95th percentile)``: numbers or ``N/A``
    (the reference's ``get_cost_latency_info``). ``info`` is the registry entry (None for
    a model the registry does not know: no cost)."""
    usage = usage or Usage()
    if usage.overflow:
        return NOT_AVAILABLE, NOT_AVAILABLE, NOT_AVAILABLE, NOT_AVAILABLE
    cost: Any = NOT_AVAILABLE
    mean: Any = NOT_AVAILABLE
    deviation: Any = NOT_AVAILABLE
    p95: Any = NOT_AVAILABLE
    latencies = usage.latencies
    try:
        if info is not None and info.input_price is not None and info.output_price is not None:
            if usage.input_tokens and usage.output_tokens:
                cost = round(sum(usage.input_tokens) * info.input_price / 1000000
                             + sum(usage.output_tokens) * info.output_price / 1000000, 2)
        elif info is not None and latencies:
            cost = round(sum(latencies) / 3600 * H100_X8_PRICE_PER_HOUR / LOCAL_SERVER_MAX_CONCURRENT_REQUEST, 2)
    except (TypeError, OverflowError, ValueError):
        cost = NOT_AVAILABLE
    if latencies:
        sums = _exact_sums(latencies)  # (for the mean and the deviation)
        try:
            mean = round(_mean(latencies, sums), 2)
            p95 = _numpy_round(percentile_95(latencies))
        except (TypeError, OverflowError, ValueError):
            mean, p95 = NOT_AVAILABLE, NOT_AVAILABLE
        if len(latencies) > 1:
            try:
                deviation = round(_stdev(latencies, sums), 2)
            except (TypeError, OverflowError, ValueError):
                deviation = NOT_AVAILABLE
    return cost, mean, deviation, p95


# --------------------------------------------------------------------------- score table


def _check_summary(path: Path, category: str, summary: dict) -> None:
    """What the leaderboard reads from a summary beyond ``accuracy``: an integer
    ``total_count`` of at least 1 for a live AST category (the live summary is weighted
    by it; elsewhere it is not shown, and a missing one counts 1), and for format
    sensitivity, numbers where the reference formats them."""
    total = summary.get("total_count")
    if category in LIVE_ENTRY_COUNTS and (type(total) is not int or total < 1):
        raise ScoreFileError(f"{shown(path)}: the first line has no integer 'total_count' of at least 1")
    if category != "format_sensitivity":
        return
    for key in ("accuracy_max_delta", "accuracy_std"):
        if key in summary and not _is_number(summary[key]):
            raise ScoreFileError(f"{shown(path)}: {key!r} in the first line is not a number")
    for config in FORMAT_SENSITIVITY_CONFIGS:
        stats = summary.get(config)
        if stats is None:
            continue
        if not isinstance(stats, dict) or ("accuracy" in stats and not _is_number(stats["accuracy"])):
            raise ScoreFileError(f"{shown(path)}: the first line's {config!r} has no numeric 'accuracy'")


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def collect_scores(
    score_dir: str | os.PathLike, first_models: Iterable[str] = (),
    report: Callable[[str], None] | None = None, included: list[Path] | None = None,
) -> dict[str, dict[str, dict]]:
    """``{model folder: {category: summary}}`` from every score file under ``score_dir``.

    Order is the reference's leaderboard-table order: ``first_models`` (the models
    scored in this run, in result-folder listing order) first, then the other model
    folders in directory listing order. Within a model a later file of the same
    category wins, as in the reference's ``rglob`` walk. A file whose summary is not
    valid is reported (``report``) and skipped (the reference crashes or writes
    nonsense); ``included`` receives the paths used.
    """
    table: dict[str, dict[str, dict]] = {name: {} for name in first_models}
    used: dict[tuple[str, str], Path] = {}
    for model, category, path in score_files(score_dir, report):
        try:
            summary = read_score_summary(path)
            _check_summary(path, category, summary)
        except ScoreFileError as exc:
            if report is None:
                raise
            report(f"{exc}; not included in the leaderboard CSVs")
            continue
        table.setdefault(model, {})[category] = summary
        used[(model, category)] = path
    if included is not None:
        included.extend(used.values())
    return {name: cats for name, cats in table.items() if cats}


class _Score:
    """One category's (or summary's) figures: ``accuracy``, ``total``, ``shown``
    (the accuracy, or ``N/A``)."""

    __slots__ = ("accuracy", "total", "shown")

    def __init__(self, accuracy: Any, total: int, shown: Any):
        self.accuracy = accuracy
        self.total = total
        self.shown = shown


def _category(scores: Mapping[str, Mapping[str, Any]], category: str) -> _Score:
    summary = scores.get(category)
    if summary is not None:
        return _Score(summary["accuracy"], summary.get("total_count", 1), summary["accuracy"])
    # Only the live AST summary weighs by counts; elsewhere a missing one's count is not shown.
    return _Score(0, LIVE_ENTRY_COUNTS.get(category, 0), NOT_AVAILABLE)


def _weighted(parts: Sequence[_Score], na_shown: bool = True) -> _Score:
    total = 0
    weighted: Any = 0
    for part in parts:
        total += part.total
        weighted += part.accuracy * part.total
    accuracy = weighted / total
    return _Score(accuracy, total, NOT_AVAILABLE if na_shown and _has_na(parts) else accuracy)


def _unweighted(parts: Sequence[_Score], na_shown: bool = True) -> _Score:
    total = 0
    summed: Any = 0
    for part in parts:
        total += part.total
        summed += part.accuracy
    accuracy = summed / len(parts)
    return _Score(accuracy, total, NOT_AVAILABLE if na_shown and _has_na(parts) else accuracy)


def _percentage_weighted(parts: Sequence[_Score], weights: Sequence[int]) -> _Score:
    weight_sum = sum(weights)
    total = 0
    summed = 0.0
    for part, weight in zip(parts, [weight / weight_sum for weight in weights]):
        total += part.total
        summed += part.accuracy * weight
    return _Score(summed, total, summed)


def _has_na(parts: Sequence[_Score]) -> bool:
    return any(part.shown == NOT_AVAILABLE for part in parts)


class ModelText:
    """The text cells of one model: ``name``, ``link``, ``org``, ``license`` (each passed
    through :func:`csv_cell` when the row is made) and its registry entry ``info``."""

    __slots__ = ("name", "link", "org", "license", "info")

    def __init__(self, name: str, info: Any = None):
        self.info = info
        self.name = name
        self.link = _text(info, "url")
        self.org = _text(info, "org")
        self.license = _text(info, "license")


def _text(info: Any, field: str) -> str:
    value = getattr(info, field, None) if info is not None else None
    return value if isinstance(value, str) else NOT_AVAILABLE


def build_tables(
    scores: Mapping[str, Mapping[str, Mapping[str, Any]]],
    models: Callable[[str], ModelText],
    usage: Mapping[str, Usage] | None = None,
    turn_accuracy: Mapping[str, Any] | None = None,
) -> dict[str, list[list[str]]]:
    """The six files' rows (header first), cells as text, for a table from
    :func:`collect_scores`. ``models(folder)`` gives a model's text cells; ``usage`` the
    numbers of the result files scored in this run; ``turn_accuracy``, if given, one more
    cell per model for ``data_multi_turn.csv`` (non-official; the order does not change)."""
    usage = usage or {}
    rows: dict[str, list[list[Any]]] = {name: [] for name in CSV_FILES}
    for folder, value in scores.items():
        text = models(folder)
        name = csv_cell(text.name)
        cost, latency_mean, latency_std, latency_p95 = cost_and_latency(text.info, usage.get(folder))

        def get(category: str, value: Mapping[str, Mapping[str, Any]] = value) -> _Score:
            return _category(value, category)

        simple_python, multiple, parallel = get("simple_python"), get("multiple"), get("parallel")
        parallel_multiple, simple_java = get("parallel_multiple"), get("simple_java")
        simple_javascript, irrelevance = get("simple_javascript"), get("irrelevance")
        simple = _unweighted([simple_python, simple_java, simple_javascript])
        ast_parts = [simple, multiple, parallel, parallel_multiple]
        ast_summary = _unweighted(ast_parts)
        non_live = _unweighted(ast_parts, na_shown=False)
        rows[NON_LIVE_CSV].append([NOT_AVAILABLE, name, non_live.shown, ast_summary.shown, simple.shown,
                                   simple_python.shown, simple_java.shown, simple_javascript.shown, multiple.shown,
                                   parallel.shown, parallel_multiple.shown, irrelevance.shown])

        live_parts = [get("live_simple"), get("live_multiple"), get("live_parallel"), get("live_parallel_multiple")]
        live_irrelevance, live_relevance = get("live_irrelevance"), get("live_relevance")
        live_summary = _weighted(live_parts)
        live = _weighted(live_parts, na_shown=False)
        rows[LIVE_CSV].append([NOT_AVAILABLE, name, live.shown, live_summary.shown, *(p.shown for p in live_parts),
                               live_irrelevance.shown, live_relevance.shown])

        turn_parts = [get(category) for category in MULTI_TURN_CATEGORIES]
        multi_turn = _unweighted(turn_parts, na_shown=False)
        turn_row = [NOT_AVAILABLE, name, multi_turn.shown, *(p.shown for p in turn_parts)]
        if turn_accuracy is not None:
            turn_row.append(turn_accuracy.get(folder, NOT_AVAILABLE))
        rows[MULTI_TURN_CSV].append(turn_row)

        search_base, search_no_snippet = get("web_search_base"), get("web_search_no_snippet")
        search = _unweighted([search_base, search_no_snippet])
        memory_parts = [get("memory_kv"), get("memory_vector"), get("memory_rec_sum")]
        memory = _unweighted(memory_parts)
        agentic = _unweighted([search, memory], na_shown=False)
        rows[AGENTIC_CSV].append([NOT_AVAILABLE, name, agentic.shown, search.shown, search_base.shown,
                                  search_no_snippet.shown, memory.shown, *(p.shown for p in memory_parts)])

        total_irrelevance = _unweighted([irrelevance, live_irrelevance])
        sensitivity = value.get("format_sensitivity", {})
        max_delta = sensitivity.get("accuracy_max_delta", NOT_AVAILABLE)
        deviation = sensitivity.get("accuracy_std", NOT_AVAILABLE)
        rows[FORMAT_SENSITIVITY_CSV].append([
            NOT_AVAILABLE, name, max_delta, deviation,
            *(sensitivity.get(config, {}).get("accuracy", NOT_AVAILABLE) for config in FORMAT_SENSITIVITY_CONFIGS),
        ])

        overall = _percentage_weighted([non_live, live, total_irrelevance, multi_turn, agentic], [10, 10, 10, 30, 40])
        rows[OVERALL_CSV].append([
            NOT_AVAILABLE, overall.shown, name, csv_cell(text.link), cost, latency_mean, latency_std, latency_p95,
            ast_summary.shown, simple.shown, multiple.shown, parallel.shown, parallel_multiple.shown,
            live.shown, *(p.shown for p in live_parts),
            multi_turn.shown, *(p.shown for p in turn_parts),
            search.shown, search_base.shown, search_no_snippet.shown, memory.shown, *(p.shown for p in memory_parts),
            live_relevance.shown, total_irrelevance.shown, max_delta, deviation,
            csv_cell(text.org), csv_cell(text.license),
        ])
    turn_columns = (*COLUMNS_MULTI_TURN, TURN_ACCURACY_COLUMN) if turn_accuracy is not None else COLUMNS_MULTI_TURN
    layout: dict[str, tuple[tuple[str, ...], int, frozenset[int]]] = {
        NON_LIVE_CSV: (COLUMNS_NON_LIVE, 2, frozenset()),
        LIVE_CSV: (COLUMNS_LIVE, 2, frozenset()),
        MULTI_TURN_CSV: (turn_columns, 2, frozenset()),
        AGENTIC_CSV: (COLUMNS_AGENTIC, 2, frozenset()),
        FORMAT_SENSITIVITY_CSV: (COLUMNS_FORMAT_SENSITIVITY, 2, frozenset({2, 3})),
        OVERALL_CSV: (COLUMNS_OVERALL, 1, frozenset({4, 5, 6, 7, 32, 33})),
    }
    return {name: _ranked(rows[name], *layout[name]) for name in CSV_FILES}


def _ranked(rows: list[list[Any]], header: Sequence[str], sort_column: int, plain: frozenset[int]) -> list[list[str]]:
    """The reference's ``write_score_csv_file``: sorted by ``sort_column`` descending
    (``N/A`` as -1), stably; rank from 1; numbers as percentages with 2 decimals, or
    ``str()`` in the ``plain`` columns; text cells as they are (already through the cell
    rule)."""
    rows.sort(key=lambda row: row[sort_column] if row[sort_column] != NOT_AVAILABLE else -1, reverse=True)
    out = [list(header)]
    for rank, row in enumerate(rows, 1):
        cells = [str(rank)]
        for index, cell in enumerate(row[1:], 1):
            if isinstance(cell, str):
                cells.append(cell)
            elif index in plain:
                cells.append(str(cell))
            else:
                cells.append("{:.2f}%".format(cell * 100))
        out.append(cells)
    return out


def csv_text(rows: Iterable[Sequence[str]]) -> str:
    """Rows of ready cells as CSV text: ``,`` between cells, ``\\n`` between rows, none
    after the last (the reference's bytes)."""
    return "\n".join(",".join(row) for row in rows)


# --------------------------------------------------------------------------- partial credit


def turn_accuracy(path: str | os.PathLike, turn_count: Callable[[str], int | None]) -> float | None:
    """Per-turn accuracy of one score file (non-official).

    An entry that passed counts 1; a failed entry counts ``turns_passed / its number of
    ground-truth turns`` (the turns before its first failing turn); the sum is divided by
    ``total_count``. None when a failed entry has no ``turns_passed`` (e.g. a score file
    of the reference) or ``turn_count`` does not know it.
    """
    path = Path(path)
    summary = read_score_summary(path)
    credit = float(summary.get("correct_count", 0))
    with _score_lines(path) as lines:  # (through the reader of untrusted files, checker/inputs.py)
        for number, line in enumerate(lines, 1):
            if number == 1 or (line is not None and line.isspace()):
                continue
            record = _score_line(path, number, line)
            passed = record.get("turns_passed") if isinstance(record, dict) else None
            entry_id = record.get("id") if isinstance(record, dict) else None
            turns = turn_count(entry_id) if isinstance(entry_id, str) else None
            if type(passed) is not int or not turns:
                return None
            credit += passed / turns
    total = summary.get("total_count")
    return credit / total if total else None


def collect_turn_accuracy(
    score_dir: str | os.PathLike, turn_count: Callable[[str], int | None]
) -> dict[str, str | float]:
    """``{model folder: per-turn accuracy cell}``: the plain mean over the four categories,
    a missing category counting 0 (like the official overall); ``N/A`` when a score file
    has no per-turn data. Same walk as :func:`collect_scores`."""
    per_model: dict[str, dict[str, float | None]] = {}
    for model, category, score_file in score_files(score_dir):
        if category not in MULTI_TURN_CATEGORIES:
            continue
        try:
            per_model.setdefault(model, {})[category] = turn_accuracy(score_file, turn_count)
        except (ScoreFileError, OSError, UnicodeDecodeError):
            continue  # (reported, and left out, by collect_scores)
    cells: dict[str, str | float] = {}
    for model, categories in per_model.items():
        values = [categories.get(category, 0.0) for category in MULTI_TURN_CATEGORIES]
        cells[model] = NOT_AVAILABLE if None in values else sum(v for v in values if v is not None) / 4
    return cells


# --------------------------------------------------------------------------- reading back


class LeaderboardFileError(BfclSafeError):
    """A leaderboard CSV that cannot be shown; the message names the file and the problem."""


def read_leaderboard_csv(path: str | os.PathLike) -> tuple[list[str], list[list[str]]]:
    """``(header, rows)`` of a leaderboard CSV, read as untrusted input through the one
    reader (``checker/inputs.py``: a regular file of at most ``MAX_LEADERBOARD_CSV_BYTES``),
    UTF-8, every row as wide as the header, at most ``MAX_LEADERBOARD_ROWS`` rows. Cells
    come back as they are in the file; the caller shows them through the cell rule."""
    from bfcl_safe.checker.inputs import Kind, UnreadableFile, read_bytes
    from bfcl_safe.interp.limits import MAX_LEADERBOARD_CSV_BYTES, MAX_LEADERBOARD_ROWS

    path = Path(path)
    try:
        data = read_bytes(path, Kind("leaderboard CSV", MAX_LEADERBOARD_CSV_BYTES))
    except UnreadableFile as exc:
        if not os.path.lexists(path):
            raise LeaderboardFileError(f"{shown(path)} not found: run 'bfcl-safe evaluate' (or 'bfcl evaluate') "
                                       f"first, or give --score-dir") from None
        raise LeaderboardFileError(str(exc)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LeaderboardFileError(f"{shown(path)}: not UTF-8 text") from None
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise LeaderboardFileError(f"{shown(path)}: not CSV ({shown(exc)})") from None
    if not rows or not rows[0] or rows[0][0] != "Rank":
        raise LeaderboardFileError(f"{shown(path)}: not a leaderboard CSV (its first cell is not 'Rank')")
    header, body = rows[0], rows[1:]
    if len(body) > MAX_LEADERBOARD_ROWS:
        raise LeaderboardFileError(f"{shown(path)}: more than {MAX_LEADERBOARD_ROWS:,} rows; not shown")
    for number, row in enumerate(body, 2):
        if len(row) != len(header):
            raise LeaderboardFileError(f"{shown(path)}: row {number} has {len(row)} cells, the header "
                                       f"{len(header)}")
    return header, body


# --------------------------------------------------------------------------- writing


def model_text_for(dataset: Any, display_names: Mapping[str, str] | None = None) -> Callable[[str], ModelText]:
    """``folder -> ModelText``: the display name ``display_names[folder]`` if given (the
    ``--model-map``/``--model-name`` name), else the registry's display name, else the
    folder name; link, organisation and licence from the registry (``N/A`` without)."""
    overrides = dict(display_names or {})

    def text(folder: str) -> ModelText:
        info = None
        if dataset is not None:
            try:
                folder.encode("utf-8")
            except UnicodeEncodeError:  # a non-UTF-8 folder name is no registry name
                info = None
            else:
                info = dataset.model_metadata(folder)
        if folder in overrides:
            name = overrides[folder]
        elif info is not None and isinstance(info.display_name, str):
            name = info.display_name
        else:
            name = folder
        return ModelText(name, info)

    return text


def write_leaderboard(
    score_dir: str | os.PathLike,
    dataset: Any = None,
    *,
    usage: Mapping[str, Usage] | None = None,
    display_names: Mapping[str, str] | None = None,
    first_models: Iterable[str] = (),
    partial_credit: bool = False,
    report: Callable[[str], None] | None = None,
    included: list[Path] | None = None,
) -> list[Path]:
    """Write the six CSVs into ``score_dir`` from the score files present under it (see
    the module docstring); return their paths, in :data:`CSV_FILES` order.

    ``usage``: per model folder, the numbers of the result files scored in this run.
    ``partial_credit`` appends the non-official :data:`TURN_ACCURACY_COLUMN` to
    ``data_multi_turn.csv`` (turn counts from ``dataset``). With ``report``, score files
    that are not valid are reported and left out (else :class:`ScoreFileError`);
    ``included`` receives the score files the CSVs were made from.
    """
    extra = None
    if partial_credit:
        def turn_count(entry_id: Any) -> int | None:
            if dataset is None or not isinstance(entry_id, str):
                return None
            try:
                return len(dataset.ground_truth_for(entry_id))
            except KeyError:
                return None

        extra = collect_turn_accuracy(score_dir, turn_count)
    scores = collect_scores(score_dir, first_models, report, included)
    tables = build_tables(scores, model_text_for(dataset, display_names), usage, extra)
    paths = []
    for name in CSV_FILES:
        path = Path(score_dir) / name
        write_text(path, csv_text(tables[name]))
        paths.append(path)
    return paths


def write_leaderboard_csv(score_dir: str | os.PathLike, dataset: Any = None, **options: Any) -> Path:
    """:func:`write_leaderboard`, returning the path of ``data_multi_turn.csv``."""
    return write_leaderboard(score_dir, dataset, **options)[CSV_FILES.index(MULTI_TURN_CSV)]
