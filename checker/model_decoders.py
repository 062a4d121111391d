"""Which decoder scores a model's result files: from the model folder name, via the
wheel's model registry (read as data), unless ``--decoder`` forces one."""

from __future__ import annotations

from typing import Callable

from checker.dataset import Dataset


def decoder_for_model(model_folder: str, dataset: Dataset, report: Callable[[str], None] = lambda m: None) -> str:
    """The decoder name for a result folder (a key of ``checker.decoders.DECODERS``).

    A model the registry knows is decoded like its handler does for FC or prompting
    output; an unknown model falls back to ``auto`` (FC lists as FC, JSON tool-call
    text as JSON, other text as Python calls), with a one-line notice.
    """
    info = dataset.model_metadata(model_folder)
    if info is None:
        report(f"model {model_folder!r} is not in the bfcl-eval model registry; decoding its steps with 'auto'")
        return "auto"
    return "fc" if info.is_fc_model else "prompting"
