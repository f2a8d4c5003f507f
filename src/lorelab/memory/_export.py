"""Export Skills as Agent Skills folders: ``<name>/SKILL.md`` with YAML front matter.

Front matter carries the two required fields of the Agent Skills specification, ``name``
(1-64 lowercase letters, digits and single hyphens, equal to the folder name) and
``description`` (1-1024 characters), plus a ``metadata`` map of strings holding lorelab's
provenance. String values are written as JSON strings, which are valid YAML double-quoted
scalars, so no description can break the front matter.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from lorelab.errors import InputFileError, OutputExistsError, PathError, SchemaError
from lorelab.memory._models import HEALTH_CAP, Skill
from lorelab.memory._skill_names import skill_description_problem, skill_name_problem

# Characters that some YAML and Markdown readers (and Python's str.splitlines) take as line
# breaks: written raw, they would split a line where the file shows none.
_LINE_BREAKS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _quoted(value: str) -> str:
    text = json.dumps(value, ensure_ascii=False)
    for raw, escaped in _LINE_BREAKS.items():
        text = text.replace(raw, escaped)
    return text


def _fence(command: str) -> str:
    if any(raw in command for raw in _LINE_BREAKS):
        return _quoted(command)
    return f"`` {command} ``" if "`" in command else f"`{command}`"


def _prose(text: str) -> str:
    for raw in _LINE_BREAKS:
        text = text.replace(raw, " ")
    return text


def skill_markdown(skill: Skill) -> str:
    """The ``SKILL.md`` text of ``skill``; a :class:`SchemaError` if it is no valid Agent Skill."""
    for problem in (skill_name_problem(skill.name), skill_description_problem(skill.description)):
        if problem is not None:
            raise SchemaError(
                f"{skill.id} ({skill.name!r}) cannot be exported as an Agent Skill: {problem}"
            )
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
        _prose(skill.description).strip(),
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

    ``directory`` is created if missing. Every ``SKILL.md`` is rendered (and so validated)
    and every target folder checked before anything is created: an invalid Skill or a folder
    that already exists refuses the whole export with nothing written, and an export never
    overwrites. If writing fails part-way (a full disk, a permission), the folders this
    export created are removed again, so no partial export is left looking complete.
    """
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise PathError(f"{root}: exists and is not a directory")
    rendered = [(root / skill.name, skill_markdown(skill)) for skill in skills]
    for folder, _ in rendered:
        if os.path.lexists(folder):
            raise OutputExistsError(f"{folder}: already exists; an export never overwrites")
    # The directories this export will create, deepest first, to remove again on failure.
    made = [path for path in (root, *root.parents) if not path.exists()]
    created: list[Path] = []
    written: list[Path] = []
    try:
        root.mkdir(parents=True, exist_ok=True)
        for folder, text in rendered:
            folder.mkdir(mode=0o755)
            created.append(folder)
            path = folder / "SKILL.md"
            with open(path, "x", encoding="utf-8") as handle:
                handle.write(text)
            written.append(path)
    except OSError as exc:
        for folder in reversed(created):
            shutil.rmtree(folder, ignore_errors=True)
        for path in made:
            # Only if empty: whatever else is in it now is not this export's to remove.
            with contextlib.suppress(OSError):
                path.rmdir()
        where = exc.filename if exc.filename is not None else root
        raise InputFileError(
            f"{where}: cannot write the Skills export: {exc.strerror or exc}; nothing was exported"
        ) from None
    return written
