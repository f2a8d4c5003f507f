import math
import sqlite3

import pytest
from pydantic import ValidationError

from lorelab._model import estimate_tokens
from lorelab.errors import OutputExistsError, UsageError
from lorelab.memory import (
    DEFAULT_POLICY,
    AddLessonRequest,
    CandidateCheckRequest,
    CandidateRequest,
    DreamRequest,
    LessonRequest,
    LessonSearchRequest,
    LessonsRequest,
    ListRequest,
    LockClearRequest,
    LockRequest,
    LocksRequest,
    MemoryStore,
    OutcomeRequest,
    PrepareRequest,
    PromoteCandidateRequest,
    PromoteRequest,
    RecordManyRequest,
    RecordRequest,
    ShowRequest,
    SkillHealthRequest,
    SkillsRequest,
    SnapshotRequest,
    SqliteMemoryStore,
    StartRequest,
    store_path,
)
from lorelab.memory._models import HEALTH_CAP, HEALTH_START
from lorelab.workspace import FileEntry
from tests.support.memory import experience

REFUND_TASK = "partial refund test off by one cent, Decimal rounding in refunds"


def _pair(store: SqliteMemoryStore) -> tuple[str, str]:
    first = store.record(experience())
    second = store.record(
        experience(
            task="Refund rounding test fails again after rates script change",
            summary="Quantized refund amounts to cents with ROUND_HALF_UP.",
            commands=[("python scripts/regen_rates.py", 0), ("pytest tests/test_refunds.py -x", 0)],
        )
    )
    return first.id, second.id


# ------------------------------------------------------------------ record


def test_the_sqlite_store_implements_the_store_protocol(store):
    assert isinstance(store, MemoryStore)


def test_verified_means_a_passed_outcome_and_a_zero_verification_exit_code(store):
    assert store.record(experience()).verified is True
    assert store.record(experience(exit_code=1)).verified is False
    assert store.record(experience(passed=False)).verified is False
    assert store.record(experience(passed=False, exit_code=2)).verified is False
    states = [item.trust for item in store.list_items(ListRequest(kind="experience")).items]
    assert states == ["unverified", "unverified", "unverified", "verified"]


def test_an_experience_keeps_its_provenance(store):
    result = store.record(experience(host="codex", model="gpt-5-codex"))
    shown = store.show(ShowRequest(id=result.id)).item
    assert shown.provenance.host == "codex"
    assert shown.provenance.model == "gpt-5-codex"
    assert shown.provenance.verification.command == "pytest tests/test_refunds.py"
    assert shown.provenance.verification.exit_code == 0
    assert shown.provenance.created_at.endswith("Z")
    unknown = store.show(ShowRequest(id=store.record(experience()).id)).item
    assert unknown.provenance.host is None
    assert unknown.provenance.model is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"task": "   "}, "task"),
        ({"outcome": "maybe"}, "outcome"),
        ({"verification": {"command": "", "exit_code": 0}}, "verification.command"),
        ({"files": ["/etc/passwd"]}, "files"),
        ({"files": ["src/../../secret"]}, "files"),
        ({"unexpected": 1}, "unexpected"),
        ({"qa": "yes"}, "qa"),
    ],
)
def test_malformed_experiences_are_refused_by_the_model(change, message):
    data = experience().model_dump()
    data.update(change)
    with pytest.raises(ValidationError, match=message):
        RecordRequest.model_validate(data)


def test_recording_with_an_unknown_plan_or_skill_is_refused(store):
    with pytest.raises(UsageError, match="plan plan-9 does not exist"):
        store.record(experience(plan_id="plan-9"))
    with pytest.raises(UsageError, match="is not a skill id"):
        store.record(experience(skill_id="nine"))
    assert store.list_items(ListRequest(kind="experience")).total == 0


def test_record_many_stores_all_or_nothing(store):
    store.set_evaluation_lock(LockRequest(evaluation_id="eval-1", holdout_tasks=["Holdout task"]))
    with pytest.raises(UsageError, match="eval-1"):
        store.record_many(
            RecordManyRequest(experiences=[experience(), experience(task="holdout   TASK")])
        )
    assert store.list_items(ListRequest(kind="experience")).total == 0
    assert (
        len(store.record_many(RecordManyRequest(experiences=[experience(), experience()])).results)
        == 2
    )


# ------------------------------------------------------------------ evaluation locks


