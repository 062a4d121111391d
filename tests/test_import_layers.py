"""Import direction and import cycles in the shipped code, read from the source (AST), so
that an import inside a function or under ``TYPE_CHECKING`` counts like one at the top
(issue 26): the packages form layers, ``interp`` < ``backends`` < ``checker`` <
``generate`` | ``integrations`` < the top ``bfcl_safe``, and a module imports only from
its own layer or a lower one; no two modules import each other, directly or round a
longer cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent

#: Source folder -> (installed package, layer). Equal layers may not import each other
#: unless they are the same package.
PACKAGES = {
    "interp": ("bfcl_safe.interp", 0),
    "backends": ("bfcl_safe.backends", 1),
    "checker": ("bfcl_safe.checker", 2),
    "generate": ("bfcl_safe.generate", 3),
    "integrations": ("bfcl_safe.integrations", 3),
    "bfcl_safe": ("bfcl_safe", 4),
}


def _module_name(folder: str, path: Path) -> str:
    package = PACKAGES[folder][0]
    parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def shipped_modules() -> dict[str, Path]:
    """Every shipped module's dotted name -> its file."""
    modules = {}
    for folder in PACKAGES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            modules[_module_name(folder, path)] = path
    return modules


MODULES = shipped_modules()


def _package_of(module: str) -> str:
    """The layer package a module belongs to (the longest package name that prefixes it)."""
    best = ""
    for package, _ in PACKAGES.values():
        if (module == package or module.startswith(package + ".")) and len(package) > len(best):
            best = package
    return best


LAYER = {package: layer for package, layer in PACKAGES.values()}


def imports_of(path: Path, name: str) -> set[str]:
    """The shipped modules ``path`` imports, wherever the import statement is: for
    ``from package import name`` the submodule when there is one, else the package."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.append(submodule if submodule in MODULES else base)
        for target in targets:
            # `import bfcl_safe.checker.commands` imports the packages above it too; the
            # module named is what the importer depends on.
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


GRAPH = {name: imports_of(path, name) for name, path in MODULES.items()}


def test_the_source_tree_is_what_the_layers_list():
    assert len(MODULES) > 60
    assert {"bfcl_safe.cli", "bfcl_safe.checker.commands", "bfcl_safe.generate.command", "bfcl_safe.interp.limits",
            "bfcl_safe.checker.decoders"} <= set(MODULES)
    # the graph sees function-level imports: the top group imports generate's command lazily
    assert "bfcl_safe.generate.command" in GRAPH["bfcl_safe.cli"]


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    problems = []
    for module, targets in sorted(graph.items()):
        package = _package_of(module)
        for target in sorted(targets):
            other = _package_of(target)
            if other == package:
                continue
            # the top package's __init__ is imported by every module of the namespace
            if target == "bfcl_safe" and package != "bfcl_safe":
                problems.append(f"{module} imports the top package bfcl_safe")
            elif LAYER[other] >= LAYER[package]:
                problems.append(f"{module} (layer {LAYER[package]}) imports {target} (layer {LAYER[other]})")
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_every_import_goes_down_the_layers():
    assert layer_violations(GRAPH) == []


def test_no_import_cycles_between_modules():
    assert cycles(GRAPH) == []


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": set(), "c": {"d"}, "d": {"c"}}, [["c", "d"]]),
    ({"a": {"b", "c"}, "b": {"c"}, "c": set()}, []),
])
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert sorted(cycles(graph)) == expected


def test_the_checks_catch_an_upward_import_and_a_cycle_written_inside_a_function(tmp_path):
    """What the two tests above would say of the imports issue 26 found."""
    source = tmp_path / "cli.py"
    source.write_text("def get_command():\n    from bfcl_safe.generate.command import generate\n"
                      "    from bfcl_safe.integrations import ray\n")
    imported = imports_of(source, "bfcl_safe.checker.commands")
    assert imported == {"bfcl_safe.generate.command", "bfcl_safe.integrations.ray"}
    graph = {**GRAPH, "bfcl_safe.checker.commands": GRAPH["bfcl_safe.checker.commands"] | imported,
             "bfcl_safe.generate.command": GRAPH["bfcl_safe.generate.command"] | {"bfcl_safe.checker.commands"}}
    assert layer_violations(graph) == [
        "bfcl_safe.checker.commands (layer 2) imports bfcl_safe.generate.command (layer 3)",
        "bfcl_safe.checker.commands (layer 2) imports bfcl_safe.integrations.ray (layer 3)",
    ]
    assert ["bfcl_safe.checker.commands", "bfcl_safe.generate.command"] in cycles(graph)
    relative = tmp_path / "rel.py"
    relative.write_text("from . import commands\nfrom ..interp import limits\n")
    assert imports_of(relative, "bfcl_safe.checker.rel") == {"bfcl_safe.checker.commands", "bfcl_safe.interp.limits"}


def test_lazily_registered_commands_are_listed_in_the_top_group_only():
    """``generate`` (and any other lazily imported command) belongs to the ``bfcl-safe``
    group: ``bfcl-safe data --help`` lists the data commands only."""
    from bfcl_safe.cli import LAZY_COMMANDS, main

    top = CliRunner().invoke(main, ["--help"])
    data = CliRunner().invoke(main, ["data", "--help"])
    assert top.exit_code == 0 and data.exit_code == 0
    listed = top.output.split("Commands:")[1].split()
    assert set(LAZY_COMMANDS) <= set(listed)
    data_listed = data.output.split("Commands:")[1]
    assert "fetch" in data_listed and "info" in data_listed
    assert not any(name in data_listed.split() for name in LAZY_COMMANDS if name != "data")
