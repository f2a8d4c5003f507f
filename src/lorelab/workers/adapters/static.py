"""The static worker: a deterministic, rule-based architect and reviewer with no model
(``python -m lorelab.workers.adapters.static``).

It is no test double: its decisions are real, the same for the same payload, and written down
in docs/workers.md. As an **architect** it plans one case per function signature the
specification states (``name(params) -> returns, in module src/<m>.py``; the module's public
functions when the text states none), one per ``Examples:`` item and one per ``Edge cases:``
item. As a **reviewer** it approves Python tests only when every test file passes every rule
(``_static_rules.RULES``, applied by ``_static_review``); a rejection names each file, test and
rule broken. It ignores lessons, so both arms of an evaluation get the same plan and the same
review. It reports no usage and claims no
model (its evidence kind is ``live``); every answer notes on stderr that it is rule-based.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Literal

from lorelab.workers.adapters._agent import AdapterFailure, Answer, Request, run_adapter
from lorelab.workers.adapters._static_review import review
from lorelab.workers.adapters._static_rules import (
    RULES_VERSION,
    SOURCE_PATH,
)
from lorelab.workers.roles import ArchitectPayload, Case, ReviewerPayload, Task

RULE_BASED_NOTE: Final = f"rule-based worker ({RULES_VERSION}): no model, decisions from rules"

_SIGNATURE: Final = re.compile(
    r"(?<![\w.])(?P<name>[A-Za-z_]\w*)\((?P<params>[^()\n]*)\)"
    r"(?:\s*->\s*(?P<returns>[^\n]*?))?,\s*in module\s+(?P<path>src/[A-Za-z_][\w/]*\.py)"
)
Section = Literal["example", "edge"]
_HEADERS: Final[dict[str, Section]] = {"examples:": "example", "edge cases:": "edge"}
_TAG: Final = re.compile(r"\[(?P<tag>[A-Za-z0-9_-]{1,40})\]\s+(?P<rest>.+)")

# --- architect -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Signature:
    """One function the specification (or, failing that, the source) declares."""

    name: str
    params: str
    returns: str | None
    path: str

    @property
    def text(self) -> str:
        """The signature as written: ``name(params) -> returns``."""
        arrow = f" -> {self.returns}" if self.returns else ""
        return f"{self.name}({self.params}){arrow}"


def spec_signatures(requirements: str) -> list[Signature]:
    """The ``name(params) [-> returns], in module src/<m>.py`` declarations of the text."""
    found: list[Signature] = []
    for match in _SIGNATURE.finditer(requirements):
        returns = (match["returns"] or "").strip() or None
        signature = Signature(match["name"], match["params"].strip(), returns, match["path"])
        if signature not in found:
            found.append(signature)
    return found


def source_signatures(task: Task) -> list[Signature]:
    """The public top-level functions of the task's Python sources, with their annotations."""
    found: list[Signature] = []
    for entry in sorted(task.source, key=lambda entry: entry.path):
        if not SOURCE_PATH.fullmatch(entry.path):
            continue
        try:
            tree = ast.parse(entry.content)
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not (
                node.name.startswith("_")
            ):
                returns = ast.unparse(node.returns) if node.returns is not None else None
                found.append(Signature(node.name, ast.unparse(node.args), returns, entry.path))
    return found


@dataclass(frozen=True, slots=True)
class SpecItem:
    """One ``Examples:`` or ``Edge cases:`` item, as written."""

    section: str
    tag: str | None
    text: str


def section_items(requirements: str) -> Iterator[tuple[Section, str]]:
    """The text after ``- `` of every item under an ``Examples:`` or ``Edge cases:`` header,
    with its section, in order. A section runs from its header to the next header or the
    first line that is neither blank nor an item."""
    section: Section | None = None
    for line in requirements.splitlines():
        stripped = line.strip()
        header = _HEADERS.get(stripped.lower())
        if header is not None:
            section = header
            continue
        if not stripped or section is None:
            continue
        if not stripped.startswith("- "):
            section = None
            continue
        yield section, stripped[2:]