def test_an_active_lock_refuses_its_holdout_tasks_after_whitespace_and_case_normalisation(store):
    store.set_evaluation_lock(
        LockRequest(evaluation_id="cond-7", holdout_tasks=["Fix the flaky login test", "T-042"])
    )
    with pytest.raises(UsageError, match="holdout task of active evaluation lock 'cond-7'"):
        store.record(experience(task="  fix the   FLAKY login test "))
    with pytest.raises(UsageError, match="cond-7"):
        store.record(experience(task="something else", task_id="t-042"))
    assert store.record(experience(task="Fix the flaky login tests")).verified
    store.clear_evaluation_lock(LockClearRequest(evaluation_id="cond-7"))
    assert store.record(experience(task="Fix the flaky login test")).verified


def test_locks_are_kept_after_clearing_and_cannot_be_doubled(store):
    store.set_evaluation_lock(LockRequest(evaluation_id="e1", holdout_tasks=["a"]))
    with pytest.raises(UsageError, match="already active"):
        store.set_evaluation_lock(LockRequest(evaluation_id="e1", holdout_tasks=["b"]))
    cleared = store.clear_evaluation_lock(LockClearRequest(evaluation_id="e1"))
    assert cleared.active is False
    assert cleared.cleared_at is not None
    with pytest.raises(UsageError, match="no active evaluation lock"):
        store.clear_evaluation_lock(LockClearRequest(evaluation_id="e1"))
    store.set_evaluation_lock(LockRequest(evaluation_id="e1", holdout_tasks=["c"]))
    assert [
        (lock.evaluation_id, lock.active) for lock in store.evaluation_locks(LocksRequest()).locks
    ] == [
        ("e1", False),
        ("e1", True),
    ]


def test_a_lock_with_a_blank_task_or_id_is_refused(store):
    with pytest.raises(UsageError):
        store.set_evaluation_lock(LockRequest(evaluation_id=" ", holdout_tasks=["a"]))
    with pytest.raises(UsageError):
        store.set_evaluation_lock(LockRequest(evaluation_id="e", holdout_tasks=["ok", "  "]))
    with pytest.raises(ValidationError):
        LockRequest.model_validate({"evaluation_id": "e", "holdout_tasks": "not a list"})


# ------------------------------------------------------------------ prepare


def test_prepare_returns_the_relevant_verified_experience_with_commands_to_avoid(store):
    good = store.record(
        experience(
            commands=[
                ("python scripts/regen_rates.py --legacy", 1),
                ("pytest tests/test_refunds.py", 0),
            ]
        )
    )
    brief = store.prepare(PrepareRequest(task=REFUND_TASK, project="payments-api"))
    assert not brief.empty
    assert brief.reason is None
    assert [item.id for item in brief.experiences] == [good.id]
    assert 0 < brief.experiences[0].score <= 1
    assert [(a.command, a.exit_code) for a in brief.avoid_commands] == [
        ("python scripts/regen_rates.py --legacy", 1)
    ]
    assert good.id in brief.text
    assert brief.tokens_estimate == math.ceil(len(brief.text.encode("utf-8")) / 4)
    assert "estimate" in brief.tokens_estimate_method


def test_a_failed_command_that_later_succeeded_is_not_a_command_to_avoid(store):
    store.record(experience())  # pytest -x failed, then passed: the normal loop
    brief = store.prepare(PrepareRequest(task=REFUND_TASK))
    assert brief.avoid_commands == []


def test_unverified_experiences_never_reach_a_brief(store):
    store.record(experience(exit_code=1))
    store.record(experience(passed=False))
    brief = store.prepare(PrepareRequest(task=REFUND_TASK))
    assert brief.empty
    assert brief.experiences == []
    assert "no verified, trusted experience is a candidate" in (brief.reason or "")


def test_an_unrelated_task_gets_an_empty_brief_with_no_text(store):
    store.record(experience())
    brief = store.prepare(PrepareRequest(task="Add a dark mode toggle to the settings page"))
    assert brief.empty
    assert brief.text == ""
    assert brief.tokens_estimate == 0


def test_a_project_filter_keeps_other_projects_out_but_keeps_unscoped_memories(store):
    store.record(experience(project="payments-api"))
    unscoped = store.record(experience(project=None))
    brief = store.prepare(PrepareRequest(task=REFUND_TASK, project="web-dashboard"))
    assert [item.id for item in brief.experiences] == [unscoped.id]


