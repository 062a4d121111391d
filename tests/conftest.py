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

# --------------------------------------------------------------------------- version-sensitive tests
#: The test files whose outcome can depend on the Python version: differential tests
#: against the reference (its backends, checker and inference run on this Python) and
#: against CPython itself (``eval``, the parser, ``repr``, error texts, ``random``).
#: Marked ``version_sensitive``; ``.ci/run`` runs the whole suite on its main Python and
#: only these on every other Python (README, "Tests and CI").
VERSION_SENSITIVE_FILES = frozenset({
    # against the reference
    "test_backend_gorilla_file_system.py", "test_backend_math_api.py", "test_backend_message_api.py",
    "test_backend_posting_api.py", "test_backend_ticket_api.py", "test_backend_trading_bot.py",
    "test_backend_travel_booking.py", "test_backend_vehicle_control.py", "test_hostile_backends.py",
    "test_checker_real_results.py", "test_mutations.py", "test_nonofficial_checks.py", "test_scores.py",
    "test_decoders_eval.py", "test_decoders_nfkc.py", "test_handler_decoders.py", "test_interp_vs_eval.py",
    "test_play_openai_format.py", "test_generate_differential.py", "test_generate_properties.py",
    # against CPython: eval, its parser and tokenizer, repr and json, random
    "test_builtins.py", "test_interp_syntax.py", "test_fastparse.py", "test_fuzz_text.py", "test_breakout.py",
    "test_results_format.py", "test_seeded.py", "test_long_context.py", "test_decoders_hostile.py",
})


# --------------------------------------------------------------------------- the serve tests' own environment
#: ``bfcl-safe serve`` needs openenv, which cannot be installed beside verifiers 0.4 (openenv's
#: fastmcp 3 needs mcp<2.0, verifiers 0.4.0 pins mcp==2.0.0). Its test file runs in an
#: environment of its own (extra ``test-serve``) that ``tests/test_serve_env.py`` builds and
#: runs it in; in any other run it is not collected (not skipped: it runs there).
SERVE_ENV = "BFCL_SAFE_SERVE_ENV"
SERVE_TEST_FILES = ("test_integration_serve.py",)


def pytest_ignore_collect(collection_path, config) -> bool | None:
    if collection_path.name in SERVE_TEST_FILES and os.environ.get(SERVE_ENV) != "1":
        return True
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in VERSION_SENSITIVE_FILES:
            item.add_marker(pytest.mark.version_sensitive)


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