def spec_items(requirements: str) -> list[SpecItem]:
    """Every ``- ...`` item under an ``Examples:`` or ``Edge cases:`` header, in order.

    A section runs from its header to the next header or the first line that is neither blank
    nor an item. An edge case's ``[tag]`` is kept apart from its text.
    """
    items: list[SpecItem] = []
    for section, body in section_items(requirements):
        body = body.strip()
        tagged = _TAG.fullmatch(body)
        tag = tagged["tag"].lower() if tagged else None
        if tagged is not None:
            body = tagged["rest"].strip()
        if body:
            items.append(SpecItem(section, tag, body))
    return items


def _identifier(text: str) -> str:
    return (re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_") or "case")[:60]


def plan(task: Task, max_cases: int) -> tuple[list[Case], int]:
    """The architect's cases (signatures, then examples, then edge cases) and how many were
    left out by ``max_cases``."""
    signatures = spec_signatures(task.requirements) or source_signatures(task)
    cases: list[Case] = []
    for signature in signatures:
        returns = f" and check the {signature.returns} it returns" if signature.returns else ""
        cases.append(
            Case(
                name=f"signature_{_identifier(signature.name)}",
                intent=(
                    f"Call {signature.text} from {signature.path} with arguments of the "
                    f"declared types{returns}"
                )[:2000],
            )
        )
    counts = {"example": 0, "edge": 0}
    for item in spec_items(task.requirements):
        counts[item.section] += 1
        if item.section == "example":
            name, intent = f"example_{counts['example']}", item.text
        else:
            tag = item.tag or "case"
            name, intent = f"edge_{_identifier(tag)}_{counts['edge']}", f"[{tag}] {item.text}"
        cases.append(Case(name=name, intent=intent[:2000]))
    names: set[str] = set()
    unique: list[Case] = []
    for case in cases:
        if case.name not in names:
            names.add(case.name)
            unique.append(case)
    return unique[:max_cases], max(len(unique) - max_cases, 0)


def _architect(request: Request) -> Answer:
    payload = ArchitectPayload.model_validate(request.payload)
    cases, dropped = plan(payload.task, payload.limits.max_cases)
    if not cases:
        raise AdapterFailure(
            "nothing-to-plan",
            "the specification states no signature, example or edge case, and the source "
            "defines no public function",
        )
    notes = [RULE_BASED_NOTE, f"planned {len(cases)} case(s); lessons are not read"]
    if dropped:
        notes.append(f"left out {dropped} case(s) over limits.maxCases")
    response = {"cases": [case.model_dump(by_alias=True) for case in cases]}
    return Answer(response=response, notes=notes)


def _reviewer(request: Request) -> Answer:
    payload = ReviewerPayload.model_validate(request.payload)
    approved, reasons = review(payload.task, payload.tests)
    return Answer(
        response={"verdict": "approve" if approved else "reject", "reasons": reasons},
        notes=[RULE_BASED_NOTE, f"{'approved' if approved else 'rejected'} by {RULES_VERSION}"],
    )


def handle(request: Request) -> Answer:
    """Architect plans from the specification, reviewer applies the rules; others refused."""
    if request.role == "architect":
        return _architect(request)
    if request.role == "reviewer":
        return _reviewer(request)
    raise AdapterFailure(
        "unsupported-role",
        f"the static worker cannot act as {request.role}; it plans and reviews, it writes no tests",
    )


def _parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(
        prog="static-worker",
        description="A rule-based lorelab.worker/1 architect and reviewer (no model).",
        allow_abbrev=False,
    )


def main() -> None:
    """Entry point: ``python -m lorelab.workers.adapters.static``."""
    run_adapter(_parser(), handle, sys.argv[1:])


if __name__ == "__main__":
    main()
