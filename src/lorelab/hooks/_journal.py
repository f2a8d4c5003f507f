"""The session journal: what a hooked agent did, one redacted, bounded JSON line per event.

Journals live under the memory home (``<home>/hooks/sessions/<session>.jsonl``, 0600). The
hooks read them back to write a checkpoint before a compaction and to propose an experience
when the agent stops.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from lorelab._time import timestamp

JOURNAL_LIMIT: Final = 2 * 1024 * 1024  # bytes; past it, events are no longer journaled
TEXT_LIMIT: Final = 2000  # characters kept of a command or a prompt
REDACT_WINDOW: Final = 64 * 1024  # characters redacted before the cut to TEXT_LIMIT
LOG_NAME: Final = "hooks.log"
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def session_file(home: Path, session_id: str) -> Path:
    """The journal of ``session_id`` (an unsafe id is hashed, never used as a path)."""
    safe = _SAFE.sub("_", session_id)[:80]
    if safe != session_id or not safe.strip("._"):
        safe = f"{safe[:40]}-{hashlib.sha256(session_id.encode()).hexdigest()[:16]}"
    return home / "hooks" / "sessions" / f"{safe}.jsonl"


def bounded(text: str) -> str:
    """``text`` cut to :data:`TEXT_LIMIT` characters (marked when cut)."""
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 12] + " [truncated]"


@dataclass(frozen=True, slots=True)
class Journal:
    """One session's journal file."""

    path: Path

    def append(self, entry: dict[str, Any]) -> bool:
        """Append one entry; False (and nothing written) once the journal is full."""
        line = json.dumps({"at": timestamp(), **entry}, ensure_ascii=False) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        size = self.path.stat().st_size if self.path.exists() else 0
        if size + len(line.encode()) > JOURNAL_LIMIT:
            return False
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(descriptor, "a", encoding="utf-8") as out:
            out.write(line)
        return True

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, oldest first (a damaged line is skipped)."""
        if not self.path.exists():
            return []
        found = []
        with self.path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                try:
                    value = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(value, dict):
                    found.append(value)
        return found


def create_home(home: Path) -> None:
    """Make a missing memory home, trusted as this user's own (see ``lorelab._state``)."""
    from lorelab._state import NotPrivate, create_trusted_home

    # Made, even when the state directory is not private (the home then stays untrusted).
    with contextlib.suppress(NotPrivate):
        create_trusted_home(home)


def log_line(home: Path, message: str) -> None:
    """Append one line to the hooks log under the memory home (never raises)."""
    try:
        if not os.path.lexists(home):
            create_home(home)
        descriptor = os.open(home / LOG_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(descriptor, "a", encoding="utf-8") as out:
            out.write(f"{timestamp()} {' '.join(message.split())}\n")
    except OSError:
        pass  # the log is best effort: a hook never fails the agent over its own log
