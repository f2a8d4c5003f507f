"""The embedded memory store: one SQLite file in WAL mode with FTS5 indexes.

Every write is one ``BEGIN IMMEDIATE`` transaction; a busy database is waited for (SQLite's
busy timeout) and the whole transaction retried until a deadline, after which the caller gets
an error: nothing is dropped silently. Nothing is ever deleted (triggers refuse it).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypeVar

from lorelab.errors import (
    InputFileError,
    IntegrityFailure,
    OutputExistsError,
    SchemaError,
    UsageError,
)
from lorelab.io import sha256_file
from lorelab.memory import _checks
from lorelab.memory._brief import estimate_tokens, render
from lorelab.memory._migrations import migrate
from lorelab.memory._models import (
    EXIT_CODE_MAX,
    EXIT_CODE_MIN,
    HEALTH_CAP,
    HEALTH_START,
    SKILL_DESCRIPTION_MAX,
    AvoidCommand,
    Brief,
    BriefExperience,
    BriefRecord,
    BriefSkill,
    Candidate,
    CandidateProposal,
    CheckRun,
    DreamRequest,
    DreamResult,
    EvaluationLock,
    Experience,
    Item,
    ItemKind,
    Lesson,
    ListResult,
    OutcomeRequest,
    OutcomeResult,
    Plan,
    PlanOutcome,
    PrepareRequest,
    PromoteCandidateRequest,
    PromoteRequest,
    ProposalOutcome,
    ProposalRefusal,
    Provenance,
    RecordRequest,
    RecordResult,
    RelevanceFloor,
    Skill,
    SkillHealth,
    SkillHealthResult,
    SkillState,
    SkillStep,
    StartRequest,
    StartResult,
    StoredCommand,
    StoredVerification,
    WorkerProvenance,
    fit_skill_name,
    skill_description_problem,
    skill_name_problem,
    slug_skill_name,
)
from lorelab.memory._procedure import (
    MIN_SHARED_COMMANDS,
    CommandOutcome,
    fingerprint,
    mine,
    procedure_of,
    shared_procedure,
)
from lorelab.memory._redact import Redactor
from lorelab.memory._relevance import (
    DEFAULT_POLICY,
    RelevancePolicy,
    Scored,
    query_terms,
    rank,
    score,
)
from lorelab.memory._text import (
    STOPWORDS,
    fts_query,
    normalise_command,
    task_key,
    term_string,
    words,
)
from lorelab.workspace import FileEntry

T = TypeVar("T")
# A row as a dict of column name to value.
Row = dict[str, Any]

BUSY_DEADLINE_SECONDS: Final = 60.0
MAX_BRIEF_EXPERIENCES: Final = 5
MAX_BRIEF_SKILLS: Final = 3
MAX_AVOID: Final = 10
FOLD_BATCH: Final = 256
_SNAPSHOT_HASH_CAP: Final = 1 << 40
_PREFIXES: Final = {
    "exp": "experience",
    "skill": "skill",
    "plan": "plan",
    "brief": "brief",
    "cand": "candidate",
    "check": "check_run",
}
_ID: Final = re.compile(r"([a-z]+)-([0-9]{1,18})")
_PY_TEST: Final = re.compile(r"^\s*(?:async\s+)?def\s+(test\w*)\s*\(", re.MULTILINE)
_JS_TEST: Final = re.compile(r"\b(?:test|it)\s*\(\s*([\"'`])(.+?)\1")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _format_id(prefix: str, number: int) -> str:
    return f"{prefix}-{number}"


def _parse_id(value: str, prefix: str) -> int:
    match = _ID.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None or match.group(1) != prefix:
        raise UsageError(f"{value!r} is not a {_PREFIXES[prefix]} id ({prefix}-<number>)")
    return int(match.group(2))


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _loads(text: str) -> Any:
    return json.loads(text)


# The canonical form (lorelab.io.canonical_json) with one reusable encoder: stored JSON is
# written on every record, so the per-call encoder set-up is worth saving.
_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _dumps(value: Any) -> str:
    return _ENCODER.encode(value)


class SqliteMemoryStore:
    """The embedded :class:`~lorelab.memory.MemoryStore`: one SQLite file (WAL, FTS5).

    One instance may be shared between threads (calls are serialised); several processes may
    open the same file at once.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        policy: RelevancePolicy = DEFAULT_POLICY,
        busy_deadline_seconds: float = BUSY_DEADLINE_SECONDS,
        create: bool = True,
    ) -> None:
        self._path = Path(path)
        self.policy = policy
        self._busy_deadline = busy_deadline_seconds
        self._lock = threading.RLock()
        if self._path.exists() and not self._path.is_file():
            raise InputFileError(f"{self._path}: not a regular file")
        if not create and not self._path.is_file():
            raise InputFileError(
                f"{self._path}: no memory store here, and nothing was created; check --home, "
                "--project or $LORELAB_HOME (a store is made by the first record or prepare)"
            )
        if create:
            try:
                self._path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                raise InputFileError(
                    f"{self._path.parent}: cannot create the memory home: {exc.strerror or exc}"
                ) from None
        try:
            # Without ``create``, mode=rw: SQLite itself refuses to make a missing file, so
            # a store removed after the check above is still not created.
            target = str(self._path) if create else f"{self._path.absolute().as_uri()}?mode=rw"
            self._conn = sqlite3.connect(
                target,
                timeout=10.0,
                isolation_level=None,
                check_same_thread=False,
                uri=not create,
            )
        except sqlite3.Error as exc:
            raise InputFileError(f"{self._path}: cannot open the memory store: {exc}") from None
        try:
            self._configure()
            self._retry_busy(lambda: migrate(self._conn, str(self._path)))
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise InputFileError(
                f"{self._path}: not a usable lorelab memory store: {exc}"
            ) from None
        except BaseException:
            self._conn.close()
            raise
        with contextlib.suppress(OSError):
            os.chmod(self._path, 0o600)

    def _configure(self) -> None:
        mode = self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise IntegrityFailure(f"{self._path}: could not switch to WAL mode (got {mode})")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.execute("PRAGMA busy_timeout=10000")
        # 32 MiB of page cache: the FTS index and term counts of a 100k store stay in memory.
        self._conn.execute("PRAGMA cache_size=-32768")
        # Checkpoint (and fsync) every 4000 pages rather than 1000: one-experience transactions
        # touch tens of pages, and each checkpoint's fsync otherwise dominates their cost.
        self._conn.execute("PRAGMA wal_autocheckpoint=4000")
        self._conn.execute(f"PRAGMA journal_size_limit={64 * 1024 * 1024}")

    # ---------------------------------------------------------------- plumbing

    @property
    def location(self) -> Path:
        return self._path

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SqliteMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection, for inspection in tests and tools (read-only use)."""
        return self._conn

    def _retry_busy(self, fn: Callable[[], T]) -> T:
        deadline = time.monotonic() + self._busy_deadline
        delay = 0.002
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise IntegrityFailure(
                        f"{self._path}: store stayed locked for {self._busy_deadline:g} s; "
                        "nothing was written"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in one IMMEDIATE transaction, retried as a whole while the store is busy."""

        def attempt() -> T:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(self._conn)
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            return result

        with self._lock:
            return self._retry_busy(attempt)

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in one read transaction (a consistent snapshot)."""

        def attempt() -> T:
            self._conn.execute("BEGIN")
            try:
                return fn(self._conn)
            finally:
                if self._conn.in_transaction:
                    self._conn.execute("COMMIT")

        with self._lock:
            return self._retry_busy(attempt)

    # ---------------------------------------------------------------- record

    def _prepare_record(
        self, conn: sqlite3.Connection, request: RecordRequest
    ) -> tuple[dict[str, Any], dict[str, int]]:
        self._refuse_locked(conn, request.task, request.task_id)
        plan_id = _parse_id(request.plan_id, "plan") if request.plan_id is not None else None
        skill_id = _parse_id(request.skill_id, "skill") if request.skill_id is not None else None
        if plan_id is not None and not _exists(conn, "plans", plan_id):
            raise UsageError(f"plan {request.plan_id} does not exist in this store")
        if skill_id is not None and not _exists(conn, "skills", skill_id):
            raise UsageError(f"skill {request.skill_id} does not exist in this store")
        red = Redactor()
        task = red(request.task)
        summary = red(request.summary)
        steps = [red(step) for step in request.steps]
        commands = [CommandOutcome(red(item.command), item.exit_code) for item in request.commands]
        files = [red(item) for item in request.files]
        verification_command = red(request.verification.command)
        digest = (
            red(request.verification.output_digest)
            if request.verification.output_digest is not None
            else None
        )
        project = red(request.project) if request.project is not None else None
        host = red(request.host) if request.host is not None else None
        model = red(request.model) if request.model is not None else None
        task_id = red(request.task_id) if request.task_id is not None else None
        verified = request.outcome == "passed" and request.verification.exit_code == 0
        procedure = procedure_of(
            commands,
            verification_command,
            request.verification.exit_code,
        )
        redactions = red.summary()
        row = {
            "created_at": _now(),
            "task": task,
            "task_key": task_key(task),
            "task_id": task_id,
            "summary": summary,
            "outcome": request.outcome,
            "verification_command": verification_command,
            "verification_exit_code": request.verification.exit_code,
            "output_digest": digest,
            "steps": _dumps(steps),
            "commands": _dumps(
                [{"command": c.command, "exit_code": c.exit_code} for c in commands]
            ),
            "files": _dumps(files),
            "project": project,
            "qa": request.qa,
            "plan_id": plan_id,
            "skill_id": skill_id,
            "host": host,
            "model": model,
            "trust": "verified" if verified else "unverified",
            "redactions": _dumps(redactions),
            "procedure": _dumps(list(procedure)),
            "terms": term_string([task, summary, *steps, *(c.command for c in commands), *files]),
        }
        return row, redactions

    def _fold_term_counts(self, conn: sqlite3.Connection, *, force: bool) -> None:
        """Bring the term counts up to the newest experience (in the caller's transaction).

        Counting every term of every experience as it is recorded writes tens of scattered
        pages per record; folding them in batches of :data:`FOLD_BATCH` (and always before a
        retrieval, which needs them exact) costs a fraction of that. The watermark moves in
        the same transaction as the counts, so they can never disagree.
        """
        through = int(
            conn.execute(
                "SELECT value FROM memory_state WHERE key = 'term_counts_through'"
            ).fetchone()[0]
        )
        latest = self._n_docs(conn, "experiences")
        if latest == through or (not force and latest - through < FOLD_BATCH):
            return
        counts: Counter[str] = Counter()
        for (terms,) in conn.execute(
            "SELECT terms FROM experiences WHERE id > ? AND id <= ?", (through, latest)
        ):
            counts.update(set(str(terms).split()))
        # One statement over a JSON object of term -> docs is much cheaper than one per term.
        conn.execute(
            "INSERT INTO experience_term_counts (term, docs) "
            "SELECT key, value FROM json_each(?) WHERE true "
            "ON CONFLICT (term) DO UPDATE SET docs = docs + excluded.docs",
            (_dumps(dict(sorted(counts.items()))),),
        )
        conn.execute(
            "UPDATE memory_state SET value = ? WHERE key = 'term_counts_through'", (latest,)
        )

    def _insert_experience(self, conn: sqlite3.Connection, row: dict[str, Any]) -> int:
        columns = ", ".join(row)
        marks = ", ".join(f":{name}" for name in row)
        cursor = conn.execute(f"INSERT INTO experiences ({columns}) VALUES ({marks})", row)
        return int(cursor.lastrowid or 0)

    def record(self, request: RecordRequest) -> RecordResult:
        return self.record_many([request])[0]

    def record_many(self, requests: Sequence[RecordRequest]) -> list[RecordResult]:
        def write(conn: sqlite3.Connection) -> list[RecordResult]:
            results: list[RecordResult] = []
            for request in requests:
                row, redactions = self._prepare_record(conn, request)
                number = self._insert_experience(conn, row)
                results.append(
                    RecordResult(
                        id=_format_id("exp", number),
                        verified=row["trust"] == "verified",
                        redactions=redactions,
                    )
                )
            self._fold_term_counts(conn, force=False)
            return results

        return self._write(write)

    # ---------------------------------------------------------------- evaluation locks

    def _refuse_locked(self, conn: sqlite3.Connection, task: str, task_id: str | None) -> None:
        keys = [task_key(task)]
        if task_id is not None:
            keys.append(task_key(task_id))
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

    def set_evaluation_lock(
        self, evaluation_id: str, holdout_tasks: Sequence[str]
    ) -> EvaluationLock:
        if not isinstance(evaluation_id, str) or not evaluation_id.strip():
            raise UsageError("evaluation lock: the evaluation id must not be blank")
        if isinstance(holdout_tasks, str):
            raise UsageError("evaluation lock: holdout tasks must be a list of strings")
        tasks = [str(task) for task in holdout_tasks]
        if any(not task.strip() for task in tasks):
            raise UsageError("evaluation lock: a holdout task must not be blank")

        def write(conn: sqlite3.Connection) -> int:
            active = conn.execute(
                "SELECT 1 FROM evaluation_locks WHERE evaluation_id = ? AND cleared_at IS NULL",
                (evaluation_id,),
            ).fetchone()
            if active is not None:
                raise UsageError(
                    f"evaluation lock {evaluation_id!r} is already active; clear it first"
                )
            cursor = conn.execute(
                "INSERT INTO evaluation_locks (evaluation_id, created_at, holdout_tasks) "
                "VALUES (?, ?, ?)",
                (evaluation_id, _now(), _dumps(tasks)),
            )
            lock_id = int(cursor.lastrowid or 0)
            conn.executemany(
                "INSERT INTO evaluation_lock_tasks (lock_id, task_key) VALUES (?, ?)",
                [(lock_id, key) for key in dict.fromkeys(task_key(task) for task in tasks)],
            )
            return lock_id

        lock_id = self._write(write)
        return self._read(lambda conn: _lock_view(_one(conn, "evaluation_locks", lock_id)))

    def clear_evaluation_lock(self, evaluation_id: str) -> EvaluationLock:
        def write(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                "SELECT id FROM evaluation_locks WHERE evaluation_id = ? AND cleared_at IS NULL",
                (evaluation_id,),
            ).fetchone()
            if row is None:
                raise UsageError(f"no active evaluation lock {evaluation_id!r} to clear")
            conn.execute(
                "UPDATE evaluation_locks SET cleared_at = ? WHERE id = ?", (_now(), row[0])
            )
            return int(row[0])

        lock_id = self._write(write)
        return self._read(lambda conn: _lock_view(_one(conn, "evaluation_locks", lock_id)))

    def evaluation_locks(self) -> list[EvaluationLock]:
        return self._read(
            lambda conn: [
                _lock_view(row)
                for row in _rows(conn, "SELECT * FROM evaluation_locks ORDER BY id", ())
            ]
        )

    # ---------------------------------------------------------------- retrieval

    def _n_docs(self, conn: sqlite3.Connection, table: str) -> int:
        # Nothing is ever deleted, so the largest id is the number of rows (and O(log n)).
        value = conn.execute(f"SELECT max(id) FROM {table}").fetchone()[0]
        return int(value or 0)

    def _search_experiences(
        self, conn: sqlite3.Connection, task: str, project: str | None
    ) -> list[Scored]:
        self._fold_term_counts(conn, force=True)
        n_docs = self._n_docs(conn, "experiences")
        query = query_terms(
            _counts(conn, "experience_term_counts", "term", "docs"), task, n_docs, self.policy
        )
        match = query.match(self.policy)
        if match is None or len(query.weights) < self.policy.min_matched_terms:
            return []
        # Innermost: the most recent matching items, which FTS5 yields in rowid order and stops
        # at the limit, so BM25 is computed for a bounded number of rows. Then the best of
        # those by BM25; only then the trust and project filters.
        rows = conn.execute(
            "SELECT e.id, e.terms, c.r FROM ("
            "SELECT id, r FROM ("
            "SELECT rowid AS id, bm25(experiences_fts) AS r FROM experiences_fts "
            "WHERE experiences_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?5"
            ") ORDER BY r LIMIT ?4"
            ") AS c JOIN experiences e ON e.id = c.id "
            "WHERE e.trust = 'verified' AND (?2 IS NULL OR e.project IS NULL OR e.project = ?2) "
            "ORDER BY c.r LIMIT ?3",
            (match, project, self.policy.pool, self.policy.candidates, self.policy.scan_limit),
        ).fetchall()
        scored = [score(query, int(rowid), str(terms), float(r)) for rowid, terms, r in rows]
        return rank([item for item in scored if item.clears(self.policy)])

    def _search_skills(
        self,
        conn: sqlite3.Connection,
        task: str,
        project: str | None,
        include_review_required: bool,
    ) -> list[Scored]:
        n_docs = self._n_docs(conn, "skills")
        query = query_terms(_counts(conn, "skills_vocab", "term", "doc"), task, n_docs, self.policy)
        match = query.match(self.policy)
        if match is None or len(query.weights) < self.policy.min_matched_terms:
            return []
        rows = conn.execute(
            "SELECT s.id, s.terms, bm25(skills_fts) AS r FROM skills_fts "
            "JOIN skills s ON s.id = skills_fts.rowid "
            "WHERE skills_fts MATCH ? AND (?2 OR s.health > 0) "
            "AND (?3 IS NULL OR s.project IS NULL OR s.project = ?3) "
            "ORDER BY r LIMIT ?4",
            (match, include_review_required, project, self.policy.pool),
        ).fetchall()
        scored = [score(query, int(rowid), str(terms), float(r)) for rowid, terms, r in rows]
        return rank([item for item in scored if item.clears(self.policy)])

    def _floor(self) -> RelevanceFloor:
        return RelevanceFloor(
            min_coverage=self.policy.min_coverage,
            min_matched_terms=self.policy.min_matched_terms,
        )

    def _compose_brief(
        self,
        conn: sqlite3.Connection,
        task: str,
        project: str | None,
        include_skills: bool,
        budget_tokens: int,
        plan_id: int | None,
    ) -> Brief:
        found = self._search_experiences(conn, task, project)[:MAX_BRIEF_EXPERIENCES]
        experiences: list[BriefExperience] = []
        avoid: list[AvoidCommand] = []
        seen_avoid: set[str] = set()
        for item in found:
            row = _one(conn, "experiences", item.rowid)
            exp_id = _format_id("exp", item.rowid)
            experiences.append(
                BriefExperience(
                    id=exp_id,
                    score=item.score,
                    task=row["task"],
                    summary=row["summary"],
                    verification_command=row["verification_command"],
                )
            )
            commands = [StoredCommand.model_validate(c) for c in _loads(row["commands"])]
            # A command that also succeeded in the same experience (or was its passing
            # verification) was part of the normal fix-and-rerun loop, not a dead end.
            succeeded = {normalise_command(c.command) for c in commands if c.exit_code == 0}
            succeeded.add(normalise_command(row["verification_command"]))
            for command in commands:
                key = normalise_command(command.command)
                if command.exit_code == 0 or key in succeeded or key in seen_avoid:
                    continue
                seen_avoid.add(key)
                avoid.append(
                    AvoidCommand(
                        command=command.command,
                        exit_code=command.exit_code,
                        experience_id=exp_id,
                    )
                )
        skills: list[BriefSkill] = []
        if include_skills:
            for item in self._search_skills(conn, task, project, False)[:MAX_BRIEF_SKILLS]:
                skill = _skill_view(_one(conn, "skills", item.rowid))
                skills.append(
                    BriefSkill(
                        id=skill.id,
                        name=skill.name,
                        description=skill.description,
                        score=item.score,
                        health=skill.health,
                        steps=skill.steps,
                    )
                )
        rendered = render(experiences, skills, avoid[:MAX_AVOID], budget_tokens)
        omitted = rendered.omitted + max(0, len(avoid) - MAX_AVOID)
        empty = not rendered.text
        if not empty:
            reason = None
        elif experiences or skills or avoid:
            reason = f"no relevant item fits in {budget_tokens} estimated tokens"
        else:
            reason = (
                "nothing cleared the relevance floor "
                f"(score >= {self.policy.min_coverage}, "
                f">= {self.policy.min_matched_terms} informative task terms matched)"
            )
        tokens = estimate_tokens(rendered.text)
        cursor = conn.execute(
            "INSERT INTO briefs (created_at, task, project, empty, experience_ids, skill_ids, "
            "avoid_commands, tokens_estimate, budget_tokens, plan_id, text) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                _now(),
                task,
                project,
                int(empty),
                _dumps([item.id for item in rendered.experiences]),
                _dumps([item.id for item in rendered.skills]),
                _dumps([item.model_dump() for item in rendered.avoid]),
                tokens,
                budget_tokens,
                plan_id,
                rendered.text,
            ),
        )
        return Brief(
            brief_id=_format_id("brief", int(cursor.lastrowid or 0)),
            task=task,
            project=project,
            empty=empty,
            reason=reason,
            experiences=rendered.experiences,
            avoid_commands=rendered.avoid,
            skills=rendered.skills,
            omitted=omitted,
            text=rendered.text,
            tokens_estimate=tokens,
            budget_tokens=budget_tokens,
            relevance_floor=self._floor(),
        )

    def prepare(self, request: PrepareRequest) -> Brief:
        task = Redactor().redact(request.task)
        return self._write(
            lambda conn: self._compose_brief(
                conn, task, request.project, request.include_skills, request.budget_tokens, None
            )
        )

    # ---------------------------------------------------------------- skills

    def _skill_terms(self, name: str, description: str, sources: list[Row]) -> str:
        parts = [name, description]
        for row in sources:
            parts += [row["task"], row["summary"]]
        return term_string(parts)

    def _insert_skill(
        self,
        conn: sqlite3.Connection,
        *,
        name: str,
        description: str,
        steps: Sequence[str],
        sources: list[Row],
        origin: str,
        candidate_id: int | None,
    ) -> int:
        # Every Skill must export as a valid Agent Skill, whichever way it was made: the
        # name and the description (after redaction, which can lengthen it) are checked here.
        problem = skill_name_problem(name)
        if problem is not None:
            raise UsageError(f"Skill name {name!r}: {problem}; choose another name")
        problem = skill_description_problem(description)
        if problem is not None:
            raise UsageError(
                f"{problem} (after redacting secrets); shorten the description and retry"
            )
        if conn.execute("SELECT 1 FROM skills WHERE name = ?", (name,)).fetchone() is not None:
            raise UsageError(f"a Skill named {name!r} already exists; choose another name")
        projects = {row["project"] for row in sources}
        project = projects.pop() if len(projects) == 1 else None
        cursor = conn.execute(
            "INSERT INTO skills (created_at, name, description, steps, source_experience_ids, "
            "origin, candidate_id, project, health, terms) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                _now(),
                name,
                description,
                _dumps([{"command": step, "expected_exit_code": 0} for step in steps]),
                _dumps([_format_id("exp", int(row["id"])) for row in sources]),
                origin,
                candidate_id,
                project,
                HEALTH_START,
                self._skill_terms(name, description, sources),
            ),
        )
        return int(cursor.lastrowid or 0)

    def promote_skill(self, request: PromoteRequest) -> Skill:
        numbers = [_parse_id(value, "exp") for value in request.experience_ids]
        repeated = [n for n, count in Counter(numbers).items() if count > 1]
        if repeated:
            raise UsageError(f"experience exp-{repeated[0]} is listed more than once")
        description = Redactor().redact(request.description)

        def write(conn: sqlite3.Connection) -> int:
            sources = []
            for number in numbers:
                row = _maybe_one(conn, "experiences", number)
                if row is None:
                    raise UsageError(f"experience exp-{number} does not exist in this store")
                if row["trust"] != "verified":
                    raise UsageError(
                        f"experience exp-{number} is not verified (its verification exited "
                        f"{row['verification_exit_code']}, outcome {row['outcome']}); "
                        "only verified work becomes a Skill"
                    )
                if row["qa"] != "approved":
                    raise UsageError(
                        f"experience exp-{number} is not QA-approved (qa: {row['qa']}); "
                        "only approved work becomes a Skill"
                    )
                sources.append(row)
            procedures = [tuple(_loads(row["procedure"])) for row in sources]
            shared = shared_procedure(procedures)
            if len(shared) < MIN_SHARED_COMMANDS:
                listing = "; ".join(
                    f"exp-{row['id']}: {list(proc)}"
                    for row, proc in zip(sources, procedures, strict=True)
                )
                raise UsageError(
                    "these experiences do not share a procedure: their successful command "
                    f"sequences have no common subsequence of {MIN_SHARED_COMMANDS} or more "
                    f"commands ({listing})"
                )
            # One procedure, one Skill: a second Skill with the same steps would split its
            # health and its outcomes between two names.
            wanted = fingerprint(shared)
            for number, name, stored in conn.execute(
                "SELECT id, name, steps FROM skills ORDER BY id"
            ):
                if fingerprint([step["command"] for step in _loads(stored)]) == wanted:
                    raise UsageError(
                        f"Skill {_format_id('skill', int(number))} ({name}) already "
                        "holds this procedure; report outcomes against it instead of promoting "
                        "it again"
                    )
            return self._insert_skill(
                conn,
                name=request.name,
                description=description,
                steps=shared,
                sources=sources,
                origin="promoted",
                candidate_id=None,
            )

        number = self._write(write)
        return self._read(lambda conn: _skill_view(_one(conn, "skills", number)))

    def skills(self, include_review_required: bool = False) -> list[Skill]:
        sql = "SELECT * FROM skills" + ("" if include_review_required else " WHERE health > 0")
        return self._read(
            lambda conn: [_skill_view(row) for row in _rows(conn, sql + " ORDER BY id", ())]
        )

    # ---------------------------------------------------------------- plans and health

    def start(self, request: StartRequest) -> StartResult:
        task = Redactor().redact(request.task)

        def write(conn: sqlite3.Connection) -> StartResult:
            found = self._search_skills(
                conn, task, request.project, request.include_review_required
            )
            if not found:
                brief = self._compose_brief(conn, task, request.project, False, 1200, None)
                return StartResult(
                    plan_id=None,
                    skill_id=None,
                    score=None,
                    steps=[],
                    reason=self._no_plan_reason(conn, task, request),
                    brief=brief,
                )
            best = found[0]
            skill = _skill_view(_one(conn, "skills", best.rowid))
            cursor = conn.execute(
                "INSERT INTO plans (created_at, skill_id, task, project, score, steps) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    _now(),
                    best.rowid,
                    task,
                    request.project,
                    best.score,
                    _dumps([step.model_dump() for step in skill.steps]),
                ),
            )
            plan_number = int(cursor.lastrowid or 0)
            brief = self._compose_brief(conn, task, request.project, False, 1200, plan_number)
            conn.execute(
                "UPDATE plans SET brief_id = ? WHERE id = ?",
                (_parse_id(brief.brief_id, "brief"), plan_number),
            )
            return StartResult(
                plan_id=_format_id("plan", plan_number),
                skill_id=skill.id,
                score=best.score,
                steps=skill.steps,
                reason=None,
                brief=brief,
            )

        return self._write(write)

    def _no_plan_reason(self, conn: sqlite3.Connection, task: str, request: StartRequest) -> str:
        floor = (
            f"(score >= {self.policy.min_coverage}, "
            f">= {self.policy.min_matched_terms} informative task terms matched)"
        )
        if request.include_review_required:
            return f"no Skill cleared the relevance floor {floor}"
        # Say so when a Skill does match but was left out for its health: "nothing relevant"
        # would send the user looking for a Skill that exists.
        held = self._search_skills(conn, task, request.project, True)
        if not held:
            return f"no Skill cleared the relevance floor {floor}"
        best = _skill_view(_one(conn, "skills", held[0].rowid))
        return (
            f"no healthy Skill cleared the relevance floor {floor}; {best.id} "
            f"({best.name}, score {held[0].score:.2f}) matches but is review_required "
            "(health 0) and left out; pass include_review_required "
            "(--include-review-required) to plan with it anyway"
        )

    def report_outcome(self, request: OutcomeRequest) -> OutcomeResult:
        plan_number = _parse_id(request.plan_id, "plan")

        def write(conn: sqlite3.Connection) -> OutcomeResult:
            plan = _maybe_one(conn, "plans", plan_number)
            if plan is None:
                raise UsageError(f"plan {request.plan_id} does not exist in this store")
            if plan["reported_at"] is not None:
                raise UsageError(
                    f"plan {request.plan_id} already has an outcome (reported "
                    f"{plan['reported_at']}); an outcome is recorded once"
                )
            skill = _one(conn, "skills", int(plan["skill_id"]))
            before = int(skill["health"])
            after = min(HEALTH_CAP, before + 1) if request.passed else max(0, before - 1)
            now = _now()
            conn.execute(
                "UPDATE plans SET passed = ?, rework_count = ?, reported_at = ? WHERE id = ?",
                (int(request.passed), request.rework_count, now, plan_number),
            )
            conn.execute("UPDATE skills SET health = ? WHERE id = ?", (after, skill["id"]))
            conn.execute(
                "INSERT INTO skill_health_events (created_at, skill_id, plan_id, passed, "
                "health_before, health_after) VALUES (?, ?, ?, ?, ?, ?)",
                (now, skill["id"], plan_number, int(request.passed), before, after),
            )
            return OutcomeResult(
                plan_id=request.plan_id,
                skill_id=_format_id("skill", int(skill["id"])),
                passed=request.passed,
                rework_count=request.rework_count,
                health=after,
                state=_state(after),
            )

        return self._write(write)

    def skill_health(self, skill_id: str | None = None) -> SkillHealthResult:
        number = _parse_id(skill_id, "skill") if skill_id is not None else None

        def read(conn: sqlite3.Connection) -> SkillHealthResult:
            if number is not None and _maybe_one(conn, "skills", number) is None:
                raise UsageError(f"skill {skill_id} does not exist in this store")
            rows = conn.execute(
                "SELECT s.id, s.name, s.health, "
                "(SELECT count(*) FROM plans p WHERE p.skill_id = s.id AND p.passed = 1), "
                "(SELECT count(*) FROM plans p WHERE p.skill_id = s.id AND p.passed = 0), "
                "(SELECT count(*) FROM plans p WHERE p.skill_id = s.id), "
                "(SELECT count(*) FROM plans p WHERE p.skill_id = s.id AND p.reported_at IS NULL) "
                "FROM skills s WHERE (?1 IS NULL OR s.id = ?1) ORDER BY s.id",
                (number,),
            ).fetchall()
            return SkillHealthResult(
                skills=[
                    SkillHealth(
                        skill_id=_format_id("skill", int(row[0])),
                        name=row[1],
                        health=int(row[2]),
                        state=_state(int(row[2])),
                        successes=int(row[3]),
                        failures=int(row[4]),
                        plans_started=int(row[5]),
                        plans_unreported=int(row[6]),
                    )
                    for row in rows
                ]
            )

        return self._read(read)

    # ---------------------------------------------------------------- dreams

    def _candidate_name(self, conn: sqlite3.Connection, sources: list[Row]) -> str:
        # Only ASCII words can be part of an Agent Skills name; filtering whole words (rather
        # than characters out of the joined name) never leaves a stray hyphen behind.
        counts: Counter[str] = Counter()
        for row in sources:
            counts.update(
                {
                    w
                    for w in words(row["task"])
                    if w.isascii() and len(w) >= 3 and w not in STOPWORDS
                }
            )
        common = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:3]
        base = fit_skill_name(slug_skill_name("-".join(word for word, _ in common)))
        base = base or "shared-procedure"
        name = base
        suffix = 2
        while (
            conn.execute(
                "SELECT 1 FROM candidates WHERE name = ? UNION SELECT 1 FROM skills WHERE name = ?",
                (name, name),
            ).fetchone()
            is not None
        ):
            name = fit_skill_name(base, f"-{suffix}")
            suffix += 1
        return name

    def dream(self, request: DreamRequest) -> DreamResult:
        def write(conn: sqlite3.Connection) -> DreamResult:
            rows = _rows(
                conn,
                "SELECT * FROM experiences WHERE trust = 'verified' "
                "AND (?1 IS NULL OR project = ?1) ORDER BY id DESC LIMIT ?2",
                (request.project, request.limit),
            )
            by_id = {int(row["id"]): row for row in rows}
            procedures = [
                (number, tuple(_loads(row["procedure"]))) for number, row in by_id.items()
            ]
            known = {str(row[0]) for row in conn.execute("SELECT fingerprint FROM candidates")}
            for row in conn.execute("SELECT steps FROM skills"):
                known.add(fingerprint([step["command"] for step in _loads(row[0])]))
            created: list[int] = []
            already = 0
            for mined in mine(procedures):
                print_ = fingerprint(mined.steps)
                if print_ in known:
                    already += 1
                    continue
                known.add(print_)
                sources = [by_id[number] for number in mined.source_ids]
                tasks = "; ".join(" ".join(row["task"].split())[:120] for row in sources[:5])
                description = (
                    f"Procedure shared by {len(sources)} verified experiences "
                    f"({', '.join(_format_id('exp', n) for n in mined.source_ids)}): {tasks}"
                )[:SKILL_DESCRIPTION_MAX]
                steps = [{"command": step, "expected_exit_code": 0} for step in mined.steps]
                projects = {row["project"] for row in sources}
                cursor = conn.execute(
                    "INSERT INTO candidates (created_at, name, description, steps, checks, "
                    "source_experience_ids, fingerprint, origin, project, state) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, 'mined', ?, 'candidate')",
                    (
                        _now(),
                        self._candidate_name(conn, sources),
                        description,
                        _dumps(steps),
                        _dumps(steps),
                        _dumps([_format_id("exp", n) for n in mined.source_ids]),
                        print_,
                        projects.pop() if len(projects) == 1 else None,
                    ),
                )
                created.append(int(cursor.lastrowid or 0))
            return DreamResult(
                candidates=[_candidate_view(conn, number) for number in created],
                considered_experiences=len(rows),
                already_known=already,
            )

        return self._write(write)

    def verified_experiences(self, project: str | None, limit: int) -> list[Experience]:
        if not 1 <= limit <= 5000:
            raise UsageError("limit must be 1 to 5000 experiences")
        return self._read(
            lambda conn: [
                _experience_view(row)
                for row in _rows(
                    conn,
                    "SELECT * FROM experiences WHERE trust = 'verified' "
                    "AND (?1 IS NULL OR project = ?1) ORDER BY id DESC LIMIT ?2",
                    (project, limit),
                )
            ]
        )

    def add_proposed_candidates(
        self,
        proposals: Sequence[CandidateProposal],
        *,
        offered_ids: Sequence[str],
        provenance: WorkerProvenance,
    ) -> list[ProposalOutcome]:
        redactor = Redactor()
        redacted = [_redact_proposal(redactor, proposal) for proposal in proposals]
        offered = set(offered_ids)
        identity = provenance.operator_identity
        stored_provenance = provenance.model_copy(
            update={
                "worker_argv": [redactor.redact(arg) for arg in provenance.worker_argv],
                "operator_identity": redactor.redact(identity) if identity is not None else None,
            }
        )

        def write(conn: sqlite3.Connection) -> list[ProposalOutcome]:
            known: dict[str, str] = {}
            for number, print_ in conn.execute("SELECT id, fingerprint FROM candidates"):
                known.setdefault(str(print_), _format_id("cand", int(number)))
            for number, steps in conn.execute("SELECT id, steps FROM skills"):
                commands = [step["command"] for step in _loads(steps)]
                known.setdefault(fingerprint(commands), _format_id("skill", int(number)))
            outcomes: list[ProposalOutcome] = []
            for index, proposal in enumerate(redacted, start=1):
                refused = self._judge_proposal(conn, proposal, offered, known)
                if refused is not None:
                    outcomes.append(
                        ProposalOutcome(
                            index=index,
                            name=proposal.name,
                            status="refused",
                            candidate_id=None,
                            refusal=refused[0],
                            reason=refused[1],
                        )
                    )
                    continue
                number = self._insert_proposal(conn, proposal, stored_provenance)
                known[_proposal_fingerprint(proposal)] = _format_id("cand", number)
                outcomes.append(
                    ProposalOutcome(
                        index=index,
                        name=proposal.name,
                        status="stored",
                        candidate_id=_format_id("cand", number),
                        refusal=None,
                        reason=None,
                    )
                )
            return outcomes

        return self._write(write)

    def _judge_proposal(
        self,
        conn: sqlite3.Connection,
        proposal: CandidateProposal,
        offered: set[str],
        known: dict[str, str],
    ) -> tuple[ProposalRefusal, str] | None:
        """Why ``proposal`` must not be stored (a refusal code and one line), or ``None``."""
        problem = _source_problem(conn, proposal.source_experience_ids, offered)
        if problem is not None:
            return "sources", problem
        problem = _commands_problem("step", proposal.steps)
        if problem is not None:
            return "steps", problem
        problem = _commands_problem("check", [check.command for check in proposal.checks])
        if problem is not None:
            return "checks", problem
        for number, check in enumerate(proposal.checks, start=1):
            if not EXIT_CODE_MIN <= check.expected_exit_code <= EXIT_CODE_MAX:
                return "checks", f"check {number} expects exit code {check.expected_exit_code}"
        same = known.get(_proposal_fingerprint(proposal))
        if same is not None:
            return "duplicate", f"its steps are the procedure of {same}, already known"
        problem = skill_name_problem(proposal.name)
        if problem is not None:
            return "name", f"name {proposal.name!r}: {problem}"
        taken = conn.execute(
            "SELECT 'candidate' FROM candidates WHERE name = ?1 "
            "UNION SELECT 'Skill' FROM skills WHERE name = ?1",
            (proposal.name,),
        ).fetchone()
        if taken is not None:
            return "name", f"name {proposal.name!r} is already taken by a {taken[0]}"
        problem = skill_description_problem(proposal.description)
        if problem is not None:
            return "description", problem
        return None

    def _insert_proposal(
        self, conn: sqlite3.Connection, proposal: CandidateProposal, provenance: WorkerProvenance
    ) -> int:
        sources = [
            _one(conn, "experiences", _parse_id(value, "exp"))
            for value in proposal.source_experience_ids
        ]
        projects = {row["project"] for row in sources}
        cursor = conn.execute(
            "INSERT INTO candidates (created_at, name, description, steps, checks, "
            "source_experience_ids, fingerprint, origin, project, state, provenance) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, 'worker', ?, 'candidate', ?)",
            (
                _now(),
                proposal.name,
                proposal.description,
                _dumps([{"command": step, "expected_exit_code": 0} for step in proposal.steps]),
                _dumps([check.model_dump() for check in proposal.checks]),
                _dumps([_format_id("exp", int(row["id"])) for row in sources]),
                _proposal_fingerprint(proposal),
                projects.pop() if len(projects) == 1 else None,
                _dumps(provenance.model_dump(mode="json")),
            ),
        )
        return int(cursor.lastrowid or 0)

    def candidate(self, candidate_id: str) -> Candidate:
        number = _parse_id(candidate_id, "cand")

        def read(conn: sqlite3.Connection) -> Candidate:
            if _maybe_one(conn, "candidates", number) is None:
                raise UsageError(f"candidate {candidate_id} does not exist in this store")
            return _candidate_view(conn, number)

        return self._read(read)

    def check_candidate(
        self, candidate_id: str, project_dir: str | os.PathLike[str], timeout_seconds: float
    ) -> CheckRun:
        current = self.candidate(candidate_id)
        if current.state == "promoted":
            raise UsageError(f"candidate {candidate_id} was already promoted to {current.skill_id}")
        if not Path(project_dir).is_dir():
            raise UsageError(f"project directory {project_dir}: not a directory")
        if not 0 < timeout_seconds <= 1800:
            raise UsageError("check timeout must be more than 0 and at most 1800 seconds")
        outcome = _checks.run_checks(current.checks, project_dir, timeout_seconds)
        number = _parse_id(candidate_id, "cand")

        def write(conn: sqlite3.Connection) -> int:
            cursor = conn.execute(
                "INSERT INTO candidate_checks (created_at, candidate_id, passed, results, "
                "timeout_seconds, copy_method) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    _now(),
                    number,
                    int(outcome.passed),
                    _dumps([result.model_dump() for result in outcome.results]),
                    timeout_seconds,
                    _checks.COPY_METHOD,
                ),
            )
            conn.execute(
                "UPDATE candidates SET state = ? WHERE id = ? AND state != 'promoted'",
                ("checked" if outcome.passed else "check_failed", number),
            )
            return int(cursor.lastrowid or 0)

        run_number = self._write(write)
        return self._read(lambda conn: _check_view(_one(conn, "candidate_checks", run_number)))

    def promote_candidate(self, request: PromoteCandidateRequest) -> Skill:
        number = _parse_id(request.candidate_id, "cand")
        description = (
            Redactor().redact(request.description) if request.description is not None else None
        )

        def write(conn: sqlite3.Connection) -> int:
            row = _maybe_one(conn, "candidates", number)
            if row is None:
                raise UsageError(f"candidate {request.candidate_id} does not exist in this store")
            if row["state"] != "checked":
                hint = (
                    f"run `lorelab memory check {request.candidate_id}` first"
                    if row["state"] in ("candidate", "check_failed")
                    else "it is already a Skill"
                )
                raise UsageError(
                    f"candidate {request.candidate_id} is {row['state']!r}; only a candidate "
                    f"whose checks passed can be promoted ({hint})"
                )
            sources = [
                _one(conn, "experiences", _parse_id(value, "exp"))
                for value in _loads(row["source_experience_ids"])
            ]
            skill_number = self._insert_skill(
                conn,
                name=request.name or row["name"],
                description=description or row["description"],
                steps=[step["command"] for step in _loads(row["steps"])],
                sources=sources,
                origin="dream",
                candidate_id=number,
            )
            conn.execute(
                "UPDATE candidates SET state = 'promoted', skill_id = ? WHERE id = ?",
                (skill_number, number),
            )
            return skill_number

        skill_number = self._write(write)
        return self._read(lambda conn: _skill_view(_one(conn, "skills", skill_number)))

    # ---------------------------------------------------------------- list and show

    def list_items(self, kind: ItemKind, limit: int = 50) -> ListResult:
        tables: dict[str, tuple[str, str]] = {
            "experience": ("experiences", "id"),
            "skill": ("skills", "id"),
            "plan": ("plans", "id"),
            "brief": ("briefs", "id"),
            "candidate": ("candidates", "id"),
            "lock": ("evaluation_locks", "id"),
            "lesson": ("lessons", "seq"),
        }
        if kind not in tables:
            raise UsageError(f"unknown kind {kind!r}; one of {', '.join(tables)}")
        if limit < 1:
            raise UsageError("limit must be at least 1")
        table, key = tables[kind]

        def read(conn: sqlite3.Connection) -> ListResult:
            total = int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
            rows = _rows(conn, f"SELECT * FROM {table} ORDER BY {key} DESC LIMIT ?", (limit,))
            items: list[Item] = [_view(conn, kind, row) for row in rows]
            return ListResult(kind=kind, total=total, items=items)

        return self._read(read)

    def show(self, item_id: str) -> Item:
        match = _ID.fullmatch(item_id.strip()) if isinstance(item_id, str) else None
        if match is None or match.group(1) not in ("exp", "skill", "plan", "brief", "cand"):
            raise UsageError(
                f"{item_id!r} is not an item id (exp-N, skill-N, plan-N, brief-N or cand-N)"
            )
        prefix, number = match.group(1), int(match.group(2))
        kind: ItemKind = {
            "exp": "experience",
            "skill": "skill",
            "plan": "plan",
            "brief": "brief",
            "cand": "candidate",
        }[prefix]  # type: ignore[assignment]
        table = {
            "experience": "experiences",
            "skill": "skills",
            "plan": "plans",
            "brief": "briefs",
            "candidate": "candidates",
        }[kind]

        def read(conn: sqlite3.Connection) -> Item:
            row = _maybe_one(conn, table, number)
            if row is None:
                raise UsageError(f"{item_id} does not exist in this store")
            return _view(conn, kind, row)

        return self._read(read)

    # ---------------------------------------------------------------- lessons

    def add_lesson(
        self,
        lesson_id: str,
        specification_id: str | None,
        requirements: str,
        files: list[FileEntry],
        tests: list[FileEntry],
        validation: dict[str, object],
    ) -> str:
        if not isinstance(lesson_id, str) or not lesson_id.strip() or len(lesson_id) > 400:
            raise UsageError("lesson id must be a non-blank string of at most 400 characters")
        try:
            validation_json = _dumps(validation)
        except (TypeError, ValueError) as exc:
            raise SchemaError(f"lesson {lesson_id}: validation is not JSON: {exc}") from None
        red = Redactor()
        clean_requirements = red(requirements)
        clean_files = [{"path": f.path, "content": red(f.content)} for f in files]
        clean_tests = [{"path": f.path, "content": red(f.content)} for f in tests]
        names: list[str] = []
        for test in clean_tests:
            names += _PY_TEST.findall(test["content"])
            names += [title for _, title in _JS_TEST.findall(test["content"])]

        def write(conn: sqlite3.Connection) -> str:
            if conn.execute("SELECT 1 FROM lessons WHERE id = ?", (lesson_id,)).fetchone():
                raise UsageError(f"lesson {lesson_id!r} already exists; lessons are never replaced")
            conn.execute(
                "INSERT INTO lessons (id, created_at, specification_id, requirements, files, "
                "tests, validation, test_names, terms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    lesson_id,
                    _now(),
                    specification_id,
                    clean_requirements,
                    _dumps(clean_files),
                    _dumps(clean_tests),
                    validation_json,
                    _dumps(names),
                    term_string([clean_requirements, *names]),
                ),
            )
            return lesson_id

        return self._write(write)

    def search_lessons(self, text: str, k: int) -> list[tuple[Lesson, float]]:
        if k < 1:
            raise UsageError("k must be at least 1")
        query = list(dict.fromkeys(term_string([text]).split()))
        if not query:
            return []

        def read(conn: sqlite3.Connection) -> list[tuple[Lesson, float]]:
            rows = _rows(
                conn,
                "SELECT l.*, bm25(lessons_fts) AS r FROM lessons_fts "
                "JOIN lessons l ON l.seq = lessons_fts.rowid "
                "WHERE lessons_fts MATCH ? ORDER BY r, l.seq LIMIT ?",
                (fts_query(query), k),
            )
            return [(_lesson_view(row), -float(row["r"])) for row in rows]

        return self._read(read)

    def list_lessons(self) -> list[Lesson]:
        return self._read(
            lambda conn: [
                _lesson_view(row) for row in _rows(conn, "SELECT * FROM lessons ORDER BY seq", ())
            ]
        )

    def get_lesson(self, lesson_id: str) -> Lesson:
        def read(conn: sqlite3.Connection) -> Lesson:
            rows = _rows(conn, "SELECT * FROM lessons WHERE id = ?", (lesson_id,))
            if not rows:
                raise UsageError(f"lesson {lesson_id!r} does not exist in this store")
            return _lesson_view(rows[0])

        return self._read(read)

    # ---------------------------------------------------------------- snapshot

    def snapshot(self, path: str | os.PathLike[str]) -> str:
        target = Path(path)
        if os.path.lexists(target):
            raise OutputExistsError(f"{target}: already exists; a snapshot never overwrites")
        if not target.parent.is_dir():
            raise UsageError(f"{target.parent}: not an existing directory")
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        destination = sqlite3.connect(target, isolation_level=None)
        try:
            with self._lock:
                self._conn.backup(destination)
            # A frozen copy is one self-contained file: no WAL beside it.
            destination.execute("PRAGMA journal_mode=DELETE")
        finally:
            destination.close()
        return sha256_file(target, cap=_SNAPSHOT_HASH_CAP)


# -------------------------------------------------------------------- row helpers


def _rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[Row]:
    cursor = conn.execute(sql, params)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def _counts(
    conn: sqlite3.Connection, table: str, term_column: str, count_column: str
) -> Callable[[Sequence[str]], dict[str, int]]:
    """A document-frequency lookup over ``table`` for :func:`query_terms`."""

    def lookup(terms: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        # Bounded batches keep each statement under SQLite's variable limit.
        for start in range(0, len(terms), 500):
            batch = list(terms[start : start + 500])
            marks = ",".join("?" * len(batch))
            for term, count in conn.execute(
                f"SELECT {term_column}, {count_column} FROM {table} "
                f"WHERE {term_column} IN ({marks})",
                batch,
            ):
                found[str(term)] = int(count)
        return found

    return lookup


def _maybe_one(conn: sqlite3.Connection, table: str, number: int) -> Row | None:
    rows = _rows(conn, f"SELECT * FROM {table} WHERE id = ?", (number,))
    return rows[0] if rows else None


def _one(conn: sqlite3.Connection, table: str, number: int) -> Row:
    row = _maybe_one(conn, table, number)
    if row is None:
        raise IntegrityFailure(f"{table} row {number} is missing from the store")
    return row


def _exists(conn: sqlite3.Connection, table: str, number: int) -> bool:
    return conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (number,)).fetchone() is not None


def _state(health: int) -> SkillState:
    return "review_required" if health <= 0 else "trusted"


def _steps(text: str) -> list[SkillStep]:
    return [SkillStep.model_validate(step) for step in _loads(text)]


def _skill_view(row: Row) -> Skill:
    return Skill(
        id=_format_id("skill", int(row["id"])),
        name=row["name"],
        description=row["description"],
        steps=_steps(row["steps"]),
        source_experience_ids=_loads(row["source_experience_ids"]),
        origin=row["origin"],
        candidate_id=(
            _format_id("cand", int(row["candidate_id"]))
            if row["candidate_id"] is not None
            else None
        ),
        project=row["project"],
        health=int(row["health"]),
        state=_state(int(row["health"])),
        created_at=row["created_at"],
    )


def _experience_view(row: Row) -> Experience:
    return Experience(
        id=_format_id("exp", int(row["id"])),
        task=row["task"],
        task_id=row["task_id"],
        summary=row["summary"],
        outcome=row["outcome"],
        trust=row["trust"],
        qa=row["qa"],
        steps=_loads(row["steps"]),
        commands=[StoredCommand.model_validate(c) for c in _loads(row["commands"])],
        files=_loads(row["files"]),
        project=row["project"],
        plan_id=_format_id("plan", int(row["plan_id"])) if row["plan_id"] is not None else None,
        skill_id=(
            _format_id("skill", int(row["skill_id"])) if row["skill_id"] is not None else None
        ),
        provenance=Provenance(
            host=row["host"],
            model=row["model"],
            created_at=row["created_at"],
            verification=StoredVerification(
                command=row["verification_command"],
                exit_code=int(row["verification_exit_code"]),
                output_digest=row["output_digest"],
            ),
        ),
        redactions=_loads(row["redactions"]),
    )


def _plan_view(row: Row) -> Plan:
    outcome = (
        PlanOutcome(
            passed=bool(row["passed"]),
            rework_count=int(row["rework_count"]),
            reported_at=row["reported_at"],
        )
        if row["reported_at"] is not None
        else None
    )
    return Plan(
        id=_format_id("plan", int(row["id"])),
        skill_id=_format_id("skill", int(row["skill_id"])),
        task=row["task"],
        project=row["project"],
        score=float(row["score"]),
        steps=_steps(row["steps"]),
        brief_id=_format_id("brief", int(row["brief_id"])) if row["brief_id"] is not None else None,
        created_at=row["created_at"],
        outcome=outcome,
    )


def _brief_view(row: Row) -> BriefRecord:
    return BriefRecord(
        id=_format_id("brief", int(row["id"])),
        task=row["task"],
        project=row["project"],
        empty=bool(row["empty"]),
        experience_ids=_loads(row["experience_ids"]),
        skill_ids=_loads(row["skill_ids"]),
        tokens_estimate=int(row["tokens_estimate"]),
        budget_tokens=int(row["budget_tokens"]),
        plan_id=_format_id("plan", int(row["plan_id"])) if row["plan_id"] is not None else None,
        text=row["text"],
        created_at=row["created_at"],
    )


def _check_view(row: Row) -> CheckRun:
    return CheckRun(
        id=_format_id("check", int(row["id"])),
        candidate_id=_format_id("cand", int(row["candidate_id"])),
        passed=bool(row["passed"]),
        results=_loads(row["results"]),
        timeout_seconds=float(row["timeout_seconds"]),
        copy_method=row["copy_method"],
        created_at=row["created_at"],
    )


MAX_PROPOSED_COMMANDS: Final = 100
MAX_PROPOSED_COMMAND_CHARS: Final = 2000


def _redact_proposal(redactor: Redactor, proposal: CandidateProposal) -> CandidateProposal:
    """The proposal with secrets redacted from every text the store could keep."""
    return proposal.model_copy(
        update={
            "name": redactor.redact(proposal.name),
            "description": redactor.redact(proposal.description),
            "steps": [redactor.redact(step) for step in proposal.steps],
            "checks": [
                check.model_copy(update={"command": redactor.redact(check.command)})
                for check in proposal.checks
            ],
        }
    )


def _proposal_fingerprint(proposal: CandidateProposal) -> str:
    # The same normalisation mined procedures get, so spelling never hides a duplicate.
    return fingerprint([normalise_command(step) for step in proposal.steps])


def _source_problem(conn: sqlite3.Connection, ids: Sequence[str], offered: set[str]) -> str | None:
    """Why ``ids`` are not two or more verified experiences given to the worker, or ``None``."""
    repeated = [value for value, count in Counter(ids).items() if count > 1]
    if repeated:
        return f"source {repeated[0]} is listed more than once"
    if len(ids) < 2:
        return (
            f"it names {len(ids)} source experience(s); a candidate needs at least two "
            "verified experiences of this store"
        )
    for value in ids:
        match = _ID.fullmatch(value)
        if match is None or match.group(1) != "exp":
            return f"source {value!r} is not an experience id (exp-N)"
        row = _maybe_one(conn, "experiences", int(match.group(2)))
        if row is None:
            return f"source {value} does not exist in this store"
        if row["trust"] != "verified":
            return f"source {value} is not a verified experience"
        if _format_id("exp", int(row["id"])) not in offered:
            return f"source {value} was not among the experiences given to the worker"
    return None


def _commands_problem(what: str, commands: Sequence[str]) -> str | None:
    """Why ``commands`` cannot be a candidate's steps (or checks), or ``None``."""
    if not commands:
        return f"it has no {what}s; every candidate needs at least one"
    if len(commands) > MAX_PROPOSED_COMMANDS:
        return f"it has {len(commands)} {what}s; at most {MAX_PROPOSED_COMMANDS} are kept"
    for number, command in enumerate(commands, start=1):
        if not command.strip():
            return f"{what} {number} is blank"
        if len(command) > MAX_PROPOSED_COMMAND_CHARS:
            return (
                f"{what} {number} is {len(command):,} characters; at most "
                f"{MAX_PROPOSED_COMMAND_CHARS:,}"
            )
        if "\x00" in command:
            return f"{what} {number} contains NUL"
    return None


def _candidate_view(conn: sqlite3.Connection, number: int) -> Candidate:
    row = _one(conn, "candidates", number)
    last = _rows(
        conn,
        "SELECT * FROM candidate_checks WHERE candidate_id = ? ORDER BY id DESC LIMIT 1",
        (number,),
    )
    return Candidate(
        id=_format_id("cand", number),
        name=row["name"],
        description=row["description"],
        steps=_steps(row["steps"]),
        checks=_steps(row["checks"]),
        source_experience_ids=_loads(row["source_experience_ids"]),
        origin=row["origin"],
        provenance=(
            WorkerProvenance.model_validate(_loads(row["provenance"]))
            if row["provenance"] is not None
            else None
        ),
        project=row["project"],
        state=row["state"],
        skill_id=_format_id("skill", int(row["skill_id"])) if row["skill_id"] is not None else None,
        last_check=_check_view(last[0]) if last else None,
        created_at=row["created_at"],
    )


def _lock_view(row: Row) -> EvaluationLock:
    return EvaluationLock(
        evaluation_id=row["evaluation_id"],
        holdout_tasks=_loads(row["holdout_tasks"]),
        active=row["cleared_at"] is None,
        created_at=row["created_at"],
        cleared_at=row["cleared_at"],
    )


def _lesson_view(row: Row) -> Lesson:
    return Lesson(
        id=row["id"],
        specification_id=row["specification_id"],
        requirements=row["requirements"],
        files=_loads(row["files"]),
        tests=_loads(row["tests"]),
        validation=_loads(row["validation"]),
        created_at=row["created_at"],
    )


def _view(conn: sqlite3.Connection, kind: ItemKind, row: Row) -> Item:
    if kind == "experience":
        return _experience_view(row)
    if kind == "skill":
        return _skill_view(row)
    if kind == "plan":
        return _plan_view(row)
    if kind == "brief":
        return _brief_view(row)
    if kind == "candidate":
        return _candidate_view(conn, int(row["id"]))
    if kind == "lock":
        return _lock_view(row)
    return _lesson_view(row)
