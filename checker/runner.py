"""Scoring result trees: discover files, read entries, score them (optionally in a
process pool), write score files and the CSV. One bad entry or file never stops
the others: its problem is reported and everything else is scored."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import attrs

from checker.dataset import Dataset
from checker.model_decoders import decoder_for_model
from checker.scores import ScoreFileWriter, dumps_line, loads_result_line, write_leaderboard_csv
from checker.verdict import INFERENCE_ERROR, evaluate_entry

VERSION_PREFIX = "BFCL_v4"
MULTI_TURN_CATEGORIES = (
    "multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context",
)
_RESULT_FILE = re.compile(rf"^{VERSION_PREFIX}_(\w+?)_result\.json$")
_ID = re.compile(r"^(multi_turn_[a-z_]+?)_(\d+)$")


@attrs.frozen
class Options:
    #: A key of ``checker.decoders.DECODERS``; None: chosen per model folder.
    decoder: str | None = None
    jobs: int = 1
    strict_irrelevance: bool = False
    check_order: bool = False
    partial: bool = False
    #: Add the non-official per-turn accuracy column to the CSV.
    partial_credit: bool = False


@attrs.frozen
class ResultFile:
    model: str
    category: str
    path: Path


@attrs.define
class FileScore:
    model: str
    category: str
    correct: int = 0
    total: int = 0
    #: Brief failure records (id, error type and message); full ones are in the score file.
    failures: list[dict] = attrs.Factory(list)
    problems: list[str] = attrs.Factory(list)
    score_path: Path | None = None

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0


def find_result_files(result_dir: Path) -> list[ResultFile]:
    """``RESULT/{model}/**/BFCL_v4_multi_turn_*_result.json``, models in listing order."""
    found = []
    for subdir in sorted(p for p in result_dir.iterdir() if p.is_dir()):
        for path in sorted(subdir.rglob(f"{VERSION_PREFIX}_*_result.json")):
            match = _RESULT_FILE.match(path.name)
            if match and match.group(1) in MULTI_TURN_CATEGORIES and not path.is_dir():
                found.append(ResultFile(subdir.name, match.group(1), path))
    return found


def read_result_lines(
    path: Path, category: str, raw: dict[str, str] | None = None
) -> tuple[list[dict], list[str]]:
    """Entries of a result file (streamed line by line) and the problems found.
    With ``raw``, each kept entry's line text is also stored there by id."""
    entries: list[dict] = []
    problems: list[str] = []
    seen: set[str] = set()
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                item = loads_result_line(line)
            except (ValueError, RecursionError) as exc:
                problems.append(f"{where}: not valid JSON ({str(exc)[:120]}); line skipped")
                continue
            if not isinstance(item, dict) or "id" not in item or "result" not in item:
                problems.append(f"{where}: expected an object with 'id' and 'result'; line skipped")
                continue
            entry_id = item["id"]
            match = _ID.match(entry_id) if isinstance(entry_id, str) else None
            if match is None or match.group(1) != category:
                problems.append(f"{where}: id {_shown(entry_id)} does not belong to {category}; line skipped")
                continue
            if entry_id in seen:
                problems.append(f"{where}: duplicate id {_shown(entry_id)}; the first occurrence is scored")
                continue
            seen.add(entry_id)
            entries.append(item)
            if raw is not None:
                raw[entry_id] = line
    # Numeric order without int(): an id may carry more digits than int() accepts.
    entries.sort(key=lambda item: (len(number := item["id"].rsplit("_", 1)[1]), number))
    return entries, problems


def _malformed(result: Any) -> str | None:
    """What is wrong with the shape of an entry's result, or None. A string is not
    wrong: it is how BFCL records a failed inference (an inference error, not a bad file)."""
    if isinstance(result, str):
        return None
    if type(result) is not list:
        return f"{type(result).__name__}, not a list of turns"
    for turn in result:
        if not isinstance(turn, (list, str, dict)):
            return f"a turn is {type(turn).__name__}, not a list of steps"
    return None


