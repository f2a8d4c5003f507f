"""Reading a user's project into canonical file entries, and source selection."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lorelab.errors import InputFileError, PathError, UsageError
from lorelab.workspace import MAX_PROJECT_BYTES, MAX_PROJECT_FILES, FileEntry, canonical_path

# Directories that are never part of what a test suite needs: VCS data, environments, caches.
SKIPPED_DIRS: Final = frozenset(
    {"__pycache__", "node_modules", "venv", "env", "build", "dist", "htmlcov"}
)


@dataclass(frozen=True, slots=True)
class ProjectFiles:
    """The project's text files as canonical entries, and what was left out and why."""

    files: tuple[FileEntry, ...]
    skipped: tuple[str, ...]


def read_project(project: Path) -> ProjectFiles:
    """Every regular UTF-8 text file of ``project`` under a canonical path.

    Hidden entries (``.git``, ``.venv``, ``.lorelab``, ...), symlinks, caches, environments and
    non-UTF-8 files are left out and listed; the file count and total size are bounded.
    """
    if not project.is_dir():
        raise InputFileError(f"project {project}: not a directory")
    files: list[FileEntry] = []
    skipped: list[str] = []
    total = 0
    for directory, dirnames, filenames in os.walk(project):
        relative_dir = os.path.relpath(directory, project)
        prefix = "" if relative_dir == "." else relative_dir.replace(os.sep, "/") + "/"
        kept = []
        for name in sorted(dirnames):
            full = os.path.join(directory, name)
            if name.startswith(".") or name in SKIPPED_DIRS or os.path.islink(full):
                skipped.append(prefix + name + "/")
            else:
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            relative = prefix + name
            full = os.path.join(directory, name)
            if name.startswith(".") or os.path.islink(full) or not os.path.isfile(full):
                skipped.append(relative)
                continue
            try:
                canonical_path(relative)
                content = Path(full).read_bytes().decode("utf-8")
            except (PathError, UnicodeDecodeError):
                skipped.append(relative)
                continue
            total += len(content.encode("utf-8"))
            files.append(FileEntry(path=relative, content=content))
            if len(files) > MAX_PROJECT_FILES or total > MAX_PROJECT_BYTES:
                raise InputFileError(
                    f"project {project}: more than {MAX_PROJECT_FILES} files or "
                    f"{MAX_PROJECT_BYTES} bytes of text; point at a smaller project"
                )
    return ProjectFiles(tuple(files), tuple(skipped))


def select_sources(
    project: Path, files: Sequence[FileEntry], sources: Sequence[str]
) -> tuple[FileEntry, ...]:
    """The entries named by ``sources`` (paths relative to ``project``, or absolute inside it)."""
    by_path = {entry.path: entry for entry in files}
    root = project.resolve()
    chosen: list[FileEntry] = []
    for source in sources:
        candidate = Path(source)
        full = (candidate if candidate.is_absolute() else root / candidate).resolve()
        try:
            relative = full.relative_to(root).as_posix()
        except ValueError:
            raise UsageError(f"--source {source}: not inside the project {project}") from None
        if relative not in by_path:
            raise UsageError(
                f"--source {source}: not a readable text file of the project "
                "(missing, hidden, binary or a symlink)"
            )
        chosen.append(by_path[relative])
    if not chosen:
        raise UsageError("at least one --source file is required")
    return tuple(dict.fromkeys(chosen))


def detect_runner(sources: Sequence[FileEntry]) -> str:
    """``node`` when every source is JavaScript, ``pytest`` when every source is Python."""
    suffixes = {Path(entry.path).suffix for entry in sources}
    if suffixes <= {".js", ".cjs", ".mjs"}:
        return "node"
    if suffixes <= {".py"}:
        return "pytest"
    raise UsageError(
        f"cannot tell the runner from sources with suffixes {sorted(suffixes)}; pass --runner"
    )
