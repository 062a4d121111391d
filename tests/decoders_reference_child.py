"""A child process comparing our decoders with the reference handlers' ``decode_execute``.

Run as ``python -m tests.decoders_reference_child`` (from the project root, with a fixed
``PYTHONHASHSEED`` so that both sides order sets alike). It reads JSON lines
``[decoder, step]`` and answers one JSON line each: ``{"ours": ..., "reference":
{handler: ...}}`` where a value is the list of call texts, ``"<failed>"`` (the step does
not decode) or, for ours, ``"<budget>"`` (the entry's budget ran out). Both sides run
here, so a reference ``eval`` that never finishes is caught by the parent's timeout,
and whatever it computes stays in this process (limited to 2 GB by the parent).
"""

from __future__ import annotations

import json
import os
import resource
import select
import subprocess
import sys
from pathlib import Path

from bfcl_safe.checker.decoders import DECODERS, DecodeError
from bfcl_safe.interp.budget import Budget
from bfcl_safe.interp.errors import BudgetExceeded
from tests.test_handler_decoders import FAILED, handlers_for, reference_decode, reference_handler

BUDGET = "<budget>"
ROOT = Path(__file__).resolve().parent.parent
#: A generous guard of the harness per example (a loaded machine; the reference's eval
#: of a big power may never finish): not a budget of the code.
GUARD_SECONDS = 60


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


class ReferenceChild:
    """The parent's handle on this module run as a child process."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.examples = 0

    def _start(self) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.decoders_reference_child"], cwd=ROOT, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, encoding="utf-8", errors="surrogatepass", preexec_fn=_limit_memory,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )

    def compare(self, decoder: str, step: object) -> dict | None:
        """Both sides' answers, or None when they did not come within the guard (the
        child is then replaced)."""
        if self.process is None:
            self.process = self._start()
        self.process.stdin.write(json.dumps([decoder, step]) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], GUARD_SECONDS)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.close()
            return None
        self.examples += 1
        return json.loads(line)

    def close(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            self.process.stdin.close()
            self.process.stdout.close()
            self.process = None


def ours(decoder: str, step: object) -> object:
    try:
        with Budget().active():
            return DECODERS[decoder][1](step)
    except DecodeError:
        return FAILED
    except BudgetExceeded:
        return BUDGET


def main() -> None:
    for line in sys.stdin:
        decoder, step = json.loads(line)
        reference = {
            f"{handler}(is_fc_model={is_fc})": reference_decode(reference_handler(handler, is_fc), step)
            for handler, is_fc in handlers_for(decoder)
        }
        print(json.dumps({"ours": ours(decoder, step), "reference": reference}, default=repr), flush=True)


if __name__ == "__main__":
    main()
