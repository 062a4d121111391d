"""bfcl-safe inside other frameworks (optional extras; nothing here is imported by the core).

- :mod:`bfcl_safe.integrations.session` — one entry played as an OpenAI chat
  (:class:`~bfcl_safe.integrations.session.Conversation`): the layer the adapters share,
  on the play API (:mod:`bfcl_safe.checker.play`). Needs no extra.
- :mod:`bfcl_safe.integrations.verifiers` — ``load_environment(...)``: a verifiers 0.4
  environment (taskset, env, harness; ``pip install 'bfcl-safe[verifiers]'``).
- :mod:`bfcl_safe.integrations.inspect` — ``bfcl_multi_turn()``: an Inspect AI task
  (``pip install 'bfcl-safe[inspect]'``).
- :mod:`bfcl_safe.integrations.ray` — episodes in Ray actors and ``evaluate
  --ray-address`` scoring on a Ray cluster (``pip install 'bfcl-safe[ray]'``).

Each adapter imports its framework when it is imported; without the extra that import
fails with :class:`MissingExtra`, which names the extra to install.
"""

from __future__ import annotations

if __name__ != "bfcl_safe.integrations":  # a second copy, imported from the source tree by its folder name
    raise ImportError("import bfcl_safe.integrations, not integrations: the folder is installed as "
                      "bfcl_safe.integrations")

from bfcl_safe.interp.errors import BfclSafeError  # noqa: E402


class MissingExtra(BfclSafeError, ImportError):
    """An integration's framework is not installed: ``extra`` names the extra to install,
    ``module`` the requirement, ``missing`` the module that failed to import (when known)."""

    def __init__(self, extra: str, module: str, missing: str | None = None):
        self.extra = extra
        self.module = module
        self.missing = missing
        cause = f" (cannot import {missing})" if missing else ""
        super().__init__(f"bfcl_safe.integrations.{extra} needs {module}{cause}: pip install 'bfcl-safe[{extra}]'")

    def __reduce__(self):
        return (type(self), (self.extra, self.module, self.missing))


__all__ = ["MissingExtra"]
