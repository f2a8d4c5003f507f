"""Evaluation locks: while one is active, ``record`` refuses its holdout tasks."""

from __future__ import annotations

import sqlite3

from lorelab.errors import UsageError
from lorelab.memory._db import Database, Row, dumps, loads, now, one, rows
from lorelab.memory._item_models import EvaluationLock
from lorelab.memory._redact import Redactor
from lorelab.memory._requests import LockClearRequest, LockRequest, LocksRequest, LocksResult
from lorelab.memory._text import task_key


def lock_view(row: Row) -> EvaluationLock:
    return EvaluationLock(
        evaluation_id=row["evaluation_id"],
        holdout_tasks=loads(row["holdout_tasks"]),
        active=row["cleared_at"] is None,
        created_at=row["created_at"],
        cleared_at=row["cleared_at"],
    )


def refuse_locked(conn: sqlite3.Connection, task: str, task_id: str | None) -> None:
    """Refuse (a UsageError) a task or task id that an active lock holds out."""
    # Holdout tasks are stored redacted, so they are compared redacted.
    red = Redactor()
    keys = [task_key(red(task))]
    if task_id is not None:
        keys.append(task_key(red(task_id)))
    marks = ",".join("?" * len(keys))
    row = conn.execute(
        "SELECT l.evaluation_id FROM evaluation_lock_tasks t "
        "JOIN evaluation_locks l ON l.id = t.lock_id "
        f"WHERE l.cleared_at IS NULL AND t.task_key IN ({marks}) ORDER BY l.id LIMIT 1",
        keys,
    ).fetchone()
    if row is not None:
        raise UsageError(
            f"refused: this task is a holdout task of active evaluation lock {row[0]!r}; "
            "nothing was recorded"
        )


def set_lock(db: Database, request: LockRequest) -> EvaluationLock:
    red = Redactor()
    evaluation_id = red(request.evaluation_id)
    if not evaluation_id.strip():
        raise UsageError("evaluation lock: the evaluation id must not be blank")
    tasks = [red(task) for task in request.holdout_tasks]
    if any(not task.strip() for task in tasks):
        raise UsageError("evaluation lock: a holdout task must not be blank")

    def write(conn: sqlite3.Connection) -> int:
        active = conn.execute(
            "SELECT 1 FROM evaluation_locks WHERE evaluation_id = ? AND cleared_at IS NULL",
            (evaluation_id,),
        ).fetchone()
        if active is not None:
            raise UsageError(f"evaluation lock {evaluation_id!r} is already active; clear it first")
        cursor = conn.execute(
            "INSERT INTO evaluation_locks (evaluation_id, created_at, holdout_tasks) "
            "VALUES (?, ?, ?)",
            (evaluation_id, now(), dumps(tasks)),
        )
        lock_id = int(cursor.lastrowid or 0)
        conn.executemany(
            "INSERT INTO evaluation_lock_tasks (lock_id, task_key) VALUES (?, ?)",
            [(lock_id, key) for key in dict.fromkeys(task_key(task) for task in tasks)],
        )
        return lock_id

    lock_id = db.write(write)
    return db.read(lambda conn: lock_view(one(conn, "evaluation_locks", lock_id)))


def clear_lock(db: Database, request: LockClearRequest) -> EvaluationLock:
    evaluation_id = Redactor()(request.evaluation_id)

    def write(conn: sqlite3.Connection) -> int:
        row = conn.execute(
            "SELECT id FROM evaluation_locks WHERE evaluation_id = ? AND cleared_at IS NULL",
            (evaluation_id,),
        ).fetchone()
        if row is None:
            raise UsageError(f"no active evaluation lock {evaluation_id!r} to clear")
        conn.execute("UPDATE evaluation_locks SET cleared_at = ? WHERE id = ?", (now(), row[0]))
        return int(row[0])

    lock_id = db.write(write)
    return db.read(lambda conn: lock_view(one(conn, "evaluation_locks", lock_id)))


def list_locks(db: Database, request: LocksRequest) -> LocksResult:
    return db.read(
        lambda conn: LocksResult(
            locks=[
                lock_view(row) for row in rows(conn, "SELECT * FROM evaluation_locks ORDER BY id")
            ]
        )
    )