def test_the_brief_stays_within_its_budget_and_counts_what_it_left_out(store):
    for n in range(5):
        store.record(experience(summary=f"Attempt {n}: " + "quantize refunds " * 40))
    small = store.prepare(PrepareRequest(task=REFUND_TASK, budget_tokens=300))
    large = store.prepare(PrepareRequest(task=REFUND_TASK, budget_tokens=5000))
    assert small.tokens_estimate <= 300
    assert estimate_tokens(small.text) == small.tokens_estimate
    served = DEFAULT_POLICY.served
    assert 1 <= len(small.experiences) < len(large.experiences) == served
    assert small.omitted == served - len(small.experiences)
    assert large.omitted == 0


def test_a_budget_too_small_for_any_item_gives_an_empty_brief_with_its_reason(store):
    store.record(experience(summary="quantize " * 400))
    brief = store.prepare(PrepareRequest(task=REFUND_TASK, budget_tokens=50))
    assert brief.empty
    assert brief.omitted == 1
    assert "fits in 50 estimated tokens" in (brief.reason or "")


def test_every_brief_served_is_recorded_for_audit(store):
    exp_id = store.record(experience()).id
    served = store.prepare(PrepareRequest(task=REFUND_TASK))
    empty = store.prepare(PrepareRequest(task="Write the onboarding guide for new hires"))
    audit = store.show(ShowRequest(id=served.brief_id)).item
    assert audit.experience_ids == [exp_id]
    assert audit.text == served.text
    assert store.show(ShowRequest(id=empty.brief_id)).item.empty is True
    assert store.list_items(ListRequest(kind="brief")).total == 2


def test_secrets_in_the_task_are_not_kept_in_the_brief_audit(store):
    token = "gh" + "p_" + "x" * 36
    brief = store.prepare(PrepareRequest(task=f"deploy with {token}"))
    assert token not in brief.task
    assert token not in store.show(ShowRequest(id=brief.brief_id)).item.task


# ------------------------------------------------------------------ promote


def test_two_approved_verified_experiences_sharing_commands_become_a_skill(store):
    first, second = _pair(store)
    skill = store.promote_skill(
        PromoteRequest(
            experience_ids=[first, second],
            name="refund-rounding",
            description="Fix refund rounding tests.",
        )
    )
    assert [step.command for step in skill.steps] == [
        "python scripts/regen_rates.py",
        "pytest tests/test_refunds.py -x",
        "pytest tests/test_refunds.py",
    ]
    assert skill.source_experience_ids == [first, second]
    assert skill.health == HEALTH_START
    assert skill.state == "trusted"
    assert skill.origin == "promoted"
    assert skill.project == "payments-api"


def test_promotion_refuses_unverified_unapproved_or_unrelated_work(store):
    first, second = _pair(store)
    unverified = store.record(experience(exit_code=1)).id
    unreviewed = store.record(experience(qa="unreviewed")).id
    other = store.record(
        experience(commands=[("npm ci", 0)], verify="npx jest", task="jest fails")
    ).id
    cases = [
        ([first, unverified], "not verified"),
        ([first, unreviewed], "not QA-approved"),
        ([first, other], "do not share a procedure"),
        ([first, first], "more than once"),
        ([first, "exp-999"], "does not exist"),
    ]
    for ids, message in cases:
        with pytest.raises(UsageError, match=message):
            store.promote_skill(PromoteRequest(experience_ids=ids, name="x-y", description="d"))
    with pytest.raises(ValidationError):
        PromoteRequest(experience_ids=[first], name="x", description="d")
    store.promote_skill(PromoteRequest(experience_ids=[first, second], name="x-y", description="d"))
    with pytest.raises(UsageError, match="already"):
        store.promote_skill(
            PromoteRequest(experience_ids=[first, second], name="x-y", description="d")
        )


def test_the_same_procedure_is_never_promoted_twice_under_another_name(store):
    first, second = _pair(store)
    kept = store.promote_skill(
        PromoteRequest(experience_ids=[first, second], name="refund-rounding", description="d")
    )
    third = store.record(experience()).id
    with pytest.raises(UsageError, match=f"Skill {kept.id} \\(refund-rounding\\) already holds"):
        store.promote_skill(
            PromoteRequest(experience_ids=[second, third], name="refunds-again", description="d")
        )
    assert [
        skill.id for skill in store.skills(SkillsRequest(include_review_required=True)).skills
    ] == [kept.id]


