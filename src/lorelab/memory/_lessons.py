"""Lessons: validated historical test suites that TestLore recalls by the hybrid ranking."""

from __future__ import annotations

import re
import sqlite3
from typing import Any, Final

from lorelab.errors import SchemaError, UsageError
from lorelab.memory._db import Database, Row, dumps, loads, now, rows
from lorelab.memory._embedders import of_store
from lorelab.memory._hybrid import fuse, ranks
from lorelab.memory._item_models import Lesson
from lorelab.memory._redact import Redactor
from lorelab.memory._relevance import DEFAULT_POLICY
from lorelab.memory._requests import (
    AddLessonRequest,
    AddLessonResult,
    LessonHit,
    LessonRequest,
    LessonSearchRequest,
    LessonSearchResult,
    LessonsRequest,
    LessonsResult,
)
from lorelab.memory._text import fts_query, term_string
from lorelab.memory._vectors import insert_lesson_vector

_PY_TEST: Final = re.compile(r"^\s*(?:async\s+)?def\s+(test\w*)\s*\(", re.MULTILINE)
LEXICAL_POOL: Final = 200
_JS_TEST: Final = re.compile(r"\b(?:test|it)\s*\(\s*([\"'`])(.+?)\1")


def lesson_view(row: Row) -> Lesson:
    return Lesson(
        id=row["id"],
        specification_id=row["specification_id"],
        requirements=row["requirements"],
        files=loads(row["files"]),
        tests=loads(row["tests"]),
        validation=loads(row["validation"]),
        created_at=row["created_at"],
    )


def _redact_json(red: Redactor, value: Any) -> Any:
    """``value`` with every string in it redacted (keys too)."""
    if isinstance(value, str):
        return red(value)
    if isinstance(value, dict):
        return {red(str(key)): _redact_json(red, item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_json(red, item) for item in value]
    return value


def add_lesson(db: Database, request: AddLessonRequest) -> AddLessonResult:
    red = Redactor()
    lesson_id = red(request.lesson_id)
    if not lesson_id.strip() or len(lesson_id) > 400:
        raise UsageError("lesson id must be a non-blank string of at most 400 characters")
    try:
        validation_json = dumps(_redact_json(red, request.validation))
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"lesson {lesson_id}: validation is not JSON: {exc}") from None
    requirements = red(request.requirements)
    files = [{"path": red(f.path), "content": red(f.content)} for f in request.files]
    tests = [{"path": red(f.path), "content": red(f.content)} for f in request.tests]
    specification_id = red.optional(request.specification_id)
    names: list[str] = []
    for test in tests:
        names += _PY_TEST.findall(test["content"])
        names += [title for _, title in _JS_TEST.findall(test["content"])]

    embedder = db.read(of_store)
    vector = embedder.stored_blobs([requirements])[0]

    def write(conn: sqlite3.Connection) -> AddLessonResult:
        model = of_store(conn)  # a reindex may have switched the model meanwhile
        blob = vector if model is embedder else model.stored_blobs([requirements])[0]
        if conn.execute("SELECT 1 FROM lessons WHERE id = ?", (lesson_id,)).fetchone():
            raise UsageError(f"lesson {lesson_id!r} already exists; lessons are never replaced")
        conn.execute(
            "INSERT INTO lessons (id, created_at, specification_id, requirements, files, "
            "tests, validation, test_names, terms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                lesson_id,
                now(),
                specification_id,
                requirements,
                dumps(files),
                dumps(tests),
                validation_json,
                dumps(names),
                term_string([requirements, *names]),
            ),
        )
        seq = conn.execute("SELECT seq FROM lessons WHERE id = ?", (lesson_id,)).fetchone()[0]
        insert_lesson_vector(conn, model, int(seq), blob)
        return AddLessonResult(id=lesson_id)

    return db.write(write)


def _lesson_semantic(conn: sqlite3.Connection, text: str) -> dict[int, float]:
    embedder = of_store(conn)
    stored = conn.execute(
        "SELECT seq, vector FROM lesson_vectors WHERE model = ?", (embedder.model_id,)
    ).fetchall()
    if not stored:
        return {}
    matrix = embedder.from_blobs([bytes(blob) for _, blob in stored])
    scores = matrix @ embedder.embed([text])[0]
    return {int(seq): float(value) for (seq, _), value in zip(stored, scores, strict=True)}


def search_lessons(db: Database, request: LessonSearchRequest) -> LessonSearchResult:
    """The ``k`` best lessons: BM25 and cosine rankings fused as briefs fuse them (RRF)."""
    if request.k < 1:
        raise UsageError("k must be at least 1")
    query = list(dict.fromkeys(term_string([request.text]).split()))
    if not query:  # only stopwords: nothing to go on
        return LessonSearchResult(hits=[])

    def read(conn: sqlite3.Connection) -> LessonSearchResult:
        lexical: dict[int, float] = {}
        if query:
            for seq, r in conn.execute(
                "SELECT rowid, bm25(lessons_fts) AS r FROM lessons_fts "
                "WHERE lessons_fts MATCH ? ORDER BY r, rowid LIMIT ?",
                (fts_query(query), max(LEXICAL_POOL, request.k)),
            ):
                lexical[int(seq)] = -float(r)
        semantic = _lesson_semantic(conn, request.text)
        fused = fuse(ranks(lexical), ranks(semantic), DEFAULT_POLICY.rrf_k)
        best = sorted(fused, key=lambda seq: (-fused[seq], seq))[: request.k]
        hits: list[LessonHit] = []
        for seq in best:
            row = rows(conn, "SELECT * FROM lessons WHERE seq = ?", (seq,))[0]
            hits.append(LessonHit(lesson=lesson_view(row), score=round(fused[seq], 8)))
        return LessonSearchResult(hits=hits)

    return db.read(read)


def list_lessons(db: Database, request: LessonsRequest) -> LessonsResult:
    return db.read(
        lambda conn: LessonsResult(
            lessons=[lesson_view(row) for row in rows(conn, "SELECT * FROM lessons ORDER BY seq")]
        )
    )


def get_lesson(db: Database, request: LessonRequest) -> Lesson:
    lesson_id = Redactor()(request.lesson_id)

    def read(conn: sqlite3.Connection) -> Lesson:
        found = rows(conn, "SELECT * FROM lessons WHERE id = ?", (lesson_id,))
        if not found:
            raise UsageError(f"lesson {lesson_id!r} does not exist in this store")
        return lesson_view(found[0])

    return db.read(read)
