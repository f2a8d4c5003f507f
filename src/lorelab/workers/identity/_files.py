"""Binding primitives: resolve and hash the files an argv names, without running anything."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lorelab.errors import InputFileError, PreflightError
from lorelab.io import LAUNCHER_HASH_CAP, SCRIPT_HASH_CAP, sha256_bytes
from lorelab.workers._tools import find_executable
from lorelab.workers.identity._cache import file_sha256
from lorelab.workers.identity._models import BoundFile, BoundKind, InlineSource


def hash_file(path: Path, *, cap: int) -> str:
    """SHA-256 of a file the binder has screened: every bound file is hashed through here
    (an unchanged file keeps its hash: :mod:`lorelab.workers.identity._cache`)."""
    return file_sha256(path, cap=cap)


def _unless_name_too_long(check: Callable[[Path], bool], path: Path) -> bool:
    try:
        return check(path)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return False
        raise


def is_file(path: Path) -> bool:
    """``path.is_file()``, except that a name too long for the OS names no file (not a crash)."""
    return _unless_name_too_long(Path.is_file, path)


def is_dir(path: Path) -> bool:
    """``path.is_dir()``, except that a name too long for the OS names no directory."""
    return _unless_name_too_long(Path.is_dir, path)


def mode_bits(st: os.stat_result) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


def resolve_launcher(
    declared: str, cwd: Path, search_path: Sequence[str]
) -> tuple[Path, Literal["absolute", "cwd", "path-lookup"], bool]:
    """Resolve argv[0] as ``execvp`` in the child (already in the trial cwd) would."""
    found = find_executable(declared, cwd, search_path)
    if found is not None:
        return found.path, found.via, found.cwd_relative
    if os.path.isabs(declared):
        raise InputFileError(f"worker launcher {declared!r} is not an executable file")
    if "/" in declared:
        raise InputFileError(
            f"worker launcher {declared!r} is not an executable file in the trial cwd {cwd}"
        )
    raise InputFileError(
        f"worker launcher {declared!r} was not found on PATH (searched {len(search_path)} "
        "entries, relative entries against the trial cwd)"
    )


def record_file(
    kind: BoundKind, declared: str, path: Path, cwd_relative: bool, cap: int = SCRIPT_HASH_CAP
) -> BoundFile:
    absolute = Path(os.path.abspath(path))
    try:
        st = os.stat(absolute)
    except OSError as exc:
        raise PreflightError(f"{kind} {declared!r} ({absolute}): {exc.strerror}") from None
    return BoundFile(
        kind=kind,
        declared=declared,
        path=str(absolute),
        resolved_target=os.path.realpath(absolute),
        cwd_relative=cwd_relative,
        sha256=hash_file(absolute, cap=cap),
        mode=mode_bits(st),
        size=st.st_size,
    )


def read_head(path: Path, size: int = 512) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError:
        return b""


@dataclass(slots=True)
class Binding:
    cwd: Path
    search_path: list[str]
    python_path: list[str]
    files: list[BoundFile] = field(default_factory=list)
    inline: list[InlineSource] = field(default_factory=list)
    # The module a Python launcher runs with -m, so a shipped adapter's tool can be bound.
    module: str | None = None

    def bind(
        self, kind: BoundKind, declared: str, path: Path, cwd_relative: bool, cap: int
    ) -> None:
        record = record_file(kind, declared, path, cwd_relative, cap)
        if all((f.kind, f.path) != (record.kind, record.path) for f in self.files):
            self.files.append(record)

    def inline_source(self, flag: str, source: str) -> None:
        data = source.encode("utf-8", "surrogatepass")
        self.inline.append(InlineSource(flag=flag, sha256=sha256_bytes(data), bytes=len(data)))

    def relative(self, declared: str, kind: str) -> tuple[Path, bool]:
        """Resolve a script-like operand: absolute as is, else against the trial cwd only."""
        if os.path.isabs(declared):
            path, cwd_relative = Path(declared), False
        else:
            path, cwd_relative = self.cwd / declared, True
        if not is_file(path):
            raise PreflightError(not_a_file(kind, declared, path, self.cwd))
        return path, cwd_relative


def file_type(path: Path) -> str:
    """What ``path`` is in words ("absent", "a directory", "a FIFO"...); never opens it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "a broken symbolic link" if os.path.islink(path) else "absent"
    except NotADirectoryError:
        return "absent (a parent is not a directory)"
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    mode = st.st_mode
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def not_a_file(kind: str, declared: str, path: Path, cwd: Path) -> str:
    """The preflight message for a script-like operand that is not a regular file."""
    where = "" if os.path.isabs(declared) else f" in the trial cwd {cwd}"
    what = file_type(path)
    if what.startswith("absent"):
        return (
            f"{kind} {declared!r} is {what}{where}; relative paths resolve only against the "
            "trial cwd, never against the lorelab checkout"
        )
    return f"{kind} {declared!r}{where} is {what}, not a script file lorelab can bind"


def bind_shebang(binding: Binding, launcher: Path, env_path: Sequence[str]) -> None:
    first = read_head(launcher, 256).split(b"\n", 1)[0]
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        raise PreflightError(f"launcher {launcher} has an empty shebang line")
    interpreter = words[0]
    if not os.path.isabs(interpreter):
        raise PreflightError(
            f"launcher {launcher} names a relative shebang interpreter {interpreter!r}"
        )
    binding.bind("interpreter", interpreter, Path(interpreter), False, LAUNCHER_HASH_CAP)
    if Path(interpreter).name == "env":
        names = [word for word in words[1:] if not word.startswith("-")]
        if not names:
            raise PreflightError(f"launcher {launcher}: '#!{interpreter}' names no program")
        program, _, cwd_relative = resolve_launcher(names[0], binding.cwd, env_path)
        binding.bind("interpreter", names[0], program, cwd_relative, LAUNCHER_HASH_CAP)


def is_under(path: Path, cwd: Path) -> bool:
    absolute = Path(os.path.abspath(path))
    return absolute == cwd or cwd in absolute.parents


@dataclass(frozen=True, slots=True)
class Parsed:
    program_args: list[str]
    inline_indices: frozenset[int]
    # Whether operands naming existing files relative to the trial cwd are bound too: for every
    # launcher but Python and Node, whose program lorelab cannot otherwise tell from its data.
    relative_operands: bool = False


def bind_file_operands(binding: Binding, operands: Iterable[str], relative: bool) -> None:
    """Bind every operand (or ``--flag=value``) naming an existing regular file.

    Absolute files always; with ``relative``, files relative to the trial cwd too. A file
    already bound in another role (the script) is not bound twice.
    """
    for operand in operands:
        value = operand.split("=", 1)[1] if operand.startswith("-") and "=" in operand else operand
        if not value:
            continue
        if os.path.isabs(value):
            path, cwd_relative = Path(value), False
        elif relative:
            path, cwd_relative = binding.cwd / value, True
        else:
            continue
        if not is_file(path):
            continue
        absolute = str(Path(os.path.abspath(path)))
        if any(f.path == absolute for f in binding.files):
            continue
        binding.bind("operand", value, path, cwd_relative, SCRIPT_HASH_CAP)
