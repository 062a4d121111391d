"""Access to the reference implementation (the pinned bfcl-eval wheel) for differential tests.

The reference is installed with pip into a target folder of its own (``.ref/pyX.Y/`` at
the project root, or ``$BFCL_SAFE_REF_DIR``), never into the environment that runs
bfcl-safe. Tests put that folder on ``sys.path`` only to import the reference's
backend classes and checker functions and compare against them.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
WHEEL_NAME = "bfcl_eval-2026.3.23-py3-none-any.whl"
WHEEL_SHA256 = "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"
#: One folder per Python version: the reference's dependencies include compiled
#: extensions (tree_sitter), built for the Python that installs them.
REF_DIR = Path(os.environ.get("BFCL_SAFE_REF_DIR", ROOT / ".ref" / f"py{sys.version_info[0]}.{sys.version_info[1]}"))
REFERENCE_DEPS = [
    "mpmath==1.3.0",
    "tree_sitter==0.21.3",
    "tree-sitter-java==0.21.0",
    "tree-sitter-javascript==0.21.4",
    "tenacity",
    "python-dotenv",
    "filelock",
]
#: Real model output kept in the repository (see tests/fixtures/real-results/README.md).
REAL_RESULTS_FIXTURES = ROOT / "tests" / "fixtures" / "real-results"


def _materialised_real_results() -> Path:
    """The real-result fixtures unpacked (once per fixture version) into a folder of
    their own under the system's temp folder, in the layout BFCL wrote them:
    ``{run}/result/{model}/multi_turn/*_result.json`` and ``{run}/score/...``."""
    import hashlib
    import tarfile
    import tempfile

    archives = sorted(REAL_RESULTS_FIXTURES.glob("*.tar.xz"))
    digest = hashlib.sha256(b"".join(a.read_bytes() for a in archives)).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"bfcl-safe-real-results-{digest}"
    if not (target / ".complete").exists():
        staging = Path(tempfile.mkdtemp(prefix="bfcl-safe-real-results-"))
        for archive in archives:
            with tarfile.open(archive, "r:xz") as tar:
                for member in tar.getmembers():
                    if not member.isfile() or member.name.startswith(("/", "..")) or "/../" in member.name:
                        raise RuntimeError(f"unexpected member {member.name!r} in {archive}")
                    path = staging / member.name
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(tar.extractfile(member).read())
        (staging / ".complete").write_text("ok\n")
        try:
            staging.rename(target)
        except OSError:  # another process unpacked it first
            import shutil

            shutil.rmtree(staging, ignore_errors=True)
    return target


REAL_RESULTS = _materialised_real_results()


def wheel_path() -> Path:
    """The pinned wheel: ``$BFCL_SAFE_WHEEL``, else ``../shared/``, else the pip cache of ``data fetch``."""
    env = os.environ.get("BFCL_SAFE_WHEEL")
    candidates = [Path(env)] if env else []
    candidates.append(ROOT.parent / "shared" / WHEEL_NAME)
    cache = Path(os.environ.get("BFCL_SAFE_CACHE", Path.home() / ".cache" / "bfcl-safe"))
    candidates += [Path(p) for p in glob.glob(str(cache / WHEEL_NAME))]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    # A fresh machine: fetch the pinned wheel from PyPI into the cache (tests may use pip),
    # one process at a time (pytest-xdist workers start together).
    cache = Path(os.environ.get("BFCL_SAFE_CACHE", Path.home() / ".cache" / "bfcl-safe"))
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / WHEEL_NAME
    with _exclusive(cache / f".{WHEEL_NAME}.lock"):
        if not path.is_file():
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "bfcl-eval==2026.3.23",
                 "-d", str(cache)],
                check=True,
            )
            import hashlib

            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest != WHEEL_SHA256:
                path.unlink()
                raise RuntimeError(f"downloaded {WHEEL_NAME} has sha256 {digest}, expected {WHEEL_SHA256}")
    return path


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` (created if missing): one process at a
    time sets up what the tests share (the wheel, the reference's folder), whichever
    test or worker gets there first; the others wait and then find it done."""
    import fcntl

    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@lru_cache(maxsize=None)
def wheel() -> Path:
    return wheel_path()


@lru_cache(maxsize=None)
def reference_dir() -> Path:
    """Install the reference into REF_DIR once; return the folder to put on sys.path."""
    marker = REF_DIR / ".complete"
    if marker.exists():
        return REF_DIR
    REF_DIR.mkdir(parents=True, exist_ok=True)
    with _exclusive(REF_DIR.parent / f".{REF_DIR.name}.lock"):  # one installer at a time
        if not marker.exists():
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 "--no-deps", "--upgrade", "--target", str(REF_DIR), str(wheel_path()), *REFERENCE_DEPS],
                check=True,
            )
            marker.write_text("ok\n")
    return REF_DIR


def import_reference(module: str):
    """Import ``bfcl_eval.<module>`` from the reference folder."""
    import importlib

    path = str(reference_dir())
    if path not in sys.path:
        sys.path.append(path)
    return importlib.import_module(f"bfcl_eval.{module}")


def reference_package_dir() -> Path:
    """The unpacked ``bfcl_eval`` package of the reference (dataset files live under it)."""
    return reference_dir() / "bfcl_eval"


BACKEND_MODULES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}


def reference_backend_class(class_name: str) -> type:
    module = import_reference(
        f"eval_checker.multi_turn_eval.func_source_code.{BACKEND_MODULES[class_name]}"
    )
    return getattr(module, class_name)
