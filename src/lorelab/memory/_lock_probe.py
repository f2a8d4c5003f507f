"""Whether a store holds an active evaluation lock, asked without loading the memory package.

A hook checks this before every event it handles (nothing is recorded under a lock), and a
hook that only journals a command needs nothing else from the store; opening the store through
``open_store`` would import every aggregate module to answer one query. The answer here is the
one ``evaluation_locks`` gives: the oldest lock not cleared.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["ProbeFailed", "active_lock"]


class ProbeFailed(Exception):
    """The store could not be read this way (the caller opens it the ordinary way)."""


def active_lock(store_file: Path) -> str | None:
    """The evaluation id of the oldest active lock in the store at ``store_file``, or None.

    The store is opened read-only and never migrated: a store older than evaluation locks has
    none. Any other failure is ``ProbeFailed``.
    """
    try:
        conn = sqlite3.connect(f"{store_file.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as exc:
        raise ProbeFailed(str(exc)) from None
    try:
        tables = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'evaluation_locks'"
        ).fetchone()
        if tables is None:
            return None
        row = conn.execute(
            "SELECT evaluation_id FROM evaluation_locks WHERE cleared_at IS NULL "
            "ORDER BY id LIMIT 1"
        ).fetchone()
    except sqlite3.Error as exc:
        raise ProbeFailed(str(exc)) from None
    finally:
        conn.close()
    return None if row is None else str(row[0])
