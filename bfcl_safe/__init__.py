"""bfcl-safe: the multi-turn part of BFCL (scoring, episodes) without executing model text.

The short public API; everything else lives in the three subpackages:

- :mod:`bfcl_safe.interp` — the safe call engine (parse, whitelisted dispatch);
- :mod:`bfcl_safe.backends` — the eight simulated APIs;
- :mod:`bfcl_safe.checker` — result files, decoders, verdicts, score files, the CLI.

Names are imported on first use, so ``import bfcl_safe`` stays cheap for the command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see (py.typed); at run time, __getattr__ below
    from bfcl_safe.checker.dataset import Dataset
    from bfcl_safe.checker.play import Episode
    from bfcl_safe.checker.runner import score_tree
    from bfcl_safe.checker.scoring import Options
    from bfcl_safe.interp.errors import RejectedInput

__all__ = ["Dataset", "Episode", "RejectedInput", "score_tree", "Options"]


def __getattr__(name: str) -> Any:
    if name == "Dataset":
        from bfcl_safe.checker.dataset import Dataset

        return Dataset
    if name == "Episode":
        from bfcl_safe.checker.play import Episode

        return Episode
    if name == "RejectedInput":
        from bfcl_safe.interp.errors import RejectedInput

        return RejectedInput
    if name == "score_tree":
        from bfcl_safe.checker.runner import score_tree

        return score_tree
    if name == "Options":
        from bfcl_safe.checker.scoring import Options

        return Options
    raise AttributeError(f"module 'bfcl_safe' has no attribute {name!r}")
