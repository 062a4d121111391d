"""What the static checks need from the package (issue 26): ``py.typed`` shipped, so that
users' type checkers read bfcl-safe's annotations, and the settings ``.ci/run`` uses."""

from __future__ import annotations

import tomllib

from tests.refenv import ROOT


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_py_typed_is_shipped_with_the_top_package() -> None:
    assert (ROOT / "bfcl_safe" / "py.typed").is_file()
    assert "py.typed" in _config()["tool"]["setuptools"]["package-data"]["bfcl_safe"]


def test_the_test_extra_installs_the_static_checkers_and_xdist() -> None:
    names = {requirement.split(">")[0].split("=")[0].split("<")[0] for requirement in
             _config()["project"]["optional-dependencies"]["test"]}
    assert {"mypy", "ruff", "pytest-xdist"} <= names


def test_mypy_is_strict_on_the_interpreter_and_ruff_has_a_stated_rule_set() -> None:
    tool = _config()["tool"]
    interp = [o for o in tool["mypy"]["overrides"] if "bfcl_safe.interp.*" in o["module"]]
    assert interp and all(interp[0].get(flag) is True for flag in (
        "disallow_untyped_defs", "disallow_any_generics", "warn_return_any", "no_implicit_reexport",
        "check_untyped_defs", "disallow_untyped_calls"))
    assert set(tool["ruff"]["lint"]["select"]) >= {"E", "F", "I", "B"}
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ".ci/typecheck" in run and "ruff check" in run and "-n 2" in run


def test_every_version_sensitive_file_exists() -> None:
    """A renamed or removed test file would silently leave the other Pythons' run."""
    from tests.conftest import VERSION_SENSITIVE_FILES

    missing = sorted(name for name in VERSION_SENSITIVE_FILES if not (ROOT / "tests" / name).is_file())
    assert missing == []
