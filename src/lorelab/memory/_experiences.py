"""Experiences: recorded task outcomes with their verification, redacted before storing."""

from __future__ import annotations

import contextlib
import contextvars
import sqlite3
from collections import Counter
from collections.abc import Iterator
from typing import Any, Final

from lorelab.errors import UsageError
from lorelab.memory._db import (
    Database,
    Row,
    dumps,
    exists,
    format_id,
    loads,
    n_docs,
    now,
    optional_id,
    parse_id,
    rows,
)
from lorelab.memory._embedders import of_store
from lorelab.memory._item_models import (
    Experience,
    Provenance,
    StoredCommand,
    StoredVerification,
)
from lorelab.memory._locks import refuse_locked
from lorelab.memory._models import RecordRequest, RecordResult
from lorelab.memory._procedure import CommandOutcome, procedure_of
from lorelab.memory._redact import Redactor
from lorelab.memory._requests import (
    ExperiencesResult,
    RecordManyRequest,
    RecordManyResult,
    VerifiedExperiencesRequest,
)
from lorelab.memory._text import task_key, term_string
from lorelab.memory._vectors import experience_text, insert_experience_vectors

FOLD_BATCH: Final = 256
_RECORDED_BY: Final = contextvars.ContextVar[str | None]("lorelab_recorded_by", default=None)


@contextlib.contextmanager
def recording_as(name: str | None) -> Iterator[None]:
    """Experiences recorded inside this block store ``name`` as ``recorded_by``.

    ``lorelab serve`` sets it to the name of the bearer token a request came with; it is not a
    request field, so no client can claim another token's name. ``None``: no token (the CLI,
    the stdio server, a server run with ``--no-auth``).
    """
    reset = _RECORDED_BY.set(name)
    try:
        yield
    finally:
        _RECORDED_BY.reset(reset)


def experience_view(row: Row) -> Experience:
    return Experience(
        id=format_id("exp", int(row["id"])),
        task=row["task"],
        task_id=row["task_id"],
        summary=row["summary"],
        outcome=row["outcome"],
        trust=row["trust"],
        qa=row["qa"],
        steps=loads(row["steps"]),
        commands=[StoredCommand.model_validate(c) for c in loads(row["commands"])],
        files=loads(row["files"]),
        project=row["project"],
        plan_id=optional_id("plan", row["plan_id"]),
        skill_id=optional_id("skill", row["skill_id"]),
        provenance=Provenance(
            host=row["host"],
            model=row["model"],
            created_at=row["created_at"],
            recorded_by=row.get("recorded_by"),
            verification=StoredVerification(
                command=row["verification_command"],
                exit_code=int(row["verification_exit_code"]),
                output_digest=row["output_digest"],
            ),
        ),
        redactions=loads(row["redactions"]),
        validity=row.get("validity", "trusted"),
        validity_reason=row.get("validity_reason"),
    )


def _references(conn: sqlite3.Connection, request: RecordRequest) -> tuple[int | None, int | None]:
    plan_id = parse_id(request.plan_id, "plan") if request.plan_id is not None else None
    skill_id = parse_id(request.skill_id, "skill") if request.skill_id is not None else None
    if plan_id is not None and not exists(conn, "plans", plan_id):
        raise UsageError(f"plan {request.plan_id} does not exist in this store")
    if skill_id is not None and not exists(conn, "skills", skill_id):
        raise UsageError(f"skill {request.skill_id} does not exist in this store")
    return plan_id, skill_id


def _row(conn: sqlite3.Connection, request: RecordRequest) -> tuple[dict[str, Any], dict[str, int]]:
    refuse_locked(conn, request.task, request.task_id)
    plan_id, skill_id = _references(conn, request)
    red = Redactor()
    task = red(request.task)
    summary = red(request.summary)
    steps = [red(step) for step in request.steps]
    commands = [CommandOutcome(red(item.command), item.exit_code) for item in request.commands]
    files = [red(item) for item in request.files]
    verification_command = red(request.verification.command)
    verified = request.outcome == "passed" and request.verification.exit_code == 0
    procedure = procedure_of(commands, verification_command, request.verification.exit_code)
    row = {
        "created_at": now(),
        "task": task,
        "task_key": task_key(task),
        "task_id": red.optional(request.task_id),
        "summary": summary,
        "outcome": request.outcome,
        "verification_command": verification_command,
        "verification_exit_code": request.verification.exit_code,
        "output_digest": red.optional(request.verification.output_digest),
        "steps": dumps(steps),
        "commands": dumps([{"command": c.command, "exit_code": c.exit_code} for c in commands]),
        "files": dumps(files),
        "project": red.optional(request.project),
        "qa": request.qa,
        "plan_id": plan_id,
        "skill_id": skill_id,
        "host": red.optional(request.host),
        "model": red.optional(request.model),
        "trust": "verified" if verified else "unverified",
        "recorded_by": _RECORDED_BY.get(),
        "procedure": dumps(list(procedure)),
        "terms": term_string([task, summary, *steps, *(c.command for c in commands), *files]),
    }
    redactions = red.summary()
    row["redactions"] = dumps(redactions)
    return row, redactions


