"""Result trees and result files: which files are scored, and how a file's lines are read.

This is where a result line enters bfcl-safe. Everything here treats the tree and the
files as hostile: only regular files are read, lines and files have documented size
limits, walks are iterative and bounded and never follow a symlinked folder, and every
problem is one line of text naming the path.

Interface (for the command line; ``bfcl_safe.checker.runner.score_tree`` consumes it)::

    found = discover(result_dir, models=None, categories=None)   # -> Discovery, or raises LayoutError
    found.files      # [ResultFile(model, category, path, version)], model folders in listing order
    found.notices    # one-line notices (v3 names, files outside multi_turn/, stray copies, filters)

- ``models``: model *folder* names to keep (the CLI maps registry names ``a/b`` -> ``a_b``
  first, as ``bfcl evaluate`` does); None keeps all. A requested folder that is not there
  gets a notice.
- ``categories``: category names of :data:`~bfcl_safe.checker.contract.MULTI_TURN_CATEGORIES`
  to keep; None keeps all four.
- :class:`LayoutError` (a :class:`~bfcl_safe.interp.errors.BfclSafeError`) when the tree
  does not have BFCL's shape or two inputs would map to one score file; it carries
  ``path`` (what was passed), ``found`` (what was found there), ``suggestion`` (the path
  to pass instead, or None) and ``paths`` (the files involved, e.g. both duplicates).

Layout (as ``bfcl evaluate`` lays it out and reads it)::

    RESULT/{model}/multi_turn/BFCL_v4_multi_turn_{category}_result.json

``{model}`` is the registry name with ``/`` replaced by ``_``. Also accepted, each with a
one-line notice: BFCL v3 names (``BFCL_v3_multi_turn_*_result.json``) and files directly
under the model folder (BFCL v3's layout). Copies deeper down (``{model}/multi_turn/old/...``)
are not scored (notice). Score files are always written the v4 way, so a v3 and a v4
file of one model and category would both map to one score file: that is a LayoutError
naming both.

This is the one result-file reader: ``evaluate`` (the runner), ``explain`` and
``generate``'s resume read result files through :func:`read_lines`, and the rules for
their lines are here once: an over-long line is skipped (:func:`too_long`), the first
line of an id is the one used (:class:`FirstOccurrence`), a line is parsed and its depth
bounded by :func:`parse_line`.

Reading (:func:`read_lines`): through :mod:`bfcl_safe.checker.inputs`, a file is read only
if it is a regular file (``fstat`` after an ``O_NONBLOCK`` open, so a FIFO can never block)
of at most :data:`~bfcl_safe.interp.limits.MAX_RESULT_FILE_BYTES`; lines longer than
:data:`~bfcl_safe.interp.limits.MAX_RESULT_LINE_CHARS` are skipped with a message without
being held in memory. :func:`parse_line` counts a line's JSON nesting depth
(:data:`~bfcl_safe.interp.limits.MAX_RESULT_LINE_DEPTH`) itself, after the C parser has read
it (the parser fails safely past a depth of its own, which differs between Python versions),
so which lines are refused is the same on every Python version.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

from bfcl_safe.checker.codec import Piece, deeper_in_pieces, deeper_than, loads_result_line, nesting_depth
from bfcl_safe.checker.contract import (
    ENTRY_ID,
    MULTI_TURN_CATEGORIES,
    MULTI_TURN_GROUP,
    VERSION,
    parse_result_file_name,
)
from bfcl_safe.checker.inputs import RESULT_FILE, Lines, shown_path
from bfcl_safe.checker.outputs import RESERVED_FOLDER_NAMES
from bfcl_safe.interp.errors import BfclSafeError
from bfcl_safe.interp.limits import (
    MAX_RESULT_LINE_CHARS,
    MAX_RESULT_LINE_DEPTH,
    MAX_WALK_DEPTH,
    MAX_WALK_ENTRIES,
)


class LayoutError(BfclSafeError, ValueError):
    """A result tree that is not laid out as BFCL lays it out, or that would make two
    inputs write one score file. ``path``: the folder given; ``found``: what is there;
    ``suggestion``: what to pass instead (None if nothing fits); ``paths``: files involved."""

    def __init__(self, message: str, *, path: Path, found: str, suggestion: Path | None = None,
                 paths: tuple[Path, ...] = ()):
        self.path = path
        self.found = found
        self.suggestion = suggestion
        self.paths = paths
        super().__init__(message)


class ResultFile(NamedTuple):
    model: str
    category: str
    path: Path
    #: ``v4`` or ``v3`` (from the file name).
    version: str = VERSION


class Discovery(NamedTuple):
    files: list[ResultFile]
    notices: list[str]


# --------------------------------------------------------------------------- text shown


_SURROGATE = re.compile(r"\\udc([89a-f][0-9a-f])")
def shown(value: Any) -> str:
    """``repr(value)`` cut to a readable length (ids come from hostile files), on one line."""
    text = shown_path(_SURROGATE.sub(r"\\x\1", repr(value)))
    return text if len(text) <= 80 else f"{text[:60]}...({len(text)} characters)"


# --------------------------------------------------------------------------- discovery


def _entries(folder: Path) -> list[os.DirEntry]:
    with os.scandir(folder) as listing:
        return list(listing)


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _result_names(folder: Path) -> list[tuple[str, str, Path]]:
    """(version, category, path) of the multi-turn result-file names directly in ``folder``
    (whatever kind of file they are: reading checks that), in name order."""
    out: list[tuple[str, str, Path]] = []
    try:
        entries = _entries(folder)
    except OSError:
        return out
    for entry in sorted(entries, key=lambda e: e.name):
        parsed = parse_result_file_name(entry.name)
        if parsed and parsed[1] in MULTI_TURN_CATEGORIES and not _is_dir(entry):
            out.append((parsed[0], parsed[1], Path(entry.path)))
    return out


def _deeper(folder: Path, skip: set[str]) -> tuple[list[Path], bool]:
    """Result-file names below ``folder``'s subfolders (except ``skip``): an iterative walk,
    bounded in depth and entries, not following symlinked folders. Returns the paths and
    whether the walk stopped at a bound."""
    found: list[Path] = []
    stack = [(folder, 0)]
    seen = 0
    while stack:
        current, depth = stack.pop()
        try:
            entries = _entries(current)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_WALK_ENTRIES:
                return found, True
            if _is_dir(entry):
                if depth == 0 and entry.name in skip:
                    continue
                if depth + 1 > MAX_WALK_DEPTH:
                    return found, True
                stack.append((Path(entry.path), depth + 1))
            elif depth > 0:
                parsed = parse_result_file_name(entry.name)
                if parsed and parsed[1] in MULTI_TURN_CATEGORIES:
                    found.append(Path(entry.path))
    return found, False


def _model_files(model: str, folder: Path, notices: list[str]) -> list[ResultFile]:
    """The files of one model folder: in ``multi_turn/`` (v4 or v3 names) or directly in
    the folder (with a notice); stray copies deeper down are reported, not scored."""
    group = folder / MULTI_TURN_GROUP
    candidates: list[tuple[str, str, Path]] = []
    if group.is_dir() and not group.is_symlink():
        candidates += _result_names(group)
    elif group.is_symlink():
        notices.append(f"{shown_path(group)}: a symlink, not followed; its files are not scored")
    flat = _result_names(folder)
    for _version, _category, path in flat:
        notices.append(f"{shown_path(path)}: directly under the model folder (BFCL v3 layout); scored, "
                       f"score file written the v4 way")
    candidates += flat
    by_category: dict[str, Path] = {}
    files = []
    for version, category, path in candidates:
        if category in by_category:
            raise LayoutError(
                f"two result files for {shown_path(model)} {category}: {shown_path(by_category[category])} "
                f"and {shown_path(path)}; both would be written to one score file: keep one",
                path=folder, found="two result files of one category", paths=(by_category[category], path))
        by_category[category] = path
        if version != VERSION:
            notices.append(f"{shown_path(path)}: a BFCL {version} file name; scored, score file written "
                           f"the {VERSION} way")
        files.append(ResultFile(model, category, path, version))
    strays, stopped = _deeper(folder, {MULTI_TURN_GROUP})
    strays += _deeper(group, set())[0] if group.is_dir() and not group.is_symlink() else []
    for path in sorted(set(strays)):
        notices.append(f"{shown_path(path)}: not in {shown_path(model)}/{MULTI_TURN_GROUP}/; a stray copy, not scored")
    if stopped:
        notices.append(f"{shown_path(folder)}: more than {MAX_WALK_ENTRIES:,} entries or {MAX_WALK_DEPTH} levels; "
                       f"the search for stray copies stopped there")
    files.sort(key=lambda f: MULTI_TURN_CATEGORIES.index(f.category))
    return files


def _diagnose(result_dir: Path, subdirs: list[os.DirEntry]) -> None:
    """Raise LayoutError when ``result_dir`` is one level too high, or is a model folder or a
    ``multi_turn`` folder."""
    here = _result_names(result_dir)
    if here:
        if result_dir.name == MULTI_TURN_GROUP:
            found, suggestion = "result files: a model's multi_turn folder", result_dir.parent.parent
        else:
            found, suggestion = "result files directly in it: a model folder", result_dir.parent
        raise LayoutError(
            f"{shown_path(result_dir)} holds {found}; pass the folder of model folders: "
            f"--result-dir {shown_path(suggestion)}", path=result_dir, found=found, suggestion=suggestion)
    group = result_dir / MULTI_TURN_GROUP
    if group.is_dir() and _result_names(group):
        found = f"{MULTI_TURN_GROUP}/ with result files: a model folder"
        raise LayoutError(
            f"{shown_path(result_dir)} holds {found}; pass the folder of model folders: "
            f"--result-dir {shown_path(result_dir.parent)}", path=result_dir, found=found,
            suggestion=result_dir.parent)
    for entry in subdirs:  # a folder whose subfolders are model folders: one level too high
        inner = Path(entry.path)
        try:
            children = [c for c in _entries(inner) if _is_dir(c)]
        except OSError:
            continue
        if _result_names(inner) or (inner / MULTI_TURN_GROUP).is_dir():
            continue
        models = [c.name for c in children
                  if _result_names(Path(c.path) / MULTI_TURN_GROUP) or _result_names(Path(c.path))]
        if models:
            found = f"{entry.name}/ holding model folders ({', '.join(shown_path(m) for m in models[:3])})"
            raise LayoutError(
                f"{shown_path(result_dir)} holds {shown_path(found)}: it is one level too high; "
                f"pass --result-dir {shown_path(inner)}", path=result_dir, found=found, suggestion=inner)


def discover(result_dir: str | os.PathLike, models: Iterable[str] | None = None,
             categories: Iterable[str] | None = None) -> Discovery:
    """The multi-turn result files under ``result_dir`` (see the module docstring)."""
    result_dir = Path(result_dir)
    try:
        top = _entries(result_dir)
    except OSError as exc:
        raise LayoutError(f"{shown_path(result_dir)}: cannot list it ({exc.strerror or type(exc).__name__})",
                          path=result_dir, found="nothing readable") from None
    subdirs = sorted((e for e in top if _is_dir(e)), key=lambda e: e.name)
    _diagnose(result_dir, subdirs)
    notices: list[str] = []
    for entry in top:
        if entry.is_symlink() and entry.is_dir():
            notices.append(f"{shown_path(entry.path)}: a symlinked folder, not followed")
    wanted_models = None if models is None else list(dict.fromkeys(models))
    wanted_categories = None if categories is None else set(categories)
    if wanted_categories is not None:
        for category in sorted(wanted_categories - set(MULTI_TURN_CATEGORIES)):
            notices.append(f"{shown(category)}: not a multi-turn category, skipped")
    files: list[ResultFile] = []
    outputs: dict[tuple[str, str], Path] = {}
    names = {e.name for e in subdirs}
    for entry in subdirs:
        if wanted_models is not None and entry.name not in wanted_models:
            continue
        if entry.name in RESERVED_FOLDER_NAMES:
            notices.append(f"{shown_path(entry.path)}: a model folder of this name would take the place of "
                           f"{entry.name} in the score dir; not scored")
            continue
        for result_file in _model_files(entry.name, Path(entry.path), notices):
            if wanted_categories is not None and result_file.category not in wanted_categories:
                continue
            key = (result_file.model, result_file.category)
            if key in outputs:  # cannot happen with folder names; kept as the rule's guard
                raise LayoutError(f"{shown_path(outputs[key])} and {shown_path(result_file.path)} map to one "
                                  f"score file", path=result_dir, found="two inputs for one output",
                                  paths=(outputs[key], result_file.path))
            outputs[key] = result_file.path
            files.append(result_file)
    for model in wanted_models or ():
        if model not in names:
            notices.append(f"{shown_path(model)}: no such model folder in {shown_path(result_dir)}")
    return Discovery(files, notices)


def find_result_files(result_dir: Path) -> list[ResultFile]:
    """Every file :func:`discover` finds (its notices dropped)."""
    return discover(result_dir).files


# --------------------------------------------------------------------------- reading


class Line(NamedTuple):
    """One non-blank line of a result file: its 1-based number and text (None: the line
    was too long and was not kept)."""

    number: int
    text: str | None


def read_lines(path: Path, *, newline: str | None = None, follow: bool = True) -> Iterator[Line]:
    """The non-blank lines of a result file, streamed through the one reader of untrusted
    files (:class:`~bfcl_safe.checker.inputs.Lines`: a regular file of at most
    :data:`~bfcl_safe.interp.limits.MAX_RESULT_FILE_BYTES`; UTF-8, undecodable bytes
    replaced; universal newlines as ``open()`` reads text unless ``newline`` says
    otherwise). Raises :class:`UnreadableFile` before the first line if the file is not to
    be read; a line longer than :data:`~bfcl_safe.interp.limits.MAX_RESULT_LINE_CHARS`
    comes as ``Line(n, None)`` (:func:`too_long` says why it is skipped)."""
    with Lines(path, RESULT_FILE, MAX_RESULT_LINE_CHARS, newline=newline, follow=follow) as lines:
        for number, line in enumerate(lines, 1):
            if line is None:
                yield Line(number, None)
            elif not line.isspace():  # (strip() would copy every line)
                yield Line(number, line)


def too_long() -> str:
    """Why an over-long result line is skipped (evaluate, explain and generate's resume)."""
    return f"longer than {MAX_RESULT_LINE_CHARS:,} characters; line skipped"


class FirstOccurrence:
    """The duplicate-id rule of result files: the first line of an id is the one used;
    :meth:`problem` says why a later one is skipped (None for a first occurrence)."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def problem(self, entry_id: str) -> str | None:
        if entry_id in self.seen:
            return f"duplicate id {shown(entry_id)}; the first occurrence is scored"
        self.seen.add(entry_id)
        return None


# --------------------------------------------------------------------------- one line

class LineProblem(BfclSafeError, ValueError):
    """Why a result line is skipped, without its location (the caller adds it)."""


def _refuse_if_deep(text: str, known_json: bool, pieces: list[Piece] | None = None) -> None:
    if pieces:
        deep = deeper_in_pieces(text, pieces, MAX_RESULT_LINE_DEPTH)
    else:
        deep = deeper_than(text, MAX_RESULT_LINE_DEPTH, known_json=known_json)
    if deep:
        depth = nesting_depth(text, known_json=known_json)
        raise LineProblem(f"nested {depth:,} levels deep, more than the {MAX_RESULT_LINE_DEPTH} a result line may "
                          f"be; line skipped")


def parse_line(text: str, category: str) -> dict:
    """A result line's entry: a JSON object with ``id`` (of ``category``) and ``result``.
    Raises :class:`LineProblem` saying why the line is skipped.

    A line nested more than :data:`~bfcl_safe.interp.limits.MAX_RESULT_LINE_DEPTH` deep is
    skipped whatever else is wrong with it. The depth is counted after the C parser has
    read the line (it fails safely, with RecursionError, past a depth of its own that
    differs between Python versions): on a line it accepted, piece by piece (see
    :func:`~bfcl_safe.checker.codec.deeper_in_pieces`) with the cheaper count for JSON; on a line it refused, the
    count for any text decides which of the two reasons is given."""
    pieces: list[Piece] = []
    try:
        item = loads_result_line(text, pieces=pieces)
    except (ValueError, RecursionError) as exc:
        _refuse_if_deep(text, known_json=False)
        raise LineProblem(f"not valid JSON ({shown_path(str(exc)[:120])}); line skipped") from None
    _refuse_if_deep(text, known_json=True, pieces=pieces)
    if not isinstance(item, dict) or "id" not in item or "result" not in item:
        raise LineProblem("expected an object with 'id' and 'result'; line skipped")
    entry_id = item["id"]
    match = ENTRY_ID.match(entry_id) if isinstance(entry_id, str) else None
    if match is None or match.group(1) != category:
        raise LineProblem(f"id {shown(entry_id)} does not belong to {category}; line skipped")
    return item


def malformed(result: Any) -> str | None:
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


def id_order(entry_id: str) -> tuple[int, str]:
    """Sort key of ids of one category in numeric order, without int() (an id may carry
    more digits than int() accepts)."""
    return len(number := entry_id.rsplit("_", 1)[1]), number


def read_result_lines(path: Path, category: str) -> tuple[list[dict], list[str]]:
    """Entries of a result file, in id order, and the problems found (duplicates: the
    first occurrence is kept). Raises :class:`UnreadableFile`."""
    entries: list[dict] = []
    problems: list[str] = []
    first = FirstOccurrence()
    for line in read_lines(path):
        where = f"{shown_path(path)}:{line.number}"
        if line.text is None:
            problems.append(f"{where}: {too_long()}")
            continue
        try:
            item = parse_line(line.text, category)
        except LineProblem as exc:
            problems.append(f"{where}: {exc}")
            continue
        duplicate = first.problem(item["id"])
        if duplicate is not None:
            problems.append(f"{where}: {duplicate}")
            continue
        entries.append(item)
    entries.sort(key=lambda item: id_order(item["id"]))
    return entries, problems
