"""Shipped code (bfcl_safe/, interp/, backends/, checker/, generate/, integrations/, subpackages included) never evaluates or imports by name, never
spawns processes, never unpickles: checked on the syntax tree of every module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bfcl_safe", "interp", "backends", "checker", "generate", "integrations")
SHIPPED = sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))
BANNED_CALLS = {"eval", "exec", "compile", "__import__"}
BANNED_MODULES = {"importlib", "subprocess", "pickle", "marshal"}


@pytest.mark.parametrize("path", SHIPPED, ids=[str(p.relative_to(ROOT)) for p in SHIPPED])
def test_module_uses_nothing_that_runs_or_loads_code(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in BANNED_CALLS:
            found.append(f"{node.lineno}: {node.id}")
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] in BANNED_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in BANNED_MODULES:
            found.append(f"{node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Attribute) and node.attr == "system" and isinstance(node.value, ast.Name) \
                and node.value.id == "os":
            found.append(f"{node.lineno}: os.system")
        elif isinstance(node, ast.Attribute) and node.attr in BANNED_CALLS | {"literal_eval"} \
                and isinstance(node.value, ast.Name) and node.value.id in ("builtins", "ast"):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    assert found == []


def test_the_policy_check_sees_every_package() -> None:
    assert {p.relative_to(ROOT).parts[0] for p in SHIPPED} == set(PACKAGES)
    assert len(SHIPPED) >= 25
