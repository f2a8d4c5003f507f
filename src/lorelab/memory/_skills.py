"""Skills: procedures promoted from two or more verified, QA-approved experiences."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence

from lorelab.errors import UsageError
from lorelab.memory._db import (
    Database,
    Row,
    dumps,
    format_id,
    loads,
    maybe_one,
    now,
    one,
    optional_id,
    parse_id,
    rows,
)
from lorelab.memory._models import HEALTH_START, PromoteRequest, Skill, SkillState, SkillStep
from lorelab.memory._procedure import MIN_SHARED_COMMANDS, fingerprint, shared_procedure
from lorelab.memory._redact import Redactor
from lorelab.memory._requests import SkillsRequest, SkillsResult
from lorelab.memory._skill_names import skill_description_problem, skill_name_problem
from lorelab.memory._text import term_string


def state(health: int) -> SkillState:
    """A Skill's state at ``health``."""
    return "review_required" if health <= 0 else "trusted"


def steps_of(text: str) -> list[SkillStep]:
    """Stored steps (or checks) as models."""
    return [SkillStep.model_validate(step) for step in loads(text)]


def skill_view(row: Row) -> Skill:
    return Skill(
        id=format_id("skill", int(row["id"])),
        name=row["name"],
        description=row["description"],
        steps=steps_of(row["steps"]),
        source_experience_ids=loads(row["source_experience_ids"]),
        origin=row["origin"],
        candidate_id=optional_id("cand", row["candidate_id"]),
        project=row["project"],
        health=int(row["health"]),
        state=state(int(row["health"])),
        created_at=row["created_at"],
        validity=row.get("validity", "trusted"),
        validity_reason=row.get("validity_reason"),
    )


def insert_skill(
    conn: sqlite3.Connection,
    *,
    name: str,
    description: str,
    steps: Sequence[str],
    sources: list[Row],
    origin: str,
    candidate_id: int | None,
) -> int:
    """Store a new Skill; its name and description must export as a valid Agent Skill."""
    # Checked here whichever way the Skill was made, after redaction (which can lengthen it).
    problem = skill_name_problem(name)
    if problem is not None:
        raise UsageError(f"Skill name {name!r}: {problem}; choose another name")
    problem = skill_description_problem(description)
    if problem is not None:
        raise UsageError(f"{problem} (after redacting secrets); shorten the description and retry")
    if conn.execute("SELECT 1 FROM skills WHERE name = ?", (name,)).fetchone() is not None:
        raise UsageError(f"a Skill named {name!r} already exists; choose another name")
    projects = {row["project"] for row in sources}
    parts = [name, description]
    for row in sources:
        parts += [row["task"], row["summary"]]
    cursor = conn.execute(
        "INSERT INTO skills (created_at, name, description, steps, source_experience_ids, "
        "origin, candidate_id, project, health, terms) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            now(),
            name,
            description,
            dumps([{"command": step, "expected_exit_code": 0} for step in steps]),
            dumps([format_id("exp", int(row["id"])) for row in sources]),
            origin,
            candidate_id,
            projects.pop() if len(projects) == 1 else None,
            HEALTH_START,
            term_string(parts),
        ),
    )
    return int(cursor.lastrowid or 0)


def _sources(conn: sqlite3.Connection, numbers: Sequence[int]) -> list[Row]:
    sources = []
    for number in numbers:
        row = maybe_one(conn, "experiences", number)
        if row is None:
            raise UsageError(f"experience exp-{number} does not exist in this store")
        if row["trust"] != "verified":
            raise UsageError(
                f"experience exp-{number} is not verified (its verification exited "
                f"{row['verification_exit_code']}, outcome {row['outcome']}); "
                "only verified work becomes a Skill"
            )
        if row["qa"] != "approved":
            raise UsageError(
                f"experience exp-{number} is not QA-approved (qa: {row['qa']}); "
                "only approved work becomes a Skill"
            )
        sources.append(row)
    return sources


def _shared(conn: sqlite3.Connection, sources: list[Row]) -> list[str]:
    procedures = [tuple(loads(row["procedure"])) for row in sources]
    shared = shared_procedure(procedures)
    if len(shared) < MIN_SHARED_COMMANDS:
        listing = "; ".join(
            f"exp-{row['id']}: {list(proc)}" for row, proc in zip(sources, procedures, strict=True)
        )
        raise UsageError(
            "these experiences do not share a procedure: their successful command "
            f"sequences have no common subsequence of {MIN_SHARED_COMMANDS} or more "
            f"commands ({listing})"
        )
    # One procedure, one Skill: a second Skill with the same steps would split its health
    # and its outcomes between two names.
    wanted = fingerprint(shared)
    for number, name, stored in conn.execute("SELECT id, name, steps FROM skills ORDER BY id"):
        if fingerprint([step["command"] for step in loads(stored)]) == wanted:
            raise UsageError(
                f"Skill {format_id('skill', int(number))} ({name}) already "
                "holds this procedure; report outcomes against it instead of promoting it again"
            )
    return list(shared)


def promote_skill(db: Database, request: PromoteRequest) -> Skill:
    numbers = [parse_id(value, "exp") for value in request.experience_ids]
    repeated = [n for n, count in Counter(numbers).items() if count > 1]
    if repeated:
        raise UsageError(f"experience exp-{repeated[0]} is listed more than once")
    red = Redactor()
    name = red(request.name)
    description = red(request.description)

    def write(conn: sqlite3.Connection) -> int:
        sources = _sources(conn, numbers)
        return insert_skill(
            conn,
            name=name,
            description=description,
            steps=_shared(conn, sources),
            sources=sources,
            origin="promoted",
            candidate_id=None,
        )

    number = db.write(write)
    return db.read(lambda conn: skill_view(one(conn, "skills", number)))


def list_skills(db: Database, request: SkillsRequest) -> SkillsResult:
    sql = "SELECT * FROM skills" + ("" if request.include_review_required else " WHERE health > 0")
    return db.read(
        lambda conn: SkillsResult(
            skills=[skill_view(row) for row in rows(conn, sql + " ORDER BY id")]
        )
    )
