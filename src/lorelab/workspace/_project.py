"""Disposable projects under a run-scoped root: created, copied and filled without symlinks.

Every file is written through directory descriptors opened with ``O_NOFOLLOW``, so no write
ever follows a symlink, even one planted after the checks. Cleanup removes only the projects
this root created; receipts live in output directories elsewhere and are never touched.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Final

from lorelab.errors import InvalidInput, OutputExistsError, PathError
from lorelab.io import remove_tree
from lorelab.workspace._paths import FileEntry, canonical_path, claim_path

MAX_PROJECT_FILES: Final = 2000
MAX_FILE_BYTES: Final = 4 * 1024 * 1024
MAX_PROJECT_BYTES: Final = 32 * 1024 * 1024
# A copied tree keeps its own names (see copy_project), within these bounds.
COPY_MAX_DEPTH: Final = 32
COPY_MAX_PATH_LENGTH: Final = 1024
# Version-control metadata, the memory home and tool caches are skipped by copy_project,
# never read (they are large or rebuilt, and no check needs them); any entry with one of these
# names, at any depth, file or directory.
COPY_SKIPPED_NAMES: Final = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        ".lorelab",
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
    }
)
VENV_MARKER: Final = "pyvenv.cfg"
"""A directory holding this file is a Python virtual environment (PEP 405): copy_project
skips it whatever its name (it is full of symlinks, and checks run with the interpreter on
PATH, not with a copy of it)."""


def is_virtualenv(directory: str | os.PathLike[str]) -> bool:
    """Whether ``directory`` is a Python virtual environment (holds ``pyvenv.cfg``)."""
    return os.path.isfile(os.path.join(directory, VENV_MARKER))


_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def check_layout(paths: Sequence[str]) -> None:
    """Refuse a set of canonical paths that cannot coexist in one tree.

    Two paths may not be equal or differ only by case, and this holds for every directory
    prefix too (``A/x.py`` and ``a/y.py`` would share a directory on a case-insensitive file
    system). A path may not be both a file and a directory (``a`` and ``a/b``).
    """
    files: dict[str, str] = {}
    dirs: dict[str, str] = {}
    for path in paths:
        claim_path(files, path)
        segments = path.split("/")
        for depth in range(1, len(segments)):
            prefix = "/".join(segments[:depth])
            seen = dirs.setdefault(prefix.casefold(), prefix)
            if seen != prefix:
                raise PathError(
                    f"path {path!r}: directory {prefix!r} collides with {seen!r} "
                    "(equal ignoring case)"
                )
    for key, path in files.items():
        if key in dirs:
            raise PathError(f"path {path!r} is both a file and a directory of another path")


def _validate_entries(files: Sequence[FileEntry]) -> list[tuple[str, bytes]]:
    if len(files) > MAX_PROJECT_FILES:
        raise InvalidInput(f"{len(files)} files exceed the limit of {MAX_PROJECT_FILES} a project")
    encoded: list[tuple[str, bytes]] = []
    total = 0
    for entry in files:
        # Entries built with model_construct skip validation; check again.
        path = canonical_path(entry.path)
        data = entry.content.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise InvalidInput(f"path {path!r}: {len(data)} bytes exceed {MAX_FILE_BYTES}")
        total += len(data)
        if total > MAX_PROJECT_BYTES:
            raise InvalidInput(f"files exceed {MAX_PROJECT_BYTES} bytes in total at {path!r}")
        encoded.append((path, data))
    check_layout([path for path, _ in encoded])
    return encoded


def _open_dir(name: str, parent_fd: int | None, *, shown: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        raise PathError(f"{shown}: no such directory") from None
    except OSError as exc:
        # O_NOFOLLOW refuses a symlink with ENOTDIR (with O_DIRECTORY) or ELOOP; name it.
        if _is_symlink(name, parent_fd):
            raise PathError(f"{shown}: is a symlink; symlinks are never followed") from None
        if isinstance(exc, NotADirectoryError):
            raise PathError(f"{shown}: not a directory") from None
        raise PathError(f"{shown}: cannot open directory: {exc.strerror}") from None


def _is_symlink(name: str, parent_fd: int | None) -> bool:
    try:
        st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISLNK(st.st_mode)


def _check_case_clash(dir_fd: int, name: str, *, shown: str) -> None:
    """Refuse ``name`` if the directory already holds an entry equal to it ignoring case."""
    key = name.casefold()
    for existing in os.listdir(dir_fd):
        if existing != name and existing.casefold() == key:
            raise PathError(
                f"path {shown!r}: {name!r} collides with existing {existing!r} "
                "(equal ignoring case)"
            )


def _descend(
    root_fd: int, segments: Sequence[str], *, create: bool, shown: str, dir_mode: int = 0o700
) -> int:
    """Open (creating if asked, with ``dir_mode``) the directory ``segments`` below ``root_fd``."""
    fd = os.dup(root_fd)
    try:
        for index, segment in enumerate(segments):
            where = "/".join(segments[: index + 1])
            if create:
                _check_case_clash(fd, segment, shown=shown)
                with contextlib.suppress(FileExistsError):
                    os.mkdir(segment, dir_mode, dir_fd=fd)
            next_fd = _open_dir(segment, fd, shown=f"path {shown!r}: {where!r}")
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_new(dir_fd: int, name: str, data: bytes, *, shown: str, mode: int = 0o600) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, mode, dir_fd=dir_fd)
    except FileExistsError:
        raise OutputExistsError(
            f"path {shown!r}: already exists in the project; pass allow_overwrite to replace it"
        ) from None
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _replace(dir_fd: int, name: str, data: bytes, *, shown: str) -> None:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        _write_new(dir_fd, name, data, shown=shown)
        return
    if not stat.S_ISREG(st.st_mode):
        kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
        raise PathError(f"path {shown!r}: the existing entry is {kind}; refusing to replace it")
    temp = f".{name}.{secrets.token_hex(6)}.tmp"
    _write_new(dir_fd, temp, data, shown=shown)
    try:
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        raise


def _write_entries(
    project_fd: int,
    entries: Sequence[tuple[str, bytes]],
    *,
    allow_overwrite: bool,
    private: bool = True,
) -> None:
    # Disposable projects are private (0700/0600); a user's own project follows the umask.
    dir_mode, file_mode = (0o700, 0o600) if private else (0o777, 0o666)
    for path, data in entries:
        *parents, name = path.split("/")
        dir_fd = _descend(project_fd, parents, create=True, shown=path, dir_mode=dir_mode)
        try:
            _check_case_clash(dir_fd, name, shown=path)
            if allow_overwrite:
                _replace(dir_fd, name, data, shown=path)
            else:
                _write_new(dir_fd, name, data, shown=path, mode=file_mode)
        finally:
            os.close(dir_fd)


def _preflight_entry(project_fd: int, path: str, *, allow_overwrite: bool) -> None:
    """Raise what writing ``path`` below ``project_fd`` would raise, without writing anything."""
    *parents, name = path.split("/")
    fd = os.dup(project_fd)
    try:
        for index, segment in enumerate(parents):
            where = "/".join(parents[: index + 1])
            _check_case_clash(fd, segment, shown=path)
            try:
                st = os.stat(segment, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return  # this directory and everything below it will be created
            if stat.S_ISLNK(st.st_mode):
                raise PathError(
                    f"path {path!r}: {where!r} is a symlink; symlinks are never followed"
                )
            if not stat.S_ISDIR(st.st_mode):
                raise PathError(f"path {path!r}: {where!r} is not a directory")
            next_fd = _open_dir(segment, fd, shown=f"path {path!r}: {where!r}")
            os.close(fd)
            fd = next_fd
        _check_case_clash(fd, name, shown=path)
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not allow_overwrite:
            what = "a symlink" if stat.S_ISLNK(st.st_mode) else "an entry"
            raise OutputExistsError(f"path {path!r}: the project already has {what} there")
        if not stat.S_ISREG(st.st_mode):
            kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            raise PathError(f"path {path!r}: the existing entry is {kind}; refusing to replace it")
    finally:
        os.close(fd)


def check_writable(
    project: str | os.PathLike[str], paths: Sequence[str], *, allow_overwrite: bool = False
) -> None:
    """Raise what :func:`write_files` would raise for ``paths`` in ``project``; write nothing.

    Checks the paths themselves (canonical, no collisions among them) and, for each, the tree
    on disk: no entry that differs only by case, no symlink or file where a directory goes,
    and no existing entry unless ``allow_overwrite`` (even then, only a regular file).
    """
    checked = [canonical_path(path) for path in paths]
    check_layout(checked)
    project_path = Path(project)
    project_fd = _open_dir(os.fspath(project_path), None, shown=f"project {project_path}")
    try:
        for path in checked:
            _preflight_entry(project_fd, path, allow_overwrite=allow_overwrite)
    finally:
        os.close(project_fd)


def write_files(
    project: str | os.PathLike[str],
    files: Sequence[FileEntry],
    *,
    allow_overwrite: bool = False,
    private: bool = True,
) -> list[Path]:
    """Add files to an existing project; with ``allow_overwrite``, replace existing ones.

    All paths are checked before anything is written, against each other and against the
    tree on disk (:func:`check_writable`), so a refused call writes nothing. A replaced file
    is swapped in atomically; a symlink or directory standing where a file should go is
    refused, and no symlink on the way is followed. New files and directories are 0600/0700 unless
    ``private`` is false (a user's own project): then they follow the umask. Returns the
    written paths in input order.
    """
    entries = _validate_entries(files)
    project_path = Path(project)
    project_fd = _open_dir(os.fspath(project_path), None, shown=f"project {project_path}")
    try:
        # Every entry first: a refusal of the second file must not leave the first written.
        for path, _ in entries:
            _preflight_entry(project_fd, path, allow_overwrite=allow_overwrite)
        _write_entries(project_fd, entries, allow_overwrite=allow_overwrite, private=private)
    finally:
        os.close(project_fd)
    return [project_path / path for path, _ in entries]


def _project_name(name: str) -> str:
    canonical_path(name)
    if "/" in name:
        raise PathError(f"project name {name!r}: must be a single path segment")
    return name


def _remove_tree(path: Path) -> None:
    # Iterative: a test may leave a tree deeper than the interpreter's recursion limit.
    remove_tree(path)


class RunRoot:
    """A run-scoped directory (0700) holding disposable projects, one directory each.

    Use it as a context manager, or call :meth:`cleanup` yourself. ``base`` is an existing
    directory to create the root in; without it, the system temporary directory is used.
    """

    def __init__(self, base: str | os.PathLike[str] | None = None) -> None:
        if base is not None:
            base_path = Path(base)
            if not base_path.is_dir():
                raise PathError(f"run root base {base_path}: not an existing directory")
            parent: str | None = os.path.realpath(base_path)
        else:
            parent = None
        # mkdtemp creates the directory 0700 with a fresh, unguessable name.
        self.path = Path(os.path.realpath(tempfile.mkdtemp(prefix="lorelab-run-", dir=parent)))
        self._projects: list[Path] = []
        self._skipped: dict[Path, tuple[str, ...]] = {}

    def __enter__(self) -> RunRoot:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.cleanup()

    @property
    def projects(self) -> tuple[Path, ...]:
        """The projects created so far, in creation order."""
        return tuple(self._projects)

    def _new_project_dir(self, name: str) -> Path:
        target = self.path / _project_name(name)
        try:
            os.mkdir(target, 0o700)
        except FileExistsError:
            raise OutputExistsError(
                f"project {name!r} already exists in run root {self.path}"
            ) from None
        os.chmod(target, 0o700)
        self._projects.append(target)
        return target

    def create_project(self, name: str, files: Sequence[FileEntry]) -> Path:
        """Create project ``name`` (0700) holding ``files``; every path is checked first."""
        entries = _validate_entries(files)
        target = self._new_project_dir(name)
        project_fd = _open_dir(os.fspath(target), None, shown=f"project {target}")
        try:
            _write_entries(project_fd, entries, allow_overwrite=False)
        finally:
            os.close(project_fd)
        return target

    def copy_project(self, source: str | os.PathLike[str], name: str) -> Path:
        """Copy the tree at ``source`` into a new project ``name``.

        Only directories and regular files are copied; a symlink or any other kind of file
        inside the tree is refused, naming its path, and nothing is created. Names are kept as
        they are (a copied tree need not use canonical paths, see docs/runners.md) within
        :data:`COPY_MAX_DEPTH` directories and :data:`COPY_MAX_PATH_LENGTH` characters, with no
        backslash and no two paths equal ignoring case. Version-control metadata
        (:data:`COPY_SKIPPED_NAMES`), the memory home, tool caches and Python virtual
        environments (:func:`is_virtualenv`) are skipped; :meth:`skipped` lists what was left out.
        Files are 0600, or 0700 when the source file is executable by its owner.
        """
        source_path = Path(source)
        entries, skipped = _read_tree(source_path)
        target = self._new_project_dir(name)
        self._skipped[target] = skipped
        project_fd = _open_dir(os.fspath(target), None, shown=f"project {target}")
        try:
            for relative, data, executable in entries:
                *parents, leaf = relative.split("/")
                dir_fd = _descend(project_fd, parents, create=True, shown=relative)
                try:
                    mode = 0o700 if executable else 0o600
                    _write_new(dir_fd, leaf, data, shown=relative, mode=mode)
                finally:
                    os.close(dir_fd)
        finally:
            os.close(project_fd)
        return target

    def skipped(self, project: str | os.PathLike[str]) -> tuple[str, ...]:
        """The source entries :meth:`copy_project` left out of ``project`` (see there)."""
        return self._skipped.get(Path(project), ())

    def cleanup(self) -> None:
        """Remove every project this root created, then the root itself if it is empty.

        Anything else found in the root (for example receipts someone wrote there) is kept,
        and so is the root then. Symlinks inside projects are removed, never followed.
        """
        for project in list(self._projects):
            try:
                st = os.lstat(project)
            except FileNotFoundError:
                self._projects.remove(project)
                continue
            if not stat.S_ISDIR(st.st_mode) or os.path.dirname(project) != os.fspath(self.path):
                # Swapped for a symlink or moved: removing it could reach outside the root.
                raise PathError(f"project {project}: no longer a directory of {self.path}")
            _remove_tree(project)
            self._projects.remove(project)
        # Not empty (something else lives here) or already gone: keep it, as promised.
        with contextlib.suppress(OSError):
            os.rmdir(self.path)


def _read_tree(source: Path) -> tuple[list[tuple[str, bytes, bool]], tuple[str, ...]]:
    """Every regular file below ``source`` as (path, bytes, owner-executable), and the skips."""
    try:
        st = os.lstat(source)
    except FileNotFoundError:
        raise PathError(f"source tree {source}: no such directory") from None
    if stat.S_ISLNK(st.st_mode):
        raise PathError(f"source tree {source}: is a symlink; symlinks are never followed")
    if not stat.S_ISDIR(st.st_mode):
        raise PathError(f"source tree {source}: not a directory")
    entries: list[tuple[str, bytes, bool]] = []
    skipped: list[str] = []
    total = 0
    for relative, full in _walk(source, "", skipped):
        data, executable = _read_regular(full, relative)
        total += len(data)
        if len(entries) >= MAX_PROJECT_FILES:
            raise InvalidInput(f"source tree {source}: more than {MAX_PROJECT_FILES} files")
        if total > MAX_PROJECT_BYTES:
            raise InvalidInput(f"source tree {source}: more than {MAX_PROJECT_BYTES} bytes")
        entries.append((relative, data, executable))
    check_layout([relative for relative, _, _ in entries])
    return entries, tuple(skipped)


def _check_copied_name(relative: str, name: str) -> None:
    # The names come from the file system, so '', '.', '..', '/' and NUL cannot occur; the
    # other path rules that make sense for a tree on disk are applied here.
    if "\\" in name:
        raise PathError(f"path {relative!r}: contains a backslash")
    if len(relative) > COPY_MAX_PATH_LENGTH:
        raise PathError(f"path {relative[:40]!r}...: longer than {COPY_MAX_PATH_LENGTH} characters")


def _walk(
    directory: Path, prefix: str, skipped: list[str], depth: int = 0
) -> Iterator[tuple[str, Path]]:
    if depth > COPY_MAX_DEPTH:
        raise PathError(f"path {prefix!r}: deeper than {COPY_MAX_DEPTH} directories")
    with os.scandir(directory) as scan:
        children = sorted(scan, key=lambda entry: entry.name)
    for entry in children:
        relative = f"{prefix}{entry.name}"
        if entry.name in COPY_SKIPPED_NAMES:
            skipped.append(relative)
            continue
        _check_copied_name(relative, entry.name)
        if entry.is_symlink():
            raise PathError(f"path {relative!r}: is a symlink; symlinks are never copied")
        if entry.is_dir(follow_symlinks=False) and is_virtualenv(entry.path):
            skipped.append(relative)
            continue
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(Path(entry.path), f"{relative}/", skipped, depth + 1)
        elif entry.is_file(follow_symlinks=False):
            yield relative, Path(entry.path)
        else:
            raise PathError(f"path {relative!r}: not a regular file or directory")


def _read_regular(full: Path, relative: str) -> tuple[bytes, bool]:
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise PathError(f"path {relative!r}: cannot open: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        executable = bool(st.st_mode & stat.S_IXUSR)
        if not stat.S_ISREG(st.st_mode):
            raise PathError(f"path {relative!r}: not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise InvalidInput(f"path {relative!r}: {st.st_size} bytes exceed {MAX_FILE_BYTES}")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 16):
            size += len(chunk)
            if size > MAX_FILE_BYTES:
                raise InvalidInput(f"path {relative!r}: grew past {MAX_FILE_BYTES} bytes")
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks), executable
