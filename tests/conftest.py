import os

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "fuzz", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("BFCL_SAFE_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def runner() -> CliRunner:
    """click's CliRunner with stderr kept apart from stdout (the keyword only exists in
    click versions where the two are mixed by default)."""
    return CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()


# --------------------------------------------------------------------------- no silent skips
#: A skip whose reason starts with this is about the platform (no os.fork, no time.tzset);
#: any other skip is a failed promise, and under CI=true it fails the run.
PLATFORM_SKIP = "platform:"
_skipped: list[tuple[str, str]] = []


def pytest_runtest_logreport(report) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        if not reason.startswith(PLATFORM_SKIP):
            _skipped.append((report.nodeid, reason))


def pytest_sessionfinish(session, exitstatus) -> None:
    if _skipped and os.environ.get("CI", "").lower() == "true":
        lines = "\n".join(f"  {node}: {reason}" for node, reason in _skipped)
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = f"\nCI: {len(_skipped)} test(s) skipped for a reason that is not the platform:\n{lines}"
        (reporter.write_line if reporter else print)(message)
        session.exitstatus = 1
