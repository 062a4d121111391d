"""Scoring result trees: discover files, read entries, score them (optionally in a
process pool), write score files and the CSV. One bad entry or file never stops
the others: its problem is reported and everything else is scored."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import attrs

from bfcl_safe.checker.dataset import Dataset
from bfcl_safe.checker.forked import MAX_TASKS, cannot_fork, share_out
from bfcl_safe.checker.model_decoders import decoder_for_model
from bfcl_safe.checker.scores import ScoreFileWriter, dumps_line, loads_result_line, raw_value, write_leaderboard_csv
from bfcl_safe.checker.verdict import INFERENCE_ERROR, evaluate_entry

from bfcl_safe.checker.contract import ENTRY_ID as _ID
from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES, VERSION_PREFIX
_RESULT_FILE = re.compile(rf"^{VERSION_PREFIX}_(\w+?)_result\.json$")


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
    path: Path, category: str, raw: dict[str, str] | None = None, numbers: dict[str, int] | None = None
) -> tuple[list[dict], list[str]]:
    """Entries of a result file (streamed line by line) and the problems found.
    With ``raw``, each kept entry's line text is also stored there by id (and its line
    number in ``numbers``)."""
    entries: list[dict] = []
    problems: list[str] = []
    seen: set[str] = set()
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if line.isspace():  # (strip() would copy every line)
                continue
            try:  # parsed here, not in a helper: how deep a line may nest depends on the stack
                item = loads_result_line(line)
            except (ValueError, RecursionError) as exc:
                item = exc
            item = _checked(item, f"{path}:{number}", category, seen, problems)
            if item is None:
                continue
            entries.append(item)
            if raw is not None:
                raw[item["id"]] = line
            if numbers is not None:
                numbers[item["id"]] = number
    # Numeric order without int(): an id may carry more digits than int() accepts.
    entries.sort(key=lambda item: _id_order(item["id"]))
    return entries, problems


def _id_order(entry_id: str) -> tuple[int, str]:
    return len(number := entry_id.rsplit("_", 1)[1]), number


def _checked(item: Any, where: str, category: str, seen: set[str], problems: list[str]) -> dict | None:
    """One parsed line of a result file (or the error parsing it raised): the entry to
    keep (its id is added to ``seen``), or None with the problem appended to ``problems``."""
    if isinstance(item, (ValueError, RecursionError)):
        problems.append(f"{where}: not valid JSON ({str(item)[:120]}); line skipped")
        return None
    if not isinstance(item, dict) or "id" not in item or "result" not in item:
        problems.append(f"{where}: expected an object with 'id' and 'result'; line skipped")
        return None
    entry_id = item["id"]
    match = _ID.match(entry_id) if isinstance(entry_id, str) else None
    if match is None or match.group(1) != category:
        problems.append(f"{where}: id {_shown(entry_id)} does not belong to {category}; line skipped")
        return None
    if entry_id in seen:
        problems.append(f"{where}: duplicate id {_shown(entry_id)}; the first occurrence is scored")
        return None
    seen.add(entry_id)
    return item


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


# ------------------------------------------------------------------ scoring lines (in any process)

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
        prompt_entry=lambda: dataset.prompt_json(entry_id) or dataset.prompt_entry(entry_id),
        inference_log=item.get("inference_log", ""),
        model_result_json=raw_value(item, "result"),
        possible_answer_json=lambda: dataset.ground_truth_json(entry_id),
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


#: With --jobs, a line is scored only if it parses with this many fewer levels of
#: recursion to spare: such a line also parses in a serial run, whatever the depth of
#: either's stack (else the main process reads its file again as a serial run does).
_DEPTH_MARGIN = 100


def _score_lines(dataset: Dataset, lines: list[tuple[str, str | None]], model: str, category: str,
                 options: Options, logs: list[tuple[int, int] | None] | None = None,
                 ) -> list[tuple[str | None, Outcome] | None]:
    """Score entries given as their result-file line texts, each with the id the main
    process found at its start (None: the main process parsed the line itself). Per
    line: the shape problem of its result and its outcome, or None where the line is not
    what the main process took it for (not an object with 'id' and 'result', another id,
    not JSON): the main process then reads that file again itself. With ``logs``, where
    each line's ``inference_log`` text is in it (or None) is appended there."""
    out: list[tuple[str | None, Outcome] | None] = []
    limit = sys.getrecursionlimit()
    for line, expected in lines:
        spans: dict[str, tuple[int, int]] = {}
        sys.setrecursionlimit(limit - _DEPTH_MARGIN)
        try:
            item = loads_result_line(line, spans)
        except (ValueError, RecursionError):
            item = None
        finally:
            sys.setrecursionlimit(limit)
        if logs is not None:
            logs.append(spans.get("inference_log") if item is not None else None)
        if not isinstance(item, dict) or "result" not in item or (
                type(item.get("id")) is not str if expected is None else item.get("id") != expected):
            out.append(None)
            continue
        out.append((_malformed(item["result"]), _outcome(dataset, item, model, category, options)))
    return out


