"""A Hypothesis state machine drives the SQLite store against a small in-memory model."""

import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    rule,
)

from lorelab.errors import UsageError
from lorelab.memory import (
    ListRequest,
    LockClearRequest,
    LockRequest,
    LocksRequest,
    OutcomeRequest,
    PromoteRequest,
    SkillHealthRequest,
    SkillsRequest,
    SqliteMemoryStore,
    StartRequest,
)
from lorelab.memory._models import HEALTH_CAP, HEALTH_START
from lorelab.memory._text import task_key
from tests.support.memory import experience

TASKS = [
    "Refund rounding decimal cents test failing",
    "Alembic duplicate column migration error",
    "Jest react act warnings after upgrade",
]
EVALUATIONS = ["eval-a", "eval-b"]


class StoreAgainstModel(RuleBasedStateMachine):
    experiences = Bundle("experiences")
    plans = Bundle("plans")

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="lorelab-stateful-"))
        self.store = SqliteMemoryStore(self.directory / "memory.db")
        self.model_experiences: dict[str, tuple[str, bool]] = {}
        self.model_locks: dict[str, set[str]] = {}
        self.model_skills: dict[str, tuple[int, str]] = {}
        self.model_plans: dict[str, tuple[str, bool]] = {}
        self.names = 0

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.directory)

    def _locked(self, task: str) -> bool:
        return any(task_key(task) in keys for keys in self.model_locks.values())

    @rule(target=experiences, task=st.sampled_from(TASKS), verified=st.booleans())
    def record(self, task: str, verified: bool) -> str:
        request = experience(task=task, exit_code=0 if verified else 1)
        if self._locked(task):
            with pytest.raises(UsageError, match="holdout"):
                self.store.record(request)
            return "none"
        result = self.store.record(request)
        assert result.verified is verified
        assert result.id == f"exp-{len(self.model_experiences) + 1}"
        self.model_experiences[result.id] = (task, verified)
        return result.id

    @rule(evaluation=st.sampled_from(EVALUATIONS), tasks=st.sets(st.sampled_from(TASKS)))
    def set_lock(self, evaluation: str, tasks: set[str]) -> None:
        if evaluation in self.model_locks:
            with pytest.raises(UsageError, match="already active"):
                self.store.set_evaluation_lock(
                    LockRequest(evaluation_id=evaluation, holdout_tasks=sorted(tasks))
                )
            return
        lock = self.store.set_evaluation_lock(
            LockRequest(evaluation_id=evaluation, holdout_tasks=sorted(tasks))
        )
        assert lock.active
        self.model_locks[evaluation] = {task_key(task) for task in tasks}

    @rule(evaluation=st.sampled_from(EVALUATIONS))
    def clear_lock(self, evaluation: str) -> None:
        if evaluation not in self.model_locks:
            with pytest.raises(UsageError, match="no active"):
                self.store.clear_evaluation_lock(LockClearRequest(evaluation_id=evaluation))
            return
        assert not self.store.clear_evaluation_lock(
            LockClearRequest(evaluation_id=evaluation)
        ).active
        del self.model_locks[evaluation]

    @rule(first=experiences, second=experiences)
    def promote(self, first: str, second: str) -> None:
        self.names += 1
        name = f"skill-name-{self.names}"
        request_ids = [first, second]
        if "none" in request_ids or first == second:
            with pytest.raises(UsageError):
                self.store.promote_skill(
                    PromoteRequest(experience_ids=request_ids, name=name, description="d")
                )
            return
        if not (self.model_experiences[first][1] and self.model_experiences[second][1]):
            with pytest.raises(UsageError, match="not verified"):
                self.store.promote_skill(
                    PromoteRequest(experience_ids=request_ids, name=name, description="d")
                )
            return
        try:
            skill = self.store.promote_skill(
                PromoteRequest(experience_ids=request_ids, name=name, description="d")
            )
        except UsageError as exc:
            refusal = str(exc)
        else:
            refusal = None
        if refusal is not None:
            # One procedure, one Skill: the refusal names a Skill that holds these very steps.
            match = re.search(r"Skill (skill-\d+) \(", refusal)
            assert match is not None, refusal
            assert match.group(1) in self.model_skills
            return
        others = self.store.skills(SkillsRequest(include_review_required=True)).skills
        assert all(other.steps != skill.steps for other in others if other.id != skill.id)
        assert skill.health == HEALTH_START
        tasks = {self.model_experiences[first][0], self.model_experiences[second][0]}
        self.model_skills[skill.id] = (HEALTH_START, next(iter(tasks)) if len(tasks) == 1 else "")

    @rule(target=plans, task=st.sampled_from(TASKS))
    def start(self, task: str) -> str:
        result = self.store.start(StartRequest(task=task))
        healthy_for_task = [
            skill_id
            for skill_id, (health, source_task) in self.model_skills.items()
            if health > 0 and source_task == task
        ]
        if result.plan_id is None:
            assert not healthy_for_task
            return "none"
        assert result.skill_id is not None
        assert self.model_skills[result.skill_id][0] > 0
        self.model_plans[result.plan_id] = (result.skill_id, False)
        return result.plan_id

    @rule(plan=consumes(plans), passed=st.booleans())
    def outcome(self, plan: str, passed: bool) -> None:
        if plan == "none":
            return
        skill_id, reported = self.model_plans[plan]
        assert not reported
        result = self.store.report_outcome(
            OutcomeRequest(plan_id=plan, passed=passed, rework_count=0)
        )
        health, source_task = self.model_skills[skill_id]
        health = min(HEALTH_CAP, health + 1) if passed else max(0, health - 1)
        self.model_skills[skill_id] = (health, source_task)
        self.model_plans[plan] = (skill_id, True)
        assert result.health == health
        with pytest.raises(UsageError, match="already has an outcome"):
            self.store.report_outcome(OutcomeRequest(plan_id=plan, passed=True, rework_count=0))

    @invariant()
    def experiences_match(self) -> None:
        listed = self.store.list_items(ListRequest(kind="experience", limit=10_000))
        assert listed.total == len(self.model_experiences)
        seen = {item.id: (item.task, item.trust == "verified") for item in listed.items}
        assert seen == self.model_experiences

    @invariant()
    def skills_and_health_match(self) -> None:
        health = {
            item.skill_id: (item.health, item.state)
            for item in self.store.skill_health(SkillHealthRequest()).skills
        }
        expected = {
            skill_id: (h, "review_required" if h == 0 else "trusted")
            for skill_id, (h, _) in self.model_skills.items()
        }
        assert health == expected

    @invariant()
    def locks_match(self) -> None:
        active = {
            lock.evaluation_id
            for lock in self.store.evaluation_locks(LocksRequest()).locks
            if lock.active
        }
        assert active == set(self.model_locks)


StoreAgainstModel.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_store_agrees_with_the_model = StoreAgainstModel.TestCase
