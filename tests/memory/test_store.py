"""The SQLite store: records, locks, briefs, items, snapshots, lessons and where it lives."""

import math
import sqlite3

import pytest
from pydantic import ValidationError

from lorelab._model import estimate_tokens
from lorelab.errors import OutputExistsError, UsageError
from lorelab.memory import (
    DEFAULT_POLICY,
    AddLessonRequest,
    LessonRequest,
    LessonSearchRequest,
    LessonsRequest,
    ListRequest,
    LockClearRequest,
    LockRequest,
    LocksRequest,
    MemoryStore,
    PrepareRequest,
    RecordManyRequest,
    RecordRequest,
    ShowRequest,
    SnapshotRequest,
    SqliteMemoryStore,
    store_path,
)
from lorelab.workspace import FileEntry
from tests.support.memory import REFUND_TASK, experience

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


def test_prepare_returns_the_relevant_verified_experience_with_commands_to_avoid(
    match_store,
):
    # Commands to avoid come with a match only (a related item gives none).
    store = match_store
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


def test_the_brief_stays_within_its_budget_and_counts_what_it_left_out(match_store):
    # Match items are shown in full (related ones compact), so a small budget cuts them.
    store = match_store
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
