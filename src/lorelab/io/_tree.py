"""Removing a directory tree a test left behind, however deep, without following symlinks.

``shutil.rmtree`` recurses once per level, so a 3,000-deep tree raises ``RecursionError``
(and it is not an ``OSError``: ``ignore_errors`` does not catch it). This walk keeps one open
directory and a stack of (name, device, inode) entries: it descends with ``openat`` and comes
back up through ``..``, checking each parent is the directory it came from, so neither the
interpreter's stack nor the process's descriptor limit bounds the depth. A directory the test
made read-only is given back to its owner first (``fchmod``) so that its entries can go.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Final

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_dir(name: str, parent: int | None) -> int:
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        # A directory the test left without read or search access: its owner may restore it.
        os.chmod(name, 0o700, dir_fd=parent)
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    with contextlib.suppress(OSError):
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o700 != 0o700:
            os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) | 0o700)
    return fd


def _first_subdirectory(fd: int) -> str | None:
    """Unlink every non-directory entry of ``fd``; return the first subdirectory's name."""
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                return entry.name
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.name, dir_fd=fd)
    return None


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Remove ``path`` and everything below it; a missing ``path`` is not an error.

    Symlinks are removed, never followed. Raises ``OSError`` when an entry cannot be removed,
    or when a directory changed under the walk (a parent reached through ``..`` is not the one
    it came down from).
    """
    top = os.fspath(Path(path))
    try:
        if not stat.S_ISDIR(os.lstat(top).st_mode):
            os.unlink(top)
            return
    except FileNotFoundError:
        return
    fd = _open_dir(top, None)
    # (name in its parent, device, inode) of each directory above the current one.
    above: list[tuple[str, int, int]] = []
    try:
        while True:
            child = _first_subdirectory(fd)
            if child is not None:
                info = os.fstat(fd)
                child_fd = _open_dir(child, fd)
                above.append((child, info.st_dev, info.st_ino))
                os.close(fd)
                fd = child_fd
                continue
            if not above:
                break
            name, device, inode = above.pop()
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) != (device, inode):
                raise OSError(f"{top}: a directory moved while it was being removed")
            os.rmdir(name, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(top)