def _counts_through(conn: sqlite3.Connection) -> int:
    """The newest experience the term counts include."""
    row = conn.execute("SELECT value FROM memory_state WHERE key = 'term_counts_through'")
    return int(row.fetchone()[0])


def term_counts_behind(conn: sqlite3.Connection) -> bool:
    """Whether a retrieval would fold the term counts first (it then writes)."""
    return _counts_through(conn) != n_docs(conn, "experiences")


def fold_term_counts(conn: sqlite3.Connection, *, force: bool) -> None:
    """Bring the term counts up to the newest experience (in the caller's transaction).

    Counting every term of every experience as it is recorded writes tens of scattered
    pages per record; folding them in batches of :data:`FOLD_BATCH` (and always before a
    retrieval, which needs them exact) costs a fraction of that. The watermark moves in
    the same transaction as the counts, so they can never disagree.
    """
    through = _counts_through(conn)
    latest = n_docs(conn, "experiences")
    if latest == through or (not force and latest - through < FOLD_BATCH):
        return
    counts: Counter[str] = Counter()
    for (terms,) in conn.execute(
        "SELECT terms FROM experiences WHERE id > ? AND id <= ?", (through, latest)
    ):
        counts.update(set(str(terms).split()))
    try:
        # One statement over a JSON object of term -> docs is much cheaper than one per term.
        conn.execute(
            "INSERT INTO experience_term_counts (term, docs) "
            "SELECT key, value FROM json_each(?) WHERE true "
            "ON CONFLICT (term) DO UPDATE SET docs = docs + excluded.docs",
            (dumps(dict(sorted(counts.items()))),),
        )
        conn.execute(
            "UPDATE memory_state SET value = ? WHERE key = 'term_counts_through'", (latest,)
        )
    except sqlite3.OperationalError as exc:
        # A read-only store briefs with the counts of its last write (the newest experiences,
        # fewer than FOLD_BATCH, are left out of them); a store that can be written is folded.
        if not str(getattr(exc, "sqlite_errorname", "")).startswith("SQLITE_READONLY"):
            raise


def record_many(db: Database, request: RecordManyRequest) -> RecordManyResult:
    """Record every experience, with its vector, in one transaction.

    The vectors are computed from the redacted tasks, in one batch, before the transaction
    starts: the store is not held locked while the model loads or runs (a server's other calls
    go on meanwhile). A task redacted differently inside the transaction, or a model switched
    by a reindex in between, gets its vector computed there.
    """
    embedder = db.read(of_store)
    early = [experience_text(Redactor()(experience.task)) for experience in request.experiences]
    computed = dict(zip(early, embedder.stored_blobs(early), strict=True)) if early else {}

    def write(conn: sqlite3.Connection) -> RecordManyResult:
        # The store's model, read again inside the transaction: a reindex may have switched it.
        model = of_store(conn)
        ready = computed if model is embedder else {}
        results: list[RecordResult] = []
        numbers: list[int] = []
        texts: list[str] = []
        for experience in request.experiences:
            row, redactions = _row(conn, experience)
            columns = ", ".join(row)
            marks = ", ".join(f":{name}" for name in row)
            cursor = conn.execute(f"INSERT INTO experiences ({columns}) VALUES ({marks})", row)
            numbers.append(int(cursor.lastrowid or 0))
            texts.append(experience_text(row["task"]))
            results.append(
                RecordResult(
                    id=format_id("exp", int(cursor.lastrowid or 0)),
                    verified=row["trust"] == "verified",
                    redactions=redactions,
                )
            )
        missing = [text for text in dict.fromkeys(texts) if text not in ready]
        if missing:
            ready = {**ready, **dict(zip(missing, model.stored_blobs(missing), strict=True))}
        blobs = [ready[text] for text in texts]
        insert_experience_vectors(conn, model, list(zip(numbers, blobs, strict=True)))
        fold_term_counts(conn, force=False)
        return RecordManyResult(results=results)

    return db.write(write)


def verified_experiences(db: Database, request: VerifiedExperiencesRequest) -> ExperiencesResult:
    if not 1 <= request.limit <= 5000:
        raise UsageError("limit must be 1 to 5000 experiences")
    return db.read(
        lambda conn: ExperiencesResult(
            experiences=[
                experience_view(row)
                for row in rows(
                    conn,
                    "SELECT * FROM experiences WHERE trust = 'verified' "
                    "AND (?1 IS NULL OR project = ?1) ORDER BY id DESC LIMIT ?2",
                    (request.project, request.limit),
                )
            ]
        )
    )
