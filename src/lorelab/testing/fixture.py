"""The protocol fixture: a deterministic, offline worker that answers ``architect``, ``author``,
``reviewer`` and ``dreamer`` from the payload alone
(``python -m lorelab.testing.fixture``, agent name ``fixture``).

It turns the examples a specification states in the grammar of docs/protocol.md into test
cases; with lessons it also writes the edge cases whose tags are case patterns of a lesson's
test names. That is how memory reaches the author offline. As a dreamer it proposes one
candidate per verification command shared by two or more experiences. Its answers say
``evidenceKind: protocol-fixture``: they exercise the protocol and never support a learning
conclusion. No usage and no model are reported (unknown, not zero).
"""

from __future__ import annotations

import ast
import keyword
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any, Final

from lorelab._model import PROTOCOL_FIXTURE, TEST_PATH_SHAPES, TEST_PATHS, RunnerName
from lorelab.errors import LorelabError, OutcomeFailure, UsageError
from lorelab.io import canonical_json, loads_strict
from lorelab.testing._requirements import (
    ExampleItem,
    PlannedCase,
    identifier,
    is_case_pattern,
    lesson_test_names,
    name_cases,
    parse_intent,
    parse_requirements,
    plan_cases,
    select_items,
)
from lorelab.testing._source_text import CLOSING, pieces
from lorelab.workers.roles import (
    ArchitectPayload,
    ArchitectResponse,
    AuthorPayload,
    AuthorResponse,
    Case,
    DreamerPayload,
    DreamerResponse,
    ProposedCandidate,
    ProposedCheck,
    ReviewerPayload,
    ReviewerResponse,
    Task,
    validate_payload,
)
from lorelab.workspace import FileEntry

EVIDENCE_KIND: Final = PROTOCOL_FIXTURE
MAX_PAYLOAD_BYTES: Final = 8 * 1024 * 1024
ANSWERED_ROLES: Final = ("architect", "author", "reviewer", "dreamer")

Runner = RunnerName

_IDENTIFIER: Final = re.compile(r"[A-Za-z_$][\w$]*")
_SOURCE_PATHS: Final[dict[str, re.Pattern[str]]] = {
    "pytest": re.compile(r"src/(?P<name>[a-z][a-z0-9_]*)\.py"),
    "node": re.compile(r"src/(?P<name>[a-z][a-z0-9_]*)\.js"),
}
_JS_TEST_CALL: Final = re.compile(r"(?<![\w$.])(?:test|it)\s*\(")
_JS_DEFINED: Final = re.compile(
    r"(?:^|[^\w$.])(?:function\s*\*?\s*|class\s+|(?:const|let|var)\s+)(?P<name>[A-Za-z_$][\w$]*)"
)
_JS_EXPORTS_OBJECT: Final = re.compile(r"module\.exports\s*=\s*\{(?P<body>[^}]*)\}")
_JS_EXPORT_ASSIGN: Final = re.compile(r"(?:module\.)?exports\.(?P<name>[A-Za-z_$][\w$]*)\s*=")


# --- the requirements-examples grammar ------------------------------------------------------


# --- case patterns from lessons ------------------------------------------------------------


# --- architect -----------------------------------------------------------------------------


def architect(payload: ArchitectPayload) -> ArchitectResponse:
    """Plan one case per usable example (and, with lessons, per matching edge case)."""
    cases = plan_cases(payload.task, payload.lessons, payload.limits.max_cases)
    if not cases:
        raise OutcomeFailure("architect: the requirements state no usable examples")
    return ArchitectResponse(
        cases=[Case(name=case.name, intent=case.item.intent) for case in cases],
        evidence_kind=EVIDENCE_KIND,
    )


# --- author --------------------------------------------------------------------------------