@pytest.mark.parametrize(
    "name", ["Refund", "refund--rounding", "-refund", "refund-", "a" * 65, "", "refund_rounding"]
)
def test_skill_names_must_follow_the_agent_skills_rules(name):
    with pytest.raises(ValidationError):
        PromoteRequest(experience_ids=["exp-1", "exp-2"], name=name, description="d")


# ------------------------------------------------------------------ start, outcome, health


def _skill(store: SqliteMemoryStore) -> str:
    first, second = _pair(store)
    return store.promote_skill(
        PromoteRequest(
            experience_ids=[first, second],
            name="refund-rounding",
            description="Fix refund rounding tests that are off by a cent.",
        )
    ).id


def test_start_plans_with_the_best_skill_and_records_its_brief(store):
    skill_id = _skill(store)
    plan = store.start(StartRequest(task=REFUND_TASK))
    assert plan.plan_id == "plan-1"
    assert plan.skill_id == skill_id
    assert plan.reason is None
    assert [s.command for s in plan.steps][-1] == "pytest tests/test_refunds.py"
    shown = store.show(ShowRequest(id=plan.plan_id)).item
    assert shown.brief_id == plan.brief.brief_id
    assert store.show(ShowRequest(id=plan.brief.brief_id)).item.plan_id == plan.plan_id


def test_start_without_a_relevant_skill_says_why(store):
    _skill(store)
    plan = store.start(StartRequest(task="Add a dark mode toggle to the settings page"))
    assert plan.plan_id is None
    assert plan.skill_id is None
    assert plan.steps == []
    assert (plan.reason or "").startswith("no Skill cleared the relevance floor")


def test_start_says_when_the_matching_skill_is_held_back_for_review(store):
    skill_id = _skill(store)
    for _ in range(2):
        plan = store.start(StartRequest(task=REFUND_TASK))
        store.report_outcome(OutcomeRequest(plan_id=plan.plan_id, passed=False, rework_count=1))
    held = store.start(StartRequest(task=REFUND_TASK))
    assert held.plan_id is None
    reason = held.reason or ""
    assert f"{skill_id} (refund-rounding, score " in reason
    assert "matches but is review_required (health 0)" in reason
    assert "include_review_required" in reason
    unrelated = store.start(StartRequest(task="Add a dark mode toggle to the settings page"))
    assert (unrelated.reason or "").startswith("no Skill cleared the relevance floor")


def test_health_starts_at_two_moves_by_one_and_is_capped(store):
    skill_id = _skill(store)
    healths = []
    for passed in (True, True, True, True, True):
        plan = store.start(StartRequest(task=REFUND_TASK))
        result = store.report_outcome(
            OutcomeRequest(plan_id=plan.plan_id, passed=passed, rework_count=0)
        )
        healths.append(result.health)
    assert healths == [3, 4, 5, 5, 5]
    assert HEALTH_CAP == 5
    health = store.skill_health(SkillHealthRequest(skill_id=skill_id)).skills[0]
    assert (health.successes, health.failures, health.plans_started) == (5, 0, 5)


def test_a_skill_at_zero_health_is_kept_for_review_and_left_out_of_start(store):
    skill_id = _skill(store)
    for _ in range(2):
        plan = store.start(StartRequest(task=REFUND_TASK))
        outcome = store.report_outcome(
            OutcomeRequest(plan_id=plan.plan_id, passed=False, rework_count=3)
        )
    assert outcome.health == 0
    assert outcome.state == "review_required"
    assert store.show(ShowRequest(id=skill_id)).item.state == "review_required"
    assert store.start(StartRequest(task=REFUND_TASK)).plan_id is None
    assert store.prepare(PrepareRequest(task=REFUND_TASK)).skills == []
    asked = store.start(StartRequest(task=REFUND_TASK, include_review_required=True))
    assert asked.skill_id == skill_id
    assert store.skills(SkillsRequest()).skills == []
    assert [s.id for s in store.skills(SkillsRequest(include_review_required=True)).skills] == [
        skill_id
    ]


