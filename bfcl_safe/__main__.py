"""``python -m bfcl_safe``: the ``bfcl-safe`` command."""

from bfcl_safe.launcher import run

run()
