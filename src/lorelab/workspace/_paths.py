"""Canonical relative paths, and the ``{path, content}`` file entry that carries them."""

import re
from collections.abc import Iterable
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lorelab.errors import PathError

MAX_PATH_LENGTH: Final = 240
MAX_PATH_DEPTH: Final = 8
_SEGMENT: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


def canonical_path(path: str) -> str:
    """Return ``path`` if it is a canonical relative path, else raise :class:`PathError`.

    Canonical: '/'-separated segments of letters, digits, '.', '_' and '-', none empty, none
    '.' or '..', none starting with '-' or '.', no absolute path, no backslash, no NUL, at most
    ``MAX_PATH_LENGTH`` characters and ``MAX_PATH_DEPTH`` segments.
    """
    if not isinstance(path, str) or not path:
        raise PathError(f"path {path!r}: empty path")
    if "\x00" in path:
        raise PathError(f"path {path!r}: contains NUL")
    if "\\" in path:
        raise PathError(f"path {path!r}: contains a backslash")
    if path.startswith("/"):
        raise PathError(f"path {path!r}: absolute paths are not allowed")
    if len(path) > MAX_PATH_LENGTH:
        raise PathError(f"path {path[:40]!r}...: longer than {MAX_PATH_LENGTH} characters")
    segments = path.split("/")
    if len(segments) > MAX_PATH_DEPTH:
        raise PathError(f"path {path!r}: deeper than {MAX_PATH_DEPTH} segments")
    for segment in segments:
        if segment in ("", ".", ".."):
            raise PathError(f"path {path!r}: empty, '.' or '..' segment")
        if not _SEGMENT.fullmatch(segment):
            raise PathError(
                f"path {path!r}: segment {segment!r} must use letters, digits, '.', '_', '-' "
                "and not start with '.' or '-'"
            )
    return path


def claim_path(seen: dict[str, str], path: str) -> None:
    """Add ``path`` to ``seen`` (paths by their case-folded form); a :class:`PathError` if it
    equals one already there, or differs only by letter case."""
    key = path.casefold()
    if key in seen:
        raise PathError(f"paths {seen[key]!r} and {path!r} collide (equal ignoring case)")
    seen[key] = path


def check_distinct(paths: Iterable[str]) -> None:
    """Raise :class:`PathError` if two paths are equal or differ only by letter case."""
    seen: dict[str, str] = {}
    for path in paths:
        claim_path(seen, path)


class FileEntry(BaseModel):
    """One file of a project: a canonical relative path and its UTF-8 text."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    path: str = Field(description="Canonical relative path ('/'-separated, no '..').")
    content: str = Field(description="The file's full UTF-8 text.")

    @field_validator("path")
    @classmethod
    def _canonical(cls, value: str) -> str:
        try:
            return canonical_path(value)
        except PathError as exc:
            raise ValueError(str(exc)) from None