def test_an_outcome_is_recorded_once(store):
    _skill(store)
    plan = store.start(StartRequest(task=REFUND_TASK))
    store.report_outcome(OutcomeRequest(plan_id=plan.plan_id, passed=True, rework_count=1))
    with pytest.raises(UsageError, match="already has an outcome"):
        store.report_outcome(OutcomeRequest(plan_id=plan.plan_id, passed=False, rework_count=0))
    with pytest.raises(UsageError, match="does not exist"):
        store.report_outcome(OutcomeRequest(plan_id="plan-77", passed=True, rework_count=0))
    audit = store.show(ShowRequest(id=plan.plan_id)).item.outcome
    assert audit is not None
    assert (audit.passed, audit.rework_count) == (True, 1)


def test_prepare_includes_healthy_skills_only_when_asked(store):
    skill_id = _skill(store)
    assert [s.id for s in store.prepare(PrepareRequest(task=REFUND_TASK)).skills] == [skill_id]
    without = store.prepare(PrepareRequest(task=REFUND_TASK, include_skills=False))
    assert without.skills == []


# ------------------------------------------------------------------ dreams


def test_a_dream_mines_a_candidate_from_commands_shared_by_verified_experiences(store):
    _pair(store)
    store.record(experience(exit_code=1, commands=[("make refunds", 0), ("make check", 0)]))
    result = store.dream(DreamRequest())
    assert result.considered_experiences == 2
    [candidate] = result.candidates
    assert candidate.state == "candidate"
    assert candidate.source_experience_ids == ["exp-1", "exp-2"]
    assert [c.command for c in candidate.checks] == [
        "python scripts/regen_rates.py",
        "pytest tests/test_refunds.py -x",
        "pytest tests/test_refunds.py",
    ]
    assert all(c.expected_exit_code == 0 for c in candidate.checks)
    again = store.dream(DreamRequest())
    assert again.candidates == []
    assert again.already_known == 1


def test_unchecked_or_failed_candidates_never_reach_prepare_start_or_promotion(store, tmp_path):
    _pair(store)
    [candidate] = store.dream(DreamRequest()).candidates
    assert store.prepare(PrepareRequest(task=REFUND_TASK)).skills == []
    assert store.start(StartRequest(task=REFUND_TASK)).plan_id is None
    with pytest.raises(UsageError, match="only a candidate whose checks passed"):
        store.promote_candidate(PromoteCandidateRequest(candidate_id=candidate.id))
    project = tmp_path / "project"
    project.mkdir()
    run = store.check_candidate(
        CandidateCheckRequest(
            candidate_id=candidate.id, project_dir=str(project), timeout_seconds=20
        )
    )
    assert run.passed is False  # the script is missing from the empty copy
    assert store.candidate(CandidateRequest(candidate_id=candidate.id)).state == "check_failed"
    with pytest.raises(UsageError, match="check_failed"):
        store.promote_candidate(PromoteCandidateRequest(candidate_id=candidate.id))
    assert store.start(StartRequest(task=REFUND_TASK)).plan_id is None


def test_a_checked_candidate_becomes_a_trusted_skill(store, tmp_path):
    python = "python3"
    for task in ("Regenerate the fixtures after the schema change", "Fixture regeneration"):
        store.record(
            experience(
                task=task,
                summary="Ran the generator and verified the fixtures parse.",
                commands=[(f'{python} -c \'open("out.txt", "w").write("ok")\'', 0)],
                verify=f'{python} -c \'assert open("out.txt").read() == "ok"\'',
            )
        )
    [candidate] = store.dream(DreamRequest()).candidates
    project = tmp_path / "project"
    project.mkdir()
    run = store.check_candidate(
        CandidateCheckRequest(
            candidate_id=candidate.id, project_dir=str(project), timeout_seconds=30
        )
    )
    assert run.passed, run.results
    assert [r.status for r in run.results] == ["passed", "passed"]
    assert not (project / "out.txt").exists()  # checks ran in a disposable copy
    skill = store.promote_candidate(
        PromoteCandidateRequest(candidate_id=candidate.id, name="regenerate-fixtures")
    )
    assert skill.origin == "dream"
    assert skill.candidate_id == candidate.id
    assert store.candidate(CandidateRequest(candidate_id=candidate.id)).state == "promoted"
    assert store.candidate(CandidateRequest(candidate_id=candidate.id)).skill_id == skill.id
    plan = store.start(StartRequest(task="regenerate fixtures after a schema change"))
    assert plan.skill_id == skill.id
    with pytest.raises(UsageError, match="already promoted"):
        store.check_candidate(
            CandidateCheckRequest(
                candidate_id=candidate.id, project_dir=str(project), timeout_seconds=30
            )
        )


# ------------------------------------------------------------------ list, show, snapshot


