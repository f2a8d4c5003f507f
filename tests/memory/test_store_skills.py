"""The SQLite store: Skills, plans and their health, Dreams and candidates."""

import pytest
from pydantic import ValidationError

from lorelab.errors import UsageError
from lorelab.memory import (
    CandidateCheckRequest,
    CandidateRequest,
    DreamRequest,
    OutcomeRequest,
    PrepareRequest,
    PromoteCandidateRequest,
    PromoteRequest,
    ShowRequest,
    SkillHealthRequest,
    SkillsRequest,
    SqliteMemoryStore,
    StartRequest,
)
from lorelab.memory._models import HEALTH_CAP, HEALTH_START
from tests.support.memory import REFUND_TASK, experience, record_refund_pair

# ------------------------------------------------------------------ promote


def test_two_approved_verified_experiences_sharing_commands_become_a_skill(store):
    first, second = record_refund_pair(store)
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
    first, second = record_refund_pair(store)
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
    first, second = record_refund_pair(store)
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
    first, second = record_refund_pair(store)
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
    record_refund_pair(store)
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
    record_refund_pair(store)
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


def test_a_dream_that_proposes_nothing_says_the_mining_rule(store):
    store.record(experience(commands=[("make refunds", 0)]))
    store.record(experience(commands=[("make payments", 0)], task="fix payments"))
    result = store.dream(DreamRequest())
    assert result.candidates == []
    assert result.reason is not None
    assert "share 2 or more commands in the same order" in result.reason
    assert "no two of the 2 verified experience(s)" in result.reason


def test_a_dream_that_finds_only_known_procedures_says_so(store):
    record_refund_pair(store)
    assert store.dream(DreamRequest()).reason is None  # it proposed one
    again = store.dream(DreamRequest())
    assert again.candidates == []
    assert again.reason == "every shared procedure found (1) is already a Skill or a candidate"
