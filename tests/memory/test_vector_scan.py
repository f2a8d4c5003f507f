"""The two semantic scans of a WordLlama store (the model with a no-numpy path): a small store
scanned in Python (float64, no numpy) and the cached numpy scan of a large one give the same
cosines, rankings and briefs on the held-out set."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from lorelab.memory import DEFAULT_POLICY, ExplainRequest, SqliteMemoryStore, _search, _vectors
from lorelab.memory._embedders import WORDLLAMA
from lorelab.memory._embedding import embed_query
from tests.support.memory import experience

HELDOUT = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "retrieval_heldout.json"


@pytest.fixture(scope="module")
def heldout() -> dict:
    return json.loads(HELDOUT.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def heldout_store(tmp_path_factory, heldout):
    """The held-out set's 151 experiences, every tenth one unverified (never served)."""
    path = tmp_path_factory.mktemp("scan") / "memory.db"
    with SqliteMemoryStore(path, embedding_model="wordllama") as store:
        for number, item in enumerate(heldout["experiences"]):
            store.record(
                experience(
                    task=item["task"],
                    summary=item["summary"][:400],
                    project=item["project"],
                    passed=number % 10 != 3,
                )
            )
        yield store


def _queries(heldout: dict) -> list[tuple[str, str | None]]:
    """Every fourth held-out task in its project (some name a project with no stored work),
    and one with no project."""
    tasks = heldout["tasks"][::4]
    return [(task["text"], task.get("project")) for task in tasks] + [(tasks[0]["text"], None)]


def test_the_python_scan_and_the_cached_scan_give_the_same_cosines(heldout_store, heldout):
    conn = heldout_store.connection
    cache = _vectors.cache_for(conn, WORDLLAMA)
    compared = 0
    for text, project in [*_queries(heldout), ("", None)]:  # "": no token, a zero vector
        query = embed_query(text)
        small = _vectors.small_store_scan(conn, WORDLLAMA, query, project, DEFAULT_POLICY.shortlist)
        ids, scores = cache.similarities(np.asarray(query), project, DEFAULT_POLICY.shortlist)
        cached = {int(i): float(s) for i, s in zip(ids, scores, strict=True)}
        assert small is not None
        assert sorted(small) == sorted(cached)
        assert all(abs(small[i] - cached[i]) <= 1e-12 for i in small)
        compared += len(small)
    assert compared > 500


def test_the_scans_keep_only_verified_work_of_the_project_or_of_no_project(heldout_store, heldout):
    conn = heldout_store.connection
    verified = {
        int(rowid): project
        for rowid, project in conn.execute(
            "SELECT id, project FROM experiences WHERE trust = 'verified'"
        )
    }
    assert 0 < len(verified) < len(heldout["experiences"])
    query = embed_query(heldout["tasks"][0]["text"])
    everything = _vectors.small_store_scan(conn, WORDLLAMA, query, None, DEFAULT_POLICY.shortlist)
    assert everything is not None
    assert set(everything) == set(verified)
    one = _vectors.small_store_scan(
        conn, WORDLLAMA, query, "shop-frontend", DEFAULT_POLICY.shortlist
    )
    assert one is not None
    assert set(one) == {i for i, p in verified.items() if p in ("shop-frontend", None)}


def test_a_store_above_the_shortlist_is_left_to_the_cached_scan(heldout_store):
    query = embed_query("cart badge")
    assert _vectors.small_store_scan(heldout_store.connection, WORDLLAMA, query, None, 150) is None
    assert (
        _vectors.small_store_scan(heldout_store.connection, WORDLLAMA, query, None, 151) is not None
    )


def test_a_brief_is_the_same_through_either_scan(heldout_store, heldout, monkeypatch):
    requests = [ExplainRequest(task=text, project=project) for text, project in _queries(heldout)]
    scans: list[str] = []
    real_scan = _vectors.small_store_scan

    def counted(*args):
        scans.append("python")
        return real_scan(*args)

    monkeypatch.setattr(_search, "small_store_scan", counted)
    monkeypatch.setattr(_search, "python_scan", lambda: True)
    small = [heldout_store.explain(request) for request in requests]
    assert len(scans) == len(requests)  # every brief really went through the Python scan
    monkeypatch.setattr(_search, "python_scan", lambda: False)
    cached = [heldout_store.explain(request) for request in requests]
    assert len(scans) == len(requests)
    served = 0
    for one, other in zip(small, cached, strict=True):
        assert one.empty == other.empty
        assert one.reason == other.reason
        assert [c.id for c in one.candidates] == [c.id for c in other.candidates]
        assert [c.served for c in one.candidates] == [c.served for c in other.candidates]
        for a, b in zip(one.candidates, other.candidates, strict=True):
            assert a.semantic == pytest.approx(b.semantic, abs=1e-9)
            assert a.confidence == pytest.approx(b.confidence, abs=1e-9)
        served += sum(c.served for c in one.candidates)
    assert served > 0  # some brief served work, so the comparison covered the serving rule


def test_the_python_scan_is_used_only_where_numpy_is_not_loaded(monkeypatch):
    assert _search.python_scan() is False  # this process imported numpy
    monkeypatch.delitem(sys.modules, "numpy")
    assert _search.python_scan() is True


def test_the_python_scan_follows_new_records_and_gives_way_above_the_shortlist(tmp_path):
    with SqliteMemoryStore(tmp_path / "memory.db", embedding_model="wordllama") as store:
        conn = store.connection
        store.record(experience(task="Cart badge shows a stale count", project=None))
        query = embed_query("cart badge count")
        first = _vectors.small_store_scan(conn, WORDLLAMA, query, None, 2)
        assert first is not None
        assert list(first) == [1]
        store.record(experience(task="Flaky websocket reconnect test", project=None))
        second = _vectors.small_store_scan(conn, WORDLLAMA, query, None, 2)
        assert second is not None
        assert sorted(second) == [1, 2]
        store.record(experience(task="Rotate the staging certificates", project=None))
        assert _vectors.small_store_scan(conn, WORDLLAMA, query, None, 2) is None


def test_a_recorded_experience_is_found_again_by_its_own_task(tmp_path):
    task = "Cart badge keeps showing the old item count after removing an item"
    with SqliteMemoryStore(tmp_path / "memory.db", embedding_model="wordllama") as store:
        store.record(experience(task=task, project=None))
        scores = _vectors.small_store_scan(
            store.connection, WORDLLAMA, embed_query(task), None, DEFAULT_POLICY.shortlist
        )
    assert scores is not None
    assert list(scores) == [1]
    # the stored vector is fp16, the query float64: the cosine of a text with itself is ~1
    assert scores[1] == pytest.approx(1.0, abs=1e-3)
