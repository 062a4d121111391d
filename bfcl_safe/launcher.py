"""The console script ``bfcl-safe`` (and ``python -m bfcl_safe``): :func:`run` sets the
garbage collector for a short, allocation-heavy process, then imports and runs the
command line (:mod:`bfcl_safe.cli`), and exits as soon as its output is flushed.

Kept apart from :mod:`bfcl_safe.cli` so that the collector is set before anything is
imported: the imports (click, the commands, the backends) create tens of thousands of
objects that live as long as the process, and with Python's default settings the
collector would scan them again and again while they are created. This module imports
nothing of bfcl-safe or click at its top.
"""

from __future__ import annotations

import gc
import os
import sys

#: The collector's thresholds while the command runs: a collection every 200,000 net
#: allocations of containers instead of 700 (``benchmarks/bench_memory.py`` measures
#: the peak with these settings; cyclic garbage is still collected).
GC_THRESHOLDS = (200_000, 20, 100)


def run() -> None:
    """Run the command and exit. Everything is written and closed by the time the
    command returns; tearing down the interpreter's objects one by one (tens of
    milliseconds after a run) would only delay the exit.

    No collection runs while the command line and the commands' modules are imported;
    what they created is then left out of the collector's scans (``gc.freeze``), and
    scoring, which allocates many short-lived containers, is collected less often
    (:data:`GC_THRESHOLDS`)."""
    gc.disable()
    try:
        try:
            from bfcl_safe.checker import commands  # noqa: F401 - the commands' modules, imported now
            from bfcl_safe.cli import main
        finally:
            gc.freeze()
            gc.set_threshold(*GC_THRESHOLDS)
            gc.enable()
        main()
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:  # before the command's own boundary was reached
        print("Interrupted: nothing was written", file=sys.stderr)
        code = 130
    except Exception as exc:  # noqa: BLE001 - last guard: the click group's boundary catches the rest
        print(f"Internal error: {type(exc).__name__} while starting bfcl-safe (a bug; please report it)",
              file=sys.stderr)
        code = 70
    else:
        code = 0
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be said
            pass
    os._exit(code)