def _python_names(content: str) -> list[str]:
    try:
        tree = ast.parse(content)
    except (SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [target.id for target in node.targets if isinstance(target, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return names


def _js_names(content: str) -> list[str]:
    exported: list[str] = []
    for match in _JS_EXPORTS_OBJECT.finditer(content):
        for part in match["body"].split(","):
            key = part.split(":", 1)[0].strip()
            if _IDENTIFIER.fullmatch(key):
                exported.append(key)
    exported += [match["name"] for match in _JS_EXPORT_ASSIGN.finditer(content)]
    if exported:
        return exported
    return [match["name"] for match in _JS_DEFINED.finditer(content)]


def source_modules(task: Task) -> dict[str, list[str]]:
    """Module name -> names it defines, for every canonical source file of the task."""
    modules: dict[str, list[str]] = {}
    for entry in sorted(task.source, key=lambda entry: entry.path):
        match = _SOURCE_PATHS[task.runner].fullmatch(entry.path)
        if match is None:
            continue
        reader = _python_names if task.runner == "pytest" else _js_names
        modules[match["name"]] = reader(entry.content)
    return modules


def _used_identifiers(item: ExampleItem) -> list[str]:
    parts = [item.expression, item.expected or "", item.error or ""]
    used: list[str] = []
    for part in parts:
        for token in _IDENTIFIER.findall(_strip_strings(part)):
            if token not in used:
                used.append(token)
    return used


def _strip_strings(code: str) -> str:
    """``code`` with string literals blanked, so words inside strings are not identifiers."""
    return "".join(
        code[piece.start : piece.end] if piece.kind == "code" else "  " if piece.closed else " "
        for piece in pieces(code)
    )


def _imports_for(
    items: Iterable[ExampleItem], modules: dict[str, list[str]]
) -> dict[str, list[str]]:
    owner = {name: module for module, names in modules.items() for name in names}
    wanted: dict[str, list[str]] = {}
    for item in items:
        for token in _used_identifiers(item):
            module = owner.get(token)
            if module is not None and token not in wanted.setdefault(module, []):
                wanted[module].append(token)
    return wanted


def _home_module(item: ExampleItem, modules: dict[str, list[str]]) -> str:
    for token in _used_identifiers(item):
        for module, names in modules.items():
            if token in names:
                return module
    return next(iter(modules))


def _test_name(name: str, taken: set[str]) -> str:
    base = identifier(name)
    if keyword.iskeyword(base):
        base += "_case"
    candidate = base
    suffix = 2
    while candidate in taken:
        candidate = f"{base}_{suffix}"
        suffix += 1
    taken.add(candidate)
    return candidate


def _python_file(module: str, cases: Sequence[PlannedCase], modules: dict[str, list[str]]) -> str:
    lines = [
        f'"""Tests for src/{module}.py written by the lorelab protocol fixture from the',
        'requirements\' examples (evidenceKind: protocol-fixture)."""',
        "",
    ]
    if any(case.item.error is not None for case in cases):
        lines += ["import pytest", ""]
    for source, names in sorted(_imports_for((case.item for case in cases), modules).items()):
        lines.append(f"from src.{source} import {', '.join(sorted(names))}")
    for case in cases:
        lines += ["", "", f"def test_{case.name}():"]
        if case.item.error is not None:
            lines += [
                f"    with pytest.raises({case.item.error}):",
                f"        {case.item.expression}",
            ]
        else:
            lines.append(f"    assert {case.item.expression} == {case.item.expected}")
    return "\n".join(lines) + "\n"


def _js_file(module: str, cases: Sequence[PlannedCase], modules: dict[str, list[str]]) -> str:
    lines = [
        f"// Tests for src/{module}.js written by the lorelab protocol fixture from the",
        "// requirements' examples (evidenceKind: protocol-fixture).",
        'const test = require("node:test");',
        'const assert = require("node:assert/strict");',
    ]
    for source, names in sorted(_imports_for((case.item for case in cases), modules).items()):
        lines.append(f'const {{ {", ".join(sorted(names))} }} = require("../src/{source}.js");')
    for case in cases:
        lines += ["", f'test("{case.name}", () => {{']
        if case.item.error is not None:
            lines.append(f"  assert.throws(() => {case.item.expression}, {case.item.error});")
        else:
            lines.append(f"  assert.deepStrictEqual({case.item.expression}, {case.item.expected});")
        lines.append("});")
    return "\n".join(lines) + "\n"


def author_cases(payload: AuthorPayload) -> list[PlannedCase]:
    """The cases the fixture author writes, in order, at most ``limits.maxCases``.

    It follows the plan: every plan case whose intent reads as an example item. With lessons,
    it adds the edge cases whose tags are lesson patterns and that the plan left out. When no
    plan case reads as an item, it plans from the requirements itself.
    """
    task = payload.task
    taken: set[str] = set()
    cases: list[PlannedCase] = []
    for planned in payload.plan.cases:
        item = parse_intent(planned.intent, task.runner)
        if item is not None:
            cases.append(PlannedCase(_test_name(planned.name, taken), item))
    if not cases:
        derived = plan_cases(task, payload.lessons, payload.limits.max_cases)
        cases = [PlannedCase(_test_name(case.name, taken), case.item) for case in derived]
    else:
        present = {case.item.text for case in cases}
        items = parse_requirements(task.requirements, task.runner)
        extra = [
            item
            for item in select_items(items, payload.lessons)
            if item.section == "edge" and item.text not in present
        ]
        for case in name_cases(extra):
            cases.append(PlannedCase(_test_name(case.name, taken), case.item))
    return cases[: payload.limits.max_cases]


def author(payload: AuthorPayload) -> AuthorResponse:
    """Write one test file per module under test (``tests/test_<m>.py``/``test/<m>.test.js``)."""
    task = payload.task
    modules = source_modules(task)
    if not modules:
        raise OutcomeFailure(
            f"author: task.source has no canonical {task.runner} source file (src/<name>)"
        )
    cases = author_cases(payload)
    if not cases:
        raise OutcomeFailure("author: neither the plan nor the requirements give a usable example")
    by_module: dict[str, list[PlannedCase]] = {}
    for case in cases:
        by_module.setdefault(_home_module(case.item, modules), []).append(case)
    if len(by_module) > payload.limits.max_files:
        # Fewer files than modules allowed: one file imports from every module it needs.
        first = next(iter(by_module))
        by_module = {first: cases}
    files: list[FileEntry] = []
    for module, module_cases in by_module.items():
        if task.runner == "pytest":
            path = f"tests/test_{module}.py"
            content = _python_file(module, module_cases, modules)
        else:
            path = f"test/{module}.test.js"
            content = _js_file(module, module_cases, modules)
        files.append(FileEntry(path=path, content=content))
    return AuthorResponse(files=files, evidence_kind=EVIDENCE_KIND)


# --- reviewer ------------------------------------------------------------------------------


def _js_problem(content: str) -> str | None:
    """A basic syntax check: quotes, comments and brackets balance. ``None`` when fine."""
    stack: list[str] = []
    for piece in pieces(content, comments=True):
        if piece.newline is not None:
            return f"unterminated string on line {content.count(chr(10), 0, piece.newline) + 1}"
        if not piece.closed:
            kind = "string at end of file" if piece.kind == "string" else "block comment"
            return f"unterminated {kind}"
        if piece.kind != "code":
            continue
        for index in range(piece.start, piece.end):
            char = content[index]
            if char in "([{":
                stack.append(char)
            elif char in CLOSING and (not stack or stack.pop() != CLOSING[char]):
                line = content.count("\n", 0, index) + 1
                return f"unbalanced {char!r} on line {line}"
    if stack:
        return f"unclosed {stack[-1]!r} at end of file"
    return None


def _js_code(content: str) -> str:
    """``content`` with comments and string literals blanked (for counting test calls)."""
    out: list[str] = []
    for piece in pieces(content, comments=True):
        if piece.kind == "code":
            out.append(content[piece.start : piece.end])
        elif piece.kind == "string":
            out.append(content[piece.start] * (2 if piece.closed else 1))
    return "".join(out)


def _python_tests(content: str) -> tuple[int, str | None]:
    try:
        tree = ast.parse(content)
    except SyntaxError as exc:
        return 0, f"does not parse as Python (line {exc.lineno}: {exc.msg})"
    except ValueError as exc:
        return 0, f"does not parse as Python ({exc})"
    count = 0
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            count += 1
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            count += sum(
                1
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                and item.name.startswith("test")
            )
    return count, None


def review(runner: Runner, tests: Sequence[FileEntry]) -> tuple[bool, list[str]]:
    """Approve when every file is a canonical test path, parses and defines a test."""
    if not tests:
        return False, ["no test files were given"]
    problems: list[str] = []
    notes: list[str] = []
    for entry in tests:
        if not TEST_PATHS[runner].fullmatch(entry.path):
            shape = TEST_PATH_SHAPES[runner]
            problems.append(f"{entry.path}: not a canonical {runner} test path ({shape})")
            continue
        if runner == "pytest":
            count, problem = _python_tests(entry.content)
        else:
            problem = _js_problem(entry.content)
            count = len(_JS_TEST_CALL.findall(_js_code(entry.content))) if problem is None else 0
        if problem is not None:
            problems.append(f"{entry.path}: {problem}")
        elif count == 0:
            problems.append(f"{entry.path}: defines no test")
        else:
            notes.append(f"{entry.path}: parses and defines {count} test(s)")
    if problems:
        return False, problems
    return True, notes


def reviewer(payload: ReviewerPayload) -> ReviewerResponse:
    """Review the candidate tests; the reasons say what was wrong (or what was checked)."""
    approved, reasons = review(payload.task.runner, payload.tests)
    return ReviewerResponse(
        verdict="approve" if approved else "reject", reasons=reasons, evidence_kind=EVIDENCE_KIND
    )


# --- dreamer -------------------------------------------------------------------------------

SKILL_NAME_MAX: Final = 64
DESCRIPTION_MAX: Final = 1024
_NOT_NAME: Final = re.compile(r"[^a-z0-9]+")


def _candidate_name(command: str, taken: set[str]) -> str:
    """``verify-<command as lowercase words>``, a valid Agent Skills name, unique in ``taken``."""
    slug = _NOT_NAME.sub("-", command.lower()).strip("-") or "shared-command"
    base = f"verify-{slug}"
    name, number = base[:SKILL_NAME_MAX].rstrip("-"), 2
    while name in taken:
        suffix = f"-{number}"
        name = base[: SKILL_NAME_MAX - len(suffix)].rstrip("-") + suffix
        number += 1
    taken.add(name)
    return name


def dreamer(payload: DreamerPayload) -> DreamerResponse:
    """One candidate per verification command shared by two or more experiences.

    Commands are compared with whitespace collapsed (the payload holds verified experiences
    only, so every verification exited 0). Candidates come in order of support (largest first),
    then command; each has the command as its one step and its one check (expected exit 0),
    and names its experiences in payload order. At most ``limits.maxCandidates`` are returned.
    """
    sources: dict[str, list[str]] = {}
    tasks: dict[str, list[str]] = {}
    for experience in payload.experiences:
        command = " ".join(experience.verification.command.split())
        if not command or experience.id in sources.get(command, []):
            continue
        sources.setdefault(command, []).append(experience.id)
        tasks.setdefault(command, []).append(" ".join(experience.task.split())[:120])
    shared = sorted(
        (command for command, ids in sources.items() if len(ids) >= 2),
        key=lambda command: (-len(sources[command]), command),
    )[: payload.limits.max_candidates]
    taken: set[str] = set()
    candidates = []
    for command in shared:
        ids = sources[command]
        description = (
            f"Run `{command}`, the verification shared by {len(ids)} verified experiences "
            f"({', '.join(ids)}): {'; '.join(tasks[command][:5])}"
        )[:DESCRIPTION_MAX]
        candidates.append(
            ProposedCandidate(
                name=_candidate_name(command, taken),
                description=description,
                steps=[command],
                checks=[ProposedCheck(command=command, expected_exit_code=0)],
                source_experience_ids=list(ids),
            )
        )
    return DreamerResponse(candidates=candidates, evidence_kind=EVIDENCE_KIND)


# --- the program ---------------------------------------------------------------------------


def answer(obj: Any) -> dict[str, Any]:
    """The fixture's response to one decoded payload, as a JSON object (camelCase keys)."""
    if not isinstance(obj, dict):
        raise UsageError("payload: expected one JSON object")
    role = obj.get("role")
    if role not in ANSWERED_ROLES:
        raise UsageError(
            f"payload: role {role!r} is not answered by the protocol fixture "
            f"(it answers {', '.join(ANSWERED_ROLES)})"
        )
    payload = validate_payload(role, obj)
    response: ArchitectResponse | AuthorResponse | ReviewerResponse | DreamerResponse
    if isinstance(payload, ArchitectPayload):
        response = architect(payload)
    elif isinstance(payload, AuthorPayload):
        response = author(payload)
    elif isinstance(payload, ReviewerPayload):
        response = reviewer(payload)
    elif isinstance(payload, DreamerPayload):
        response = dreamer(payload)
    else:  # ANSWERED_ROLES above keeps host and context payloads out
        raise UsageError(f"payload: role {role!r} is not answered by the protocol fixture")
    result: dict[str, Any] = response.model_dump(mode="json", by_alias=True, exclude_none=True)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Read one payload on stdin and print one JSON answer (exit 0).

    An invalid payload exits 2 and a payload the fixture cannot answer (no usable examples, no
    canonical source file) exits 1, each with one line on stderr and nothing on stdout.
    """
    del argv
    data = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
    try:
        if len(data) > MAX_PAYLOAD_BYTES:
            raise UsageError(f"payload: larger than {MAX_PAYLOAD_BYTES} bytes")
        result = answer(loads_strict(data, "payload"))
    except LorelabError as exc:
        print(f"lorelab fixture: {exc}", file=sys.stderr)
        return exc.exit_code
    sys.stdout.write(canonical_json(result) + "\n")
    sys.stdout.flush()
    return 0


__all__ = [
    "ANSWERED_ROLES",
    "EVIDENCE_KIND",
    "MAX_PAYLOAD_BYTES",
    "ExampleItem",
    "PlannedCase",
    "answer",
    "architect",
    "author",
    "dreamer",
    "is_case_pattern",
    "lesson_test_names",
    "main",
    "parse_requirements",
    "review",
    "reviewer",
]


if __name__ == "__main__":
    sys.exit(main())
