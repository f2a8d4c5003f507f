"""Export Skills as Agent Skills folders: ``<name>/SKILL.md`` with YAML front matter.

Front matter carries the two required fields of the Agent Skills specification, ``name``
(1-64 lowercase letters, digits and single hyphens, equal to the folder name) and
``description`` (1-1024 characters), plus a ``metadata`` map of strings holding lorelab's
provenance. String values are written as JSON strings, which are valid YAML double-quoted
scalars, so no description can break the front matter.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from lorelab.errors import OutputExistsError, PathError
from lorelab.memory._models import HEALTH_CAP, Skill, check_skill_name


def _quoted(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _fence(command: str) -> str:
    return f"`` {command} ``" if "`" in command else f"`{command}`"


def skill_markdown(skill: Skill) -> str:
    """The ``SKILL.md`` text of ``skill``."""
    check_skill_name(skill.name)
    sources = " ".join(skill.source_experience_ids)
    lines = [
        "---",
        f"name: {skill.name}",
        f"description: {_quoted(skill.description)}",
        "metadata:",
        f"  lorelab-skill-id: {_quoted(skill.id)}",
        f"  lorelab-origin: {_quoted(skill.origin)}",
        f"  lorelab-source-experiences: {_quoted(sources)}",
        f"  lorelab-health: {_quoted(f'{skill.health}/{HEALTH_CAP}')}",
        f"  lorelab-created-at: {_quoted(skill.created_at)}",
        "---",
        "",
        f"# {skill.name}",
        "",
        skill.description.strip(),
        "",
        "## Steps",
        "",
    ]
    for number, step in enumerate(skill.steps, start=1):
        lines.append(
            f"{number}. Run {_fence(step.command)} and expect exit code {step.expected_exit_code}."
        )
    lines += [
        "",
        "## Where this came from",
        "",
        f"Promoted by lorelab ({skill.origin}) from verified experiences {sources}. "
        "Each step is a command those experiences ran successfully.",
        "",
    ]
    return "\n".join(lines)


def export_skills(skills: Sequence[Skill], directory: str | os.PathLike[str]) -> list[Path]:
    """Write each Skill as ``directory/<name>/SKILL.md``; returns the files written.

    ``directory`` is created if missing. A folder that already exists for one of the Skills
    is refused before anything is written: an export never overwrites.
    """
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise PathError(f"{root}: exists and is not a directory")
    targets = [(skill, root / skill.name) for skill in skills]
    for _, folder in targets:
        if os.path.lexists(folder):
            raise OutputExistsError(f"{folder}: already exists; an export never overwrites")
    root.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for skill, folder in targets:
        folder.mkdir(mode=0o755)
        path = folder / "SKILL.md"
        with open(path, "x", encoding="utf-8") as handle:
            handle.write(skill_markdown(skill))
        written.append(path)
    return written
