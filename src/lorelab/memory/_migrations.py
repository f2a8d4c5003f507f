"""Ordered, named schema migrations of the SQLite memory store, recorded in the database.

A migration is applied once, in order, inside the same transaction that records its name in
``_lorelab_migrations``; a store whose table names a migration this code does not know was
written by a newer lorelab and is refused rather than guessed at.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from lorelab._model import timestamp
from lorelab.errors import PreflightError
from lorelab.memory._skill_names import fit_skill_name, skill_name_problem, slug_skill_name


@dataclass(frozen=True, slots=True)
class Migration:
    """One named schema step."""

    name: str
    apply: Callable[[sqlite3.Connection], None]


def _statements(sql: str) -> list[str]:
    """Split a script into complete statements (trigger bodies hold semicolons of their own)."""
    statements: list[str] = []
    buffer = ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements


def _script(sql: str) -> Callable[[sqlite3.Connection], None]:
    statements = _statements(sql)

    def apply(conn: sqlite3.Connection) -> None:
        # One statement at a time: executescript would COMMIT the surrounding transaction.
        for statement in statements:
            conn.execute(statement)

    return apply


def _full_text(table: str, rowid: str = "id", *, vocab: bool = True) -> str:
    """SQL for ``table``'s full-text index of its ``terms``, fed on insert (and, with ``vocab``,
    the view of its terms)."""
    return (
        f"CREATE VIRTUAL TABLE {table}_fts USING fts5(\n"
        f"    terms, content='{table}', content_rowid='{rowid}', "
        "tokenize='unicode61 remove_diacritics 0'\n);\n"
        + (
            f"CREATE VIRTUAL TABLE {table}_vocab USING fts5vocab({table}_fts, 'row');\n"
            if vocab
            else ""
        )
        + f"CREATE TRIGGER {table}_fts_insert AFTER INSERT ON {table} BEGIN\n"
        f"    INSERT INTO {table}_fts (rowid, terms) VALUES (new.{rowid}, new.terms);\nEND;\n"
    )


def _never_deleted(table: str, subject: str | None = None) -> str:
    """SQL for the trigger that refuses deletes from ``table`` (items are never deleted)."""
    said = subject or f"{table.replace('_', ' ')} are"
    return (
        f"CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table} BEGIN\n"
        f"    SELECT RAISE(ABORT, '{said} never deleted');\nEND;\n"
    )


_EXPERIENCES: Final = (
    """
CREATE TABLE experiences (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    task TEXT NOT NULL,
    task_key TEXT NOT NULL,
    task_id TEXT,
    summary TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('passed', 'failed')),
    verification_command TEXT NOT NULL,
    verification_exit_code INTEGER NOT NULL,
    output_digest TEXT,
    steps TEXT NOT NULL,
    commands TEXT NOT NULL,
    files TEXT NOT NULL,
    project TEXT,
    qa TEXT NOT NULL CHECK (qa IN ('approved', 'unreviewed')),
    plan_id INTEGER,
    skill_id INTEGER,
    host TEXT,
    model TEXT,
    trust TEXT NOT NULL CHECK (trust IN ('verified', 'unverified')),
    redactions TEXT NOT NULL,
    procedure TEXT NOT NULL,
    terms TEXT NOT NULL
);
CREATE INDEX experiences_trust_project ON experiences (trust, project);
"""
    + _full_text("experiences")
    + _never_deleted("experiences")
    + """CREATE TABLE briefs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    task TEXT NOT NULL,
    project TEXT,
    empty INTEGER NOT NULL,
    experience_ids TEXT NOT NULL,
    skill_ids TEXT NOT NULL,
    avoid_commands TEXT NOT NULL,
    tokens_estimate INTEGER NOT NULL,
    budget_tokens INTEGER NOT NULL,
    plan_id INTEGER,
    text TEXT NOT NULL
);
"""
)

_SKILLS_AND_PLANS: Final = (
    """