# ------------------------------------------------------------------ driver side


def score_tree(
    result_dir: Path,
    score_dir: Path,
    dataset: Dataset,
    options: Options = Options(),
    *,
    progress: Callable[[int], None] | None = None,
    report: Callable[[str], None] = lambda message: None,
    files: Sequence[ResultFile] | None = None,
) -> list[FileScore]:
    """Score every multi-turn result file under ``result_dir``; write the score files and CSV."""
    files = list(files if files is not None else find_result_files(result_dir))
    scores = []
    decoders: dict[str, str] = {}

    def file_options(result_file: ResultFile, report: Callable[[str], None]) -> Options:
        if options.decoder is not None:
            return options
        if result_file.model not in decoders:
            decoders[result_file.model] = decoder_for_model(result_file.model, dataset, report)
        return attrs.evolve(options, decoder=decoders[result_file.model])

    parallel = options.jobs > 1 and bool(files)
    if parallel and (reason := cannot_fork()) is not None:
        report(f"--jobs {options.jobs}: {reason}; scoring in one process")
        parallel = False
    if parallel:
        # Load what every process needs first: forked processes then share it instead of
        # each parsing the dataset again.
        for result_file in files:
            dataset.entries(result_file.category)
            dataset.ground_truth(result_file.category)
            if "long_context" in result_file.category:
                dataset.long_context_data()
        # Files are read in groups of up to GROUP_CHARS characters of lines (lines are only
        # looked at, not parsed); a group's lines are scored in chunks by this process and
        # its forked children; its files are then collected in order, and the next group
        # is read. Collecting a file reports its messages and writes its score file as a
        # serial run does at that file, and raises what a serial run raises there.
        # (The calls below keep the stack depth of the serial path where lines are parsed
        # or scored in this process: how deep a line may nest depends on it.)
        unread = list(files)
        while unread:
            group: list[_Batch] = []
            size = 0
            while unread and (not group or size < GROUP_CHARS):
                group.append(_hand_over(unread.pop(0), file_options, dataset))
                size += _line_chars(group[-1])
            results = _score_batches(dataset, group, options.jobs, progress)
            while group:  # (what is written is let go at once)
                batch = group.pop(0)
                scores.append(_collect(batch, results, score_dir, dataset, progress, report))
                for _, _, task in batch.chunks:
                    results.pop(task, None)
    else:
        for result_file in files:
            scores.append(_prepare_file(result_file, score_dir, dataset, file_options(result_file, report), progress,
                                        report)())
    models = []
    for result_file in files:
        if result_file.model not in models:
            models.append(result_file.model)
    if scores:
        write_leaderboard_csv(score_dir, dataset, first_models=models, partial_credit=options.partial_credit)
    return scores


def _outcomes(kept, result_file, dataset, options, progress) -> Iterator[Outcome]:
    model, category = result_file.model, result_file.category
    for item in kept:
        yield _outcome(dataset, item, model, category, options)
        if progress:
            progress(1)


