"""Every cache that outlives a call is listed, with its bound, in ARCHITECTURE.md.

Found in the shipped code by its shape: a function decorated with ``lru_cache``/``cache``,
a module-level ``lru_cache(...)(f)``, a module-level ``Memo()``, a module-level dict whose
name says it keeps things (``_FROZEN``, ``*_CACHE``), or a ``Memo()`` made inside a
function (one per decoder family).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("interp", "backends", "checker", "generate", "integrations", "bfcl_safe")


_CACHE_DECORATORS = {"lru_cache", "functools.lru_cache", "cache", "functools.cache"}


def _is_cache_decorator(decorator: ast.expr) -> bool:
    return ast.unparse(decorator.func if isinstance(decorator, ast.Call) else decorator) in _CACHE_DECORATORS


def _caches() -> set[str]:
    found = set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            where = path.relative_to(ROOT).as_posix()
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if any(_is_cache_decorator(d) for d in node.decorator_list):
                        found.add(f"{where} {node.name}")
                    if any(isinstance(n, ast.Call) and ast.unparse(n.func) == "Memo" for n in ast.walk(node)):
                        found.add(f"{where} Memo")
                elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    target = ast.unparse(node.targets[0] if isinstance(node, ast.Assign) else node.target)
                    value = ast.unparse(node.value)
                    keeps = re.search(r"\blru_cache\(|^Memo\(", value) or (
                        isinstance(node.value, ast.Dict) and re.search(r"FROZEN|CACHE", target))
                    if keeps:
                        found.add(f"{where} {target}")
    return found


def test_the_finder_finds_the_known_kinds():
    caches = _caches()
    assert "interp/text.py _parse_cached" in caches  # a decorated function
    assert "checker/decoders/fc.py _loads_cached" in caches  # lru_cache(...)(f)
    assert "checker/decoders/prompting.py _MEMO" in caches  # a module-level Memo
    assert "checker/decoders/base.py Memo" in caches  # a Memo per decoder family
    assert "interp/result_text.py _FROZEN" in caches  # a dict that keeps things


def test_every_cache_is_in_the_architecture_table():
    table = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").split("## Caches", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    missing = []
    for cache in sorted(_caches()):
        where, name = cache.split(" ")
        if not any(f"`{where}`" in row and f"`{name}`" in row for row in rows):
            missing.append(cache)
    assert not missing, f"caches not listed (with their bound) in ARCHITECTURE.md's Caches table: {missing}"
