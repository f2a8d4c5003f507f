"""Rendering a brief as text within a token budget (estimated as ceil(UTF-8 bytes / 4)).

Items are offered in priority order (``match`` experiences, then ``related`` ones, each by
confidence, then Skills, then commands to avoid); an item is kept only if the whole text stays
within the budget with it, otherwise it is counted as omitted. Nothing relevant means no text
at all. A ``match`` is the same problem as the task and is worded as what worked; a
``related`` item is another problem in the same area, shown compact and marked as context:
it is never worded as an instruction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from lorelab._model import estimate_tokens
from lorelab.memory._models import AvoidCommand, BriefExperience, BriefSkill

SUMMARY_CHARS: Final = 700
RELATED_CHARS: Final = 160
HEADER: Final = "lorelab memory brief: verified memories relevant to this task (ids in brackets)"
MATCH_HEADING: Final = "Matches (the same problem as this task; what worked before):"
RELATED_HEADING: Final = (
    "Related (past work in the same area, possibly another problem; background context "
    "only, not steps for this task):"
)


def _clip(text: str, limit: int = SUMMARY_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _confidence(item: BriefExperience) -> str:
    return "" if item.confidence is None else f", confidence {item.confidence:.2f}"


def _experience_line(item: BriefExperience) -> str:
    if item.tier == "related":
        return (
            f"- [{item.id}] (related{_confidence(item)}) Past task: "
            f"{_clip(item.task, RELATED_CHARS)} Its outcome: {_clip(item.summary, RELATED_CHARS)} "
            f"(checked by `{item.verification_command}`)"
        )
    return (
        f"- [{item.id}] (match{_confidence(item)}) Task: {_clip(item.task, 300)} "
        f"What worked: {_clip(item.summary)} Verified by: `{item.verification_command}`"
    )


def _skill_line(item: BriefSkill) -> str:
    steps = "; ".join(f"`{step.command}`" for step in item.steps)
    return (
        f"- [{item.id}] {item.name} (score {item.score:.2f}, health {item.health}): "
        f"{_clip(item.description, 400)} Steps: {steps}"
    )


def _avoid_line(item: AvoidCommand) -> str:
    return f"- `{item.command}` exited {item.exit_code} [{item.experience_id}]"


@dataclass(frozen=True, slots=True)
class Rendered:
    """The text of a brief and what made it in."""

    text: str
    experiences: list[BriefExperience]
    skills: list[BriefSkill]
    avoid: list[AvoidCommand]
    omitted: int


def _compose(
    experiences: Sequence[BriefExperience],
    skills: Sequence[BriefSkill],
    avoid: Sequence[AvoidCommand],
) -> str:
    if not (experiences or skills or avoid):
        return ""
    lines = [HEADER]
    for tier, heading in (("match", MATCH_HEADING), ("related", RELATED_HEADING)):
        tiered = [item for item in experiences if item.tier == tier]
        if tiered:
            lines.append(heading)
            lines.extend(_experience_line(item) for item in tiered)
    if skills:
        lines.append("Skills (verified procedures):")
        lines.extend(_skill_line(item) for item in skills)
    if avoid:
        lines.append("Commands that failed before on similar work (avoid):")
        lines.extend(_avoid_line(item) for item in avoid)
    return "\n".join(lines) + "\n"


def render(
    experiences: Sequence[BriefExperience],
    skills: Sequence[BriefSkill],
    avoid: Sequence[AvoidCommand],
    budget_tokens: int,
) -> Rendered:
    """Greedily fit the items, in priority order, into ``budget_tokens``."""
    kept_e: list[BriefExperience] = []
    kept_s: list[BriefSkill] = []
    kept_a: list[AvoidCommand] = []
    omitted = 0
    for item in experiences:
        if estimate_tokens(_compose([*kept_e, item], kept_s, kept_a)) <= budget_tokens:
            kept_e.append(item)
        else:
            omitted += 1
    for skill in skills:
        if estimate_tokens(_compose(kept_e, [*kept_s, skill], kept_a)) <= budget_tokens:
            kept_s.append(skill)
        else:
            omitted += 1
    for command in avoid:
        if estimate_tokens(_compose(kept_e, kept_s, [*kept_a, command])) <= budget_tokens:
            kept_a.append(command)
        else:
            omitted += 1
    return Rendered(_compose(kept_e, kept_s, kept_a), kept_e, kept_s, kept_a, omitted)
