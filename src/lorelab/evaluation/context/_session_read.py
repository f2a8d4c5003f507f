"""Session files as read: the neutral trace types, the bounded line reader, shared helpers.

Both agent formats are JSON Lines, one record per line. A session file is read through one file
descriptor, bounded while reading, and parsed completely before anything uses it: a line that
is not valid UTF-8 or not a JSON object refuses the whole session with its line number, so a
session is never half-read.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from lorelab.errors import SchemaError, UsageError
from lorelab.io import MIB, stream_regular

Agent = Literal["claude-code", "codex"]
AGENTS: Final[tuple[Agent, ...]] = ("claude-code", "codex")

SESSION_LIMIT: Final = 32 * MIB
"""Default read bound of one session file."""
SESSION_CEILING: Final = 1024 * MIB
"""Largest ``--max-bytes`` accepted for one session file (1 GiB)."""
TEXT_CLIP: Final = 4000
"""Characters of one message or tool output an import keeps (the rest is marked as clipped)."""


_SHELLS: Final = frozenset(
    {"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash"}
)
_SHELL_FLAGS: Final = frozenset({"-c", "-lc", "-ic"})


@dataclass(slots=True)
class Node:
    """One event of a parsed session, before it gets its fixture index."""

    kind: Literal["message", "command", "boundary", "answer"]
    author: Literal["user", "agent", "tool", "system"]
    text: str = ""
    command: str = ""
    exit_code: int | None = None
    error: bool | None = None
    boundary: Literal["compaction", "restart", "child_handoff"] | None = None
    child: list[Node] | None = None
    child_complete: bool = False
    model: str | None = None


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A session file as read: its path, size and the SHA-256 of exactly the bytes read."""

    path: str
    size: int
    sha256: str


@dataclass(slots=True)
class Session:
    """One parsed session file (or several files of one session, joined)."""

    agent: Agent
    files: list[SourceFile]
    session_id: str | None = None
    agent_version: str | None = None
    cwd: str | None = None
    models: list[str] = field(default_factory=list)
    events: list[Node] = field(default_factory=list)
    unknown: Counter[str] = field(default_factory=Counter)
    input_tokens: int | None = None
    output_tokens: int | None = None
    parent_id: str | None = None
    """Set when the whole file is a subagent's trace: the id of the session it works for."""
    first_timestamp: str | None = None
    records: int = 0


class SessionRefused(SchemaError):
    """A session file read whole but refused (a malformed line); carries the file's digest."""

    def __init__(self, message: str, sha256: str) -> None:
        super().__init__(message)
        self.sha256 = sha256


def check_limit(max_bytes: int) -> int:
    """``max_bytes`` if it lies between 1 byte and :data:`SESSION_CEILING`."""
    if not 0 < max_bytes <= SESSION_CEILING:
        raise UsageError(
            f"--max-bytes {max_bytes}: must be between 1 and {SESSION_CEILING} bytes (1 GiB)"
        )
    return max_bytes


def read_lines(path: str, limit: int) -> tuple[SourceFile, list[tuple[int, dict[str, Any]]]]:
    """Every non-empty line of ``path`` as a JSON object with its 1-based line number.

    One descriptor, regular files only, ``limit`` enforced while reading. Raises
    :class:`SchemaError` naming the line for invalid UTF-8, invalid JSON or a non-object.
    """
    digest = hashlib.sha256()
    chunks: list[bytes] = []

    def keep(chunk: bytes) -> None:
        digest.update(chunk)
        chunks.append(chunk)

    total = stream_regular(
        path,
        limit,
        keep,
        what=f"the session limit of {limit}",
        hint=" bytes (raise it with --max-bytes)",
    )
    source = SourceFile(path=path, size=total, sha256=digest.hexdigest())
    data = b"".join(chunks)
    try:
        return source, list(_parse_lines(path, data))
    except SchemaError as exc:
        raise SessionRefused(str(exc), source.sha256) from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


# One decoder for every line (building one per line costs more than decoding short lines).
_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)
MAX_NESTING: Final = 200
"""The deepest nesting of arrays and objects a session line may have (real records nest a
few levels; Python's decoder recurses once per level and gives up near 1,000)."""
_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET: Final = re.compile(r"[^\[\]{}]+")


def _too_deep(text: str) -> bool:
    """Whether ``text`` nests arrays and objects deeper than :data:`MAX_NESTING` (no
    recursion; brackets inside strings do not count)."""
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return False
    depth = 0
    for char in _NOT_BRACKET.sub("", _STRING.sub("", text)):
        depth += 1 if char in "[{" else -1
        if depth > MAX_NESTING:
            return True
    return False


def loads_bounded(text: str) -> Any:
    """``json.loads`` of a string found inside a record, or ``None`` when it is not JSON or
    nests deeper than :data:`MAX_NESTING`."""
    if _too_deep(text):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _parse_lines(path: str, data: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    lines = data.split(b"\n")
    last = len(lines)
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaError(
                f"{path}: line {number}: not valid UTF-8 (byte {exc.start}); session refused"
            ) from None
        if _too_deep(text):
            raise SchemaError(
                f"{path}: line {number}: nested deeper than {MAX_NESTING} levels; session refused"
            )
        try:
            value = _DECODER.decode(text)
        except json.JSONDecodeError as exc:
            truncated = " (the last line is cut off)" if number == last else ""
            raise SchemaError(
                f"{path}: line {number}: not valid JSON{truncated}: {exc.msg} (column "
                f"{exc.colno}); session refused"
            ) from None
        except ValueError as exc:
            truncated = " (the last line is cut off)" if number == last else ""
            message = str(exc).split(":", 1)[0]
            raise SchemaError(
                f"{path}: line {number}: not valid JSON{truncated}: {message}; session refused"
            ) from None
        if not isinstance(value, dict):
            raise SchemaError(f"{path}: line {number}: not a JSON object; session refused")
        yield number, value


def is_one_of(value: Any, names: frozenset[str]) -> bool:
    """Whether a recorded field is one of ``names`` (a list or object where a name belongs is
    not: it is counted as unknown, never a crash)."""
    return isinstance(value, str) and value in names


def clip(text: str) -> str:
    """``text`` cut to :data:`TEXT_CLIP` characters, saying how much was cut."""
    if len(text) <= TEXT_CLIP:
        return text
    return f"{text[:TEXT_CLIP]}\n[... {len(text) - TEXT_CLIP} characters clipped on import]"


def shell_command(argv: Any) -> str | None:
    """The command string of a shell call's argv (``bash -lc CMD`` gives ``CMD``)."""
    if isinstance(argv, str):
        return argv or None
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        return None
    if len(argv) == 3 and argv[0] in _SHELLS and argv[1] in _SHELL_FLAGS:
        return str(argv[2]) or None
    return shlex.join(argv)


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return ""


def int_value(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- Claude Code ------------------------------------------------------------------------------
