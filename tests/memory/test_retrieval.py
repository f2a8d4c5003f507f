"""Hybrid retrieval: vectors at record time, fused ranking, abstention, validity, feedback,
explanations, reindexing an older store, and the held-out set's split rule."""

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from lorelab.errors import UsageError
from lorelab.memory import (
    DEFAULT_POLICY,
    AddLessonRequest,
    ExplainRequest,
    FeedbackRequest,
    LessonSearchRequest,
    ListRequest,
    PrepareRequest,
    PromoteRequest,
    ReindexRequest,
    ShowRequest,
    SqliteMemoryStore,
    StartRequest,
    ValidityRequest,
)
from lorelab.memory._embedders import MINILM
from lorelab.memory._embedding import MODEL_ID, embed
from lorelab.memory._migrations import MIGRATIONS, applied_migrations
from lorelab.workspace import FileEntry
from tests.support.memory import DATA, experience

HELDOUT = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "retrieval_heldout.json"
REFUND = "Fix failing test_refund_partial_amount after Decimal rounding change"
REPEAT = "test_refund_partial_amount fails again after the Decimal rounding change"


def _stored_vectors(store: SqliteMemoryStore) -> list[tuple[int, str, int]]:
    return store.connection.execute(
        "SELECT id, model, length(vector) FROM experience_vectors ORDER BY id"
    ).fetchall()


# ------------------------------------------------------------------ vectors and ranking


def test_every_recorded_experience_gets_a_vector_of_the_stores_model(store, tmp_path):
    store.record(experience())
    store.record(experience(task="Dark mode toggle does not persist", passed=False))
    # A new store uses MiniLM: 384 fp16 values each; unverified work gets a vector too (it
    # never reaches a brief).
    assert store.embedding_model == MINILM.model_id
    assert _stored_vectors(store) == [(1, MINILM.model_id, 768), (2, MINILM.model_id, 768)]
    with SqliteMemoryStore(tmp_path / "w.db", embedding_model="wordllama") as chosen:
        chosen.record(experience())
        assert _stored_vectors(chosen) == [(1, MODEL_ID, 512)]  # 256 fp16 values


def test_the_embedding_is_normalised_and_puts_paraphrases_closer_than_unrelated_text():
    cart, basket, dark = embed(
        [
            "Cart badge keeps showing the old item count after removing an item",
            "The little number on the basket icon is stale after I take a product out",
            "Rotate the TLS certificates of the staging load balancer",
        ]
    )
    assert float(cart @ cart) == pytest.approx(1.0, abs=1e-5)
    assert float(cart @ basket) > float(cart @ dark)


def test_a_near_repeat_of_stored_work_is_served_first(store):
    first = store.record(experience(task=REFUND))
    store.record(experience(task="Flaky websocket reconnect test in the dashboard", summary="x"))
    brief = store.prepare(PrepareRequest(task=REPEAT))
    assert not brief.empty
    assert [item.id for item in brief.experiences][:1] == [first.id]
    assert 0.0 <= brief.experiences[0].score <= 1.0


def test_a_weak_match_gets_an_empty_brief_that_says_the_evidence_is_too_weak(store):
    store.record(experience(task=REFUND))
    store.record(experience(task="Checkout page shows prices without the currency symbol"))
    brief = store.prepare(PrepareRequest(task="Add a dark mode toggle to the settings page"))
    assert brief.empty
    assert brief.experiences == []
    # Nothing stored is as similar as the grading's floor: no item is graded worth serving.
    assert "nothing stored is about this task" in (brief.reason or "")


