"""Where the memory store lives: ``$LORELAB_HOME/memory.db``, else ``.lorelab/memory.db`` in
the project (given, or found from the current directory as git finds a repository)."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from lorelab.errors import InputFileError, UsageError
from lorelab.memory._project import DEFAULT_DIRNAME, find_project
from lorelab.memory._sqlite import SqliteMemoryStore

STORE_FILENAME: Final = "memory.db"
HOME_ENV: Final = "LORELAB_HOME"


def store_path(
    home: str | os.PathLike[str] | None = None,
    project: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Path:
    """The store file: ``home`` if given, else ``$LORELAB_HOME``, else ``<project>/.lorelab``.

    ``project`` defaults to the project the current directory belongs to (:func:`find_project`:
    the nearest ``.lorelab`` above, else the repository root, else the directory itself).
    """
    env = os.environ if environ is None else environ
    if home is not None:
        base = Path(home)
    elif env.get(HOME_ENV):
        base = Path(env[HOME_ENV])
    else:
        base = Path(project if project is not None else find_project()) / DEFAULT_DIRNAME
    try:
        mode = base.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None  # created later where the caller allows it (which names what stands in the way)
    except OSError as exc:  # a name too long, a symlink loop, no permission
        raise InputFileError(f"memory home {base}: {exc.strerror or exc}") from None
    if mode is not None and not stat.S_ISDIR(mode):
        raise UsageError(f"memory home {base}: exists and is not a directory")
    return base / STORE_FILENAME


def memory_home(
    home: str | os.PathLike[str] | None = None,
    project: str | os.PathLike[str] | None = None,
    *,
    create: bool = True,
) -> Path:
    """The memory home directory (the store's parent; checkpoints live there too).

    With ``create``, a home inside a project directory that does not exist is refused (an
    :class:`InputFileError`): a mistyped ``--project`` must never create a directory tree.
    Nothing is created here.
    """
    path = store_path(home, project)
    if create and home is None and not os.environ.get(HOME_ENV):
        project_dir = Path(project) if project is not None else find_project()
        if not project_dir.is_dir():
            raise InputFileError(
                f"project directory {project_dir}: does not exist or is not a directory; "
                "no memory store was created"
            )
    return path.parent


def open_store(
    home: str | os.PathLike[str] | None = None,
    project: str | os.PathLike[str] | None = None,
    *,
    create: bool = True,
) -> SqliteMemoryStore:
    """Open the store at :func:`store_path`, migrating it if it is older.

    With ``create`` (the default) a missing store is created, and its home directory with
    it; but a store inside a project directory that does not exist is refused (an
    :class:`InputFileError`), so a mistyped ``--project`` never creates a directory tree.
    With ``create=False`` (read-only callers) a missing store is an ``InputFileError`` naming
    its path, and nothing is created.
    """
    return SqliteMemoryStore(
        memory_home(home, project, create=create) / STORE_FILENAME, create=create
    )
