"""Bearer tokens for ``lorelab serve``: created once, kept only as a SHA-256 hash, revocable.

A token is 32 random bytes (``secrets.token_urlsafe``) behind the prefix ``llb_``; the store
keeps its hash, its name and its scope. A hash of a secret that random needs no slow key
derivation: there is nothing to guess. The tokens live in the store they open (the
``serve_tokens`` table), so a revoked token is refused by a running server at its next request.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from lorelab._model import timestamp
from lorelab.errors import PreflightError, UsageError

Scope = Literal["read", "write", "admin"]
SCOPES: Final[tuple[Scope, ...]] = ("read", "write", "admin")
TOKEN_PREFIX: Final = "llb_"
LOCAL_TOKEN: Final = "local"
"""The name of the token a server makes itself at start for the hooks: held in its memory and
in the user's private state directory only, never in the store, so it dies with the server."""
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """One token as ``token list`` shows it (never the token itself)."""

    name: str
    scope: Scope
    created_at: str
    revoked_at: str | None


@dataclass(frozen=True, slots=True)
class Grant:
    """What a presented token may do: its name and scope."""

    name: str
    scope: Scope

    def allows(self, needed: Scope) -> bool:
        """Whether this token's scope includes ``needed`` (read < write < admin)."""
        return SCOPES.index(self.scope) >= SCOPES.index(needed)


def token_hash(token: str) -> str:
    """The stored form of ``token``."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _connect(store_file: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(store_file, timeout=30.0, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn


def _check_name(name: str) -> None:
    if not _NAME.fullmatch(name):
        raise UsageError(
            f"token name {name!r}: use 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )


def create_token(store_file: Path, name: str, scope: Scope) -> str:
    """A new token named ``name``; returned once, only its hash is stored.

    A name may be issued again only after its token is revoked."""
    _check_name(name)
    if scope not in SCOPES:
        raise UsageError(f"token scope {scope!r}: use read, write or admin")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    conn = _connect(store_file)
    try:
        conn.execute(
            "INSERT INTO serve_tokens (name, scope, token_hash, created_at) VALUES (?, ?, ?, ?)",
            (name, scope, token_hash(token), timestamp()),
        )
    except sqlite3.IntegrityError:
        raise UsageError(
            f"token name {name!r}: a live token already has it; revoke it first"
        ) from None
    finally:
        conn.close()
    return token


def list_tokens(store_file: Path) -> list[TokenInfo]:
    """Every token ever issued, oldest first, revoked ones included."""
    conn = _connect(store_file)
    try:
        found = conn.execute(
            "SELECT name, scope, created_at, revoked_at FROM serve_tokens ORDER BY id"
        ).fetchall()
    finally:
        conn.close()
    return [
        TokenInfo(name, scope, created_at, revoked) for name, scope, created_at, revoked in found
    ]


def revoke_token(store_file: Path, name: str) -> TokenInfo:
    """Revoke the live token named ``name``; a running server refuses it from its next request."""
    _check_name(name)
    conn = _connect(store_file)
    try:
        cursor = conn.execute(
            "UPDATE serve_tokens SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL "
            "RETURNING name, scope, created_at, revoked_at",
            (timestamp(), name),
        )
        row = cursor.fetchone()
    finally:
        conn.close()
    if row is None:
        raise UsageError(
            f"token name {name!r}: no live token has it (see `lorelab serve token list`)"
        )
    return TokenInfo(*row)


def live_token_count(store_file: Path) -> int:
    """How many tokens are not revoked."""
    conn = _connect(store_file)
    try:
        (count,) = conn.execute(
            "SELECT count(*) FROM serve_tokens WHERE revoked_at IS NULL"
        ).fetchone()
    finally:
        conn.close()
    return int(count)


class TokenBook:
    """The server's view of the tokens: each presented token looked up by its hash.

    One read-only connection, used from the event loop only; every lookup reads the table, so a
    token revoked by ``lorelab serve token revoke`` in another process is refused at once.
    """

    def __init__(self, store_file: Path, local: str | None = None) -> None:
        """``local``: the server's own token for the hooks, held in memory only (it dies with
        the server: nothing of it is stored)."""
        self._local = None if local is None else token_hash(local)
        try:
            self._conn = sqlite3.connect(
                f"{store_file.as_uri()}?mode=ro", uri=True, check_same_thread=False
            )
            self._conn.execute("PRAGMA busy_timeout = 5000")
        except sqlite3.Error as exc:
            raise PreflightError(f"{store_file}: cannot read the tokens: {exc}") from None

    def grant(self, token: str) -> Grant | None:
        """The grant of a live ``token``, or ``None`` (unknown, revoked or malformed)."""
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        if self._local is not None and hmac.compare_digest(token_hash(token), self._local):
            return Grant(LOCAL_TOKEN, "write")
        row = self._conn.execute(
            "SELECT name, scope FROM serve_tokens WHERE token_hash = ? AND revoked_at IS NULL",
            (token_hash(token),),
        ).fetchone()
        return None if row is None else Grant(str(row[0]), row[1])

    def close(self) -> None:
        self._conn.close()
