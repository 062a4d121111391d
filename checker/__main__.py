"""``python -m checker``: the ``bfcl-safe`` command."""

from checker.command import run

run()
