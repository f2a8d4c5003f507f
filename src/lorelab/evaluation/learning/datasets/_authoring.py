"""Small helpers that keep the datasets readable: Python source as dedented text, case ids."""

from __future__ import annotations

import textwrap

from lorelab.workspace import FileEntry


def text(code: str) -> str:
    """``code`` without its common indentation and its leading newline."""
    return textwrap.dedent(code).lstrip("\n")


def source(module: str, code: str) -> FileEntry:
    """The source file ``src/<module>.py``."""
    return FileEntry(path=f"src/{module}.py", content=text(code))


def tests(module: str, code: str) -> FileEntry:
    """The pytest file ``tests/test_<module>.py``."""
    return FileEntry(path=f"tests/test_{module}.py", content=text(code))


def cases(module: str, *names: str) -> list[str]:
    """Case ids of ``tests/test_<module>.py`` as pytest reports them."""
    return [f"tests/test_{module}.py::{name}" for name in names]
