"""Imports run one way, with no circles, even inside a package (docs: the conventions).

Every import a module makes counts, wherever it is written: at the top, under
``TYPE_CHECKING`` or inside a function (a lazy import is still a dependency; it only moves
the moment it is paid). Two modules that import each other, directly or through others of
their package, are one idea cut in the wrong place.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import lorelab

ROOT = Path(lorelab.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    """Every module of lorelab by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ["lorelab", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The lorelab modules ``name`` (at ``path``) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in modules:
                    yield submodule
                elif source in modules:
                    yield source


def graph() -> dict[str, set[str]]:
    """Each lorelab module's imports of other modules of its own top-level package."""
    modules = _modules()

    def top(module: str) -> str:
        return ".".join(module.split(".")[:2])

    return {
        name: {
            other
            for other in _imported(name, path, modules)
            if other != name and top(other) == top(name)
        }
        for name, path in modules.items()
    }


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
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

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_module_of_a_lorelab_package_imports_itself_through_others():
    assert circles(graph()) == []


def test_the_circle_finder_finds_a_circle_of_three_and_ignores_a_chain():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": {"c"}}) == []


def test_the_import_graph_sees_lazy_and_type_checking_imports():
    edges = graph()
    # _db closes a connection's vector caches with a function-local import.
    assert "lorelab.memory._vectors" in edges["lorelab.memory._db"]
    # _run imports the worker module at the top; the memory facade's names under TYPE_CHECKING.
    assert "lorelab.serve._workers" in edges["lorelab.serve._run"]
    assert "lorelab.memory._search" in edges["lorelab.memory._briefs"]
