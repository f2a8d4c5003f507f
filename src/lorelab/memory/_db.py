"""The memory's database: one SQLite file in WAL mode, its transactions, ids and row helpers.

Every write is one ``BEGIN IMMEDIATE`` transaction; a busy database is waited for (SQLite's
busy timeout) and the whole transaction retried until a deadline, after which the caller gets
an error: nothing is dropped silently. Nothing is ever deleted (triggers refuse it). The
aggregate modules (experiences, briefs, skills, dreams, lessons, locks) work through this one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from lorelab._model import timestamp
from lorelab.errors import (
    InputFileError,
    IntegrityFailure,
    OutputExistsError,
    PreflightError,
    UsageError,
)
from lorelab.io import sha256_file
from lorelab.memory._embedders import Embedder, default_for_new_store, set_store_model
from lorelab.memory._migrations import MIGRATIONS_TABLE, migrate, require_up_to_date
from lorelab.memory._shared_vectors import SharedQueryVectors

T = TypeVar("T")
Row = dict[str, Any]
"""A row as a dict of column name to value."""

BUSY_DEADLINE_SECONDS: Final = 60.0
_SNAPSHOT_HASH_CAP: Final = 1 << 40
PREFIXES: Final = {
    "exp": "experience",
    "skill": "skill",
    "plan": "plan",
    "brief": "brief",
    "cand": "candidate",
    "check": "check_run",
}
ID: Final = re.compile(r"([a-z]+)-([0-9]{1,18})")

# The canonical form (lorelab.io.canonical_json) with one reusable encoder: stored JSON is
# written on every record, so the per-call encoder set-up is worth saving.
_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> str:
    """``value`` as stored JSON text (canonical, UTF-8)."""
    return _ENCODER.encode(value)


def loads(text: str) -> Any:
    """Stored JSON text as a value."""
    return json.loads(text)


def format_id(prefix: str, number: int) -> str:
    """The public id of row ``number`` of the kind ``prefix`` names (``exp-3``)."""
    return f"{prefix}-{number}"


def optional_id(prefix: str, number: Any) -> str | None:
    """:func:`format_id` of a nullable column."""
    return None if number is None else format_id(prefix, int(number))


def parse_id(value: str, prefix: str) -> int:
    """The row number of ``value``, which must be a ``prefix-N`` id; else a UsageError."""
    match = ID.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None or match.group(1) != prefix:
        raise UsageError(f"{value!r} is not a {PREFIXES[prefix]} id ({prefix}-<number>)")
    return int(match.group(2))


def rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[Row]:
    """Every row of ``sql`` as a dict."""
    cursor = conn.execute(sql, params)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def maybe_one(conn: sqlite3.Connection, table: str, number: int) -> Row | None:
    """Row ``number`` of ``table``, or ``None``."""
    found = rows(conn, f"SELECT * FROM {table} WHERE id = ?", (number,))
    return found[0] if found else None


def one(conn: sqlite3.Connection, table: str, number: int) -> Row:
    """Row ``number`` of ``table``, which must exist (its absence is an integrity failure)."""
    row = maybe_one(conn, table, number)
    if row is None:
        raise IntegrityFailure(f"{table} row {number} is missing from the store")
    return row


def exists(conn: sqlite3.Connection, table: str, number: int) -> bool:
    """Whether row ``number`` of ``table`` exists."""
    return conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (number,)).fetchone() is not None


def n_docs(conn: sqlite3.Connection, table: str) -> int:
    """How many rows ``table`` has (nothing is ever deleted, so its largest id; O(log n))."""
    value = conn.execute(f"SELECT max(id) FROM {table}").fetchone()[0]
    return int(value or 0)


def counts(
    conn: sqlite3.Connection, table: str, term_column: str, count_column: str
) -> Callable[[Sequence[str]], dict[str, int]]:
    """A document-frequency lookup over ``table`` for the relevance policy."""

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


def now() -> str:
    """The time stamp every stored row carries."""
    return timestamp()


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _connect(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    # mode=rw: SQLite itself refuses to make a missing file, so a store removed after the
    # caller's check is never created again behind its back. mode=ro for a read-only file.
    try:
        return sqlite3.connect(
            f"{path.absolute().as_uri()}?mode={'ro' if read_only else 'rw'}",
            timeout=10.0,
            isolation_level=None,
            check_same_thread=False,
            uri=True,
        )
    except sqlite3.Error as exc:
        raise InputFileError(f"{path}: cannot open the memory store: {exc}") from None


def file_read_only(path: Path) -> bool:
    """Whether the store file is read-only: not writable by this process, or without any write
    bit (as root, whose writes ignore file modes, a store the user made read-only stays so)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_IMODE(mode) & 0o222 == 0 or not os.access(path, os.W_OK)


