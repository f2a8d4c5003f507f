"""Plans and Skill health: ``start`` plans a task with a Skill; outcomes move its health."""

from __future__ import annotations

import sqlite3

from lorelab.errors import UsageError
from lorelab.memory._briefs import PLAN_BRIEF_TOKENS, BriefQuery, compose_brief
from lorelab.memory._db import (
    Database,
    Row,
    dumps,
    format_id,
    maybe_one,
    now,
    one,
    optional_id,
    parse_id,
)
from lorelab.memory._item_models import Plan, PlanOutcome
from lorelab.memory._models import (
    HEALTH_CAP,
    OutcomeRequest,
    OutcomeResult,
    SkillHealth,
    SkillHealthRequest,
    SkillHealthResult,
    StartRequest,
    StartResult,
)
from lorelab.memory._redact import Redactor
from lorelab.memory._relevance import RelevancePolicy
from lorelab.memory._search import floor_text, search_skills
from lorelab.memory._skills import skill_view, state, steps_of


def plan_view(row: Row) -> Plan:
    outcome = (
        PlanOutcome(
            passed=bool(row["passed"]),
            rework_count=int(row["rework_count"]),
            reported_at=row["reported_at"],
        )
        if row["reported_at"] is not None
        else None
    )
    return Plan(
        id=format_id("plan", int(row["id"])),
        skill_id=format_id("skill", int(row["skill_id"])),
        task=row["task"],
        project=row["project"],
        score=float(row["score"]),
        steps=steps_of(row["steps"]),
        brief_id=optional_id("brief", row["brief_id"]),
        created_at=row["created_at"],
        outcome=outcome,
    )


def _no_plan_reason(
    conn: sqlite3.Connection, policy: RelevancePolicy, task: str, request: StartRequest
) -> str:
    floor = floor_text(policy)
    if request.include_review_required:
        return f"no Skill cleared the relevance floor {floor}"
    # Say so when a Skill does match but was left out for its health: "nothing relevant"
    # would send the user looking for a Skill that exists.
    held = search_skills(conn, policy, task, request.project, True)
    if not held:
        return f"no Skill cleared the relevance floor {floor}"
    best = skill_view(one(conn, "skills", held[0].rowid))
    return (
        f"no healthy Skill cleared the relevance floor {floor}; {best.id} "
        f"({best.name}, score {held[0].score:.2f}) matches but is review_required "
        "(health 0) and left out; pass include_review_required "
        "(--include-review-required) to plan with it anyway"
    )


def _plan(
    conn: sqlite3.Connection, policy: RelevancePolicy, task: str, request: StartRequest
) -> StartResult:
    found = search_skills(conn, policy, task, request.project, request.include_review_required)
    if not found:
        brief = compose_brief(
            conn, policy, BriefQuery(task, request.project, False, PLAN_BRIEF_TOKENS)
        )
        return StartResult(
            plan_id=None,
            skill_id=None,
            score=None,
            steps=[],
            reason=_no_plan_reason(conn, policy, task, request),
            brief=brief,
        )
    best = found[0]
    skill = skill_view(one(conn, "skills", best.rowid))
    cursor = conn.execute(
        "INSERT INTO plans (created_at, skill_id, task, project, score, steps) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (
            now(),
            best.rowid,
            task,
            request.project,
            best.score,
            dumps([step.model_dump() for step in skill.steps]),
        ),
    )
    number = int(cursor.lastrowid or 0)
    query = BriefQuery(task, request.project, False, PLAN_BRIEF_TOKENS, number)
    brief = compose_brief(conn, policy, query)
    assert brief.brief_id is not None  # composed with record=True, in this write transaction
    conn.execute(
        "UPDATE plans SET brief_id = ? WHERE id = ?", (parse_id(brief.brief_id, "brief"), number)
    )
    return StartResult(
        plan_id=format_id("plan", number),
        skill_id=skill.id,
        score=best.score,
        steps=skill.steps,
        reason=None,
        brief=brief,
    )


def start(db: Database, policy: RelevancePolicy, request: StartRequest) -> StartResult:
    red = Redactor()
    task = red(request.task)
    redacted = request.model_copy(update={"project": red.optional(request.project)})
    return db.write(lambda conn: _plan(conn, policy, task, redacted))


def report_outcome(db: Database, request: OutcomeRequest) -> OutcomeResult:
    plan_number = parse_id(request.plan_id, "plan")

    def write(conn: sqlite3.Connection) -> OutcomeResult:
        plan = maybe_one(conn, "plans", plan_number)
        if plan is None:
            raise UsageError(f"plan {request.plan_id} does not exist in this store")
        if plan["reported_at"] is not None:
            raise UsageError(
                f"plan {request.plan_id} already has an outcome (reported "
                f"{plan['reported_at']}); an outcome is recorded once"
            )
        skill = one(conn, "skills", int(plan["skill_id"]))
        before = int(skill["health"])
        after = min(HEALTH_CAP, before + 1) if request.passed else max(0, before - 1)
        reported = now()
        conn.execute(
            "UPDATE plans SET passed = ?, rework_count = ?, reported_at = ? WHERE id = ?",
            (int(request.passed), request.rework_count, reported, plan_number),
        )
        conn.execute("UPDATE skills SET health = ? WHERE id = ?", (after, skill["id"]))
        conn.execute(
            "INSERT INTO skill_health_events (created_at, skill_id, plan_id, passed, "
            "health_before, health_after) VALUES (?, ?, ?, ?, ?, ?)",
            (reported, skill["id"], plan_number, int(request.passed), before, after),
        )
        return OutcomeResult(
            plan_id=request.plan_id,
            skill_id=format_id("skill", int(skill["id"])),
            passed=request.passed,
            rework_count=request.rework_count,
            health=after,
            state=state(after),
        )

    return db.write(write)


def skill_health(db: Database, request: SkillHealthRequest) -> SkillHealthResult:
    skill_id = request.skill_id
    number = parse_id(skill_id, "skill") if skill_id is not None else None

    def read(conn: sqlite3.Connection) -> SkillHealthResult:
        if number is not None and maybe_one(conn, "skills", number) is None:
            raise UsageError(f"skill {skill_id} does not exist in this store")
        found = conn.execute(
            "SELECT s.id, s.name, s.health, "
            "(SELECT count(*) FROM plans p WHERE p.skill_id = s.id AND p.passed = 1), "
            "(SELECT count(*) FROM plans p WHERE p.skill_id = s.id AND p.passed = 0), "
            "(SELECT count(*) FROM plans p WHERE p.skill_id = s.id), "
            "(SELECT count(*) FROM plans p WHERE p.skill_id = s.id AND p.reported_at IS NULL) "
            "FROM skills s WHERE (?1 IS NULL OR s.id = ?1) ORDER BY s.id",
            (number,),
        ).fetchall()
        return SkillHealthResult(
            skills=[
                SkillHealth(
                    skill_id=format_id("skill", int(row[0])),
                    name=row[1],
                    health=int(row[2]),
                    state=state(int(row[2])),
                    successes=int(row[3]),
                    failures=int(row[4]),
                    plans_started=int(row[5]),
                    plans_unreported=int(row[6]),
                )
                for row in found
            ]
        )

    return db.read(read)
