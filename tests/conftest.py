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
