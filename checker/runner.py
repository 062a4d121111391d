"""Scoring a result tree: the files :func:`~bfcl_safe.checker.result_files.discover` found,
their lines scored by a pool (``checker/parallel.py``; ``--jobs 1`` is the same path with
an in-process pool), each line inside its fault boundary (``checker/scoring.py``), score
files and the CSV written (``checker/score_files.py``). One bad line, entry or file never stops
the others: its problem is reported and everything else is scored.

Interface (for the command line)::

    found = discover(result_dir, models, categories)      # result_files; LayoutError
    run = score_tree(result_dir, score_dir, dataset, options,
                     files=found.files, report=print_above_bar, progress=bar.update)

- ``report(message)``: every message of the run, one line each, in a fixed order (per
  file: its model's notes, its line problems in line order, its entries' problems in id
  order, the missing-entries error; then the resource-limit/internal-error notes of its
  entries as they are written; at the end, score files the CSV read that this run did
  not write, and unusable ones). The CLI prints them (escaping control characters).
- ``progress(n)``: ``n`` more lines done.
- Returns a :class:`ScoreRun`: a list of :class:`FileScore` (one per file read, refused
  ones apart) with ``refused`` (files not scored because entries are missing and ``Options.partial`` is
  off: the CLI exits non-zero at the end), ``unwritten`` (score files that could not be
  written, e.g. a symlink in the way), ``foreign_score_files`` (score files included in
  the CSV that this run did not write), ``failed_entries`` (``(path, id, error type)`` of
  entries failed with bfcl-safe's own error types: resource limit, internal error),
  ``csv_path`` (None if the CSV could not be written) and ``ok`` (nothing refused or unwritten).
- Raises :class:`ScoreDirError` (before anything is read) when the score dir is the
  result dir, inside it, or contains it; LayoutError from discovery when ``files`` is None.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Callable, Sequence

from bfcl_safe.checker.dataset import Dataset
from bfcl_safe.checker.decoders.models import decoder_for_model
from bfcl_safe.checker.error_types import ErrorType
from bfcl_safe.checker.inputs import UnreadableFile, shown_path
from bfcl_safe.checker.leaderboard import CSV_FILES, MULTI_TURN_CSV, Usage, write_leaderboard
from bfcl_safe.checker.outputs import ScoreFileWriter
from bfcl_safe.checker.parallel import ForkPool, InProcessPool, Lost, Pool, cannot_fork
from bfcl_safe.checker.result_files import (
    FirstOccurrence,
    ResultFile,
    discover,
    id_order,
    read_lines,
    shown,
    too_long,
)
from bfcl_safe.checker.scoring import (
    SKIPPED,
    UNKNOWN,
    Context,
    LineResult,
    Options,
    lost_result,
    score_in_process,
    score_text,
)
from bfcl_safe.interp.errors import BfclSafeError
from bfcl_safe.interp.limits import MAX_USAGE_NUMBERS

__all__ = ["FileScore", "ScoreRun", "ScoreDirError", "score_tree"]

#: Lines are scored in batches of at most this many (a pool's unit of work).
BATCH_LINES = 25
#: Lines of at most about this many characters are read and scored at a time (then
#: written, before the next files are read): memory stays bounded however many files.
GROUP_CHARS = 16 << 20


class ScoreDirError(BfclSafeError, ValueError):
    """A score dir that is the result dir, inside it, or contains it: ``score_dir``,
    ``result_dir`` and ``relation`` (``"is"``, ``"inside"``, ``"contains"``)."""

    def __init__(self, score_dir: Path, result_dir: Path, relation: str):
        self.score_dir, self.result_dir, self.relation = score_dir, result_dir, relation
        what = {"is": "is the result dir", "inside": "is inside the result dir",
                "contains": "contains the result dir"}[relation]
        super().__init__(f"score dir {shown_path(score_dir)} {what} {shown_path(result_dir)}; "
                         f"pass a score dir apart from it")


class FileScore:
    """One result file's outcome: ``correct`` of ``total``; ``failures``: brief failure
    records (id, error type and message; full ones are in the score file at
    ``score_path``); ``problems``: what was found wrong in the file; ``missing``: ids
    missing from it (it is not scored unless ``Options.partial``); ``refused``: not
    scored, as entries are missing and ``Options.partial`` is off."""

    __slots__ = ("model", "category", "correct", "total", "failures", "problems", "score_path", "path", "missing",
                 "refused")

    def __init__(self, model: str, category: str, correct: int = 0, total: int = 0,
                 failures: list[dict] | None = None, problems: list[str] | None = None,
                 score_path: Path | None = None, path: Path | None = None, missing: int = 0, refused: bool = False):
        self.model = model
        self.category = category
        self.correct = correct
        self.total = total
        self.failures = [] if failures is None else failures
        self.problems = [] if problems is None else problems
        self.score_path = score_path
        self.path = path
        self.missing = missing
        self.refused = refused

    def __repr__(self) -> str:
        return (f"FileScore({self.model!r}, {self.category!r}, correct={self.correct}, total={self.total}, "
                f"missing={self.missing}, refused={self.refused})")

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0


class ScoreRun(list):
    """The :class:`FileScore` of every file, and what the command line must tell the user
    about the run as a whole (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: list[FileScore] = []
        self.unwritten: list[str] = []
        self.foreign_score_files: list[Path] = []
        self.failed_entries: list[tuple[Path, str, str]] = []
        #: ``(path, id)`` of every id found more than once in a result file.
        self.duplicates: list[tuple[Path, str]] = []
        #: Per model folder, the numbers of its result lines for cost and latency.
        self.usage: dict[str, Usage] = {}
        #: The six leaderboard CSVs written (none when a file was refused or writing failed).
        self.csv_paths: list[Path] = []
        self.csv_path: Path | None = None

    @property
    def ok(self) -> bool:
        return not self.refused and not self.unwritten and not self.duplicates and self.csv_path is not None


def check_score_dir(result_dir: Path, score_dir: Path) -> None:
    """Raise :class:`ScoreDirError` if ``score_dir`` and ``result_dir`` overlap."""
    result = Path(os.path.realpath(result_dir))
    score = Path(os.path.realpath(score_dir))
    if score == result:
        raise ScoreDirError(score_dir, result_dir, "is")
    if result in score.parents:
        raise ScoreDirError(score_dir, result_dir, "inside")
    if score in result.parents:
        raise ScoreDirError(score_dir, result_dir, "contains")


def make_pool(dataset: Dataset, jobs: int, report: Callable[[str], None]) -> Pool:
    """``--jobs N``: a ForkPool of N children running :func:`scoring.score_text`; one
    process (or where forking is unsafe): the same function in this process, its result
    kept as a :class:`LineResult` instead of text."""
    if jobs > 1:
        reason = cannot_fork()
        if reason is None:
            return ForkPool(functools.partial(score_text, dataset), jobs)
        report(f"--jobs {jobs}: {reason}; scoring in one process")
    return InProcessPool(functools.partial(score_in_process, dataset))


class _File:
    """A result file read for scoring: its lines (number, text) and what was found
    (``problems``: (line number, problem) found while reading, over-long lines);
    ``first_task`` and ``task_count``: where its batches are in the pool's task list."""

    __slots__ = ("result_file", "context", "notes", "problems", "lines", "unreadable", "first_task", "task_count")

    def __init__(self, result_file: ResultFile):
        self.result_file = result_file
        self.context: Context | None = None
        self.notes: list[str] = []
        self.problems: list[tuple[int, str]] = []
        self.lines: list[tuple[int, str]] = []
        self.unreadable: str | None = None
        self.first_task = 0
        self.task_count = 0

    @property
    def chars(self) -> int:
        return sum(len(text) for _, text in self.lines)


def score_tree(
    result_dir: Path,
    score_dir: Path,
    dataset: Dataset,
    options: Options = Options(),
    *,
    progress: Callable[[int], None] | None = None,
    report: Callable[[str], None] = lambda message: None,
    files: Sequence[ResultFile] | None = None,
    pool: Pool | None = None,
) -> ScoreRun:
    """Score the result files (``files``, else all :func:`discover` finds under
    ``result_dir``, its notices reported); write the score files and the CSV."""
    result_dir, score_dir = Path(result_dir), Path(score_dir)
    check_score_dir(result_dir, score_dir)
    if files is None:
        found = discover(result_dir)
        for notice in found.notices:
            report(notice)
        files = found.files
    files = list(files)
    run = ScoreRun()
    if pool is None:
        pool = make_pool(dataset, options.jobs, report)
    if isinstance(pool, ForkPool):
        # Loaded before forking, the dataset is shared by the children instead of parsed by each.
        for result_file in files:
            dataset.entries(result_file.category)
            dataset.ground_truth(result_file.category)
            if "long_context" in result_file.category:
                dataset.long_context_data()
    decoders: dict[str, str] = {}
    written: set[Path] = set()
    # In one process, a file at a time (nothing is gained by holding more); a pool of
    # processes gets up to GROUP_CHARS of lines at a time to share out.
    group_chars = 0 if isinstance(pool, InProcessPool) else GROUP_CHARS
    unread = list(files)
    while unread:
        group: list[_File] = []
        size = 0
        while unread and (not group or size < group_chars):
            group.append(_read(unread.pop(0), options, dataset, decoders))
            size += group[-1].chars
        tasks: list[tuple[str, list[str]]] = []
        for item in group:
            item.first_task = len(tasks)
            if item.context is not None:
                header = item.context.to_text()
                for start in range(0, len(item.lines), BATCH_LINES):
                    tasks.append((header, [text for _, text in item.lines[start : start + BATCH_LINES]]))
            item.task_count = len(tasks) - item.first_task
        results = pool.map(tasks, progress)
        while group:  # (what is written is let go at once)
            item = group.pop(0)
            lines = []
            for number in range(item.first_task, item.first_task + item.task_count):
                lines += results[number]
                results[number] = []  # (what is written is let go at once)
            score = _collect(item, lines, score_dir, dataset, options, report, run)
            del lines
            if not score.refused:
                run.append(score)
                if score.score_path is not None:
                    written.add(score.score_path)
    # The reference's table order: the models of this run in the order the result folder
    # lists them (its iterdir; files are scored in name order), then the score folder's.
    listed = _listing_order(result_dir)
    models = sorted(dict.fromkeys(result_file.model for result_file in files),
                    key=lambda model: listed.get(model, len(listed)))
    if run.refused:
        # As bfcl evaluate, which stops there: no leaderboard from a run that left files
        # unscored (it would mix this run's scores with older score files of those).
        report(f"leaderboard CSVs not written: {len(run.refused)} result file(s) not scored (entries missing)")
    elif run:
        try:
            included: list[Path] = []
            run.csv_paths = write_leaderboard(score_dir, dataset, usage=run.usage, first_models=models,
                                              display_names=dict(options.display_names),
                                              partial_credit=options.partial_credit, report=report,
                                              included=included)
            run.csv_path = run.csv_paths[CSV_FILES.index(MULTI_TURN_CSV)]
        except (BfclSafeError, OSError) as exc:
            report(f"{shown_path(score_dir)}: leaderboard CSVs not written: {_reason(exc)}")
        else:
            run.foreign_score_files = [path for path in included if path not in written]
            for path in run.foreign_score_files:
                report(f"{shown_path(path)}: included in the leaderboard CSVs, not written by this run")
    return run


def _listing_order(folder: Path) -> dict[str, int]:
    """``{name: position}`` of the entries of ``folder`` in the file system's listing order."""
    try:
        with os.scandir(folder) as listing:
            return {entry.name: index for index, entry in enumerate(listing)}
    except OSError:
        return {}


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BfclSafeError):
        return str(exc)
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return type(exc).__name__


