"""Concurrent writers lose nothing; a writer killed mid-write leaves a consistent store."""

import os
import select
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

from lorelab.memory import (
    ListRequest,
    RecordManyRequest,
    ShowRequest,
    SqliteMemoryStore,
)

WRITER = textwrap.dedent(
    """
    import sys
    from lorelab.memory import RecordManyRequest, RecordRequest, SqliteMemoryStore, Verification

    path, tag, count, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    store = SqliteMemoryStore(path)
    print("ready", flush=True)
    sys.stdin.readline()  # start together
    done = 0
    while done < count:
        size = min(batch, count - done)
        requests = [
            RecordRequest(
                task=f"{tag} task {done + i} fix the flaky checkout test",
                summary=f"{tag} summary {done + i}",
                outcome="passed",
                verification=Verification(command="pytest -q", exit_code=0),
            )
            for i in range(size)
        ]
        if size == 1:
            store.record(requests[0])
        else:
            store.record_many(RecordManyRequest(experiences=requests))
        done += size
        print(done, flush=True)
    store.close()
    """
)


def _spawn(script: Path, db: Path, tag: str, count: int, batch: int) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, str(script), str(db), tag, str(count), str(batch)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert _readline(process, deadline=time.monotonic() + 60) == "ready"
    return process


def _readline(process: subprocess.Popen[str], deadline: float) -> str:
    assert process.stdout is not None
    remaining = deadline - time.monotonic()
    ready, _, _ = select.select([process.stdout], [], [], max(remaining, 0))
    assert ready, "writer did not answer in time"
    return process.stdout.readline().strip()


def _close(process: subprocess.Popen[str]) -> None:
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            stream.close()


def _check_consistent(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # Raises if the FTS index does not match its content table.
        conn.execute("INSERT INTO experiences_fts(experiences_fts) VALUES ('integrity-check')")
        rows = conn.execute("SELECT count(*) FROM experiences").fetchone()[0]
        indexed = conn.execute("SELECT count(*) FROM experiences_fts_docsize").fetchone()[0]
        assert rows == indexed
        # Term counts include exactly the experiences up to their watermark.
        counted = dict(conn.execute("SELECT term, docs FROM experience_term_counts"))
        (through,) = conn.execute("SELECT value FROM memory_state").fetchone()
        assert through <= rows
        recounted: Counter[str] = Counter()
        for (terms,) in conn.execute("SELECT terms FROM experiences WHERE id <= ?", (through,)):
            recounted.update(set(terms.split()))
        assert counted == dict(recounted)
        return int(rows)
    finally:
        conn.close()


def test_two_processes_recording_a_thousand_experiences_each_lose_nothing(tmp_path):
    db = tmp_path / "memory.db"
    SqliteMemoryStore(db).close()
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    writers = [_spawn(script, db, tag, 1000, 1) for tag in ("alpha", "beta")]
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    for writer in writers:
        assert writer.stdout is not None
        writer.stdout.read()
        assert writer.wait(timeout=120) == 0
        _close(writer)
    assert _check_consistent(db) == 2000
    conn = sqlite3.connect(db)
    for tag in ("alpha", "beta"):
        tasks = {
            row[0]
            for row in conn.execute("SELECT task FROM experiences WHERE task LIKE ?", (f"{tag} %",))
        }
        assert tasks == {f"{tag} task {n} fix the flaky checkout test" for n in range(1000)}
    ids = [row[0] for row in conn.execute("SELECT id FROM experiences ORDER BY id")]
    assert ids == list(range(1, 2001))
    conn.close()


def test_a_writer_killed_mid_write_leaves_a_consistent_store(tmp_path):
    db = tmp_path / "memory.db"
    SqliteMemoryStore(db).close()
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    writer = _spawn(script, db, "victim", 1_000_000, 50)
    assert writer.stdin is not None
    writer.stdin.write("go\n")
    writer.stdin.flush()
    deadline = time.monotonic() + 60
    committed = 0
    while committed < 500:
        committed = int(_readline(writer, deadline))
    os.kill(writer.pid, signal.SIGKILL)
    assert writer.wait(timeout=30) == -signal.SIGKILL
    _close(writer)

    rows = _check_consistent(db)
    assert rows >= committed
    assert rows % 50 == 0  # batches are atomic: none half-written
    with SqliteMemoryStore(db) as store:
        assert store.list_items(ListRequest(kind="experience")).total == rows
        store.record_many(RecordManyRequest(experiences=[]))
        assert store.show(ShowRequest(id=f"exp-{rows}")).item.task.startswith("victim task")
