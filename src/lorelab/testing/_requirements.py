"""The requirements grammar the protocol fixture reads, and how it plans test cases from it.

``Examples:`` and ``Edge cases:`` sections of a specification list items such as
``clamp(5, 0, 3) == 3`` or ``[boundary] clamp(1, 3, 0) raises ValueError`` (docs/protocol.md);
lessons select the edge cases whose tags are case patterns of a lesson's test names.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from lorelab._model import RunnerName
from lorelab.testing._source_text import CLOSING, pieces
from lorelab.workers.adapters.static import Section, section_items
from lorelab.workers.roles import Lesson, Task
from lorelab.workspace import FileEntry

Runner = RunnerName

_TAGGED: Final = re.compile(r"\[(?P<tag>[A-Za-z0-9_-]{1,40})\]\s+(?P<rest>.+)")
_RAISES: Final = re.compile(
    r"(?P<expr>.+?)\s+raises\s+(?P<error>[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\s*"
)
_PY_TEST_NAME: Final = re.compile(r"^\s*(?:async\s+)?def\s+(test\w*)\s*\(", re.MULTILINE)
_JS_TEST_TITLE: Final = re.compile(
    r"(?<![\w$.])(?:test|it)\s*\(\s*(?P<q>[\"'`])(?P<title>(?:\\.|(?!(?P=q)).)*)(?P=q)",
    re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class ExampleItem:
    """One usable item of a requirements' ``Examples:`` or ``Edge cases:`` section."""

    section: Section
    tag: str | None
    expression: str
    expected: str | None
    error: str | None
    text: str

    @property
    def intent(self) -> str:
        """The item as a plan intent: its text, with ``[tag]`` for edge cases."""
        return f"[{self.tag}] {self.text}" if self.section == "edge" and self.tag else self.text


@dataclass(frozen=True, slots=True)
class PlannedCase:
    """A case the fixture will write: a unique identifier-safe name and its example item."""

    name: str
    item: ExampleItem


def _scan(text: str) -> tuple[list[int], bool]:
    """Positions of top-level ``==`` in ``text`` and whether quotes and brackets balance.

    Top level means outside string literals (``'``, ``"``, backquote) and outside ``()``,
    ``[]``, ``{}``; ``===``/``!==``/``<==`` are not matches.
    """
    positions: list[int] = []
    stack: list[str] = []
    closed = True
    for piece in pieces(text):
        closed = piece.closed
        index = piece.start
        while piece.kind == "code" and index < piece.end:
            char = text[index]
            if char in "([{":
                stack.append(char)
            elif char in CLOSING:
                if not stack or stack.pop() != CLOSING[char]:
                    return positions, False
            elif (
                char == "="
                and not stack
                and text[index : index + 2] == "=="
                and text[index + 2 : index + 3] != "="
                and (index == 0 or text[index - 1] not in "=!<>")
            ):
                positions.append(index)
                index += 2
                continue
            index += 1
    return positions, closed and not stack


def _balanced(text: str) -> bool:
    return _scan(text)[1]