def _shown(value: Any) -> str:
    """``repr(value)`` cut to a readable length (ids come from hostile files)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}...({len(text)} characters)"


# ------------------------------------------------------------------ worker side

_WORKER_DATASET: Dataset | None = None


def _init_worker(data: str | None) -> None:
    global _WORKER_DATASET
    if _WORKER_DATASET is None:  # forked workers inherit the parent's loaded dataset
        _WORKER_DATASET = Dataset.open(data)


@attrs.frozen
class Outcome:
    """One scored entry: the verdict in brief, and the score-file line when it failed."""

    id: str
    error_type: str | None = None
    error_message: Any = None
    line: str | None = None
    internal: bool = False

    @property
    def valid(self) -> bool:
        return self.error_type is None


def score_entry(dataset: Dataset, item: dict, model: str, category: str, options: Options) -> dict:
    """Score one result-file entry; ``{"valid": True}`` or the reference's failure record."""
    entry_id = item["id"]
    return evaluate_entry(
        dataset.entry(entry_id),
        item["result"],
        dataset.ground_truth_for(entry_id),
        model_name=model,
        test_category=category,
        decoder=options.decoder,
        long_context_data=dataset.long_context_data,
        prompt_entry=lambda: dataset.prompt_entry(entry_id),
        inference_log=item.get("inference_log", ""),
        strict_irrelevance=options.strict_irrelevance,
        check_order=options.check_order,
    )


def _outcome(dataset: Dataset, item: dict, model: str, category: str, options: Options) -> Outcome:
    try:
        record = score_entry(dataset, item, model, category, options)
    except Exception as exc:  # noqa: BLE001 - one entry's crash must not lose the others
        record = _failure_record(item["id"], model, category,
                                 f"bfcl-safe could not score this entry: {type(exc).__name__}: {exc}")
        return Outcome(item["id"], INFERENCE_ERROR, record["error"]["error_message"], dumps_line(record), True)
    if record.get("valid"):
        return Outcome(item["id"])
    error = record["error"]
    return Outcome(item["id"], error["error_type"], error["error_message"], _record_line(record))


def _record_line(record: dict) -> str:
    """The score-file line of a failure record. A model result nested just below what
    ``json.loads`` accepts may be too deep to encode again, one level further down:
    the verdict is kept and the raw copies of the model's output are left out."""
    try:
        return dumps_line(record)
    except RecursionError:
        omitted = "<omitted: nested too deeply to write>"
        return dumps_line({key: omitted if key in ("model_result", "model_result_raw", "inference_log") else value
                           for key, value in record.items()})


def _failure_record(entry_id: str, model: str, category: str, message: str) -> dict:
    return {"id": entry_id, "model_name": model, "test_category": category, "valid": False,
            "error": {"error_message": [message], "error_type": INFERENCE_ERROR},
            "first_failing_turn": 0, "turns_passed": 0}


def _score_chunk(args: tuple[list[str], str, str, Options]) -> list[Outcome]:
    """Score entries given as their result-file line texts: text crosses the process
    boundary much faster than the parsed objects (model logs are large)."""
    lines, model, category, options = args
    assert _WORKER_DATASET is not None
    return [_outcome(_WORKER_DATASET, loads_result_line(line), model, category, options) for line in lines]


# ------------------------------------------------------------------ driver side


def score_tree(
    result_dir: Path,
    score_dir: Path,
    dataset: Dataset,
    data_path: str | None,
    options: Options = Options(),
    *,
    progress: Callable[[int], None] | None = None,
    report: Callable[[str], None] = lambda message: None,
    files: Sequence[ResultFile] | None = None,
) -> list[FileScore]:
    """Score every multi-turn result file under ``result_dir``; write the score files and CSV."""
    files = list(files if files is not None else find_result_files(result_dir))
    scores = []
    pool = None
    if options.jobs > 1:
        from concurrent.futures import ProcessPoolExecutor  # not imported for one-process runs

        global _WORKER_DATASET
        # Load what the workers need first: forked workers then share it instead of
        # each parsing the dataset again (spawned ones open ``data_path`` themselves).
        for result_file in files:
            dataset.entries(result_file.category)
            dataset.ground_truth(result_file.category)
            if "long_context" in result_file.category:
                dataset.long_context_data()
        _WORKER_DATASET = dataset
        pool = ProcessPoolExecutor(max_workers=options.jobs, initializer=_init_worker, initargs=(data_path,))
    try:
        decoders: dict[str, str] = {}
        pending: list[Callable[[], FileScore]] = []
        for result_file in files:
            file_options = options
            if options.decoder is None:
                if result_file.model not in decoders:
                    decoders[result_file.model] = decoder_for_model(result_file.model, dataset, report)
                file_options = attrs.evolve(options, decoder=decoders[result_file.model])
            pending.append(_prepare_file(result_file, score_dir, dataset, file_options, pool, progress, report))
            if pool is None or len(pending) > 1:  # with a pool, one file is always in flight ahead
                scores.append(pending.pop(0)())
        scores.extend(finish() for finish in pending)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    models = []
    for result_file in files:
        if result_file.model not in models:
            models.append(result_file.model)
    if scores:
        write_leaderboard_csv(score_dir, dataset, first_models=models, partial_credit=options.partial_credit)
    return scores


