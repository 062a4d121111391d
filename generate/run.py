"""A ``generate`` run: which entries, which model and mode, N entries at a time, each
result line written as soon as its entry is played.

:func:`plan_run` decides (without talking to the endpoint) the model, its mode, the
result folder and the entries still to play; :func:`run_plan` plays them.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import attrs

from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES, category_of
from bfcl_safe.checker.outputs import model_folder
from bfcl_safe.checker.system_prompt import load_prompt_templates
from bfcl_safe.generate.client import ChatClient, RetryPolicy
from bfcl_safe.generate.inference import Completion, ModelSpec, play_entry
from bfcl_safe.generate.result_writer import ResultWriter, entry_index, existing_ids, result_path
from bfcl_safe.interp.errors import BfclSafeError


class GenerateError(BfclSafeError, ValueError):
    """A run that cannot start (a mode missing or contradicting the registry, an
    unknown id); the message is one line saying what to do."""


@attrs.frozen
class Plan:
    """What a run will do."""

    model: ModelSpec
    #: The registry (or user's) name, and the result folder named after it.
    name: str
    folder: str
    result_dir: Path
    categories: tuple[str, ...]
    #: The ids to play, in BFCL's order.
    ids: tuple[str, ...]
    #: Ids skipped because their lines are already there.
    skipped: int
    #: Replace lines in place (chosen ids with overwrite), instead of appending.
    update: bool
    registered: bool


def resolve_model(dataset: Any, name: str, mode: str | None, temperature: float) -> tuple[ModelSpec, bool]:
    """The model as BFCL would build its handler: a registered name takes its API
    name and mode from the registry (FC when the name contains ``FC`` or the registry
    says so, as BFCL decides); any other name needs ``mode``."""
    info = dataset.models().get(name)
    if info is None:
        if mode is None:
            raise GenerateError(
                f"{name!r} is not in BFCL's model registry: say how to call it with --fc or --prompting")
        return ModelSpec(api_name=name, mode=mode, temperature=temperature), False
    registry_mode = "fc" if ("FC" in name or info.is_fc_model) else "prompting"
    if mode is not None and mode != registry_mode:
        raise GenerateError(
            f"{name!r} is a {'function-calling' if registry_mode == 'fc' else 'prompting'} model in BFCL's "
            f"registry; drop --{mode} or use a name outside the registry"
        )
    api_name = info.model_name if isinstance(info.model_name, str) and info.model_name else name
    return ModelSpec(api_name=api_name, mode=registry_mode, temperature=temperature), True


def plan_run(dataset: Any, *, model: str, mode: str | None, categories: Sequence[str], ids: Sequence[str] = (),
             result_dir: Path, temperature: float = 0.001, allow_overwrite: bool = False) -> Plan:
    """Decide the run. ``ids`` (if any) restrict it to those entries (and their
    categories); with ``allow_overwrite`` their lines are replaced in place, while
    without ids the categories' files are started afresh (as ``bfcl generate -o``)."""
    spec, registered = resolve_model(dataset, model, mode, temperature)
    folder = model_folder(model)
    chosen = list(dict.fromkeys(ids))
    if chosen:
        unknown = []
        for entry_id in chosen:
            try:
                dataset.entry(entry_id)
            except (KeyError, ValueError):
                unknown.append(entry_id)
        if unknown:
            raise GenerateError(f"no multi-turn entry {', '.join(map(repr, unknown[:5]))}"
                                + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""))
        categories = [c for c in MULTI_TURN_CATEGORIES if any(category_of(i) == c for i in chosen)]
    wanted: list[str] = []
    skipped = 0
    update = bool(chosen) and allow_overwrite
    for category in categories:
        path = result_path(result_dir, folder, category)
        candidates = [i for i in dataset.ids(category) if not chosen or i in chosen]
        present = set() if allow_overwrite else existing_ids(path)
        if allow_overwrite and not chosen and path.exists():
            path.unlink()
        for entry_id in candidates:
            if entry_id in present:
                skipped += 1
            else:
                wanted.append(entry_id)
    wanted.sort(key=entry_index)
    return Plan(model=spec, name=model, folder=folder, result_dir=Path(result_dir), categories=tuple(categories),
                ids=tuple(wanted), skipped=skipped, update=update, registered=registered)


@attrs.define
class RunSummary:
    written: int = 0
    #: Entries whose result is BFCL's "Error during inference: ..." text.
    errors: int = 0
    paths: list[Path] = attrs.Factory(list)


def run_plan(plan: Plan, dataset: Any, client: Completion, *, num_threads: int = 1,
             exclude_state_log: bool = False, include_input_log: bool = False,
             progress: Callable[[str, dict], None] | None = None,
             stop: threading.Event | None = None) -> RunSummary:
    """Play the plan's entries, ``num_threads`` at a time, writing each line when its
    entry is done; sort the files at the end. ``progress(entry_id, line)`` is called
    after each write. Setting ``stop`` lets the entries in flight finish and starts
    no more (their lines are written; the files are sorted)."""
    templates = load_prompt_templates(dataset) if plan.model.mode == "prompting" else None
    writer = ResultWriter(plan.result_dir, plan.folder, update=plan.update)
    summary = RunSummary()
    lock = threading.Lock()

    def one(entry_id: str) -> dict:
        with lock:  # the dataset's lazy indexes are built by one thread at a time
            entry = dataset.entry(entry_id)
            prompt = dataset.prompt_entry(entry_id)
        return play_entry(entry, prompt, plan.model, client, templates=templates,
                          long_context_data=long_context_data, exclude_state_log=exclude_state_log,
                          include_input_log=include_input_log)

    def long_context_data() -> Mapping[str, Any]:
        with lock:  # parsed once, by one thread
            return dataset.long_context_data()

    pending = list(reversed(plan.ids))
    in_flight: dict[Future, str] = {}
    width = max(1, num_threads)
    pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="bfcl-safe-generate")
    try:
        while pending or in_flight:
            while pending and len(in_flight) < width and not (stop and stop.is_set()):
                entry_id = pending.pop()
                in_flight[pool.submit(one, entry_id)] = entry_id
            if not in_flight:
                break
            done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in done:
                entry_id = in_flight.pop(future)
                line = writer.write(future.result())
                summary.written += 1
                if isinstance(line.get("result"), str):
                    summary.errors += 1
                if progress is not None:
                    progress(entry_id, line)
    except BaseException:
        # Ctrl-C or a failure: start nothing more and do not wait for the entries in
        # flight (their lines are lost, as the module docstring says).
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    else:
        pool.shutdown(wait=True)
    finally:
        writer.finish()
        summary.paths = sorted(writer.paths)
    return summary


def make_client(plan: Plan, *, base_url: str, api_key: str | None, retry: RetryPolicy | None = None,
                on_retry: Callable[[str], None] | None = None) -> ChatClient:
    return ChatClient(plan.model.api_name, base_url=base_url, api_key=api_key, temperature=plan.model.temperature,
                      retry=retry, on_retry=on_retry)
