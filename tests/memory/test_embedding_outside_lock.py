"""The embedding model runs outside the store's lock: while one call's task is being embedded,
another call on the same store (another thread of a server) is served.

Each test blocks the model inside one call until a second thread has finished a store call of
its own. Were the model run inside the store's transaction, the second call would wait for the
lock and the first would give up waiting (``served`` false), then finish alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lorelab.memory import (
    ListRequest,
    PrepareRequest,
    RecordManyRequest,
    SqliteMemoryStore,
    _embedders,
)
from tests.support.memory import experience

WAIT_S = 20.0


@pytest.fixture(params=["minilm", "wordllama"])
def model(request: pytest.FixtureRequest) -> _embedders.Embedder:
    return _embedders.named(request.param)


@pytest.fixture
def store(model: _embedders.Embedder, tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    with SqliteMemoryStore(tmp_path / "memory.db", embedding_model=model.name) as opened:
        opened.record_many(RecordManyRequest(experiences=[experience()]))
        yield opened


def _while_embedding(
    monkeypatch: pytest.MonkeyPatch,
    store: SqliteMemoryStore,
    model: _embedders.Embedder,
    method: str,
) -> dict[str, Any]:
    """Patch ``method`` of the store's model so that its first call waits until another thread
    has listed the store; what happened is in the returned dict."""
    embedder = type(model)
    original: Callable[..., Any] = getattr(embedder, method)
    seen: dict[str, Any] = {"calls": 0, "served": None}

    def other_call() -> None:
        store.list_items(ListRequest(kind="experience"))
        listed.set()

    listed = threading.Event()

    def patched(self: _embedders.Embedder, *args: Any) -> Any:
        seen["calls"] += 1
        if seen["calls"] == 1:
            thread = threading.Thread(target=other_call, daemon=True)
            thread.start()
            seen["served"] = listed.wait(WAIT_S)
        return original(self, *args)

    monkeypatch.setattr(embedder, method, patched)
    return seen


def test_a_prepare_embeds_its_task_while_another_call_is_served(store, model, monkeypatch):
    seen = _while_embedding(monkeypatch, store, model, "embed_query")
    brief = store.prepare(PrepareRequest(task="test_refund_partial_amount fails after rounding"))
    assert seen["calls"] == 1  # embedded once: the ranking used the early vector
    assert seen["served"] is True
    assert brief.experiences  # and the vector was used: the stored fix is served


def test_a_record_embeds_its_tasks_while_another_call_is_served(store, model, monkeypatch):
    seen = _while_embedding(monkeypatch, store, model, "stored_blobs")
    store.record_many(
        RecordManyRequest(experiences=[experience(task="Export job retries twice on timeout")])
    )
    assert seen["calls"] == 1
    assert seen["served"] is True
    rows = store.connection.execute(
        "SELECT count(*) FROM experience_vectors WHERE model = ?", (model.model_id,)
    ).fetchone()[0]
    assert rows == 2
