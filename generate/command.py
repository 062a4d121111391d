"""``bfcl-safe generate``: BFCL's multi-turn inference against an OpenAI-compatible
endpoint, the model's calls run by bfcl-safe's interpreter (never ``eval``).

Registered in the ``bfcl-safe`` group by :mod:`bfcl_safe.cli`; its errors go
through that group's one boundary (one line, never a traceback).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES, category_of
from bfcl_safe.checker.inputs import OPTION_FILE, UnreadableFile, read_json, shown_path
from bfcl_safe.checker.outputs import model_folder
from bfcl_safe.checker.terminal import shown
from bfcl_safe.generate.result_writer import check_result_folder

#: BFCL's file of chosen ids for ``--run-ids`` (``{category: [id, ...]}``), in the project root.
IDS_FILE = "test_case_ids_to_generate.json"


def _ids_from_file(root: Path) -> list[str]:
    """The multi-turn ids of ``{root}/{IDS_FILE}`` (``{category: [id, ...]}``), read through
    the one door for untrusted files (a regular file, size and depth bounded); every id
    must be a string."""
    from bfcl_safe.generate.run import GenerateError

    path = root / IDS_FILE
    if not os.path.lexists(path):
        raise GenerateError(f"--run-ids reads {shown_path(path)}, which does not exist")
    try:
        data = read_json(path, OPTION_FILE)
    except UnreadableFile as exc:
        raise GenerateError(f"--run-ids: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise GenerateError(f"--run-ids: {shown_path(path)} must be a JSON object {{category: [id, ...]}}")
    ids = []
    for category, values in data.items():
        if category in MULTI_TURN_CATEGORIES:
            for value in values:
                if not isinstance(value, str):
                    raise GenerateError(f"--run-ids: {shown_path(path)}: {category!r} holds {shown(value)}, not an "
                                        f"id string")
                ids.append(value)
    return ids


@click.command()
@click.option("--model", required=True, metavar="NAME",
              help="The model: a name from BFCL's registry (its API name and FC/prompting mode come from there) "
                   "or any name the endpoint serves (then say --fc or --prompting). Results go to "
                   "RESULT_DIR/NAME (with / as _).")
@click.option("--base-url", default=None, metavar="URL",
              help="The OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (default: $OPENAI_BASE_URL).")
@click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True, metavar="VAR",
              help="Environment variable holding the API key (none needed for most local servers).")
@click.option("--fc", "mode", flag_value="fc", default=None,
              help="Function calling: tools parameter, tool calls and tool messages.")
@click.option("--prompting", "mode", flag_value="prompting",
              help="Prompting: BFCL's system prompt with the docs, calls read from the reply's text.")
@click.option("--test-category", "categories", multiple=True, metavar="NAME",
              help="multi_turn, all (the default), or one of the four multi-turn categories (repeatable, or "
                   "comma-separated).")
@click.option("--result-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where result files go (default: result/ under $BFCL_PROJECT_ROOT, else the current "
                   "directory; a relative path is taken from there, as bfcl does).")
@click.option("--num-threads", default=1, show_default=True, type=click.IntRange(1, 256),
              help="Entries played at the same time.")
@click.option("--temperature", default=0.001, show_default=True, type=float)
@click.option("--ids", "ids", multiple=True, metavar="ID",
              help="Play only these entries (repeatable, or comma-separated), e.g. multi_turn_base_0.")
@click.option("--run-ids", is_flag=True,
              help=f"Play the entries listed in {IDS_FILE} in the project root (as bfcl's --run-ids).")
@click.option("--allow-overwrite", "-o", is_flag=True,
              help="Play entries whose results are already there again (with --ids/--run-ids their lines are "
                   "replaced; otherwise the categories' files start afresh). Without it a run resumes.")
@click.option("--exclude-state-log", is_flag=True,
              help="Leave the backends' state out of the inference log (as bfcl's flag).")
@click.option("--include-input-log", is_flag=True,
              help="Put what was sent at each step into the inference log (as bfcl's flag; large).")
@click.option("--evaluate", "then_evaluate", is_flag=True,
              help="Score the results with bfcl-safe evaluate when done.")
@click.option("--score-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="With --evaluate: where score files go (default: score/ beside the default result dir).")
@click.option("--data", type=click.Path(exists=True, dir_okay=True, file_okay=True), default=None,
              help="bfcl-eval wheel file, unpacked wheel, or installed bfcl_eval folder (default: the cache).")
@click.option("--max-retries", default=2, show_default=True, type=click.IntRange(0, 100),
              help="Retries of connection errors, timeouts and HTTP 408/409/429/5xx (the openai client's own).")
@click.option("--rate-limit-retries", default=20, show_default=True, type=click.IntRange(0, 10_000),
              help="Further retries of HTTP 429, waiting like BFCL (random exponential, --retry-wait seconds).")
@click.option("--retry-wait", nargs=2, type=float, default=(6.0, 120.0), show_default=True, metavar="MIN MAX",
              help="Bounds of the wait before a rate-limit retry, in seconds.")
@click.option("--timeout", default=600.0, show_default=True, type=click.FloatRange(0.001),
              help="Seconds before one request times out.")
@click.pass_context
def generate(ctx: click.Context, model: str, base_url: str | None, api_key_env: str, mode: str | None,
             categories: tuple[str, ...], result_dir: Path | None, num_threads: int, temperature: float,
             ids: tuple[str, ...], run_ids: bool, allow_overwrite: bool, exclude_state_log: bool,
             include_input_log: bool,
             then_evaluate: bool, score_dir: Path | None, data: str | None, max_retries: int,
             rate_limit_retries: int, retry_wait: tuple[float, float], timeout: float) -> None:
    """Play BFCL multi-turn entries against a model and write result files like `bfcl generate`."""
    from bfcl_safe.checker import commands as checker_cli
    from bfcl_safe.checker.terminal import ProgressLine
    from bfcl_safe.generate.client import RetryPolicy, _openai
    from bfcl_safe.generate.run import make_client, plan_run, run_plan

    _openai()  # the extra is checked first: nothing is planned or said without it
    base_url = base_url or os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        raise click.BadParameter("give the endpoint with --base-url URL (or set OPENAI_BASE_URL)",
                                 param_hint="'--base-url'")
    if retry_wait[0] < 0 or retry_wait[1] < retry_wait[0]:
        raise click.BadParameter("MIN and MAX must satisfy 0 <= MIN <= MAX", param_hint="'--retry-wait'")
    folder = model_folder(model)  # a name that is no safe folder name: refused before anything else
    chosen, notices = checker_cli.select_categories(categories)
    root = checker_cli.project_root()
    result_dir = checker_cli.under_root(result_dir, "result")
    check_result_folder(result_dir, folder)  # (a symlink or FIFO planted there: refused up front)
    wanted_ids = checker_cli.split_values(ids)
    if run_ids:
        wanted_ids += [i for i in _ids_from_file(root) if i not in wanted_ids]
    for notice in notices:
        click.echo(f"note: {notice}", err=True)
    if wanted_ids:
        bad = [i for i in wanted_ids if not _is_multi_turn_id(i)]
        if bad:
            raise click.BadParameter(f"not a multi-turn entry id: {shown(bad[0])!r}", param_hint="'--ids'")
    dataset = checker_cli.open_dataset(data)
    plan = plan_run(dataset, model=model, mode=mode, categories=chosen, ids=wanted_ids, result_dir=result_dir,
                    temperature=temperature, allow_overwrite=allow_overwrite)
    where = plan.result_dir / plan.folder
    handler = getattr(dataset.models().get(model), "model_handler", None) if plan.registered else None
    if handler is not None and handler != "OpenAICompletionsHandler":
        click.echo(f"note: BFCL plays {shown(model)} with its {shown(handler)}; bfcl-safe plays every model over "
                   "chat completions as BFCL's OpenAICompletionsHandler does (same mode and API name)", err=True)
    click.echo(f"{shown(plan.name)}: {plan.model.mode} mode, model {shown(plan.model.api_name)!r} at {shown(base_url)}"
               f"{'' if plan.registered else ' (not in the registry)'}; {len(plan.ids)} entries to play, "
               f"{plan.skipped} already in {shown(where)}", err=True)
    if plan.ids:
        retry = RetryPolicy(max_retries=max_retries, rate_limit_retries=rate_limit_retries,
                            min_wait=retry_wait[0], max_wait=retry_wait[1], timeout=timeout)
        api_key = os.environ.get(api_key_env) if api_key_env else None
        progress_line = ProgressLine(sys.stderr, len(plan.ids), "Generating") if sys.stderr.isatty() else None
        state = {"done": 0, "errors": 0}
        step = max(1, len(plan.ids) // 10)

        def say(message: str) -> None:
            if progress_line is not None:
                progress_line.message(message)
            else:
                click.echo(shown(message), err=True)

        def progress(entry_id: str, line: dict) -> None:
            state["done"] += 1
            if isinstance(line.get("result"), str):
                state["errors"] += 1
                say(f"{entry_id}: {line['result'][:300]}")
            if progress_line is not None:
                progress_line.update(1)
            elif state["done"] % step == 0 or state["done"] == len(plan.ids):
                click.echo(f"generated {state['done']}/{len(plan.ids)}", err=True)

        client = make_client(plan, base_url=base_url, api_key=api_key, retry=retry, on_retry=say)
        try:
            summary = run_plan(plan, dataset, client, num_threads=num_threads, exclude_state_log=exclude_state_log,
                               include_input_log=include_input_log,
                               progress=progress)
        except KeyboardInterrupt:
            raise checker_cli.Interrupted(
                f"{state['done']} entries written under {shown(where)}; the entries in flight were not. "
                "Run the same command again to resume") from None
        finally:
            if progress_line is not None:
                progress_line.close()
            client.close()
        click.echo(f"wrote {summary.written} entries ({summary.errors} with an inference error) under "
                   f"{shown(where)}", err=True)
    if then_evaluate:
        ctx.invoke(checker_cli.evaluate, models=(plan.folder,), categories=tuple(plan.categories),
                   result_dir=plan.result_dir, score_dir=checker_cli.under_root(score_dir, "score"),
                   partial_eval=bool(wanted_ids), data=data, decoder=plan.model.mode)


def _is_multi_turn_id(entry_id: str) -> bool:
    try:
        return category_of(entry_id) in MULTI_TURN_CATEGORIES
    except (KeyError, ValueError):
        return False
