"""The read-only evaluation-lock probe hooks use: the same answer as ``evaluation_locks``."""

import sqlite3

import pytest

from lorelab.memory import LockClearRequest, LockRequest, LocksRequest, SqliteMemoryStore
from lorelab.memory._lock_probe import ProbeFailed, active_lock


def _store_answer(store: SqliteMemoryStore) -> str | None:
    locks = store.evaluation_locks(LocksRequest()).locks
    active = [lock.evaluation_id for lock in locks if lock.active]
    return active[0] if active else None


def test_a_store_without_locks_has_no_active_lock(tmp_path):
    path = tmp_path / "memory.db"
    with SqliteMemoryStore(path) as store:
        assert _store_answer(store) is None
    assert active_lock(path) is None


def test_the_oldest_active_lock_is_found_and_a_cleared_one_is_not(tmp_path):
    path = tmp_path / "memory.db"
    with SqliteMemoryStore(path) as store:
        store.set_evaluation_lock(LockRequest(evaluation_id="eval-a", holdout_tasks=["t1"]))
        store.set_evaluation_lock(LockRequest(evaluation_id="eval-b", holdout_tasks=["t2"]))
        assert active_lock(path) == _store_answer(store) == "eval-a"
        store.clear_evaluation_lock(LockClearRequest(evaluation_id="eval-a"))
        assert active_lock(path) == _store_answer(store) == "eval-b"
        store.clear_evaluation_lock(LockClearRequest(evaluation_id="eval-b"))
        assert active_lock(path) is None


def test_the_probe_writes_nothing_and_never_migrates(tmp_path):
    path = tmp_path / "memory.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE unrelated (x)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    assert active_lock(path) is None  # a store older than locks has none
    assert path.read_bytes() == before


@pytest.mark.parametrize("content", [b"not a database at all" * 100, b""])
def test_a_file_that_is_not_a_store_is_a_probe_failure_or_no_lock(tmp_path, content):
    path = tmp_path / "memory.db"
    path.write_bytes(content)
    if content:
        with pytest.raises(ProbeFailed):
            active_lock(path)
    else:
        assert active_lock(path) is None  # an empty file is an empty database


def test_a_missing_store_is_a_probe_failure_not_a_new_file(tmp_path):
    path = tmp_path / "memory.db"
    with pytest.raises(ProbeFailed):
        active_lock(path)
    assert not path.exists()
