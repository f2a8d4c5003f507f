"""Dreams and candidates: mining candidate Skills, checking them, promoting the checked ones."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any, Final, Literal

from lorelab.errors import UsageError
from lorelab.memory import _checks
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
from lorelab.memory._models import (
    Candidate,
    CheckRun,
    DreamRequest,
    DreamResult,
    PromoteCandidateRequest,
    Skill,
    WorkerProvenance,
)
from lorelab.memory._procedure import MIN_SHARED_COMMANDS, fingerprint, mine
from lorelab.memory._redact import Redactor
from lorelab.memory._requests import CandidateCheckRequest, CandidateRequest
from lorelab.memory._skill_names import SKILL_DESCRIPTION_MAX, fit_skill_name, slug_skill_name
from lorelab.memory._skills import insert_skill, skill_view, steps_of
from lorelab.memory._text import STOPWORDS, words


def check_view(row: Row) -> CheckRun:
    return CheckRun(
        id=format_id("check", int(row["id"])),
        candidate_id=format_id("cand", int(row["candidate_id"])),
        passed=bool(row["passed"]),
        results=loads(row["results"]),
        timeout_seconds=float(row["timeout_seconds"]),
        copy_method=row["copy_method"],
        created_at=row["created_at"],
    )


def candidate_view(conn: sqlite3.Connection, number: int) -> Candidate:
    row = one(conn, "candidates", number)
    last = rows(
        conn,
        "SELECT * FROM candidate_checks WHERE candidate_id = ? ORDER BY id DESC LIMIT 1",
        (number,),
    )
    provenance = row["provenance"]
    return Candidate(
        id=format_id("cand", number),
        name=row["name"],
        description=row["description"],
        steps=steps_of(row["steps"]),
        checks=steps_of(row["checks"]),
        source_experience_ids=loads(row["source_experience_ids"]),
        origin=row["origin"],
        provenance=(
            WorkerProvenance.model_validate(loads(provenance)) if provenance is not None else None
        ),
        project=row["project"],
        state=row["state"],
        skill_id=optional_id("skill", row["skill_id"]),
        last_check=check_view(last[0]) if last else None,
        created_at=row["created_at"],
    )


def _candidate_name(conn: sqlite3.Connection, sources: list[Row]) -> str:
    # Only ASCII words can be part of an Agent Skills name; filtering whole words (rather
    # than characters out of the joined name) never leaves a stray hyphen behind.
    counted: Counter[str] = Counter()
    for row in sources:
        counted.update(
            {w for w in words(row["task"]) if w.isascii() and len(w) >= 3 and w not in STOPWORDS}
        )
    common = sorted(counted.items(), key=lambda item: (-item[1], item[0]))[:3]
    base = fit_skill_name(slug_skill_name("-".join(word for word, _ in common)))
    base = base or "shared-procedure"
    name = base
    suffix = 2
    while (
        conn.execute(
            "SELECT 1 FROM candidates WHERE name = ? UNION SELECT 1 FROM skills WHERE name = ?",
            (name, name),
        ).fetchone()
        is not None
    ):
        name = fit_skill_name(base, f"-{suffix}")
        suffix += 1
    return name


def _insert_mined(
    conn: sqlite3.Connection, sources: list[Row], steps: list[dict[str, Any]], print_: str
) -> int:
    ids = [format_id("exp", int(row["id"])) for row in sources]
    tasks = "; ".join(" ".join(row["task"].split())[:120] for row in sources[:5])
    description = (
        f"Procedure shared by {len(sources)} verified experiences ({', '.join(ids)}): {tasks}"
    )[:SKILL_DESCRIPTION_MAX]
    return insert_candidate(
        conn,
        sources,
        name=_candidate_name(conn, sources),
        description=description,
        steps=steps,
        checks=steps,
        fingerprint=print_,
        origin="mined",
    )


def insert_candidate(
    conn: sqlite3.Connection,
    sources: list[Row],
    *,
    name: str,
    description: str,
    steps: list[dict[str, Any]],
    checks: list[dict[str, Any]],
    fingerprint: str,
    origin: Literal["mined", "worker"],
    provenance: WorkerProvenance | None = None,
) -> int:
    """Store one unchecked candidate drawn from ``sources``; its project is theirs when they
    share one. Returns its row id."""
    projects = {row["project"] for row in sources}
    cursor = conn.execute(
        "INSERT INTO candidates (created_at, name, description, steps, checks, "
        "source_experience_ids, fingerprint, origin, project, state, provenance) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'candidate', ?)",
        (
            now(),
            name,
            description,
            dumps(steps),
            dumps(checks),
            dumps([format_id("exp", int(row["id"])) for row in sources]),
            fingerprint,
            origin,
            projects.pop() if len(projects) == 1 else None,
            None if provenance is None else dumps(provenance.model_dump(mode="json")),
        ),
    )
    return int(cursor.lastrowid or 0)


RULE: Final = (
    f"a candidate needs two or more verified experiences whose successful commands (those "
    f"that exited 0, then the passing verification command) share {MIN_SHARED_COMMANDS} or "
    "more commands in the same order"
)
"""The mining rule in one sentence, as a Dream that proposed nothing says it."""


def _why_nothing(considered: int, already: int) -> str:
    if already:
        return f"every shared procedure found ({already}) is already a Skill or a candidate"
    return f"{RULE}; no two of the {considered} verified experience(s) considered do"


def dream(db: Database, request: DreamRequest) -> DreamResult:
    def write(conn: sqlite3.Connection) -> DreamResult:
        found = rows(
            conn,
            "SELECT * FROM experiences WHERE trust = 'verified' "
            "AND (?1 IS NULL OR project = ?1) ORDER BY id DESC LIMIT ?2",
            (request.project, request.limit),
        )
        by_id = {int(row["id"]): row for row in found}
        procedures = [(number, tuple(loads(row["procedure"]))) for number, row in by_id.items()]
        known = {str(row[0]) for row in conn.execute("SELECT fingerprint FROM candidates")}
        for row in conn.execute("SELECT steps FROM skills"):
            known.add(fingerprint([step["command"] for step in loads(row[0])]))
        created: list[int] = []
        already = 0
        for mined in mine(procedures):
            print_ = fingerprint(mined.steps)
            if print_ in known:
                already += 1
                continue
            known.add(print_)
            steps = [{"command": step, "expected_exit_code": 0} for step in mined.steps]
            sources = [by_id[number] for number in mined.source_ids]
            created.append(_insert_mined(conn, sources, steps, print_))
        return DreamResult(
            candidates=[candidate_view(conn, number) for number in created],
            considered_experiences=len(found),
            already_known=already,
            reason=None if created else _why_nothing(len(found), already),
        )

    return db.write(write)


def candidate(db: Database, request: CandidateRequest) -> Candidate:
    number = parse_id(request.candidate_id, "cand")

    def read(conn: sqlite3.Connection) -> Candidate:
        if maybe_one(conn, "candidates", number) is None:
            raise UsageError(f"candidate {request.candidate_id} does not exist in this store")
        return candidate_view(conn, number)

    return db.read(read)


def check_candidate(db: Database, request: CandidateCheckRequest) -> CheckRun:
    candidate_id, timeout_seconds = request.candidate_id, request.timeout_seconds
    current = candidate(db, CandidateRequest(candidate_id=candidate_id))
    if current.state == "promoted":
        raise UsageError(f"candidate {candidate_id} was already promoted to {current.skill_id}")
    if not Path(request.project_dir).is_dir():
        raise UsageError(f"project directory {request.project_dir}: not a directory")
    if not 0 < timeout_seconds <= 1800:
        raise UsageError("check timeout must be more than 0 and at most 1800 seconds")
    outcome = _checks.run_checks(current.checks, request.project_dir, timeout_seconds)
    number = parse_id(candidate_id, "cand")

    def write(conn: sqlite3.Connection) -> int:
        cursor = conn.execute(
            "INSERT INTO candidate_checks (created_at, candidate_id, passed, results, "
            "timeout_seconds, copy_method) VALUES (?, ?, ?, ?, ?, ?)",
            (
                now(),
                number,
                int(outcome.passed),
                dumps([result.model_dump() for result in outcome.results]),
                timeout_seconds,
                _checks.COPY_METHOD,
            ),
        )
        conn.execute(
            "UPDATE candidates SET state = ? WHERE id = ? AND state != 'promoted'",
            ("checked" if outcome.passed else "check_failed", number),
        )
        return int(cursor.lastrowid or 0)

    run_number = db.write(write)
    return db.read(lambda conn: check_view(one(conn, "candidate_checks", run_number)))


def promote_candidate(db: Database, request: PromoteCandidateRequest) -> Skill:
    number = parse_id(request.candidate_id, "cand")
    red = Redactor()
    name = red.optional(request.name)
    description = red.optional(request.description)

    def write(conn: sqlite3.Connection) -> int:
        row = maybe_one(conn, "candidates", number)
        if row is None:
            raise UsageError(f"candidate {request.candidate_id} does not exist in this store")
        if row["state"] != "checked":
            hint = (
                f"run `lorelab memory candidates check {request.candidate_id}` first"
                if row["state"] in ("candidate", "check_failed")
                else "it is already a Skill"
            )
            raise UsageError(
                f"candidate {request.candidate_id} is {row['state']!r}; only a candidate "
                f"whose checks passed can be promoted ({hint})"
            )
        sources = [
            one(conn, "experiences", parse_id(value, "exp"))
            for value in loads(row["source_experience_ids"])
        ]
        skill_number = insert_skill(
            conn,
            name=name or row["name"],
            description=description or row["description"],
            steps=[step["command"] for step in loads(row["steps"])],
            sources=sources,
            origin="dream",
            candidate_id=number,
        )
        conn.execute(
            "UPDATE candidates SET state = 'promoted', skill_id = ? WHERE id = ?",
            (skill_number, number),
        )
        return skill_number

    skill_number = db.write(write)
    return db.read(lambda conn: skill_view(one(conn, "skills", skill_number)))
