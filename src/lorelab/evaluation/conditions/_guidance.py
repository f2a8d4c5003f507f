"""What a memory condition hands the host: a brief (memory_guided, dreaming) or a plan
(skill_planned), asked of the memory under test and decoded into :class:`Guidance`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from lorelab.evaluation.conditions._manifest import TaskSpec
from lorelab.evaluation.conditions._memory import MemoryToolError, MemoryUnderTest

BRIEF_BUDGET_TOKENS: Final = 1200


@dataclass(frozen=True, slots=True)
class Guidance:
    """What a memory condition handed the host, and what it came from."""

    payload: dict[str, Any] | None
    text: str | None
    brief_id: str | None = None
    plan_id: str | None = None
    skill_id: str | None = None
    skill_ids: tuple[str, ...] = ()
    served_ids: tuple[str, ...] = ()
    note: str | None = None
    error: str | None = None
    failed_call: str | None = None
    brief_items: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def items(value: Any) -> list[Mapping[str, Any]]:
    """The mappings in ``value`` when it is a list; nothing otherwise."""
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _brief_items(brief: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {
        str(item["id"]): item
        for key in ("experiences", "skills", "principles")
        for item in items(brief.get(key))
        if item.get("id") is not None
    }


def _brief_skill_ids(brief: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(
        str(item["id"]) for item in items(brief.get("skills")) if item.get("id") is not None
    )


def _text_of_brief(brief: Mapping[str, Any]) -> tuple[str | None, list[str]]:
    text = brief.get("text")
    served = list(_brief_items(brief))
    if brief.get("empty") is True or not isinstance(text, str) or not text.strip():
        return None, served
    return text, served


def _plan_text(result: Mapping[str, Any]) -> str:
    skill = result.get("skill_id")
    source = f"from Skill {skill}" if skill else "(no Skill: the memory's generic plan)"
    lines = [f"Plan {result.get('plan_id')} {source}:"]
    steps = result.get("steps")
    for number, step in enumerate(steps if isinstance(steps, list) else [], start=1):
        if isinstance(step, Mapping) and "command" not in step and step.get("action"):
            # An instruction rather than a command (MemCoder's plans).
            checks = step.get("verification")
            extra = f" (verify: {'; '.join(map(str, checks))})" if isinstance(checks, list) else ""
            lines.append(f"{number}. {step['action']}{extra}")
            continue
        command = step.get("command") if isinstance(step, Mapping) else str(step)
        expected = step.get("expected_exit_code", 0) if isinstance(step, Mapping) else 0
        lines.append(f"{number}. `{command}` (expect exit {expected})")
    brief = result.get("brief")
    if isinstance(brief, Mapping):
        text, _ = _text_of_brief(brief)
        if text:
            lines += ["", text]
    return "\n".join(lines)


def _nothing_handed(
    brief: Mapping[str, Any], served: list[str], note: str, skill_ids: tuple[str, ...] = ()
) -> Guidance:
    """No guidance for the host, with what the memory's answer still served and why."""
    return Guidance(
        None,
        None,
        brief_id=_opt_str(brief.get("brief_id")),
        served_ids=tuple(served),
        note=note,
        brief_items=_brief_items(brief),
        skill_ids=skill_ids,
    )


def _plan_guidance(result: Mapping[str, Any]) -> Guidance:
    found = result.get("brief")
    brief: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    _, served = _text_of_brief(brief)
    plan_id = result.get("plan_id")
    if not plan_id:
        note = f"no plan: {result.get('reason') or 'the memory gave none'}"
        return _nothing_handed(brief, served, note, _brief_skill_ids(brief))
    skill_id = _opt_str(result.get("skill_id"))
    plan_text = _plan_text(result)
    own = [skill_id] if skill_id else []
    return Guidance(
        {"kind": "plan", "text": plan_text, "planId": str(plan_id), "skillId": skill_id},
        plan_text,
        brief_id=_opt_str(brief.get("brief_id")),
        plan_id=str(plan_id),
        skill_id=skill_id,
        skill_ids=tuple(dict.fromkeys([*own, *_brief_skill_ids(brief)])),
        served_ids=tuple(dict.fromkeys([*own, *served])),
        brief_items=_brief_items(brief),
    )


def _brief_guidance(brief: Mapping[str, Any]) -> Guidance:
    text, served = _text_of_brief(brief)
    if text is None:
        return _nothing_handed(
            brief, served, f"empty brief: {brief.get('reason') or 'nothing relevant'}"
        )
    # The Skills a brief served are the Skills this run used (a dreaming run's Dream products
    # among them): attributed so that repeated failures mark them review_required. One served
    # Skill is also the run's skill_id, as a plan's Skill is.
    skills = _brief_skill_ids(brief)
    return Guidance(
        {"kind": "brief", "text": text},
        text,
        brief_id=_opt_str(brief.get("brief_id")),
        skill_id=skills[0] if len(skills) == 1 else None,
        skill_ids=skills,
        served_ids=tuple(served),
        brief_items=_brief_items(brief),
    )


async def guidance_for(memory: MemoryUnderTest | None, task: TaskSpec, condition: str) -> Guidance:
    """Ask the memory for ``condition``'s guidance on ``task``; baseline gets none.

    A memory tool that fails gives a :class:`Guidance` carrying the error, never an exception.
    """
    if condition == "baseline":
        return Guidance(None, None)
    if memory is None:
        raise RuntimeError("a memory condition needs the memory under test")
    try:
        if condition == "skill_planned":
            return _plan_guidance(await memory.call("start", {"task": task.prompt}))
        brief = await memory.call(
            "prepare",
            {
                "task": task.prompt,
                "include_skills": condition == "dreaming",
                "budget_tokens": BRIEF_BUDGET_TOKENS,
            },
        )
    except MemoryToolError as exc:
        return Guidance(None, None, error=str(exc), failed_call=exc.operation)
    return _brief_guidance(brief)
