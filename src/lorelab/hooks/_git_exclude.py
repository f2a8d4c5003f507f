"""Keeping lorelab's own files out of ``git status``: the project's ``.git/info/exclude``.

The memory home (``.lorelab/``) and the backups ``hooks install`` writes before changing an
agent's configuration (``*.lorelab-backup-*``) are local state, never to be committed. The
exclude file is the repository's own, unshared ignore list, so adding them there changes
nothing anybody else sees (a ``.gitignore`` would be a change to commit).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

EXCLUDED: Final = (".lorelab/", "*.lorelab-backup-*")
"""The patterns: the memory home and the configuration backups."""
_HEADER: Final = "# lorelab: local memory and hook-configuration backups (lorelab hooks install)"


@dataclass(frozen=True, slots=True)
class ExcludeState:
    """Where the exclude file is and which of lorelab's patterns it still lacks."""

    path: Path
    missing: tuple[str, ...]


def _git_dir(project: Path) -> Path | None:
    """The repository's git directory for ``project`` (a ``.git`` folder, or the folder a
    ``.git`` file of a worktree or submodule points to), or None outside a repository."""
    for folder in (project, *project.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return dot_git
        if dot_git.is_file():
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                target = Path(text.removeprefix("gitdir:").strip())
                return target if target.is_absolute() else (folder / target).resolve()
            return None
    return None


def _common_dir(git_dir: Path) -> Path:
    """A linked worktree shares its main repository's ``info/exclude`` (``commondir``)."""
    common = git_dir / "commondir"
    if common.is_file():
        target = Path(common.read_text(encoding="utf-8").strip())
        return target if target.is_absolute() else (git_dir / target).resolve()
    return git_dir


def exclude_state(project: Path) -> ExcludeState | None:
    """The exclude file of ``project``'s repository and the patterns it lacks; None outside a
    git repository."""
    git_dir = _git_dir(project.resolve())
    if git_dir is None:
        return None
    path = _common_dir(git_dir) / "info" / "exclude"
    present = set()
    if path.is_file():
        present = {line.strip() for line in path.read_text(encoding="utf-8").splitlines()}
    return ExcludeState(path, tuple(p for p in EXCLUDED if p not in present))


def add_excludes(state: ExcludeState) -> tuple[str, ...]:
    """Append the missing patterns to the exclude file (kept as it was otherwise); what was
    added."""
    if not state.missing:
        return ()
    state.path.parent.mkdir(parents=True, exist_ok=True)
    old = state.path.read_bytes() if state.path.is_file() else b""
    lines = [_HEADER, *state.missing]
    text = ("" if not old or old.endswith(b"\n") else "\n") + "\n".join(lines) + "\n"
    with open(state.path, "ab") as handle:
        handle.write(text.encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())
    return state.missing
