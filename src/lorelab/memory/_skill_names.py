"""Agent Skills names and descriptions: what a valid one is, and how one is made from text."""

from __future__ import annotations

import re
from typing import Final

SKILL_NAME_MAX: Final = 64
SKILL_DESCRIPTION_MAX: Final = 1024
_SKILL_NAME: Final = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def skill_name_problem(value: str) -> str | None:
    """Why ``value`` is not a valid Agent Skills name, or ``None`` when it is one."""
    if not 1 <= len(value) <= SKILL_NAME_MAX:
        return f"skill name must be 1 to {SKILL_NAME_MAX} characters"
    if not _SKILL_NAME.fullmatch(value):
        return (
            "skill name must be lowercase letters, digits and single hyphens, "
            "not starting or ending with a hyphen"
        )
    return None


def check_skill_name(value: str) -> str:
    """``value`` if it is a valid Agent Skills name, else a ``ValueError`` (for validators)."""
    problem = skill_name_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def skill_description_problem(value: str) -> str | None:
    """Why ``value`` is not a valid Agent Skills description, or ``None`` when it is one."""
    if not value.strip():
        return "skill description must not be blank"
    if len(value) > SKILL_DESCRIPTION_MAX:
        return (
            f"skill description is {len(value):,} characters; the Agent Skills limit is "
            f"{SKILL_DESCRIPTION_MAX:,}"
        )
    return None


def slug_skill_name(text: str) -> str:
    """``text`` as a name of lowercase ASCII letters, digits and single hyphens ('' if none).

    Every run of other characters becomes one hyphen and the ends are stripped, in that
    order, so removing a character can never leave a hyphen at an end or two in a row.
    """
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def fit_skill_name(base: str, suffix: str = "") -> str:
    """``base`` cut so ``base + suffix`` fits the Agent Skills name limit, hyphens kept valid."""
    head = base[: SKILL_NAME_MAX - len(suffix)].rstrip("-")
    return f"{head}{suffix}" if head else suffix.strip("-")
