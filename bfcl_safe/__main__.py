"""``python -m bfcl_safe``: the ``bfcl-safe`` command."""

from bfcl_safe.cli import run

run()
