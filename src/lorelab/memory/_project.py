"""Which project a command run in some directory belongs to, found as git finds a repository.

Kept apart from the store (no SQLite import): the hooks resolve their home with it on every
call.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

DEFAULT_DIRNAME: Final = ".lorelab"
_REPOSITORY_MARKERS: Final = (".git", ".hg", ".jj")


def find_project(start: str | os.PathLike[str] | None = None) -> Path:
    """The project directory for ``start`` (default: the current directory).

    Walking up from ``start``: the nearest directory holding a ``.lorelab`` memory home (so no
    store is ever created below an existing one); else the nearest repository root (a ``.git``
    directory or file, as in a worktree or submodule, or ``.hg`` / ``.jj``); else ``start``.
    """
    first = Path(os.path.abspath(start if start is not None else os.getcwd()))
    chain = [first, *first.parents]
    for directory in chain:
        if (directory / DEFAULT_DIRNAME).is_dir():
            return directory
    for directory in chain:
        if any(os.path.lexists(directory / marker) for marker in _REPOSITORY_MARKERS):
            return directory
    return first
