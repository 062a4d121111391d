"""What ``pip install .`` (not editable) installs: every package folder of the source tree,
so that the README's first command works from a wheel (issue 19 item 16). A subpackage
missing from pyproject's explicit list installs without its modules, and the command
fails at start-up."""

from __future__ import annotations

import tomllib

from tests.refenv import ROOT


def _declared() -> tuple[set[str], dict[str, str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return set(config["packages"]), dict(config["package-dir"])


def test_every_package_folder_is_installed():
    packages, folders = _declared()
    expected = set()
    for name, folder in folders.items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            relative = init.parent.relative_to(ROOT / folder)
            expected.add(".".join([name, *relative.parts]))
    assert expected - packages == set(), "package folders missing from [tool.setuptools] packages"
    assert packages - expected == set(), "packages listed without a folder"


def test_the_console_script_is_the_command_with_its_boundary():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["project"]["scripts"]["bfcl-safe"] == "bfcl_safe.launcher:run"
    # The launcher sets the collector before the command line is imported: nothing of
    # click or bfcl-safe at its top.
    import ast

    tree = ast.parse((ROOT / "bfcl_safe" / "launcher.py").read_text(encoding="utf-8"))
    top = [alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names]
    top += [node.module or "" for node in tree.body if isinstance(node, ast.ImportFrom)]
    assert not [name for name in top if name.split(".")[0] in ("click", "bfcl_safe")], top
