"""The project as it was when the run started: read once, materialised fresh for every run.

Every task x condition gets a new copy of the same bytes, so no condition ever sees a tree
another condition touched, and a source tree edited during the run changes nothing. Memory
homes (``.lorelab``), version-control metadata and caches are left out, so a baseline host
never finds memory output inside its project.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lorelab.errors import InvalidInput, PathError
from lorelab.workspace import is_virtualenv

EXCLUDED_DIRS: Final = frozenset(
    {
        ".lorelab",
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
    }
)
MAX_FILES: Final = 5000
MAX_BYTES: Final = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    """One regular file of the snapshot."""

    path: str
    data: bytes
    executable: bool


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A project tree held in memory, with one digest over paths, modes and contents."""

    source: Path
    files: tuple[SnapshotFile, ...]
    sha256: str

    def materialise(self, target: Path) -> Path:
        """Write the snapshot into the new directory ``target`` (created 0700)."""
        os.mkdir(target, 0o700)
        for item in self.files:
            path = target / item.path
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                view = memoryview(item.data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, 0o700 if item.executable else 0o600)
            finally:
                os.close(fd)
        return target

    def paths(self) -> list[str]:
        """The snapshot's relative file paths, in order."""
        return [item.path for item in self.files]

    def changed_files(self, tree: Path) -> list[str]:
        """Paths added, removed or modified in ``tree`` relative to the snapshot."""
        before = {item.path: item.data for item in self.files}
        after = dict(_walk(tree, ""))
        changed = [path for path in before if path not in after]
        for relative, full in after.items():
            if relative not in before:
                changed.append(relative)
                continue
            try:
                if full.read_bytes() != before[relative]:
                    changed.append(relative)
            except OSError:
                changed.append(relative)
        return sorted(changed)


def _walk(directory: Path, prefix: str) -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    with os.scandir(directory) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    for entry in entries:
        relative = f"{prefix}{entry.name}"
        if entry.is_symlink():
            raise PathError(f"project path {relative!r}: is a symlink; symlinks are never copied")
        if entry.is_dir(follow_symlinks=False):
            if entry.name in EXCLUDED_DIRS or is_virtualenv(entry.path):
                continue
            found.extend(_walk(Path(entry.path), f"{relative}/"))
        elif entry.is_file(follow_symlinks=False):
            if entry.name.endswith((".pyc", ".pyo")):
                continue
            found.append((relative, Path(entry.path)))
        else:
            raise PathError(f"project path {relative!r}: not a regular file or directory")
    return found


def take_snapshot(source: Path) -> Snapshot:
    """Read the project at ``source`` (a real directory, no symlinks inside) into memory."""
    try:
        st = os.lstat(source)
    except FileNotFoundError:
        raise PathError(f"project {source}: no such directory") from None
    if not stat.S_ISDIR(st.st_mode):
        raise PathError(f"project {source}: not a directory (symlinks are never followed)")
    files: list[SnapshotFile] = []
    total = 0
    digest = hashlib.sha256()
    for relative, full in _walk(source, ""):
        data = full.read_bytes()
        total += len(data)
        if len(files) >= MAX_FILES or total > MAX_BYTES:
            raise InvalidInput(
                f"project {source}: larger than {MAX_FILES} files or {MAX_BYTES} bytes"
            )
        executable = bool(os.lstat(full).st_mode & stat.S_IXUSR)
        files.append(SnapshotFile(relative, data, executable))
        digest.update(f"{relative}\0{int(executable)}\0{len(data)}\0".encode())
        digest.update(data)
    if not files:
        raise InvalidInput(f"project {source}: holds no files")
    return Snapshot(source, tuple(files), digest.hexdigest())
