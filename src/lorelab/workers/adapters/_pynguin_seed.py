"""Seeding Pynguin from lessons: the statements of the lessons' Python tests that call
functions the module under test defines become its initial population; the rest are dropped
and counted, with the reason (the trial receipt's ``lessonSeed``)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any, Final

from lorelab.workers.adapters._static_rules import defined_names
from lorelab.workers.roles import AuthorPayload, Lesson

_SRC_REFERENCE: Final = re.compile(r"\bsrc\.([A-Za-z_][A-Za-z0-9_]*)\b")

TestNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(slots=True)
class SeedReport:
    """What the lessons gave one module's seed, and what was dropped and why."""

    kept_tests: int = 0
    dropped_tests: int = 0
    dropped_statements: int = 0
    kept_statements: int = 0
    orphaned_statements: int = 0
    """Statements that use the module but belong to a test left without any use of it."""
    missing: dict[str, None] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)

    def notes(self, module: str) -> list[str]:
        """One line for the adapter's stderr, naming what was dropped."""
        parts = [f"seed for src.{module}: kept {self.kept_tests} lesson test(s)"]
        if self.dropped_tests or self.dropped_statements:
            parts.append(
                f"dropped {self.dropped_tests} test(s) and {self.dropped_statements} statement(s) "
                f"that use {', '.join(self.missing) or 'unbound names'}, which src.{module} "
                "does not define"
            )
        if self.unreadable:
            parts.append(f"skipped unparsable lesson files {', '.join(self.unreadable)}")
        return ["; ".join(parts)]

    def reasons(self, module: str) -> list[str]:
        """Why lesson statements were left out of the seed, one line each."""
        lines = []
        if self.dropped_statements:
            lines.append(
                f"src.{module}: {self.dropped_statements} statement(s) use "
                f"{', '.join(self.missing) or 'names'} that src.{module} does not define, or "
                "what such a statement assigned"
            )
        if self.orphaned_statements:
            lines.append(
                f"src.{module}: {self.orphaned_statements} statement(s) in test(s) left "
                f"without a call of src.{module}"
            )
        lines += [f"src.{module}: unparsable lesson file {name}" for name in self.unreadable]
        return lines


def _module_references(tree: ast.Module) -> tuple[dict[str, str], set[str]]:
    """Names imported from ``src.*`` modules (local -> imported name) and module aliases."""
    names: dict[str, str] = {}
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "src":
            if node.module == "src":
                modules.update(alias.asname or alias.name for alias in node.names)
                continue
            for alias in node.names:
                if alias.name != "*":
                    names[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "src":
                    modules.add(alias.asname or "src")
    return names, modules


def _used_callables(
    node: ast.AST, names: dict[str, str], modules: set[str]
) -> tuple[set[str], set[str]]:
    """The module names a statement uses, and the local names it reads."""
    used: set[str] = set()
    read: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load):
            read.add(inner.id)
            if inner.id in names:
                used.add(names[inner.id])
        elif isinstance(inner, ast.Attribute):
            chain: list[str] = []
            value: ast.expr = inner
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in modules:
                # ``m.f`` names ``f``; so does ``src.old.f`` after a bare ``import src.old``.
                chain.reverse()
                index = 1 if value.id == "src" else 0
                if len(chain) > index:
                    used.add(chain[index])
    return used, read


def _assigned(node: ast.AST) -> set[str]:
    return {
        inner.id
        for inner in ast.walk(node)
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store)
    }


def _filter_test(
    test: TestNode,
    names: dict[str, str],
    modules: set[str],
    defined: frozenset[str] | None,
    report: SeedReport,
) -> TestNode | None:
    """The test with the statements that use names the module lacks removed (and those that
    read what they assigned); ``None`` when nothing that uses the module is left."""
    kept: list[ast.stmt] = []
    lost: set[str] = set()
    touches_module = False
    for statement in test.body:
        used, read = _used_callables(statement, names, modules)
        missing = {name for name in used if defined is not None and name not in defined}
        if missing or read & lost:
            report.missing.update(dict.fromkeys(sorted(missing)))
            report.dropped_statements += 1
            lost |= _assigned(statement)
            continue
        touches_module |= bool(used)
        kept.append(statement)
    if not kept or not touches_module:
        report.orphaned_statements += len(kept)
        return None
    report.kept_statements += len(kept)
    test.body = kept
    return test


def _seed_from_lesson(
    content: str, module: str, defined: frozenset[str] | None, report: SeedReport
) -> str | None:
    tree = ast.parse(content)
    names, modules = _module_references(tree)
    body: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            filtered = _filter_test(node, names, modules, defined, report)
            if filtered is None:
                report.dropped_tests += 1
                continue
            report.kept_tests += 1
            body.append(filtered)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "src":
            if node.module == "src":
                body.append(node)
                continue
            node.names = [
                alias
                for alias in node.names
                if alias.name == "*" or defined is None or alias.name in defined
            ]
            if node.names:
                body.append(node)
        else:
            body.append(node)
    if not any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) for node in body):
        return None
    return _SRC_REFERENCE.sub(f"src.{module}", ast.unparse(ast.Module(body, type_ignores=[])))


def seed_source(
    payload: AuthorPayload, module: str, module_source: str | None = None
) -> tuple[str | None, SeedReport]:
    """One seed module from the lessons' Python tests, pointed at ``src.<module>``.

    Only statements that use names ``module_source`` defines are kept (all of them when its
    names cannot be known); a test left without a use of the module is dropped whole.
    """
    defined = defined_names(module_source) if module_source is not None else None
    report = SeedReport()
    parts: list[str] = []
    for lesson in payload.lessons:
        parts += _lesson_parts(lesson, module, defined, report)
    return ("\n\n".join(parts) + "\n" if parts else None), report


def _lesson_parts(
    lesson: Lesson, module: str, defined: frozenset[str] | None, report: SeedReport
) -> list[str]:
    parts: list[str] = []
    for test in lesson.tests:
        if not test.path.endswith(".py"):
            continue
        try:
            seed = _seed_from_lesson(test.content, module, defined, report)
        except (SyntaxError, ValueError, RecursionError):
            report.unreadable.append(f"{lesson.id}:{test.path}")
            continue
        if seed is not None:
            parts.append(f"# lesson {lesson.id}: {test.path}\n{seed}")
    return parts


@dataclass(slots=True)
class SeedTally:
    """The trial's ``lessonSeed``: lesson statements kept in and dropped from every seed."""

    kept: int = 0
    dropped: int = 0
    reasons: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The response's ``lessonSeed``."""
        return {"kept": self.kept, "dropped": self.dropped, "reasons": self.reasons}
