"""``bfcl-safe serve``'s tests, in the environment they need.

openenv (the ``serve`` extra) cannot be installed beside verifiers 0.4 (openenv's fastmcp 3
needs mcp<2.0; verifiers 0.4.0 pins mcp==2.0.0), so ``tests/test_integration_serve.py`` does
not run in the test extra's environment (``tests/conftest.py`` leaves it out there). This
test builds ``.venv-serve`` (this checkout installed editable with the ``test-serve`` extra, which
also holds what else cannot share an environment with verifiers 0.4: Inspect's openai
providers; rebuilt when ``pyproject.toml`` changes) and runs that file in it: it fails if any of those
tests fails or is skipped, so the serve tests are part of every full run.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import SERVE_ENV, SERVE_TEST_FILES

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv-serve"
STAMP = VENV / "bfcl-safe-pyproject.sha256"


def _python() -> Path:
    return VENV / "bin" / "python"


def serve_python() -> Path:
    """The second test environment's Python, built (or rebuilt) for this checkout's
    pyproject.toml; under a file lock, since pytest-xdist workers may ask at once (this
    test, and tests/test_readme.py for the README's serve and Inspect snippets)."""
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    with open(ROOT / ".venv-serve.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _python().exists() and STAMP.exists() and STAMP.read_text().strip() == wanted:
            return _python()
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
        install = subprocess.run([str(_python()), "-m", "pip", "install", "-q", "-e", f"{ROOT}[test-serve]"],
                                 capture_output=True, text=True)
        assert install.returncode == 0, install.stderr[-3000:]
        STAMP.write_text(wanted)
        return _python()


def test_the_serve_tests_pass_in_their_own_environment():
    python = serve_python()
    env = {**os.environ, SERVE_ENV: "1", "CI": os.environ.get("CI", "")}
    env.pop("PYTHONPATH", None)
    run = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          *(f"tests/{name}" for name in SERVE_TEST_FILES)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    tail = run.stdout[-4000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    assert " passed" in run.stdout and "skipped" not in run.stdout.splitlines()[-1], tail
    assert "error" not in run.stdout.splitlines()[-1], tail