CREATE TABLE skills (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL,
    steps TEXT NOT NULL,
    source_experience_ids TEXT NOT NULL,
    origin TEXT NOT NULL CHECK (origin IN ('promoted', 'dream')),
    candidate_id INTEGER,
    project TEXT,
    health INTEGER NOT NULL CHECK (health >= 0),
    terms TEXT NOT NULL
);
"""
    + _full_text("skills")
    + _never_deleted("skills")
    + """CREATE TABLE plans (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    skill_id INTEGER NOT NULL REFERENCES skills (id),
    task TEXT NOT NULL,
    project TEXT,
    score REAL NOT NULL,
    steps TEXT NOT NULL,
    brief_id INTEGER,
    passed INTEGER,
    rework_count INTEGER,
    reported_at TEXT
);
CREATE INDEX plans_skill ON plans (skill_id);
CREATE TABLE skill_health_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    skill_id INTEGER NOT NULL REFERENCES skills (id),
    plan_id INTEGER NOT NULL REFERENCES plans (id),
    passed INTEGER NOT NULL,
    health_before INTEGER NOT NULL,
    health_after INTEGER NOT NULL
);
CREATE INDEX skill_health_events_skill ON skill_health_events (skill_id);
"""
)

_DREAMS: Final = """
CREATE TABLE candidates (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    steps TEXT NOT NULL,
    checks TEXT NOT NULL,
    source_experience_ids TEXT NOT NULL,
    fingerprint TEXT NOT NULL UNIQUE,
    origin TEXT NOT NULL,
    project TEXT,
    state TEXT NOT NULL CHECK (state IN ('candidate', 'checked', 'check_failed', 'promoted')),
    skill_id INTEGER
);
CREATE TABLE candidate_checks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    candidate_id INTEGER NOT NULL REFERENCES candidates (id),
    passed INTEGER NOT NULL,
    results TEXT NOT NULL,
    timeout_seconds REAL NOT NULL,
    copy_method TEXT NOT NULL
);
CREATE INDEX candidate_checks_candidate ON candidate_checks (candidate_id);
""" + _never_deleted("candidates")

_EVALUATION_LOCKS: Final = """
CREATE TABLE evaluation_locks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    evaluation_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    cleared_at TEXT,
    holdout_tasks TEXT NOT NULL
);
CREATE UNIQUE INDEX evaluation_locks_active ON evaluation_locks (evaluation_id)
    WHERE cleared_at IS NULL;
CREATE TABLE evaluation_lock_tasks (
    lock_id INTEGER NOT NULL REFERENCES evaluation_locks (id),
    task_key TEXT NOT NULL
);
CREATE INDEX evaluation_lock_tasks_key ON evaluation_lock_tasks (task_key);
"""

_LESSONS: Final = (
    """
