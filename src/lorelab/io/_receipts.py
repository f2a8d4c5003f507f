"""Receipts: a fresh private output directory, and files in it written once, atomically.

An output directory must not exist beforehand (a file, a directory or a dangling symlink all
count as existing); it is created 0700 whatever the umask. Every receipt is written 0600 to a
temporary file in the same directory, fsynced, and then hard-linked into place, which fails
instead of replacing a receipt that already exists.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from lorelab.errors import InputFileError, OutputExistsError, PathError
from lorelab.io._json import pretty_json

_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def validate_receipt_name(name: str) -> str:
    """Return ``name`` if it is a plain, visible file name; raise :class:`PathError` otherwise."""
    if not _NAME.fullmatch(name) or ".." in name:
        raise PathError(
            f"receipt name {name!r} is invalid: use letters, digits, '.', '_' and '-', "
            "no separators, no '..', not hidden"
        )
    return name


def _exists(path: Path) -> bool:
    try:
        os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise InputFileError(f"{path}: cannot be used as an output path: {exc.strerror}") from None
    return True


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(slots=True)
class ReceiptDir:
    """An output directory created by :func:`create_output_dir`; receipts are written through it."""

    path: Path
    written: list[str] = field(default_factory=list)

    def write_bytes(self, name: str, data: bytes) -> Path:
        """Write ``data`` as receipt ``name`` (0600, atomic); refuse if it already exists."""
        target = self.path / validate_receipt_name(name)
        if _exists(target):
            raise OutputExistsError(
                f"{target}: receipt already exists; receipts are never replaced"
            )
        temp = self.path / f".{name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(
            temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600
        )
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temp, target)
        except FileExistsError:
            raise OutputExistsError(
                f"{target}: receipt already exists; receipts are never replaced"
            ) from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
        _fsync_dir(self.path)
        self.written.append(name)
        return target

    def write_text(self, name: str, text: str) -> Path:
        """Write UTF-8 ``text`` as receipt ``name``."""
        return self.write_bytes(name, text.encode("utf-8"))

    def write_json(self, name: str, obj: Any) -> Path:
        """Write a JSON value or pydantic model as indented JSON receipt ``name``."""
        return self.write_text(name, pretty_json(obj))

    def subdir(self, name: str) -> ReceiptDir:
        """Create a fresh 0700 directory ``name`` inside this one and return it."""
        return create_output_dir(self.path / validate_receipt_name(name), parents=False)

    def contains(self, name: str) -> bool:
        """Whether receipt ``name`` exists here."""
        return _exists(self.path / validate_receipt_name(name))


def create_output_dir(path: str | os.PathLike[str], *, parents: bool = True) -> ReceiptDir:
    """Create a fresh output directory 0700; refuse any path that already exists.

    Missing parent directories are created with the default mode when ``parents`` is true.
    """
    target = Path(os.path.abspath(os.fspath(path)))
    if _exists(target):
        raise OutputExistsError(f"{path}: output path already exists; choose a new directory")
    try:
        if parents:
            target.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(target, 0o700)
    except FileExistsError:
        raise OutputExistsError(
            f"{path}: output path already exists; choose a new directory"
        ) from None
    except OSError as exc:
        raise InputFileError(
            f"{path}: cannot create the output directory: {exc.strerror}"
        ) from None
    os.chmod(target, 0o700)
    return ReceiptDir(target)