def _read(result_file: ResultFile, options: Options, dataset: Dataset, decoders: dict[str, str]) -> _File:
    """Read a file's lines (not parsed: that is the scoring's job) and settle its decoder."""
    item = _File(result_file)
    decoder = dict(options.model_decoders).get(result_file.model, options.decoder)
    if decoder is None:
        if result_file.model not in decoders:
            try:
                result_file.model.encode("utf-8")
            except UnicodeEncodeError:  # (a registry name is UTF-8)
                item.notes.append(f"model {shown(result_file.model)}: the folder name is not UTF-8, so not in the "
                                  f"bfcl-eval model registry; decoding its steps with 'auto'")
                decoders[result_file.model] = "auto"
            try:
                if result_file.model not in decoders:
                    decoders[result_file.model] = decoder_for_model(result_file.model, dataset, item.notes.append)
            except Exception as exc:  # noqa: BLE001 - one model's lookup must not stop the others
                item.unreadable = (f"{shown_path(result_file.path)}: no decoder could be chosen for model "
                                   f"{shown(result_file.model)} ({type(exc).__name__}: {shown_path(str(exc)[:200])}); "
                                   f"file skipped")
                return item
        decoder = decoders[result_file.model]
    try:
        for line in read_lines(result_file.path):
            if line.text is None:
                item.problems.append((line.number, too_long()))
            else:
                item.lines.append((line.number, line.text))
    except (UnreadableFile, OSError, UnicodeError) as exc:
        item.lines = []
        item.unreadable = str(exc) if isinstance(exc, UnreadableFile) else \
            f"{shown_path(result_file.path)}: cannot be read ({_reason(exc)}); file skipped"
        return item
    item.context = Context(result_file.model, result_file.category, decoder, options.checks)
    # Scored in id order, as the reference (which sorts a file's entries by id): the state
    # a few backends carry from entry to entry in one process then matches its.
    item.lines.sort(key=_order)
    return item