def test_explain_lists_every_candidate_with_lexical_semantic_and_fused_scores(store):
    store.record(experience(task=REFUND))
    store.record(experience(task="Checkout page shows prices without the currency symbol"))
    before = store.list_items(ListRequest(kind="brief")).total
    result = store.explain(ExplainRequest(task=REPEAT, project="payments-api"))
    assert result.mode == "hybrid"
    grading = DEFAULT_POLICY.grading_for(store.embedding_model)
    assert result.threshold == grading.related
    assert result.match_threshold == grading.match
    assert {c.id for c in result.candidates} == {"exp-1", "exp-2"}
    first = result.candidates[0]
    assert first.id == "exp-1"
    assert first.served
    assert first.semantic is not None
    assert first.semantic > result.candidates[1].semantic  # type: ignore[operator]
    assert first.lexical > 0
    assert first.bm25 is not None
    assert first.matched_terms
    assert first.fused >= result.candidates[1].fused
    assert first.confidence is not None
    # The near-repeat is graded by MiniLM's rule (the default store's), its tier as served.
    assert first.tier == grading.tier(first.confidence)
    assert first.reason.startswith(f"served as {first.tier}: ")
    assert all(c.reason for c in result.candidates)
    # Explaining records no brief.
    assert store.list_items(ListRequest(kind="brief")).total == before


def test_a_store_without_vectors_falls_back_to_the_keyword_floor(store):
    store.record(experience(task=REFUND))
    store.connection.execute("DELETE FROM experience_vectors")
    result = store.explain(ExplainRequest(task=REFUND))
    assert result.mode == "lexical"
    assert result.threshold is None
    assert [c.id for c in result.candidates] == ["exp-1"]
    assert result.candidates[0].semantic is None


def test_the_same_fix_recorded_twice_corroborates_instead_of_competing(store):
    for _ in range(2):
        store.record(experience(task=REFUND))
    store.record(experience(task="Checkout page shows prices without the currency symbol"))
    result = store.explain(ExplainRequest(task="partial refund test off by one cent, Decimal"))
    first = result.candidates[0]
    # The margin is over the unrelated item, not over the duplicate.
    assert first.margin == pytest.approx(first.semantic - result.candidates[2].semantic, abs=1e-5)  # type: ignore[operator]
    assert first.margin > 0.2  # type: ignore[operator]


# ------------------------------------------------------------------ validity


def test_a_superseded_experience_is_withheld_not_deleted_and_says_why(store):
    old = store.record(experience(task=REFUND))
    new = store.record(experience(task=REFUND, summary="Use the money helper's quantize()."))
    changed = store.update_validity(
        ValidityRequest(
            item_id=old.id,
            state="superseded",
            reason="the rates script was removed",
            superseded_by=new.id,
        )
    )
    assert (changed.state_before, changed.state) == ("trusted", "superseded")
    brief = store.prepare(PrepareRequest(task=REPEAT))
    assert old.id not in [item.id for item in brief.experiences]
    shown = store.show(ShowRequest(id=old.id)).item
    assert shown.validity == "superseded"  # type: ignore[union-attr]
    assert "the rates script was removed" in (shown.validity_reason or "")  # type: ignore[union-attr]
    explained = {c.id: c for c in store.explain(ExplainRequest(task=REPEAT)).candidates}
    assert not explained[old.id].served
    assert explained[old.id].reason.startswith("withheld: marked superseded: the rates script")
    assert store.list_items(ListRequest(kind="experience")).total == 2
    store.update_validity(ValidityRequest(item_id=old.id, state="trusted"))
    assert store.show(ShowRequest(id=old.id)).item.validity == "trusted"  # type: ignore[union-attr]
    events = store.connection.execute("SELECT state FROM validity_events ORDER BY id").fetchall()
    assert events == [("superseded",), ("trusted",)]


@pytest.mark.parametrize(
    ("request_data", "message"),
    [
        ({"item_id": "exp-1", "state": "deprecated"}, "needs a reason"),
        ({"item_id": "exp-1", "state": "deprecated", "reason": "  "}, "needs a reason"),
        ({"item_id": "exp-9", "state": "deprecated", "reason": "old"}, "does not exist"),
        ({"item_id": "brief-1", "state": "deprecated", "reason": "old"}, "not an experience"),
        (
            {"item_id": "exp-1", "state": "contradicted", "reason": "x", "superseded_by": "exp-1"},
            "only for the state superseded",
        ),
        (
            {"item_id": "exp-1", "state": "superseded", "reason": "x", "superseded_by": "exp-1"},
            "cannot supersede itself",
        ),
    ],
)
def test_bad_validity_changes_are_refused_and_change_nothing(store, request_data, message):
    store.record(experience())
    with pytest.raises(UsageError, match=message):
        store.update_validity(ValidityRequest(**request_data))
    assert store.show(ShowRequest(id="exp-1")).item.validity == "trusted"  # type: ignore[union-attr]