CREATE TABLE lessons (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    specification_id TEXT,
    requirements TEXT NOT NULL,
    files TEXT NOT NULL,
    tests TEXT NOT NULL,
    validation TEXT NOT NULL,
    test_names TEXT NOT NULL,
    terms TEXT NOT NULL
);
"""
    + _full_text("lessons", "seq", vocab=False)
    + _never_deleted("lessons")
)


# Term counts are folded in batches (see SqliteMemoryStore): the watermark is the last
# experience id they include. Up to here they include every experience.
_TERM_COUNTS_WATERMARK: Final = """
CREATE TABLE memory_state (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO memory_state (key, value)
    VALUES ('term_counts_through', (SELECT coalesce(max(id), 0) FROM experiences));
"""


def _experience_term_counts(conn: sqlite3.Connection) -> None:
    # Document frequencies read from fts5vocab cost time proportional to each term's postings;
    # a counted table answers in O(log n). Backfilled from the terms already stored.
    conn.execute(
        "CREATE TABLE experience_term_counts "
        "(term TEXT PRIMARY KEY, docs INTEGER NOT NULL CHECK (docs > 0)) WITHOUT ROWID"
    )
    counts: Counter[str] = Counter()
    for (terms,) in conn.execute("SELECT terms FROM experiences"):
        counts.update(set(str(terms).split()))
    conn.executemany(
        "INSERT INTO experience_term_counts (term, docs) VALUES (?, ?)", sorted(counts.items())
    )
    conn.execute("DROP TABLE experiences_vocab")


# Items added before this migration had no delete-refusing trigger; every item table has
# one now (the derived term counts and full-text indexes are not items).
_NO_DELETE_TABLES: Final = (
    "briefs",
    "plans",
    "skill_health_events",
    "candidate_checks",
    "evaluation_locks",
    "evaluation_lock_tasks",
)
_REFUSE_DELETES: Final = "".join(_never_deleted(table) for table in _NO_DELETE_TABLES)


def _valid_skill_names(conn: sqlite3.Connection) -> None:
    # Dreams before this migration could name a candidate (and so a Skill promoted from it
    # without a new name) with a stray hyphen, such as 'aaa-zzz-', which no host can load.
    # Such names are rewritten by the rule Dreams use now (runs of other characters become
    # one hyphen, ends stripped), kept distinct within their table; valid names are never
    # touched. Per table, so a candidate and the Skill promoted from it keep sharing a name.
    for table, fallback in (("skills", "skill"), ("candidates", "candidate")):
        rows = conn.execute(f"SELECT id, name FROM {table} ORDER BY id").fetchall()
        taken = {str(name) for _, name in rows}
        for number, name in rows:
            if skill_name_problem(str(name)) is None:
                continue
            base = fit_skill_name(slug_skill_name(str(name))) or f"{fallback}-{number}"
            fixed, suffix = base, 2
            while fixed in taken:
                fixed = fit_skill_name(base, f"-{suffix}")
                suffix += 1
            taken.add(fixed)
            conn.execute(f"UPDATE {table} SET name = ? WHERE id = ?", (fixed, number))


# Candidates a worker proposed (origin 'worker') keep where they came from: the worker's argv,
# the role prompt's hash, the model it claimed and when, as one JSON object. Mined candidates
# have none (NULL).
_CANDIDATE_PROVENANCE: Final = """
ALTER TABLE candidates ADD COLUMN provenance TEXT;
"""


# Retrieval by meaning: one vector per experience and per lesson (fp16 BLOBs, with the model
# that made them), validity states with their history, and brief feedback. Items recorded
# before this migration have no vector until `lorelab memory reindex` computes it.
_VALIDITY_STATES: Final = "'trusted', 'superseded', 'contradicted', 'deprecated'"
_RETRIEVAL: Final = (
    f"""
CREATE TABLE experience_vectors (
    id INTEGER PRIMARY KEY REFERENCES experiences (id),
    model TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE TABLE lesson_vectors (
    seq INTEGER PRIMARY KEY REFERENCES lessons (seq),
    model TEXT NOT NULL,
    vector BLOB NOT NULL
);
ALTER TABLE experiences ADD COLUMN validity TEXT NOT NULL DEFAULT 'trusted'
    CHECK (validity IN ({_VALIDITY_STATES}));
ALTER TABLE experiences ADD COLUMN validity_reason TEXT;
ALTER TABLE skills ADD COLUMN validity TEXT NOT NULL DEFAULT 'trusted'
    CHECK (validity IN ({_VALIDITY_STATES}));
ALTER TABLE skills ADD COLUMN validity_reason TEXT;
CREATE TABLE validity_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    item_id TEXT NOT NULL,
    state_before TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ({_VALIDITY_STATES})),
    reason TEXT,
    superseded_by TEXT
);
CREATE INDEX validity_events_item ON validity_events (item_id);
CREATE TABLE feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    experience_id INTEGER NOT NULL REFERENCES experiences (id),
    brief_id INTEGER REFERENCES briefs (id),
    rating TEXT NOT NULL CHECK (rating IN ('helpful', 'ignored', 'misleading', 'harmful')),
    note TEXT
);
CREATE INDEX feedback_experience ON feedback (experience_id);
"""
    + _never_deleted("validity_events")
    + _never_deleted("feedback", "feedback is")
    + """INSERT INTO memory_state (key, value) VALUES ('vectors_generation', 0);
"""
)


# ``lorelab serve``: the name of the bearer token that wrote each experience (NULL: written
# without one, by the CLI, the stdio server or a server run with --no-auth), and the tokens
# themselves, of which only a SHA-256 hash is kept. A revoked token stays, with when it was
# revoked; a name can be issued again once its token is revoked.
_SERVE_TOKENS: Final = """
ALTER TABLE experiences ADD COLUMN recorded_by TEXT;
CREATE TABLE serve_tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    scope TEXT NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE UNIQUE INDEX serve_tokens_live_name ON serve_tokens (name) WHERE revoked_at IS NULL;
""" + _never_deleted("serve_tokens")


# A store chooses its embedding model: vectors are keyed by (model, item), so a reindex to
# another model computes all of its vectors while the store keeps serving with the first, and
# switches only once they are there. Every store made before this migration used WordLlama;
# a new store records the default model right after it is made (see _db).
_EMBEDDING_MODEL: Final = """
CREATE TABLE store_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO store_settings (key, value) VALUES ('embedding_model', 'wordllama/l2_supercat_256');
CREATE TABLE experience_vectors_by_model (
    model TEXT NOT NULL,
    id INTEGER NOT NULL REFERENCES experiences (id),
    vector BLOB NOT NULL,
    PRIMARY KEY (model, id)
) WITHOUT ROWID;
INSERT INTO experience_vectors_by_model (model, id, vector)
    SELECT model, id, vector FROM experience_vectors;