#: The start of a line as ``json.dumps`` writes a result entry, and its id: enough to
#: order the lines (each is parsed, and its id checked, where it is scored).
_LINE_START = re.compile(r'\{"id": "(multi_turn_[a-z_]+?_\d+)"')


def _order(line: tuple[int, str]) -> tuple:
    """Sort key of a line: its id's numeric order when the line starts as BFCL writes an
    entry, else after those, in line order (a line the scorer will skip, or one written
    otherwise: then the reference's order is not reproduced for it)."""
    number, text = line
    start = _LINE_START.match(text)
    return (0, *id_order(start.group(1)), number) if start else (1, 0, "", number)


def _collect(item: _File, results: list, score_dir: Path, dataset: Dataset, options: Options,
             report: Callable[[str], None], run: ScoreRun) -> FileScore:
    """Report a scored file's notes and problems, then write its score file (reporting
    its entries' notes) — or refuse it when entries are missing."""
    result_file = item.result_file
    path = shown_path(result_file.path)
    for note in item.notes:
        report(note)
    score = FileScore(result_file.model, result_file.category, path=result_file.path)
    if item.unreadable is not None:
        report(item.unreadable)
        score.problems = [item.unreadable]
        return score
    # Line problems in line order; then the kept entries (first occurrence of an id).
    problems: list[tuple[int, str | None]] = list(item.problems)  # (a skipped line's message is a str)
    kept: dict[str, LineResult] = {}
    usage = Usage()  # (this file's; added to the model's once the file is scored)
    first = FirstOccurrence()
    # In line order (they were scored in id order): the first occurrence of an id is kept.
    in_line_order = sorted(range(len(item.lines)), key=lambda index: item.lines[index][0])
    for index in in_line_order:
        (number, text), result = item.lines[index], results[index]
        if isinstance(result, Lost):
            assert item.context is not None  # (set once a file's lines are read)
            line_result = lost_result(text, item.context, result.reason)
        elif isinstance(result, LineResult):
            line_result = result
        else:
            line_result = LineResult.from_text(result)
        results[index] = None  # (its text is in line_result now)
        usage.add_usage(line_result.usage)
        if line_result.kind == SKIPPED:
            problems.append((number, line_result.message))
            continue
        entry_id = line_result.id
        assert entry_id is not None  # (only a skipped line has no id)
        if (duplicate := first.problem(entry_id)) is not None:
            problems.append((number, f"{duplicate} (bfcl evaluate refuses the file; exit status 3)"))
            run.duplicates.append((result_file.path, entry_id))
        else:
            kept[entry_id] = line_result
    problems.sort(key=lambda pair: pair[0])
    messages = [f"{path}:{number}: {message}" for number, message in problems]
    outcomes = []
    for entry_id in sorted(kept, key=id_order):
        line_result = kept[entry_id]
        if line_result.kind == UNKNOWN:
            messages.append(f"{path}: id {shown(entry_id)} is not in the dataset; skipped")
            continue
        if line_result.shape is not None:
            messages.append(f"{path}: {entry_id}: malformed result: {line_result.shape} (the entry fails)")
        outcomes.append(line_result)
    order = dataset.ids(result_file.category)
    present = {outcome.id for outcome in outcomes}
    missing = [entry_id for entry_id in order if entry_id not in present]
    refused = bool(missing) and not options.partial
    if refused:
        messages.append(f"{path}: {len(missing)} of {len(order)} entries missing (e.g. {missing[0]}); file not "
                        f"scored: pass --partial-eval to score only the entries present")
    for message in messages:
        report(message)
    score.problems = messages
    score.missing = len(missing)
    if refused:
        score.refused = True
        run.refused.append(score)
        return score
    total = run.usage.setdefault(result_file.model, Usage())
    was_over = total.overflow
    total.add_usage(None if usage.overflow else (usage.latencies, usage.input_tokens, usage.output_tokens))
    if usage.overflow and not total.overflow:
        total.overflow = True
        total.latencies, total.input_tokens, total.output_tokens = [], [], []
    if total.overflow and not was_over:
        report(f"model {shown(result_file.model)}: more than {MAX_USAGE_NUMBERS:,} latencies and token counts; "
               f"its cost and latency cells are N/A")
    if not outcomes:
        return score
    try:
        _write(score, result_file, score_dir, outcomes, report, run)
    except (BfclSafeError, OSError) as exc:
        message = f"{path}: score file not written: {_reason(exc)}"
        report(message)
        run.unwritten.append(message)
        score.score_path = None
    return score


def _write(score: FileScore, result_file: ResultFile, score_dir: Path, outcomes: list[LineResult],
           report: Callable[[str], None], run: ScoreRun) -> None:
    writer = ScoreFileWriter(score_dir, result_file.model, result_file.category)
    try:
        for outcome in outcomes:
            if outcome.valid:
                score.correct += 1
                continue
            # (a failed entry has its record's line; every outcome kept has its id)
            assert outcome.line is not None and outcome.id is not None
            if outcome.note is not None:
                report(f"{shown_path(result_file.path)}: {outcome.id}: {outcome.note}")
            if outcome.error_type in (ErrorType.RESOURCE_LIMIT, ErrorType.INTERNAL_ERROR):
                run.failed_entries.append((result_file.path, outcome.id, outcome.error_type))
            writer.add(outcome.line)
            score.failures.append({"id": outcome.id, "error": {"error_type": outcome.error_type,
                                                               "error_message": outcome.error_message}})
    except BaseException:
        writer.abort()
        raise
    score.total = score.correct + len(score.failures)
    score.score_path = writer.finish(score.correct, score.total)