def _prepare_file(result_file, score_dir, dataset, options, progress, report) -> Callable[[], FileScore]:
    """Read and check a file; the returned function scores its entries and writes the
    score file (serial runs)."""
    score = FileScore(result_file.model, result_file.category)
    try:
        items, problems = read_result_lines(result_file.path, result_file.category)
    except OSError as exc:  # one unreadable file must not stop the others
        return _unreadable(score, result_file, exc, report)
    order = dataset.ids(result_file.category)
    kept = _check_items(result_file, items, set(order), problems)
    missing = _missing(result_file, order, kept, options, problems)
    for problem in problems:
        report(problem)
    score.problems = problems
    if not kept and not missing:
        return lambda: score
    return lambda: _finish_file(score, result_file, score_dir, options, order, missing, report,
                                _outcomes(kept, result_file, dataset, options, progress))


def _unreadable(score: FileScore, result_file: ResultFile, exc: OSError, report) -> Callable[[], FileScore]:
    message = f"{result_file.path}: cannot be read ({exc.strerror or exc}); file skipped"
    report(message)
    score.problems = [message]
    return lambda: score


def _check_items(result_file: ResultFile, items: list[dict], known: set[str], problems: list[str]) -> list[dict]:
    """The entries to score (those in the dataset); problems of the others, and of
    malformed results, are appended to ``problems``."""
    kept = []
    for item in items:
        if item["id"] in known:
            kept.append(item)
            shape = _malformed(item["result"])
            if shape is not None:
                problems.append(f"{result_file.path}: {item['id']}: malformed result: {shape} (the entry fails)")
        else:
            problems.append(f"{result_file.path}: id {_shown(item['id'])} is not in the dataset; skipped")
    return kept


def _missing(result_file: ResultFile, order: list[str], kept: list, options: Options,
             problems: list[str]) -> list[str]:
    present = {item["id"] for item in kept}
    missing = [] if options.partial else [entry_id for entry_id in order if entry_id not in present]
    if missing:
        problems.append(f"{result_file.path}: {len(missing)} entries missing from the file (scored as failed; "
                        f"--partial scores only the entries present)")
    return missing


# ------------------------------------------------------------------ with a pool

#: The start of a line as ``json.dumps`` writes a result entry, and its id. The main
#: process takes the id from here without parsing the line; the process scoring it checks it.
_LINE_START = re.compile(r'\{"id": "([^"\\]*)", ')


@attrs.define
class _Batch:
    """A result file read for scoring in several processes: what the main process found
    in it, and the chunks its kept lines are scored in."""

    result_file: ResultFile
    options: Options
    #: Messages about the file's model, reported before the file's problems.
    notes: list[str]
    #: Problems of the lines the main process parsed, in line order.
    problems: list[str] = attrs.Factory(list)
    #: The lines kept, in id order: (id, entry if parsed here else None, line number, text).
    entries: list[tuple[str, dict | None, int, str]] = attrs.Factory(list)
    #: The kept lines to score: (text, id the main process found at its start, or None
    #: where it parsed the line itself), in id order.
    lines: list[tuple[str, str | None]] = attrs.Factory(list)
    #: (first line, number of lines, task number) per chunk of ``lines``.
    chunks: list[tuple[int, int, int]] = attrs.Factory(list)
    unreadable: OSError | None = None
    #: Raised when the file is collected, where a serial run raises it.
    error: Exception | None = None


def _hand_over(result_file: ResultFile, file_options, dataset: Dataset) -> _Batch:
    """Read a file for scoring in several processes. A line that starts as ``json.dumps``
    writes an entry of this category, with an id met for the first time and in the
    dataset, is not parsed here: the process scoring it parses it and checks it is what
    it seems. Any other line is read here exactly as a serial run reads it."""
    notes: list[str] = []
    batch = _Batch(result_file, Options(), notes)
    try:
        batch.options = file_options(result_file, notes.append)
        known = set(dataset.ids(result_file.category))
        try:
            batch.entries = list(_scan(result_file, known, batch.problems))
        except OSError as exc:
            batch.unreadable = exc
            return batch
    except Exception as exc:  # noqa: BLE001 - raised when the file is collected
        batch.error = exc
        return batch
    batch.entries.sort(key=lambda entry: _id_order(entry[0]))
    batch.lines = [(text, entry_id if item is None else None)
                   for entry_id, item, _, text in batch.entries if entry_id in known]
    return batch


#: Lines of at most about this many characters are read and scored at a time with
#: ``--jobs`` (then written, before the next files are read): memory stays bounded
#: however many files there are.
GROUP_CHARS = 16 << 20


