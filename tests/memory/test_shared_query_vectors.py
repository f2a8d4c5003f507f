"""Query vectors shared by the processes serving one store (``lorelab.memory._shared_vectors``).

A second process briefing a task the first one embedded reads the vector instead of running
the model, and its brief is the one the model's own vector gives. The file is only a cache:
one that is not the user's private file, is not SQLite, or is busy is passed by, and the task
is embedded as without it.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lorelab import _state
from lorelab.memory import PrepareRequest, RecordManyRequest, SqliteMemoryStore, _embedders
from lorelab.memory import _shared_vectors as shared_vectors
from tests.support.memory import experience

TASK = "Fix the flaky export job after the retry change"


@pytest.fixture(params=["minilm", "wordllama"])
def model(request: pytest.FixtureRequest) -> _embedders.Embedder:
    return _embedders.named(request.param)


@pytest.fixture
def store_file(model: _embedders.Embedder, tmp_path: Path) -> Path:
    path = tmp_path / "home" / "memory.db"
    path.parent.mkdir(mode=0o700)
    with SqliteMemoryStore(path, embedding_model=model.name) as store:
        store.record_many(
            RecordManyRequest(
                experiences=[
                    experience(task="Fix the flaky export job: make the retry idempotent"),
                    experience(task="Repair the date parser for ISO weeks"),
                ]
            )
        )
    return path


@pytest.fixture
def vectors_file(tmp_path: Path) -> Path:
    directory = tmp_path / "state"
    directory.mkdir(mode=0o700)
    return directory / "queries.db"


@pytest.fixture
def model_refused(model: _embedders.Embedder, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count query embeddings; the counter is what each test asserts on."""
    calls = {"embedded": 0}
    original = type(model).embed_query

    def counted(self: _embedders.Embedder, text: str) -> Any:
        calls["embedded"] += 1
        return original(self, text)

    monkeypatch.setattr(type(model), "embed_query", counted)
    return calls


def _brief_fields(store: SqliteMemoryStore, task: str = TASK) -> dict[str, Any]:
    brief = store.prepare(PrepareRequest(task=task)).model_dump()
    brief.pop("brief_id")
    return brief