def _store_problem(path: Path) -> str | None:
    """Why the existing file ``path`` is not a lorelab store, found without writing to it."""
    if path.stat().st_size == 0:
        return (
            "an empty file is not a memory store (a damaged or truncated store?); nothing was "
            "changed; move it away to start a new store"
        )
    try:
        probe = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
        try:
            found = probe.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                (MIGRATIONS_TABLE,),
            ).fetchone()
        finally:
            probe.close()
    except sqlite3.DatabaseError as exc:
        return f"not a usable lorelab memory store: {exc}"
    if found is None:
        return "an SQLite database that is not a lorelab memory store; nothing was changed"
    return None


def _create(path: Path, embedder: Embedder) -> None:
    """Make a new, migrated store at ``path`` in one step, unless one appeared meanwhile;
    its vectors will be of ``embedder``'s model.

    The store is built under a private name beside ``path`` and linked into place, so ``path``
    never names a half-made store: an empty or foreign file there is damage, never a store
    being born.
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.new")
    try:
        conn = sqlite3.connect(temporary, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            migrate(conn, str(path))
            set_store_model(conn, embedder)
        finally:
            conn.close()
        os.chmod(temporary, 0o600)
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process made the store first: open that one
        except OSError:
            if not path.exists():  # a file system without hard links
                os.replace(temporary, path)
    except sqlite3.Error as exc:
        raise InputFileError(f"{path}: cannot create the memory store: {exc}") from None
    except OSError as exc:
        raise InputFileError(
            f"{path}: cannot create the memory store: {exc.strerror or exc}"
        ) from None
    finally:
        for leftover in (temporary, Path(f"{temporary}-wal"), Path(f"{temporary}-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def _make_home(home: Path) -> None:
    """Make the memory home if it is missing; one lorelab makes is trusted as the user's own
    (``lorelab._state``: a project's ``.lorelab`` that lorelab did not make is not)."""
    from lorelab._state import NotPrivate, create_trusted_home

    # Only a project's home (``.lorelab``) is ever checked; one named by --home or
    # $LORELAB_HOME is the user's choice, and is not recorded.
    if os.path.lexists(home) or home.name != ".lorelab":
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        return
    with contextlib.suppress(NotPrivate):
        if create_trusted_home(home):
            return
    home.mkdir(mode=0o700, parents=True, exist_ok=True)


class Database:
    """One SQLite store file: the connection, its transactions, and a consistent snapshot.

    One instance may be shared between threads (calls are serialised); several processes may
    open the same file at once.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_deadline_seconds: float = BUSY_DEADLINE_SECONDS,
        create: bool = True,
        embedding_model: Embedder | None = None,
    ) -> None:
        self.path = Path(path)
        self.shared_queries: SharedQueryVectors | None = None
        """Query vectors shared with the other processes serving this store (``lorelab serve``
        sets it; see :mod:`lorelab.memory._shared_vectors`)."""
        self._busy_deadline = busy_deadline_seconds
        self._lock = threading.RLock()
        self._checked = False
        self.read_only = False
        """Whether the store is read-only: its file is (:func:`file_read_only`), or a write found
        it so (set by that write's refusal)."""
        self._opened_read_only = False
        if self.path.exists() and not self.path.is_file():
            raise InputFileError(f"{self.path}: not a regular file")
        if not create and not self.path.is_file():
            raise InputFileError(
                f"{self.path}: no memory store here, and nothing was created; check --home, "
                "--project or $LORELAB_HOME (a store is made by the first record or prepare)"
            )
        if create:
            try:
                _make_home(self.path.parent)
            except OSError as exc:
                raise InputFileError(
                    f"{self.path.parent}: cannot create the memory home: {exc.strerror or exc}"
                ) from None
            if not self.path.exists():
                _create(self.path, embedding_model or default_for_new_store())
        problem = _store_problem(self.path)
        if problem is not None:
            raise InputFileError(f"{self.path}: {problem}")
        # A read-only file is opened read-only: never switched to WAL, migrated or written
        # (a store restored from a backup is in rollback-journal mode and still briefs).
        self.read_only = self._opened_read_only = file_read_only(self.path)
        self.conn = _connect(self.path, read_only=self.read_only)
        try:
            if self.read_only:
                self._configure_read_only()
            else:
                self._configure()
                self.retry_busy(lambda: migrate(self.conn, str(self.path)))
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise InputFileError(f"{self.path}: not a usable lorelab memory store: {exc}") from None
        except BaseException:
            self.conn.close()
            raise
        if not self.read_only:
            with contextlib.suppress(OSError):
                # Private, but never more writable than the owner made it.
                os.chmod(self.path, stat.S_IMODE(self.path.stat().st_mode) & 0o600)

    def _configure(self) -> None:
        mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise IntegrityFailure(f"{self.path}: could not switch to WAL mode (got {mode})")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.execute("PRAGMA busy_timeout=10000")
        # 32 MiB of page cache: the FTS index and term counts of a 100k store stay in memory.
        self.conn.execute("PRAGMA cache_size=-32768")
        # Checkpoint (and fsync) every 4000 pages rather than 1000: one-experience transactions
        # touch tens of pages, and each checkpoint's fsync otherwise dominates their cost.
        self.conn.execute("PRAGMA wal_autocheckpoint=4000")
        self.conn.execute(f"PRAGMA journal_size_limit={64 * 1024 * 1024}")

    def _configure_read_only(self) -> None:
        """The settings of a read-only connection; a store that needs a migration is refused."""
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.execute("PRAGMA busy_timeout=10000")
        self.conn.execute("PRAGMA cache_size=-32768")
        self.retry_busy(lambda: require_up_to_date(self.conn, str(self.path)))

    def _refuse_read_only(self) -> PreflightError:
        return PreflightError(
            f"{self.path}: the memory store is read-only (its file is not writable); nothing "
            "was written"
        )

    def close(self) -> None:
        from lorelab.memory._vectors import forget

        with self._lock:
            forget(self.conn)
            self.conn.close()
            if self.shared_queries is not None:
                self.shared_queries.close()

    def _check_integrity(self) -> None:
        """Refuse a damaged store before its first write (``PRAGMA quick_check``, once).

        A damaged page is otherwise found only by the query that happens to read it, and a
        write that misses it goes into a corrupt store.
        """
        try:
            found = [str(row[0]) for row in self.conn.execute("PRAGMA quick_check(3)")]
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
                raise
            found = [str(exc)]
        if found != ["ok"]:
            raise IntegrityFailure(
                f"{self.path}: the memory store is damaged (quick_check: {'; '.join(found)}); "
                "nothing was written; restore it from a snapshot or move it away"
            )
        self._checked = True

    def _refusal(self, exc: sqlite3.DatabaseError) -> IntegrityFailure | None:
        """The one-line refusal for a store that is read-only or damaged, else ``None``."""
        name = str(getattr(exc, "sqlite_errorname", ""))
        if name.startswith("SQLITE_READONLY"):
            self.read_only = True
            return PreflightError(
                f"{self.path}: the memory store is read-only ({exc}); nothing was written"
            )
        if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
            return IntegrityFailure(
                f"{self.path}: the memory store is damaged ({exc}); nothing was written; "
                "restore it from a snapshot or move it away"
            )
        return None

    def retry_busy(self, fn: Callable[[], T]) -> T:
        """``fn()``, retried while the database is busy, until the deadline."""
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
                        f"{self.path}: store stayed locked for {self._busy_deadline:g} s; "
                        "nothing was written"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)

    def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in one IMMEDIATE transaction, retried as a whole while the store is busy."""

        def attempt() -> T:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(self.conn)
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            return result

        with self._lock:
            if self._opened_read_only:
                raise self._refuse_read_only()
            try:
                if not self._checked:
                    self.retry_busy(self._check_integrity)
                return self.retry_busy(attempt)
            except sqlite3.DatabaseError as exc:
                refusal = self._refusal(exc)
                if refusal is None:
                    raise
                raise refusal from None

    def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in one read transaction (a consistent snapshot)."""

        def attempt() -> T:
            self.conn.execute("BEGIN")
            try:
                return fn(self.conn)
            finally:
                if self.conn.in_transaction:
                    self.conn.execute("COMMIT")

        with self._lock:
            try:
                return self.retry_busy(attempt)
            except sqlite3.DatabaseError as exc:
                refusal = self._refusal(exc)
                if refusal is None:
                    raise
                raise refusal from None

    def snapshot(self, path: str | os.PathLike[str]) -> str:
        """Copy the store into the new file ``path`` (no WAL beside it); its SHA-256."""
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
                self.conn.backup(destination)
            destination.execute("PRAGMA journal_mode=DELETE")
        finally:
            destination.close()
        return sha256_file(target, cap=_SNAPSHOT_HASH_CAP)