def test_a_deprecated_skill_gives_no_plan(store):
    ids = [store.record(experience(task=REFUND)).id for _ in range(2)]
    skill = store.promote_skill(
        PromoteRequest(experience_ids=ids, name="refund-rounding", description="Fix refunds")
    )
    assert store.start(StartRequest(task=REFUND)).skill_id == skill.id
    store.update_validity(
        ValidityRequest(item_id=skill.id, state="deprecated", reason="money helpers replaced")
    )
    assert store.start(StartRequest(task=REFUND)).plan_id is None
    assert store.show(ShowRequest(id=skill.id)).item.validity == "deprecated"  # type: ignore[union-attr]


# ------------------------------------------------------------------ feedback


def test_one_bad_rating_does_not_bury_an_item_but_repeated_harm_withholds_it(store):
    served = store.record(experience(task=REFUND))
    brief = store.prepare(PrepareRequest(task=REPEAT))
    assert [item.id for item in brief.experiences] == [served.id]
    one = store.feedback(
        FeedbackRequest(experience_id=served.id, rating="misleading", brief_id=brief.brief_id)
    )
    assert one.counts.misleading == 1
    assert not one.withheld
    assert one.rank_factor < 1.0
    assert one.confidence_shift < 0
    assert [item.id for item in store.prepare(PrepareRequest(task=REPEAT)).experiences] == [
        served.id
    ]
    store.feedback(FeedbackRequest(experience_id=served.id, rating="harmful"))
    assert store.prepare(PrepareRequest(task=REPEAT)).experiences != []
    twice = store.feedback(FeedbackRequest(experience_id=served.id, rating="harmful"))
    assert twice.withheld
    assert store.prepare(PrepareRequest(task=REPEAT)).experiences == []
    [candidate] = store.explain(ExplainRequest(task=REPEAT)).candidates
    assert candidate.reason.startswith("withheld: rated harmful 2 times")
    assert candidate.feedback.harmful == 2


def test_helpful_ratings_raise_an_item_in_the_ranking(store):
    store.record(experience(task=REFUND))
    second = store.record(experience(task=REFUND))
    before = [c.id for c in store.explain(ExplainRequest(task=REPEAT)).candidates]
    assert before[0] == second.id  # equal scores: the newer first
    store.feedback(FeedbackRequest(experience_id="exp-1", rating="helpful"))
    after = store.explain(ExplainRequest(task=REPEAT)).candidates
    assert after[0].id == "exp-1"
    assert after[0].fused > after[1].fused


@pytest.mark.parametrize(
    ("request_data", "message"),
    [
        ({"experience_id": "exp-7", "rating": "helpful"}, "does not exist"),
        ({"experience_id": "skill-1", "rating": "helpful"}, "not a experience id"),
        ({"experience_id": "exp-1", "rating": "helpful", "brief_id": "brief-9"}, "does not exist"),
    ],
)
def test_feedback_on_unknown_items_is_refused(store, request_data, message):
    store.record(experience())
    with pytest.raises(UsageError, match=message):
        store.feedback(FeedbackRequest(**request_data))
    assert store.connection.execute("SELECT count(*) FROM feedback").fetchone()[0] == 0


def test_feedback_naming_a_brief_that_did_not_serve_the_item_is_refused(store):
    store.record(experience())
    empty = store.prepare(PrepareRequest(task="Rotate the staging TLS certificates"))
    with pytest.raises(UsageError, match="did not serve exp-1"):
        store.feedback(
            FeedbackRequest(experience_id="exp-1", rating="helpful", brief_id=empty.brief_id)
        )


