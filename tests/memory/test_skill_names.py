"""Every Skill can be exported as a valid Agent Skill, however it was made (issue 5, audit 5)."""

import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorelab.errors import UsageError
from lorelab.memory import (
    CandidateRequest,
    DreamRequest,
    PromoteCandidateRequest,
    PromoteRequest,
    SkillsRequest,
    SqliteMemoryStore,
)
from lorelab.memory._export import export_skills
from lorelab.memory._migrations import MIGRATIONS, migrate
from lorelab.memory._skill_names import (
    SKILL_NAME_MAX,
    fit_skill_name,
    skill_name_problem,
    slug_skill_name,
)
from tests.support.memory import experience


@given(st.text(max_size=200), st.integers(min_value=2, max_value=10**6))
def test_a_slug_fitted_with_any_suffix_is_a_valid_name_or_empty(text, number):
    slug = slug_skill_name(text)
    assert slug == "" or skill_name_problem(fit_skill_name(slug)) is None
    named = fit_skill_name(slug or "shared-procedure", f"-{number}")
    assert skill_name_problem(named) is None
    assert len(named) <= SKILL_NAME_MAX


def test_a_cut_never_leaves_a_hyphen_before_the_suffix():
    base = "a" * 60 + "-bcdef"
    assert fit_skill_name(base, "-12") == "a" * 60 + "-12"
    assert fit_skill_name("x" * 64, "-1000") == "x" * 59 + "-1000"


def test_a_dream_over_non_ascii_tasks_names_its_candidate_validly(store):
    store.record(experience(task="ééé aaa zzz"))
    store.record(experience(task="ééé aaa zzz again"))
    [candidate] = store.dream(DreamRequest()).candidates
    assert candidate.name == "aaa-zzz"
    assert skill_name_problem(candidate.name) is None


def test_a_dream_over_tasks_with_no_ascii_words_falls_back_to_a_valid_name(store):
    store.record(experience(task="Исправить падающий тест возврата"))
    store.record(experience(task="Исправить тест возврата снова"))
    [candidate] = store.dream(DreamRequest()).candidates
    assert candidate.name == "shared-procedure"


def _checked_candidate(store: SqliteMemoryStore, name: str) -> str:
    """A candidate as an older lorelab could leave it: checked, with ``name`` as stored."""
    store.record(experience(task="Refund rounding one"))
    store.record(experience(task="Refund rounding two"))
    [candidate] = store.dream(DreamRequest()).candidates
    store.connection.execute(
        "UPDATE candidates SET name = ?, state = 'checked' WHERE id = ?",
        (name, int(candidate.id.split("-")[1])),
    )
    return candidate.id


def test_promoting_a_candidate_with_an_invalid_stored_name_is_refused(store, tmp_path):
    candidate_id = _checked_candidate(store, "aaa-zzz-")
    with pytest.raises(UsageError, match=r"Skill name 'aaa-zzz-': .*choose another name"):
        store.promote_candidate(PromoteCandidateRequest(candidate_id=candidate_id))
    assert store.skills(SkillsRequest()).skills == []
    skill = store.promote_candidate(PromoteCandidateRequest(candidate_id=candidate_id, name="ok"))
    assert skill.name == "ok"
    [path] = export_skills(store.skills(SkillsRequest()).skills, tmp_path / "out")
    assert path.parent.name == "ok"


def test_a_description_too_long_after_redaction_is_refused_and_nothing_is_stored(store):
    first = store.record(experience()).id
    second = store.record(experience(task="Refund rounding test fails again")).id
    # 70 assignments of 13 characters fit the limit; each grows by 23 once redacted.
    description = " ".join(["password=abcd"] * 70)
    assert len(description) <= 1024
    with pytest.raises(UsageError, match=r"the Agent Skills limit is 1,024 \(after redacting"):
        store.promote_skill(
            PromoteRequest(experience_ids=[first, second], name="refunds", description=description)
        )
    assert store.skills(SkillsRequest(include_review_required=True)).skills == []


def test_the_name_migration_repairs_names_an_older_dream_left_invalid(tmp_path):
    path = tmp_path / "memory.db"
    conn = sqlite3.connect(path, isolation_level=None)
    before = [m.name for m in MIGRATIONS].index("0009_valid_skill_names")
    migrate(conn, str(path), MIGRATIONS[:before])
    insert_skill = (
        "INSERT INTO skills (created_at, name, description, steps, source_experience_ids, "
        "origin, candidate_id, project, health, terms) "
        "VALUES ('t', ?, 'd', '[]', '[]', 'dream', NULL, NULL, 2, 'aaa zzz')"
    )
    for name in ("aaa-zzz", "aaa-zzz-", "-é-", "fine-name"):
        conn.execute(insert_skill, (name,))
    insert_candidate = (
        "INSERT INTO candidates (created_at, name, description, steps, checks, "
        "source_experience_ids, fingerprint, origin, project, state) "
        "VALUES ('t', ?, 'd', '[]', '[]', '[]', ?, 'mined', NULL, 'candidate')"
    )
    conn.execute(insert_candidate, ("bbb--ccc-", "f1"))
    # Names are kept distinct within a table: candidates are repaired among candidates.
    conn.execute(insert_candidate, ("aaa-zzz-", "f2"))
    conn.close()
    with SqliteMemoryStore(path) as store:
        names = [skill.name for skill in store.skills(SkillsRequest()).skills]
        assert names == ["aaa-zzz", "aaa-zzz-2", "skill-3", "fine-name"]
        assert store.candidate(CandidateRequest(candidate_id="cand-1")).name == "bbb-ccc"
        assert store.candidate(CandidateRequest(candidate_id="cand-2")).name == "aaa-zzz"
        written = export_skills(store.skills(SkillsRequest()).skills, tmp_path / "out")
    assert [p.parent.name for p in written] == names
