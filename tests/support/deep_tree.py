"""A directory tree deeper than the interpreter's recursion limit, as a hostile test leaves one."""

from __future__ import annotations

import os

DEPTH = 3000

MAKE_DEEP_TREE = """\
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
for _ in range(int(sys.argv[2])):
    os.mkdir("d", dir_fd=fd)
    os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
    child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.close(fd)
    fd = child
os.close(fd)
"""
"""``python -c MAKE_DEEP_TREE DIR DEPTH``: DEPTH nested directories ``d`` under DIR, a file in each
(the full path is far longer than PATH_MAX: only ``openat`` reaches the bottom)."""


def make_deep_tree(base: str | os.PathLike[str], depth: int = DEPTH) -> None:
    """The same tree, built in this process."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)
