"""Any item by kind or by id: what ``list`` and ``show`` read."""

from __future__ import annotations

import sqlite3
from typing import Final

from lorelab.errors import UsageError
from lorelab.memory._briefs import brief_view
from lorelab.memory._db import ID, Database, Row, maybe_one, rows
from lorelab.memory._dreams import candidate_view
from lorelab.memory._experiences import experience_view
from lorelab.memory._item_models import (
    Item,
    ListRequest,
    ListResult,
    ShowRequest,
    ShowResult,
)
from lorelab.memory._lessons import lesson_view
from lorelab.memory._locks import lock_view
from lorelab.memory._models import ItemKind
from lorelab.memory._plans import plan_view
from lorelab.memory._skills import skill_view

# Each kind's table and the column that orders it.
_TABLES: Final[dict[str, tuple[str, str]]] = {
    "experience": ("experiences", "id"),
    "skill": ("skills", "id"),
    "plan": ("plans", "id"),
    "brief": ("briefs", "id"),
    "candidate": ("candidates", "id"),
    "lock": ("evaluation_locks", "id"),
    "lesson": ("lessons", "seq"),
}
_KIND_OF_PREFIX: Final[dict[str, ItemKind]] = {
    "exp": "experience",
    "skill": "skill",
    "plan": "plan",
    "brief": "brief",
    "cand": "candidate",
}


def view(conn: sqlite3.Connection, kind: ItemKind, row: Row) -> Item:
    """The item model of ``row`` of ``kind``."""
    if kind == "experience":
        return experience_view(row)
    if kind == "skill":
        return skill_view(row)
    if kind == "plan":
        return plan_view(row)
    if kind == "brief":
        return brief_view(row)
    if kind == "candidate":
        return candidate_view(conn, int(row["id"]))
    if kind == "lock":
        return lock_view(row)
    return lesson_view(row)


def list_items(db: Database, request: ListRequest) -> ListResult:
    kind, limit = request.kind, request.limit
    if kind not in _TABLES:
        raise UsageError(f"unknown kind {kind!r}; one of {', '.join(_TABLES)}")
    if limit < 1:
        raise UsageError("limit must be at least 1")
    table, key = _TABLES[kind]

    def read(conn: sqlite3.Connection) -> ListResult:
        total = int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        found = rows(conn, f"SELECT * FROM {table} ORDER BY {key} DESC LIMIT ?", (limit,))
        return ListResult(kind=kind, total=total, items=[view(conn, kind, row) for row in found])

    return db.read(read)


def show(db: Database, request: ShowRequest) -> ShowResult:
    item_id = request.id
    match = ID.fullmatch(item_id.strip())
    if match is None or match.group(1) not in _KIND_OF_PREFIX:
        raise UsageError(
            f"{item_id!r} is not an item id (exp-N, skill-N, plan-N, brief-N or cand-N)"
        )
    kind = _KIND_OF_PREFIX[match.group(1)]
    table, number = _TABLES[kind][0], int(match.group(2))

    def read(conn: sqlite3.Connection) -> ShowResult:
        row = maybe_one(conn, table, number)
        if row is None:
            raise UsageError(f"{item_id} does not exist in this store")
        return ShowResult(item=view(conn, kind, row))

    return db.read(read)
