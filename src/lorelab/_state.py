"""The user's private state directory: what only this user can have written.

``$XDG_STATE_HOME/lorelab`` (else ``~/.local/state/lorelab``): a directory of mode 0700 owned
by the user, and every file in it 0600. It holds what a project tree must never supply: the
address, token and proof key of each running ``lorelab serve`` (``servers/``), and the project
memory homes the user trusts (``trusted/``). Standard library only: every hook call reads it.

Everything read here is checked with ``lstat``/``fstat``, never followed through a symlink:
owned by the effective user, no group or other permission bits, the expected file type.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import stat
import tempfile
from pathlib import Path
from typing import Any, Final

STATE_DIRNAME: Final = "lorelab"
SERVERS: Final = "servers"
TRUSTED: Final = "trusted"
QUERY_VECTORS: Final = "query-vectors"
MAX_STATE_BYTES: Final = 64 * 1024
MARK_NAME: Final = "trusted.mark"
"""The file in a trusted memory home that holds the random mark of its record."""
_READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class NotPrivate(Exception):
    """A state path that is missing, or that another user (or a symlink) could have supplied."""


def state_dir() -> Path:
    """``$XDG_STATE_HOME/lorelab``, else ``~/.local/state/lorelab`` (a relative value is ignored,
    as the XDG specification says)."""
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "state"
    return base / STATE_DIRNAME


def check_private(info: os.stat_result, path: Path, kind: str) -> None:
    """:class:`NotPrivate` unless ``info`` (an ``lstat``: a symlink is never a ``kind``) is a
    ``kind`` ("file" or "directory") of this user that no one else may read or write."""
    is_kind = stat.S_ISDIR(info.st_mode) if kind == "directory" else stat.S_ISREG(info.st_mode)
    if not is_kind:
        raise NotPrivate(f"{path}: not a {kind} (a symlink is never followed)")
    if info.st_uid != os.geteuid():
        raise NotPrivate(f"{path}: owned by uid {info.st_uid}, not by this user")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise NotPrivate(
            f"{path}: mode {stat.S_IMODE(info.st_mode):04o} lets others in "
            f"({'0700' if kind == 'directory' else '0600'} expected)"
        )


def private_dir(*parts: str, create: bool = False) -> Path:
    """The state directory (or ``parts`` below it), each level checked private.

    With ``create``, missing levels are made 0700; an existing one is never loosened or taken
    over: a level that is not private is :class:`NotPrivate`."""
    path = state_dir()
    if create:
        with contextlib.suppress(FileExistsError):
            path.parent.mkdir(parents=True, exist_ok=True)
    for level in ("", *parts):
        if level:
            path = path / level
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(path, 0o700)
        try:
            info = os.lstat(path)
        except OSError as exc:
            raise NotPrivate(f"{path}: {exc.strerror or exc}") from None
        check_private(info, path, "directory")
    return path


def read_private(path: Path) -> bytes:
    """The bytes of a private state file (at most :data:`MAX_STATE_BYTES`), checked on the
    descriptor that is read: no symlink, owned by this user, mode 0600 or narrower."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        raise NotPrivate(f"{path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        check_private(os.fstat(fd), path, "file")
        data = handle.read(MAX_STATE_BYTES + 1)
    if len(data) > MAX_STATE_BYTES:
        raise NotPrivate(f"{path}: larger than {MAX_STATE_BYTES} bytes")
    return data


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (mode 0600) through a temporary file in the same directory."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def home_key(home: Path) -> str:
    """The name a memory home's entries have in the state directory (its real path, hashed)."""
    return hashlib.sha256(os.path.realpath(home).encode("utf-8", "surrogateescape")).hexdigest()


def server_file(home: Path) -> Path:
    """Where a running ``lorelab serve`` for ``home`` writes its address, token and proof key."""
    return state_dir() / SERVERS / f"{home_key(home)[:32]}.json"


def query_vectors_file(store_file: Path) -> Path:
    """Where the processes serving the store at ``store_file`` share their query vectors (the
    directory is made private when missing; :class:`NotPrivate` when it is not)."""
    return private_dir(QUERY_VECTORS, create=True) / f"{home_key(store_file)[:32]}.db"


def read_json(path: Path) -> dict[str, Any]:
    """A private state file's JSON object (:class:`NotPrivate` if it is not one)."""
    private_dir(path.parent.name)
    data = read_private(path)
    try:
        loaded = json.loads(data)
    except (ValueError, RecursionError):
        raise NotPrivate(f"{path}: not readable JSON") from None
    if not isinstance(loaded, dict):
        raise NotPrivate(f"{path}: not a JSON object")
    return loaded


# ------------------------------------------------------------------ trusted project homes


def _identity(home: Path) -> dict[str, Any]:
    info = os.lstat(home)
    _check_owned_dir(info, home)
    return {"path": os.path.realpath(home), "dev": info.st_dev, "ino": info.st_ino}


def _check_owned_dir(info: os.stat_result, home: Path) -> None:
    if not stat.S_ISDIR(info.st_mode):
        raise NotPrivate(f"{home}: not a directory (a symlink is never followed)")
    if info.st_uid != os.geteuid():
        raise NotPrivate(f"{home}: owned by uid {info.st_uid}, not by this user")


def trust_home(home: Path) -> None:
    """Record ``home`` (an existing directory owned by this user) as one the user trusts.

    A random mark goes both into the home (:data:`MARK_NAME`, 0600) and into the record, so a
    directory made again at the same path is not trusted even if it gets the same inode."""
    try:
        identity = _identity(home)
    except OSError as exc:
        raise NotPrivate(f"{home}: {exc.strerror or exc}") from None
    folder = private_dir(TRUSTED, create=True)
    mark = secrets.token_hex(16)
    try:
        write_private(home / MARK_NAME, mark.encode() + b"\n")
    except OSError as exc:
        raise NotPrivate(f"{home}: cannot write its mark: {exc.strerror or exc}") from None
    record = {**identity, "mark": mark}
    write_private(folder / f"{home_key(home)[:32]}.json", json.dumps(record).encode() + b"\n")


def untrusted_reason(home: Path) -> str | None:
    """Why the project memory home ``home`` is not trusted, or ``None`` when it is.

    Trusted: a directory owned by this user (not a symlink) recorded by :func:`trust_home` with
    the same real path, device and inode, holding the mark of that record, so a directory made
    again at the same place (a clone where the user's own store used to be) is not."""
    try:
        identity = _identity(home)
    except OSError as exc:
        return f"{home}: {exc.strerror or exc}"
    except NotPrivate as exc:
        return str(exc)
    try:
        recorded = read_json(state_dir() / TRUSTED / f"{home_key(home)[:32]}.json")
    except NotPrivate:
        return (
            f"{home}: not created by lorelab for this user, and not trusted with "
            "`lorelab hooks trust`"
        )
    mark = recorded.pop("mark", None)
    try:
        found = read_private(home / MARK_NAME).decode("ascii", "replace").strip()
    except NotPrivate:
        found = ""
    if (
        recorded != identity
        or not isinstance(mark, str)
        or not hmac.compare_digest(found.encode(), mark.encode())
    ):
        return f"{home}: not the directory this user trusted at that path (made again since)"
    return None


def refuse_untrusted_home(home: Path, *, named: bool) -> None:
    """Refuse (:class:`lorelab.errors.PreflightError`) to serve a discovered project memory
    home the user did not make: one a clone or another user supplied. A home the user named
    (``--home``, ``$LORELAB_HOME``) and one that does not exist yet are not checked."""
    if named or os.environ.get("LORELAB_HOME") or not os.path.lexists(home):
        return
    reason = untrusted_reason(home)
    if reason is not None:
        from lorelab.errors import PreflightError

        raise PreflightError(
            f"{reason}; look at it, then trust it with `lorelab hooks trust`, or name it "
            "with --home"
        )


def create_trusted_home(home: Path) -> bool:
    """Make the missing memory home ``home`` (0700) and trust it; ``False`` if it existed."""
    try:
        home.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(home, 0o700)
    except FileExistsError:
        return False
    trust_home(home)
    return True