def _line_chars(batch: _Batch) -> int:
    return sum(len(text) for text, _ in batch.lines)


def _score_batches(dataset: Dataset, batches: list[_Batch], jobs: int, progress) -> dict[int, list | None]:
    """Score the lines of every batch in ``jobs`` processes (this one and forked
    children): results of :func:`_score_lines` by task number (see ``_Batch.chunks``);
    a task missing from the result or None there (its process failed) is scored again by
    ``_collect``.

    Chunks are taken from a shared queue, largest first (at most 25 lines), then smaller
    towards the end so that the processes finish together."""
    remaining = sum(len(batch.lines) for batch in batches)
    smallest = max(2, -(-remaining // (MAX_TASKS // 2)))
    tasks: list[tuple[_Batch, int, int]] = []
    for batch in batches:
        start = 0
        while start < len(batch.lines):
            size = max(smallest, min(max(25, smallest), remaining // (jobs * 3)))
            count = min(size, len(batch.lines) - start)
            batch.chunks.append((start, count, len(tasks)))
            tasks.append((batch, start, count))
            start += count
            remaining -= count

    def inputs(task: int) -> list[str]:
        batch, start, count = tasks[task]
        return [text for text, _ in batch.lines[start : start + count]]

    def work(task: int) -> tuple[int, list, list]:
        batch, start, count = tasks[task]
        result_file = batch.result_file
        logs: list[tuple[int, int] | None] = []
        scored = _score_lines(dataset, batch.lines[start : start + count], result_file.model, result_file.category,
                              batch.options, logs)
        return task, scored, logs

    counted: set[int] = set()

    def done(task: int) -> None:
        counted.add(task)
        if progress:
            progress(tasks[task][2])

    results: dict[int, list | None] = {}
    for first in range(0, len(tasks), MAX_TASKS):  # (more files than chunks fit in one queue)
        group = range(first, min(first + MAX_TASKS, len(tasks)))
        shared = share_out(len(group), jobs, lambda task: work(group[task]),
                           lambda result: _encode_scored(*result, inputs(result[0])),
                           lambda text: _decode_scored(text, inputs), lambda task: done(group[task]))
        results.update((task, scored) for task, scored, _ in shared.values())
    # A task whose results were lost after its process counted it: None (it is not counted again).
    results.update((task, None) for task in counted if task not in results)
    return results


#: A model's log at least this long is not sent back by a child: its failure record's
#: line is sent without it, and put together again from the result line, which the main
#: process has too.
_LEFT_OUT = 256


def _encode_scored(task: int, scored: list[tuple[str | None, Outcome] | None],
                   logs: list[tuple[int, int] | None], inputs: list[str]) -> str:
    """:func:`_score_lines`'s result for one task as text: a JSON header (the task, then
    one item per line: null, or shape, id, error type, error message, internal, length
    of the score-file line or -1, and where the model's log was cut out of it or -1),
    its length first, then the score-file lines one after the other.

    A failure record copies the result line's ``inference_log`` text (most of its
    bytes); it is cut out of the score-file line, to be put back by
    :func:`_decode_scored` from the main process's own copy of the result line."""
    header: list = [task]
    lines = []
    for item, log, text in zip(scored, logs, inputs):
        if item is None:
            header.append(None)
            continue
        shape, outcome = item
        line = outcome.line
        cut = -1
        if line is not None and log is not None and log[1] - log[0] >= _LEFT_OUT:
            cut = line.find(text[log[0] : log[1]])
            if cut >= 0:
                line = line[:cut] + line[cut + log[1] - log[0] :]
        header.append([shape, outcome.id, outcome.error_type, outcome.error_message, outcome.internal,
                       -1 if line is None else len(line), cut, *(log if cut >= 0 else (0, 0))])
        if line is not None:
            lines.append(line)
    encoded = json.dumps(header)
    return f"{len(encoded)}\n{encoded}{''.join(lines)}"


def _decode_scored(text: str, inputs: Callable[[int], list[str]]) -> tuple[int, list, None]:
    newline = text.index("\n")
    end = newline + 1 + int(text[:newline])
    position = end
    task, *items = json.loads(text[newline + 1 : end])
    out: list[tuple[str | None, Outcome] | None] = []
    for item, original in zip(items, inputs(task), strict=True):
        if item is None:
            out.append(None)
            continue
        shape, entry_id, error_type, error_message, internal, length, cut, log_start, log_end = item
        line = None
        if length >= 0:
            line = text[position : position + length]
            position += length
            if cut >= 0:
                line = f"{line[:cut]}{original[log_start:log_end]}{line[cut:]}"
        out.append((shape, Outcome(entry_id, error_type, error_message, line, internal)))
    if position != len(text):
        raise ValueError("scored chunk: text left over")
    return task, out, None


def _scan(result_file: ResultFile, known: set[str], problems: list[str]) -> Iterator[tuple]:
    path, category = result_file.path, result_file.category
    seen: set[str] = set()
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if line.isspace():
                continue
            start = _LINE_START.match(line)
            if start is not None:
                entry_id = start.group(1)
                match = _ID.match(entry_id)
                if match is not None and match.group(1) == category and entry_id not in seen and entry_id in known:
                    seen.add(entry_id)
                    yield entry_id, None, number, line
                    continue
            try:
                item = loads_result_line(line)
            except (ValueError, RecursionError) as exc:
                item = exc
            item = _checked(item, f"{path}:{number}", category, seen, problems)
            if item is not None:
                yield item["id"], item, number, line


def _collect(batch: _Batch, scored: dict[int, list | None], score_dir: Path, dataset: Dataset, progress,
             report) -> FileScore:
    """Report a scored file's notes and problems, then write its score file (reporting
    its internal errors), as a serial run does at that file; raise what a serial run
    raises there."""
    for note in batch.notes:
        report(note)
    if batch.error is not None:
        raise batch.error
    result_file, options = batch.result_file, batch.options
    score = FileScore(result_file.model, result_file.category)
    if batch.unreadable is not None:
        _unreadable(score, result_file, batch.unreadable, report)
        return score
    results: list = []
    for _, count, task in batch.chunks:
        chunk = scored.get(task)
        if chunk is not None:
            results.extend(chunk)
        else:  # its process failed: the file is read again and these entries scored here
            results.extend([None] * count)
            if progress and task not in scored:  # (None: counted when it was scored)
                progress(count)
    order = dataset.ids(result_file.category)
    if None not in results:
        problems = batch.problems
        known = set(order)
        kept = []
        for entry_id, item, _, _ in batch.entries:
            if entry_id in known:
                kept.append({"id": entry_id})
                shape = results[len(kept) - 1][0]
                if shape is not None:
                    problems.append(f"{result_file.path}: {entry_id}: malformed result: {shape} (the entry fails)")
            else:
                problems.append(f"{result_file.path}: id {_shown(entry_id)} is not in the dataset; skipped")
        outcomes = [outcome for _, outcome in results]
    else:  # some line is not what it seemed: read the file as a serial run does
        numbers: dict[str, int] = {}
        try:
            items, problems = read_result_lines(result_file.path, result_file.category, {}, numbers)
        except OSError as exc:
            _unreadable(score, result_file, exc, report)
            return score
        known = set(order)
        kept = _check_items(result_file, items, known, problems)
        lines_scored = {number: result[1] for (_, _, number, _), result in
                        zip((entry for entry in batch.entries if entry[0] in known), results) if result is not None}
        outcomes = _rescored(kept, numbers, lines_scored, result_file, dataset, options)
    missing = _missing(result_file, order, kept, options, problems)
    for problem in problems:
        report(problem)
    score.problems = problems
    if kept or missing:
        _finish_file(score, result_file, score_dir, options, order, missing, report, outcomes)
    return score


def _rescored(kept, numbers, scored, result_file, dataset, options) -> Iterator[Outcome]:
    """Outcomes of ``kept``: the one already scored for the same line, if any, else
    scored here."""
    for item in kept:
        outcome = scored.get(numbers[item["id"]])
        yield outcome if outcome is not None else _outcome(dataset, item, result_file.model,
                                                           result_file.category, options)


def _finish_file(score, result_file, score_dir, options, order, missing, report, outcomes) -> FileScore:
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
        for outcome in outcomes:
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