def _prepare_in_another_process(store_file: Path, vectors_file: Path, task: str) -> None:
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from lorelab.memory import PrepareRequest, SqliteMemoryStore
        with SqliteMemoryStore(Path(sys.argv[1]), create=False) as store:
            store.share_query_vectors(Path(sys.argv[2]))
            store.prepare(PrepareRequest(task=sys.argv[3]))
        """
    )
    subprocess.run(
        [sys.executable, "-c", script, str(store_file), str(vectors_file), task],
        check=True,
        timeout=300,
    )


@pytest.fixture
def shared_store(store_file: Path, vectors_file: Path) -> Iterator[SqliteMemoryStore]:
    with SqliteMemoryStore(store_file, create=False) as store:
        store.share_query_vectors(vectors_file)
        yield store


def test_a_second_process_reads_the_vector_the_first_embedded(
    store_file: Path,
    vectors_file: Path,
    shared_store: SqliteMemoryStore,
    model_refused: dict[str, int],
) -> None:
    _prepare_in_another_process(store_file, vectors_file, TASK)
    served = _brief_fields(shared_store)
    assert model_refused["embedded"] == 0
    with SqliteMemoryStore(store_file, create=False) as alone:
        assert _brief_fields(alone) == served
    assert model_refused["embedded"] == 1


def test_the_kept_vector_is_exactly_the_models(
    model: _embedders.Embedder, vectors_file: Path
) -> None:
    computed = tuple(model.embed_query(TASK))
    cache = shared_vectors.SharedQueryVectors(vectors_file)
    cache.put(model.model_id, TASK, computed)
    assert cache.get(model.model_id, model.dimensions, TASK) == computed
    assert cache.get(model.model_id, model.dimensions, TASK + " ") is None
    assert cache.get("another/model", model.dimensions, TASK) is None
    assert cache.get(model.model_id, model.dimensions + 1, TASK) is None
    cache.close()


def test_a_new_task_is_embedded_once_and_kept(
    shared_store: SqliteMemoryStore, vectors_file: Path, model_refused: dict[str, int]
) -> None:
    _brief_fields(shared_store, "Investigate the slow login page")
    assert model_refused["embedded"] == 1
    rows = sqlite3.connect(vectors_file).execute("SELECT count(*) FROM query_vectors").fetchone()
    assert rows == (1,)
    assert os.stat(vectors_file).st_mode & 0o777 == 0o600


@pytest.mark.parametrize("kind", ["readable by others", "symlink", "not sqlite"])
def test_a_file_that_is_not_a_private_cache_is_passed_by(
    kind: str,
    tmp_path: Path,
    store_file: Path,
    vectors_file: Path,
    model_refused: dict[str, int],
    caplog: pytest.LogCaptureFixture,
) -> None:
    if kind == "readable by others":
        _prepare_in_another_process(store_file, vectors_file, TASK)
        vectors_file.chmod(0o644)
    elif kind == "symlink":
        elsewhere = tmp_path / "elsewhere.db"
        _prepare_in_another_process(store_file, elsewhere, TASK)
        vectors_file.symlink_to(elsewhere)
    else:
        vectors_file.write_bytes(b"not a database, " * 512)
        vectors_file.chmod(0o600)
    with SqliteMemoryStore(store_file, create=False) as store:
        store.share_query_vectors(vectors_file)
        served = _brief_fields(store)
        assert model_refused["embedded"] == 1  # embedded here: nothing was read from the file
        assert "not used" in caplog.text
    with SqliteMemoryStore(store_file, create=False) as alone:
        assert _brief_fields(alone) == served


def test_a_busy_file_is_skipped_not_waited_for(
    shared_store: SqliteMemoryStore, vectors_file: Path, model_refused: dict[str, int]
) -> None:
    _brief_fields(shared_store, "warm the file")
    writer = sqlite3.connect(vectors_file, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process holds the file's write lock
    try:
        brief = _brief_fields(shared_store)
        assert model_refused["embedded"] == 2
        assert brief["task"] == TASK
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    rows = sqlite3.connect(vectors_file).execute("SELECT count(*) FROM query_vectors").fetchone()
    assert rows == (1,)  # the busy write was skipped


def test_only_the_newest_vectors_are_kept(
    model: _embedders.Embedder, vectors_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared_vectors, "KEPT", 10)
    monkeypatch.setattr(shared_vectors, "PRUNE_EVERY", 5)
    cache = shared_vectors.SharedQueryVectors(vectors_file)
    values = tuple(float(n) for n in range(model.dimensions))
    for number in range(40):
        cache.put(model.model_id, f"task {number}", values)
    cache.close()
    kept = sqlite3.connect(vectors_file).execute("SELECT count(*) FROM query_vectors").fetchone()
    assert kept[0] <= 10 + 5
    reopened = shared_vectors.SharedQueryVectors(vectors_file)
    assert reopened.get(model.model_id, model.dimensions, "task 39") == values
    assert reopened.get(model.model_id, model.dimensions, "task 0") is None
    reopened.close()


def test_the_server_keeps_them_in_the_private_state_directory(store_file: Path) -> None:
    from lorelab.serve._workers import share_query_vectors

    with SqliteMemoryStore(store_file, create=False) as store:
        share_query_vectors(store)
        store.prepare(PrepareRequest(task=TASK))
        where = _state.query_vectors_file(store_file)
        assert where.parent == _state.state_dir() / _state.QUERY_VECTORS
        assert os.stat(where.parent).st_mode & 0o777 == 0o700
        assert os.stat(where).st_mode & 0o777 == 0o600
        count = sqlite3.connect(where).execute("SELECT count(*) FROM query_vectors").fetchone()
        assert count == (1,)


def test_a_state_directory_others_can_enter_is_not_used(
    store_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from lorelab.serve._workers import share_query_vectors

    directory = _state.state_dir() / _state.QUERY_VECTORS
    directory.mkdir(parents=True, mode=0o700)
    directory.chmod(0o755)
    with SqliteMemoryStore(store_file, create=False) as store:
        share_query_vectors(store)
        assert "not shared" in caplog.text
        store.prepare(PrepareRequest(task=TASK))
    assert list(directory.iterdir()) == []


def test_removing_deletes_the_file_and_stops_sharing(
    shared_store: SqliteMemoryStore, vectors_file: Path, model_refused: dict[str, int]
) -> None:
    _brief_fields(shared_store)
    assert vectors_file.exists()
    shared_store.remove_shared_query_vectors()
    assert not [p for p in vectors_file.parent.iterdir() if p.name.startswith(vectors_file.name)]
    _brief_fields(shared_store, "Investigate the slow login page")
    assert model_refused["embedded"] == 2
    assert not vectors_file.exists()  # not made again


def test_a_state_directory_that_cannot_be_made_is_not_used(
    store_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from lorelab.serve._workers import share_query_vectors

    blocker = tmp_path / "a-file"
    blocker.write_text("a file where the state directory's parent should be")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))  # mkdir fails: not a directory
    with SqliteMemoryStore(store_file, create=False) as store:
        share_query_vectors(store)
        assert "not shared" in caplog.text
        assert store.prepare(PrepareRequest(task=TASK)).task == TASK
