"""``python -m bfcl_safe``: the ``bfcl-safe`` command."""

from bfcl_safe.checker.command import run

run()