DROP TABLE experience_vectors;
ALTER TABLE experience_vectors_by_model RENAME TO experience_vectors;
CREATE TABLE lesson_vectors_by_model (
    model TEXT NOT NULL,
    seq INTEGER NOT NULL REFERENCES lessons (seq),
    vector BLOB NOT NULL,
    PRIMARY KEY (model, seq)
) WITHOUT ROWID;
INSERT INTO lesson_vectors_by_model (model, seq, vector)
    SELECT model, seq, vector FROM lesson_vectors;
DROP TABLE lesson_vectors;
ALTER TABLE lesson_vectors_by_model RENAME TO lesson_vectors;
"""


MIGRATIONS: Final = (
    Migration("0001_experiences_and_briefs", _script(_EXPERIENCES)),
    Migration("0002_skills_plans_and_health", _script(_SKILLS_AND_PLANS)),
    Migration("0003_dreams", _script(_DREAMS)),
    Migration("0004_evaluation_locks", _script(_EVALUATION_LOCKS)),
    Migration("0005_lessons", _script(_LESSONS)),
    Migration("0006_experience_term_counts", _experience_term_counts),
    Migration("0007_term_counts_watermark", _script(_TERM_COUNTS_WATERMARK)),
    Migration("0008_refuse_deletes_everywhere", _script(_REFUSE_DELETES)),
    Migration("0009_valid_skill_names", _valid_skill_names),
    Migration("0010_candidate_provenance", _script(_CANDIDATE_PROVENANCE)),
    Migration("0011_vectors_validity_feedback", _script(_RETRIEVAL)),
    Migration("0012_serve_tokens_and_recorded_by", _script(_SERVE_TOKENS)),
    Migration("0013_embedding_model_per_store", _script(_EMBEDDING_MODEL)),
)

MIGRATIONS_TABLE: Final = "_lorelab_migrations"


def applied_migrations(conn: sqlite3.Connection) -> list[str]:
    """Names of the migrations recorded in the store, in the order they were applied."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (MIGRATIONS_TABLE,)
    ).fetchone()
    if exists is None:
        return []
    rows = conn.execute(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY rowid").fetchall()
    return [str(row[0]) for row in rows]


def _refuse_unknown(done: list[str], known: list[str], source: str) -> None:
    unknown = [name for name in done if name not in known]
    if unknown:
        raise PreflightError(
            f"{source}: memory store has migration {unknown[0]!r} that this lorelab does "
            "not know; it was written by a newer version"
        )


def require_up_to_date(
    conn: sqlite3.Connection, source: str, migrations: tuple[Migration, ...] = MIGRATIONS
) -> None:
    """Refuse, in one line, a read-only store that is not at exactly these migrations (it
    cannot be upgraded, and an older schema cannot be read as this one)."""
    known = [migration.name for migration in migrations]
    done = applied_migrations(conn)
    _refuse_unknown(done, known, source)
    missing = [name for name in known if name not in done]
    if missing:
        raise PreflightError(
            f"{source}: the memory store is read-only and needs migration {missing[0]!r}; "
            "nothing was written; make it writable once to upgrade it"
        )


def migrate(
    conn: sqlite3.Connection, source: str, migrations: tuple[Migration, ...] = MIGRATIONS
) -> list[str]:
    """Apply every migration not yet recorded; returns the names applied now.

    ``conn`` must be in autocommit mode (``isolation_level=None``); the whole upgrade runs in
    one ``BEGIN IMMEDIATE`` transaction, so a concurrent opener waits and then sees it done.
    """
    known = [migration.name for migration in migrations]
    if applied_migrations(conn) == known:
        # Up to date: nothing to write, so a read-only store opens too (and no opener takes
        # the write lock merely to find that out).
        return []
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} "
            "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        done = applied_migrations(conn)
        _refuse_unknown(done, known, source)
        applied: list[str] = []
        for migration in migrations:
            if migration.name in done:
                continue
            migration.apply(conn)
            conn.execute(
                f"INSERT INTO {MIGRATIONS_TABLE} (name, applied_at) VALUES (?, ?)",
                (migration.name, timestamp()),
            )
            applied.append(migration.name)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return applied