# ------------------------------------------------------------------ lessons


def test_lesson_recall_finds_a_lesson_by_meaning_through_the_same_fusion(store):
    for lesson_id, requirements in [
        ("L-dates", "Parse timestamps with time zones and daylight saving transitions."),
        ("L-money", "Split a bill between people, rounding cents fairly."),
    ]:
        store.add_lesson(
            AddLessonRequest(
                lesson_id=lesson_id,
                specification_id=lesson_id,
                requirements=requirements,
                files=[],
                tests=[FileEntry(path="tests/test_x.py", content="def test_x(): ...\n")],
                validation={"passed": True},
            )
        )
    hits = store.search_lessons(
        LessonSearchRequest(text="divide a restaurant check among friends fairly", k=2)
    ).hits
    assert hits[0].lesson.id == "L-money"
    assert hits[0].score > hits[1].score


# ------------------------------------------------------------------ older stores


def test_a_store_written_by_the_previous_lorelab_opens_and_reindex_gives_it_vectors(tmp_path):
    # store_0010.db was written by lorelab before vectors (migrations up to 0010), then
    # snapshotted: three experiences (one failed) and a lesson.
    path = tmp_path / "memory.db"
    shutil.copyfile(DATA / "store_0010.db", path)
    with SqliteMemoryStore(path) as store:
        assert applied_migrations(store.connection) == [m.name for m in MIGRATIONS]
        assert store.missing_vectors() == 4
        explained = store.explain(ExplainRequest(task="alembic duplicate column invoices"))
        assert explained.mode == "lexical"
        assert [c.id for c in explained.candidates][:1] == ["exp-1"]
        seen: list[int] = []
        done = store.reindex(ReindexRequest(), progress=seen.append)
        assert (done.experiences, done.lessons, done.model) == (3, 1, MODEL_ID)
        assert sum(seen) == 4
        assert store.missing_vectors() == 0
        assert store.reindex(ReindexRequest()).experiences == 0
        after = store.explain(ExplainRequest(task="alembic duplicate column invoices"))
        assert after.mode == "hybrid"
        assert all(c.semantic is not None for c in after.candidates)
        assert store.show(ShowRequest(id="exp-1")).item.validity == "trusted"  # type: ignore[union-attr]
        ok = store.connection.execute("PRAGMA integrity_check").fetchone()[0]
        assert ok == "ok"


def test_a_reindex_reaches_a_cache_another_connection_already_holds(tmp_path):
    path = tmp_path / "memory.db"
    shutil.copyfile(DATA / "store_0010.db", path)
    with SqliteMemoryStore(path) as reader, SqliteMemoryStore(path) as writer:
        reader.record(experience(task="Migrate the invoices table to a new currency column"))
        assert reader.explain(ExplainRequest(task="alembic duplicate column")).mode == "hybrid"
        # exp-1 has no vector yet: ranked by keywords only.
        old = {c.id: c for c in reader.explain(ExplainRequest(task="alembic duplicate")).candidates}
        assert old["exp-1"].semantic is None
        writer.reindex(ReindexRequest())
        new = {c.id: c for c in reader.explain(ExplainRequest(task="alembic duplicate")).candidates}
        assert new["exp-1"].semantic is not None


# ------------------------------------------------------------------ the held-out set


def test_the_held_out_set_keeps_its_documented_split():
    data = json.loads(HELDOUT.read_text())
    counts = Counter((task["kind"], task["split"]) for task in data["tasks"])
    assert counts == {
        ("paraphrase", "dev"): 40,
        ("paraphrase", "test"): 40,
        ("hard-negative", "dev"): 13,
        ("hard-negative", "test"): 13,
        ("unrelated", "dev"): 12,
        ("unrelated", "test"): 12,
    }
    for task in data["tasks"]:
        number = int(task["id"].split("-")[1])
        assert task["split"] == ("dev" if number % 2 else "test"), task["id"]
    assert len(data["experiences"]) >= 150
    assert len({e["project"] for e in data["experiences"]}) >= 8