def test_show_refuses_unknown_and_malformed_ids(store):
    with pytest.raises(UsageError, match="does not exist"):
        store.show(ShowRequest(id="exp-1"))
    with pytest.raises(UsageError, match="not an item id"):
        store.show(ShowRequest(id="exp_1"))
    with pytest.raises(UsageError, match="not an item id"):
        store.show(ShowRequest(id="lesson-1"))


def test_list_is_newest_first_and_reports_the_total(store):
    ids = [store.record(experience()).id for _ in range(4)]
    listed = store.list_items(ListRequest(kind="experience", limit=2))
    assert listed.total == 4
    assert [item.id for item in listed.items] == ids[::-1][:2]


def test_a_snapshot_is_a_consistent_standalone_copy_with_its_hash(store, tmp_path):
    store.record(experience())
    target = tmp_path / "frozen.db"
    digest = store.snapshot(SnapshotRequest(path=str(target))).sha256
    assert len(digest) == 64
    import hashlib

    assert hashlib.sha256(target.read_bytes()).hexdigest() == digest
    assert not (tmp_path / "frozen.db-wal").exists()
    frozen = sqlite3.connect(target)
    assert frozen.execute("SELECT count(*) FROM experiences").fetchone()[0] == 1
    assert frozen.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    frozen.close()
    with pytest.raises(OutputExistsError):
        store.snapshot(SnapshotRequest(path=str(target)))


# ------------------------------------------------------------------ lessons


def _lesson(store: SqliteMemoryStore, lesson_id: str, requirements: str, test_code: str) -> None:
    store.add_lesson(
        AddLessonRequest(
            lesson_id=lesson_id,
            specification_id=f"spec-{lesson_id}",
            requirements=requirements,
            files=[FileEntry(path="src/clamp.py", content="def clamp(x, lo, hi): ...\n")],
            tests=[FileEntry(path="tests/test_clamp.py", content=test_code)],
            validation={"passed": True, "stable": 3},
        )
    )


def test_lessons_are_found_by_requirements_and_test_names(store):
    _lesson(store, "L1", "Clamp a number into a range.", "def test_boundary_upper_limit(): ...\n")
    _lesson(store, "L2", "Parse semantic versions.", "def test_parse_prerelease_tag(): ...\n")
    _lesson(store, "L3", "Normalize whitespace in names.", "test('trims leading spaces', ...)\n")
    found = store.search_lessons(LessonSearchRequest(text="clamp with an upper boundary", k=2))
    assert [hit.lesson.id for hit in found.hits][:1] == ["L1"]
    assert all(hit.score > 0 for hit in found.hits)
    scores = [hit.score for hit in found.hits]
    assert scores == sorted(scores, reverse=True)
    spaces = store.search_lessons(LessonSearchRequest(text="leading spaces", k=5))
    # Fused with cosine similarity, every lesson is ranked; the one sharing the words is first.
    assert [hit.lesson.id for hit in spaces.hits][:1] == ["L3"]
    assert store.search_lessons(LessonSearchRequest(text="the", k=5)).hits == []
    assert [lesson.id for lesson in store.list_lessons(LessonsRequest()).lessons] == [
        "L1",
        "L2",
        "L3",
    ]
    got = store.get_lesson(LessonRequest(lesson_id="L2"))
    assert got.tests[0].path == "tests/test_clamp.py"
    assert got.validation == {"passed": True, "stable": 3}


def test_a_lesson_id_is_never_replaced(store):
    _lesson(store, "L1", "Clamp.", "def test_a(): ...\n")
    with pytest.raises(UsageError, match="already exists"):
        _lesson(store, "L1", "Other.", "def test_b(): ...\n")
    with pytest.raises(UsageError, match="does not exist"):
        store.get_lesson(LessonRequest(lesson_id="L9"))


# ------------------------------------------------------------------ location


def test_the_store_lives_under_lorelab_home_when_set_else_in_the_project(tmp_path):
    assert store_path(None, tmp_path, environ={}) == tmp_path / ".lorelab" / "memory.db"
    env = {"LORELAB_HOME": str(tmp_path / "h")}
    assert store_path(None, tmp_path, environ=env) == tmp_path / "h" / "memory.db"
    assert store_path(tmp_path / "x", tmp_path, environ=env) == tmp_path / "x" / "memory.db"
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="not a directory"):
        store_path(tmp_path / "file", None, environ={})
