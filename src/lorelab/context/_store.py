"""A small persistent store of checkpoints under a memory home: one immutable JSON file each.

Layout: ``<home>/checkpoints/<scope key>/<checkpoint id>.json``, where the scope key is the
first 32 hex digits of the SHA-256 of the scope. Every directory the store creates (the home
and its parents included) is 0700 and every file 0600; every file is written once, atomically
(temporary file, fsync, hard link), and never replaced.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, TypedDict, Unpack

from lorelab.context._checkpoint import (
    CHECKPOINT_ID,
    BoundaryKind,
    Checkpoint,
    FailedCommand,
    RequestContext,
    new_checkpoint_id,
)
from lorelab.errors import IntegrityFailure, OutputExistsError, PathError, UsageError
from lorelab.io import (
    ReceiptDir,
    json_bytes,
    pretty_json,
    read_model,
    sha256_bytes,
    validate_model,
)

MAX_CHECKPOINT_BYTES: Final = 1024 * 1024
"""Largest checkpoint the store accepts (canonical JSON bytes); the reader allows 2 MiB."""


def scope_key(scope: str) -> str:
    """The directory name a scope's checkpoints live in."""
    return sha256_bytes(scope.encode("utf-8"))[:32]


def _private_dir(path: Path) -> None:
    """Create ``path`` and every missing parent 0700; directories that exist are left alone."""
    missing: list[Path] = []
    current = path
    while not os.path.isdir(current):
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            if not os.path.isdir(directory):
                raise PathError(f"{directory}: exists and is not a directory") from None
            continue  # created concurrently by someone else: not ours to chmod
        except OSError as exc:
            raise PathError(f"{directory}: cannot create the directory: {exc.strerror}") from None
        # mkdir's mode is filtered by the umask, so the mode is set explicitly afterwards.
        os.chmod(directory, 0o700)


class CheckpointStore:
    """Checkpoints under ``<home>/checkpoints``; ``home`` is a memory home directory.

    The store never deletes or rewrites a checkpoint: a new boundary writes a new one, and
    :meth:`latest` returns the newest for a scope.
    """

    def __init__(self, home: str | os.PathLike[str]) -> None:
        self.home = Path(home)
        self.root = self.home / "checkpoints"

    def __repr__(self) -> str:
        return f"CheckpointStore({str(self.home)!r})"

    def write(self, checkpoint: Checkpoint) -> str:
        """Persist ``checkpoint`` and return its id; an id already stored is refused."""
        size = json_bytes(checkpoint)
        if size > MAX_CHECKPOINT_BYTES:
            raise UsageError(
                f"checkpoint {checkpoint.id}: {size} bytes exceeds the store limit of "
                f"{MAX_CHECKPOINT_BYTES}"
            )
        if self.get(checkpoint.id) is not None:
            raise OutputExistsError(f"checkpoint {checkpoint.id} already exists in {self.root}")
        directory = self.root / scope_key(checkpoint.scope)
        _private_dir(directory)
        ReceiptDir(directory).write_text(f"{checkpoint.id}.json", pretty_json(checkpoint))
        return checkpoint.id

    def _read(self, path: Path, expected_scope_key: str) -> Checkpoint:
        checkpoint = read_model(path, Checkpoint, "manifest")
        if path.name != f"{checkpoint.id}.json" or scope_key(checkpoint.scope) != (
            expected_scope_key
        ):
            raise IntegrityFailure(
                f"{path}: holds checkpoint {checkpoint.id} of another place in the store"
            )
        return checkpoint

    def get(self, checkpoint_id: str) -> Checkpoint | None:
        """The checkpoint with ``checkpoint_id``, or ``None`` if the store has none."""
        if not CHECKPOINT_ID.fullmatch(checkpoint_id):
            raise UsageError(f"checkpoint id {checkpoint_id!r} is not a checkpoint id")
        if not self.root.is_dir():
            return None
        for directory in sorted(self.root.iterdir()):
            candidate = directory / f"{checkpoint_id}.json"
            if os.path.lexists(candidate):
                return self._read(candidate, directory.name)
        return None

    def _paths(self, scope: str) -> list[Path]:
        directory = self.root / scope_key(scope)
        if not directory.is_dir():
            return []
        # Ids start with their UTC creation time, so name order is creation order.
        return sorted(
            path
            for path in directory.iterdir()
            if path.suffix == ".json" and CHECKPOINT_ID.fullmatch(path.stem)
        )

    def history(self, scope: str) -> list[Checkpoint]:
        """Every checkpoint of ``scope``, oldest first."""
        key = scope_key(scope)
        return [self._read(path, key) for path in self._paths(scope)]

    def latest(self, scope: str) -> Checkpoint | None:
        """The newest checkpoint of ``scope``, or ``None`` if there is none."""
        paths = self._paths(scope)
        return self._read(paths[-1], scope_key(scope)) if paths else None


def new_checkpoint(
    *,
    scope: str,
    boundary: BoundaryKind,
    summary: str,
    notes: Iterable[str] = (),
    request_context: RequestContext | None = None,
    failed_commands: Iterable[FailedCommand] = (),
    source_event_indices: Iterable[int] = (),
    created_at: datetime | None = None,
) -> Checkpoint:
    """Build and validate a checkpoint with a fresh id, without storing it.

    :func:`write_checkpoint` stores one; a caller can also measure a checkpoint against
    :data:`MAX_CHECKPOINT_BYTES` (with :func:`lorelab.io.json_bytes`) before committing to
    writing it.
    """
    when = created_at if created_at is not None else datetime.now(UTC)
    if when.tzinfo is None:
        raise UsageError("checkpoint created_at must carry a time zone")
    checkpoint = validate_model(
        Checkpoint,
        {
            "id": new_checkpoint_id(when),
            "boundary": boundary,
            "scope": scope,
            "notes": list(notes),
            "summary": summary,
            "requestContext": request_context if request_context is not None else {},
            "failedCommands": list(failed_commands),
            "createdAt": when,
            "sourceEventIndices": list(source_event_indices),
        },
        f"checkpoint for scope {scope[:80]!r}",
    )
    return checkpoint


class CheckpointDetails(TypedDict, total=False):
    """What a checkpoint may carry besides its scope, boundary and summary."""

    notes: Iterable[str]
    request_context: RequestContext | None
    failed_commands: Iterable[FailedCommand]
    source_event_indices: Iterable[int]
    created_at: datetime | None


def write_checkpoint(
    store: CheckpointStore,
    *,
    scope: str,
    boundary: BoundaryKind,
    summary: str,
    **details: Unpack[CheckpointDetails],
) -> Checkpoint:
    """Build a checkpoint with a fresh id (:func:`new_checkpoint`), persist it in ``store``
    and return it."""
    checkpoint = new_checkpoint(scope=scope, boundary=boundary, summary=summary, **details)
    store.write(checkpoint)
    return checkpoint


def recover(store: CheckpointStore, scope: str) -> Checkpoint | None:
    """The context to resume ``scope`` from: its newest checkpoint, or ``None``."""
    return store.latest(scope)
