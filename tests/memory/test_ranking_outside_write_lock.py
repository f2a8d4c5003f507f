"""A recorded ``prepare`` ranks in a read transaction and takes the store's write lock only to
insert its brief: while one call ranks, another connection (another worker process of a
server) writes. The brief is composed from one snapshot and recorded as composed: a record
committed in between is in the next brief, not in this one.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lorelab.memory import PrepareRequest, RecordManyRequest, SqliteMemoryStore, _briefs
from tests.support.memory import experience

WAIT_S = 20.0
TASK = "test_refund_partial_amount fails after rounding"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    with SqliteMemoryStore(tmp_path / "memory.db", embedding_model="wordllama") as opened:
        opened.record_many(RecordManyRequest(experiences=[experience()]))
        opened.prepare(PrepareRequest(task=TASK))  # folds the term counts, loads the model
        yield opened


def _while_composing(monkeypatch: pytest.MonkeyPatch, action: Any) -> dict[str, Any]:
    """Run ``action`` (in another thread) inside the first composition of a brief."""
    original = _briefs._compose
    seen: dict[str, Any] = {"calls": 0, "done": None}

    def patched(*args: Any) -> Any:
        seen["calls"] += 1
        if seen["calls"] == 1:
            finished = threading.Event()

            def other() -> None:
                action()
                finished.set()

            threading.Thread(target=other, daemon=True).start()
            seen["done"] = finished.wait(WAIT_S)
        return original(*args)

    monkeypatch.setattr(_briefs, "_compose", patched)
    return seen


def test_another_connection_writes_while_a_prepare_ranks(store, monkeypatch):
    def write_elsewhere() -> None:
        other = sqlite3.connect(store.location, timeout=WAIT_S, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("COMMIT")
        finally:
            other.close()

    seen = _while_composing(monkeypatch, write_elsewhere)
    brief = store.prepare(PrepareRequest(task=TASK))
    assert seen["done"] is True  # the write lock was free while the brief was composed
    assert brief.brief_id is not None
    assert brief.experiences


def test_a_record_between_the_ranking_and_the_insert_waits_for_the_next_brief(store, monkeypatch):
    newer = experience(
        task="test_refund_partial_amount fails after rounding in the refund service",
        summary="Quantized refunds to cents before comparing.",
    )

    def record_elsewhere() -> None:
        with SqliteMemoryStore(store.location, embedding_model="wordllama") as other:
            other.record_many(RecordManyRequest(experiences=[newer]))

    seen = _while_composing(monkeypatch, record_elsewhere)
    brief = store.prepare(PrepareRequest(task=TASK))
    assert seen["done"] is True
    assert seen["calls"] == 1  # composed once, from the snapshot before the record
    assert "exp-2" not in {item.id for item in brief.experiences}
    row = store.connection.execute(
        "SELECT text, experience_ids FROM briefs ORDER BY id DESC LIMIT 1"
    ).fetchone()
    assert row[0] == brief.text  # the brief recorded is the one returned
    assert "exp-2" not in row[1]
    later = store.prepare(PrepareRequest(task=TASK))
    assert "exp-2" in {item.id for item in later.experiences}


def test_the_brief_recorded_is_the_one_returned(store):
    brief = store.prepare(PrepareRequest(task=TASK))
    number = int(str(brief.brief_id).rsplit("-", 1)[1])
    row = store.connection.execute(
        "SELECT text, tokens_estimate, empty FROM briefs WHERE id = ?", (number,)
    ).fetchone()
    assert row == (brief.text, brief.tokens_estimate, int(brief.empty))