def _usable(code: str, runner: Runner) -> bool:
    if not code.strip() or not _balanced(code):
        return False
    if runner == "node":
        return True
    try:
        ast.parse(code.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return False
    return True


def parse_item(text: str, section: Section, runner: Runner) -> ExampleItem | None:
    """Parse one item (without its leading ``- ``); ``None`` when it is not usable.

    An edge-case item needs a ``[tag]``; an example may carry one, which is ignored.
    """
    body = text.strip()
    tag: str | None = None
    tagged = _TAGGED.fullmatch(body)
    if tagged is not None:
        tag = tagged["tag"].lower()
        body = tagged["rest"].strip()
    if section == "edge" and tag is None:
        return None
    if section == "example":
        tag = None
    raises = _RAISES.fullmatch(body)
    if raises is not None and _usable(raises["expr"], runner):
        return ExampleItem(section, tag, raises["expr"].strip(), None, raises["error"], body)
    positions, balanced = _scan(body)
    if not balanced or len(positions) != 1:
        return None
    expression, expected = body[: positions[0]].strip(), body[positions[0] + 2 :].strip()
    if not (_usable(expression, runner) and _usable(expected, runner)):
        return None
    return ExampleItem(section, tag, expression, expected, None, body)


def parse_requirements(requirements: str, runner: Runner) -> list[ExampleItem]:
    """Every usable item of the requirements' ``Examples:`` and ``Edge cases:`` sections.

    A section starts at its header line and runs until the next header or the first line that
    is neither blank nor an item (``- ...``). Items that do not parse are skipped.
    """
    items: list[ExampleItem] = []
    for section, body in section_items(requirements):
        item = parse_item(body, section, runner)
        if item is not None:
            items.append(item)
    return items


def parse_intent(intent: str, runner: Runner) -> ExampleItem | None:
    """Read a plan case's intent back as an item: ``[tag] EXPR ...`` is an edge case."""
    text = intent.strip()
    if text.startswith("- "):
        text = text[2:]
    section: Section = "edge" if _TAGGED.fullmatch(text.strip()) else "example"
    return parse_item(text, section, runner)


def node_test_name(title: str) -> str:
    """A node test title read as the pytest name ``test_<title>``: lowercased, every run of
    characters other than ``a-z``, ``0-9`` and ``_`` read as one ``_``, ends trimmed.

    The prefix gives the title's first word the ``_`` before it that a pytest name's first word
    has, so ``test("empty list gives 0")`` has the pattern ``empty`` as ``test_empty_list``
    does. ``title`` is the literal as written: an escape reads as the character it escapes
    (``\\n``, ``\\t``, ``\\r`` as whitespace), so ``don\\'t`` is ``don_t``."""
    text = re.sub(r"\\(.)", lambda m: " " if m[1] in "ntr" else m[1], title, flags=re.DOTALL)
    words = re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")
    return f"test_{words}" if words else "test"


def lesson_test_names(tests: Iterable[FileEntry]) -> list[str]:
    """The test names of a lesson's files, lowercased: ``def test_...`` names for Python files,
    ``test(...)``/``it(...)`` titles read as ``test_<title>`` (:func:`node_test_name`) for
    JavaScript files."""
    names: list[str] = []
    for entry in tests:
        if entry.path.endswith(".py"):
            names += [name.lower() for name in _PY_TEST_NAME.findall(entry.content)]
        elif entry.path.endswith((".js", ".mjs", ".cjs")):
            names += [
                node_test_name(match["title"]) for match in _JS_TEST_TITLE.finditer(entry.content)
            ]
    return names


def is_case_pattern(tag: str, names: Iterable[str]) -> bool:
    """Whether ``tag`` (``-`` read as ``_``) is a case pattern of one of the test ``names``:
    a name that contains ``_<tag>_`` or ends with ``_<tag>``."""
    needle = "_" + tag.lower().replace("-", "_")
    return any(needle + "_" in name or name.endswith(needle) for name in names)


def _lesson_names(lessons: Sequence[Lesson]) -> list[str]:
    return [name for lesson in lessons for name in lesson_test_names(lesson.tests)]


def select_items(items: Sequence[ExampleItem], lessons: Sequence[Lesson]) -> list[ExampleItem]:
    """Every example, then (with lessons) every edge case whose tag is a lesson's pattern."""
    names = _lesson_names(lessons)
    chosen = [item for item in items if item.section == "example"]
    if names:
        chosen += [
            item
            for item in items
            if item.section == "edge" and item.tag and is_case_pattern(item.tag, names)
        ]
    return chosen


def identifier(text: str) -> str:
    name = re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_") or "case"
    return name[:80]


def name_cases(items: Sequence[ExampleItem]) -> list[PlannedCase]:
    """Unique case names: ``example_<n>`` and ``edge_<tag>_<n>`` (n counts per section)."""
    counts = {"example": 0, "edge": 0}
    cases: list[PlannedCase] = []
    for item in items:
        counts[item.section] += 1
        if item.section == "example":
            name = f"example_{counts['example']}"
        else:
            name = f"edge_{identifier(item.tag or 'case')}_{counts['edge']}"
        cases.append(PlannedCase(name, item))
    return cases


def plan_cases(task: Task, lessons: Sequence[Lesson], max_cases: int) -> list[PlannedCase]:
    """The fixture architect's plan: one case per selected item, at most ``max_cases``."""
    items = parse_requirements(task.requirements, task.runner)
    return name_cases(select_items(items, lessons))[:max_cases]