def _chunks(items: list[dict], size: int) -> Iterator[list[dict]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _submit(kept, raw, result_file, options, pool) -> list:
    """Send a file's entries to the pool at once (as line text), in chunks."""
    size = max(1, min(25, len(kept) // (options.jobs * 4) or 1))
    model, category = result_file.model, result_file.category
    return [
        (chunk, pool.submit(_score_chunk, ([raw[item["id"]] for item in chunk], model, category, options)))
        for chunk in _chunks(kept, size)
    ]


def _outcomes(kept, futures, result_file, dataset, options, progress) -> Iterator[Outcome]:
    model, category = result_file.model, result_file.category
    if futures is None:
        for item in kept:
            yield _outcome(dataset, item, model, category, options)
            if progress:
                progress(1)
        return
    for items, future in futures:
        try:
            chunk = future.result()
        except Exception:  # noqa: BLE001 - a chunk that cannot reach a worker (e.g. an entry nested
            # too deeply to pickle) or whose worker died is scored here instead
            chunk = [_outcome(dataset, item, model, category, options) for item in items]
        yield from chunk
        if progress:
            progress(len(chunk))


def _score_file(result_file, score_dir, dataset, options, pool, progress, report) -> FileScore:
    return _prepare_file(result_file, score_dir, dataset, options, pool, progress, report)()


def _prepare_file(result_file, score_dir, dataset, options, pool, progress, report) -> Callable[[], FileScore]:
    """Read and check a file and, with a pool, hand its entries to the workers now;
    the returned function collects the verdicts and writes the score file. (The runner
    prepares the next file before finishing this one, so workers never wait for it.)"""
    score = FileScore(result_file.model, result_file.category)
    raw: dict[str, str] | None = {} if pool is not None else None
    try:
        items, problems = read_result_lines(result_file.path, result_file.category, raw)
    except OSError as exc:  # one unreadable file must not stop the others
        message = f"{result_file.path}: cannot be read ({exc.strerror or exc}); file skipped"
        report(message)
        score.problems = [message]
        return lambda: score
    order = dataset.ids(result_file.category)
    known = set(order)
    kept = []
    for item in items:
        if item["id"] in known:
            kept.append(item)
            shape = _malformed(item["result"])
            if shape is not None:
                problems.append(f"{result_file.path}: {item['id']}: malformed result: {shape} (the entry fails)")
        else:
            problems.append(f"{result_file.path}: id {_shown(item['id'])} is not in the dataset; skipped")
    present = {item["id"] for item in kept}
    missing = [] if options.partial else [entry_id for entry_id in order if entry_id not in present]
    if missing:
        problems.append(f"{result_file.path}: {len(missing)} entries missing from the file (scored as failed; "
                        f"--partial scores only the entries present)")
    for problem in problems:
        report(problem)
    score.problems = problems
    if not kept and not missing:
        return lambda: score
    futures = _submit(kept, raw, result_file, options, pool) if pool is not None else None
    return lambda: _finish_file(score, result_file, score_dir, dataset, options, kept, futures, order,
                                missing, progress, report)


def _finish_file(score, result_file, score_dir, dataset, options, kept, futures, order, missing, progress,
                 report) -> FileScore:
    # Failed entries go to disk as they come, in id order (missing ones in their place).
    writer = ScoreFileWriter(score_dir, result_file.model, result_file.category)
    missing_ids = iter(missing)
    next_missing = next(missing_ids, None)
    index = {entry_id: position for position, entry_id in enumerate(order)}

    def flush_missing(before: int | None) -> None:
        nonlocal next_missing
        while next_missing is not None and (before is None or index[next_missing] < before):
            record = _failure_record(next_missing, result_file.model, result_file.category,
                                     "Entry missing from the result file.")
            writer.add(dumps_line(record))
            score.failures.append(record)
            next_missing = next(missing_ids, None)

    try:
        for outcome in _outcomes(kept, futures, result_file, dataset, options, progress):
            flush_missing(index[outcome.id])
            if outcome.valid:
                score.correct += 1
                continue
            if outcome.internal:
                report(f"{result_file.path}: {outcome.id}: {outcome.error_message[0]}")
            writer.add(outcome.line)
            score.failures.append({"id": outcome.id, "error": {"error_type": outcome.error_type,
                                                               "error_message": outcome.error_message}})
        flush_missing(None)
    except BaseException:
        writer.abort()
        raise
    score.total = score.correct + len(score.failures)
    score.score_path = writer.finish(score.correct, score.total)
    return score
