"""Containment for untrusted test code: what a run may touch, measured rather than assumed.

Every test run is started through the containment launcher (:mod:`lorelab.io._reaper`), a child
subreaper that kills every descendant when the run ends, so nothing a test starts outlives it.
A run asked to be sandboxed is also wrapped in bubblewrap (``bwrap``, from the OS packages):
a PID namespace, no network (a private loopback only, and every Unix socket listening outside
the run's writable places masked), every capability dropped (``--cap-drop ALL``: bubblewrap run
by root would keep them all, and could remount ``/`` read-write), and a read-only view of the
filesystem in which only the project copy, the runner's report directory and a private ``/tmp``
are writable.

What works is found by probing once per process: bubblewrap runs a small program that tries to
write outside the writable places, to connect to a TCP port and to a Unix socket this process
listens on, reads its own capabilities and looks at its PID namespace. Only what the probe saw
is claimed: ``"bubblewrap"`` when all of it held, ``"partial"`` when bubblewrap ran but some did
not (the run gets those that did), ``"none"`` when there is no sandbox at all (not asked for, or
bubblewrap missing or refused).

A command that runs untrusted code asks :func:`require_sandbox` first: with no working sandbox
it refuses before anything runs, unless the user allowed unconfined runs; the
:class:`Confinement` it returns goes into the command's receipts.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from pydantic import Field

from lorelab._model import RecordModel
from lorelab.errors import SandboxUnavailable
from lorelab.io import _reaper

SandboxKind = Literal["none", "partial", "bubblewrap"]
"""What confinement a run really had; recorded in every execution receipt."""

BWRAP_ENV: Final = "LORELAB_BWRAP"
"""Names the bubblewrap executable (default: ``bwrap`` on PATH); an empty value disables it."""

INSTALL_COMMAND: Final = "apt-get install bubblewrap"
"""How to get the sandbox on Debian and Ubuntu (named in every refusal)."""

REAPER_PATH: Final = str(Path(_reaper.__file__).resolve())
_PROBE_TIMEOUT_S: Final = 30.0
_PROBE: Final = r"""
import os, socket, sys
inside, outside, port, parent = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
unix = sys.argv[5]
found = []
with open(os.path.join(inside, "probe"), "w") as handle:
    handle.write("x")
try:
    with open(outside, "a") as handle:
        handle.write("x")
except OSError:
    pass
blocked = 0
for place in ("/lorelab-sandbox-probe", os.path.join(os.path.expanduser("~"), ".lorelab-probe")):
    try:
        os.mkdir(place)
        os.rmdir(place)
    except OSError:
        blocked += 1
if blocked == 2:
    found.append("filesystem")
try:
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
except OSError:
    found.append("network")
if unix:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.settimeout(2)
        client.connect(unix)
    except OSError:
        found.append("unix")
    finally:
        client.close()
with open("/proc/self/status") as handle:
    status = dict(line.split(":", 1) for line in handle if ":" in line)
if all(int(status.get(name, "1").strip() or "1", 16) == 0 for name in ("CapEff", "CapPrm")):
    found.append("capabilities")
try:
    with open("/proc/1/cmdline", "rb") as handle:
        init = handle.read()
    if b"bwrap" in init and not os.path.exists("/proc/%d" % parent):
        found.append("pid")
except OSError:
    pass
print(" ".join(found))
"""


@dataclass(frozen=True, slots=True)
class SandboxSupport:
    """What the probe found this machine can confine (``bwrap`` is ``None`` when unusable)."""

    bwrap: str | None
    filesystem: bool
    network: bool
    pid: bool
    subreaper: bool
    detail: str
    unix_sockets: bool = False
    """A Unix socket listening outside the run's writable places could not be reached."""
    capabilities_dropped: bool = False
    """The sandboxed program held no capability (``CapEff`` and ``CapPrm`` both zero)."""

    @property
    def kind(self) -> SandboxKind:
        """What a sandboxed run gets here."""
        if self.bwrap is None or not (self.filesystem or self.network or self.pid):
            return "none"
        confined = self.filesystem and self.network and self.pid and self.unix_sockets
        if confined and self.capabilities_dropped:
            return "bubblewrap"
        return "partial"


def _bwrap_path() -> str | None:
    configured = os.environ.get(BWRAP_ENV)
    if configured is not None:
        if not configured:
            return None
        return configured if os.access(configured, os.X_OK) else shutil.which(configured)
    return shutil.which("bwrap")


# Mounted empty and private inside the sandbox.
PRIVATE_DIRS: Final = ("/tmp", "/var/tmp", "/dev/shm")


def _under_private_dir(path: str) -> bool:
    # Strictly below: a private directory itself is never re-exposed.
    return any(path.startswith(f"{root}/") for root in PRIVATE_DIRS)


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(f"{root.rstrip('/')}/") for root in roots)


def listening_unix_sockets() -> list[str]:
    """The path of every Unix socket bound on this machine's network namespace, as the kernel
    lists them (``/proc/net/unix``); abstract ones are left to the network namespace."""
    try:
        with open("/proc/net/unix", "rb") as handle:
            lines = handle.read(16 * 1024 * 1024).decode("utf-8", "surrogateescape").splitlines()
    except OSError:
        return []
    found: dict[str, None] = {}
    for line in lines[1:]:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith("/"):
            found.setdefault(fields[7], None)
    return list(found)


def _socket_masks(visible: Sequence[str], reachable: Sequence[str]) -> list[str]:
    """``--ro-bind /dev/null SOCKET`` for every listening socket the sandbox would still see:
    not inside a place the run may write (its own sockets), not in a private directory unless
    one of the ``visible`` paths bound back there holds it."""
    argv: list[str] = []
    for path in listening_unix_sockets():
        if _under(path, reachable):
            continue
        if _foreign_probe(path):
            continue
        if _under_private_dir(path) and not _under(path, visible):
            continue
        try:
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                continue
        except OSError:
            continue
        argv += ["--ro-bind", "/dev/null", path]
    return argv


_PROBE_PREFIX: Final = ".lorelab-probe-"
_own_probe_sockets: set[str] = set()


def _foreign_probe(path: str) -> bool:
    """Whether ``path`` is another lorelab process's probe listener (:func:`_outside_listener`).

    It lives for the second its probe takes and accepts nothing; a mask on it races its removal
    (bubblewrap then fails to create the mount point under the read-only root, and the run
    never starts), so it is not masked. This process's own probe socket is: the probe checks
    exactly that."""
    if path in _own_probe_sockets:
        return False
    return os.path.basename(os.path.dirname(path)).startswith(_PROBE_PREFIX)


def runtime_paths(program: str) -> list[Path]:
    """What a sandboxed run must still read: the program, the interpreter with its libraries
    and import path (an editable or ``PYTHONPATH`` checkout included), and lorelab itself, whose
    launcher and pytest plugin run inside."""
    found = [Path(program), Path(sys.executable).parent, Path(sys.prefix), Path(sys.base_prefix)]
    found.append(Path(__file__).resolve().parents[1])
    found += [Path(entry) for entry in sys.path if entry]
    return found


def bwrap_argv(
    bwrap: str,
    *,
    cwd: Path,
    writable: Sequence[Path],
    pid: bool,
    network: bool,
    readable: Sequence[Path] = (),
) -> list[str]:
    """The bubblewrap prefix: read-only root, private /tmp, ``writable`` bound read-write.

    A ``readable`` path that lies in a directory the sandbox makes private (lorelab or its
    virtual environment under ``/tmp``, say) is bound back read-only, or nothing could run.
    """
    argv = [bwrap, "--die-with-parent", "--unshare-ipc", "--cap-drop", "ALL"]
    if pid:
        argv.append("--unshare-pid")
    if network:
        argv.append("--unshare-net")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    argv += ["--tmpfs", "/var/tmp", "--tmpfs", "/dev/shm"]
    visible = [
        place
        for place in dict.fromkeys(os.path.realpath(path) for path in readable)
        if _under_private_dir(place) and os.path.exists(place)
    ]
    for place in visible:
        argv += ["--ro-bind", place, place]
    reachable = list(dict.fromkeys(str(Path(path).resolve()) for path in (cwd, *writable)))
    argv += _socket_masks(visible, reachable)
    for place in reachable:
        argv += ["--bind", place, place]
    argv += ["--setenv", "TMPDIR", "/tmp", "--chdir", str(Path(cwd).resolve()), "--"]
    return argv


def _runs(argv: Sequence[str]) -> bool:
    try:
        completed = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return completed.returncode == 0


def _socket_place() -> str | None:
    """A writable directory outside the sandbox's private ones, where listening sockets live on
    a real machine (the session's runtime directory, ``/run``, the home directory)."""
    for candidate in (os.environ.get("XDG_RUNTIME_DIR"), "/run", os.path.expanduser("~")):
        if not candidate or not os.path.isabs(candidate):
            continue
        place = os.path.realpath(candidate)
        if _under_private_dir(place) or place in PRIVATE_DIRS:
            continue
        if os.path.isdir(place) and os.access(place, os.W_OK | os.X_OK):
            return place
    return None


@contextlib.contextmanager
def _outside_listener() -> Iterator[str]:
    """A Unix socket listening outside the sandbox's writable places, for the probe to try;
    ``""`` when there is nowhere to put one (the probe then cannot confirm the masking)."""
    place = _socket_place()
    if place is None:
        yield ""
        return
    folder = tempfile.mkdtemp(prefix=_PROBE_PREFIX, dir=place)
    path = os.path.join(folder, "s")
    _own_probe_sockets.add(path)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(path)
            server.listen(1)
            yield path
    finally:
        _own_probe_sockets.discard(path)
        shutil.rmtree(folder, ignore_errors=True)


def _probe_with(bwrap: str, *, pid: bool, network: bool) -> tuple[set[str], str]:
    """Run the probe program in a sandbox with these namespaces; return what it confirmed."""
    with (
        tempfile.TemporaryDirectory(prefix="lorelab-probe-") as scratch,
        _outside_listener() as unix,
    ):
        inside = Path(scratch) / "inside"
        inside.mkdir()
        outside = Path(scratch) / "outside"
        outside.write_text("")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            port = server.getsockname()[1]
            # The interpreter may live under /tmp (a checkout there): bound back as for a run.
            argv = bwrap_argv(
                bwrap,
                cwd=inside,
                writable=(),
                pid=pid,
                network=network,
                readable=runtime_paths(sys.executable),
            )
            argv += [sys.executable, "-I", "-S", "-c", _PROBE, str(inside), str(outside)]
            argv += [str(port), str(os.getpid()), unix]
            try:
                completed = subprocess.run(
                    argv,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=_PROBE_TIMEOUT_S,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                return set(), f"bubblewrap probe failed: {exc}"
        if completed.returncode != 0:
            reason = completed.stderr.decode("utf-8", "replace").strip().splitlines()
            return set(), f"bubblewrap refused: {reason[-1] if reason else completed.returncode}"
        confirmed = set(completed.stdout.decode("ascii", "replace").split())
        if outside.read_text() or not (inside / "probe").exists():
            # A write outside reached the real file, or the project copy was not writable.
            confirmed.discard("filesystem")
        return confirmed, "probed" if unix else "probed (no place outside /tmp for a socket)"


@functools.cache
def probe_sandbox() -> SandboxSupport:
    """Measure, once per process, what bubblewrap can confine on this machine."""
    subreaper = _reaper.subreaper_supported()
    bwrap = _bwrap_path()
    if bwrap is None:
        return SandboxSupport(None, False, False, False, subreaper, "bubblewrap not found")
    found: set[str] = set()
    detail = ""
    # The fullest sandbox first; a namespace the kernel refuses is dropped, never faked.
    for pid, network in ((True, True), (True, False), (False, True), (False, False)):
        base = [bwrap, "--cap-drop", "ALL", "--ro-bind", "/", "/"]
        base += ["--unshare-pid"] if pid else []
        base += ["--unshare-net"] if network else []
        if not _runs([*base, "true"]):
            detail = f"bubblewrap cannot start with pid={pid} network={network}"
            continue
        found, detail = _probe_with(bwrap, pid=pid, network=network)
        if found:
            break
    if not found:
        return SandboxSupport(None, False, False, False, subreaper, detail)
    return SandboxSupport(
        bwrap,
        filesystem="filesystem" in found,
        network="network" in found,
        pid="pid" in found,
        subreaper=subreaper,
        detail=_detail(found, detail),
        unix_sockets="unix" in found,
        capabilities_dropped="capabilities" in found,
    )


def _detail(found: set[str], detail: str) -> str:
    names = ("filesystem", "network", "unix", "capabilities", "pid")
    missing = [name for name in names if name not in found]
    if not missing:
        return detail
    what = {"unix": "unix sockets", "capabilities": "capabilities dropped"}
    return f"{detail}; not confirmed: {', '.join(what.get(name, name) for name in missing)}"


class Confinement(RecordModel):
    """The sandbox a command that runs untrusted code had, as probed before it started."""

    sandbox: SandboxKind = Field(
        description="What every sandboxed execution of this run gets on this machine: "
        "'bubblewrap', 'partial' or 'none' (each execution records its own too)."
    )
    detail: str = Field(description="The probe's finding, e.g. 'bubblewrap not found'.")
    allow_unsandboxed: bool = Field(
        description="Whether --allow-unsandboxed was given; only then does a run go ahead "
        "where no sandbox works ('none'), unless nothing it runs is untrusted (unconfinedBecause)."
    )
    unconfined_because: str | None = Field(
        default=None,
        description="Why a run with no working sandbox went ahead without --allow-unsandboxed: "
        "every piece of code it runs ships with lorelab (null otherwise).",
    )


def require_sandbox(
    what: str, *, allow_unsandboxed: bool | None = None, shipped_only: str | None = None
) -> Confinement:
    """The confinement untrusted code will have; :class:`SandboxUnavailable` (exit 2, nothing
    run) when there is no working sandbox and unconfined runs were not allowed.

    ``what`` names the command or flag in the one-line refusal; ``allow_unsandboxed`` is
    ``None`` where the command has no ``--allow-unsandboxed`` (the refusal then offers none).
    ``shipped_only`` says why nothing the run executes is untrusted (every worker is a shipped
    protocol fixture and every suite comes from a shipped dataset): such a run goes ahead
    without a sandbox, and the receipt says why."""
    support = probe_sandbox()
    if support.kind == "none" and not allow_unsandboxed and shipped_only is not None:
        return Confinement(
            sandbox="none",
            detail=support.detail,
            allow_unsandboxed=False,
            unconfined_because=shipped_only,
        )
    if support.kind == "none" and not allow_unsandboxed:
        offer = (
            "" if allow_unsandboxed is None else ", or pass --allow-unsandboxed to run unconfined"
        )
        raise SandboxUnavailable(
            f"{what}: no working sandbox on this machine ({support.detail}); install "
            f"bubblewrap ({INSTALL_COMMAND}){offer}; nothing was run"
        )
    return Confinement(
        sandbox=support.kind, detail=support.detail, allow_unsandboxed=bool(allow_unsandboxed)
    )


def sandbox_kind(requested: bool) -> SandboxKind:
    """What a run gets on this machine when a sandbox is (or is not) ``requested``."""
    return probe_sandbox().kind if requested else "none"


@dataclass(frozen=True, slots=True)
class Launch:
    """How one run is started: the argv to execute and the confinement it will have."""

    argv: list[str]
    sandbox: SandboxKind
    pid_namespace: bool


def contained_argv(
    argv: Sequence[str],
    *,
    program: str,
    cwd: Path,
    sandbox: bool,
    writable: Sequence[Path],
) -> Launch:
    """Wrap ``argv`` (``program`` is the file to execute) in the launcher, and bubblewrap."""
    inner = [sys.executable, "-I", "-S", REAPER_PATH, program, *argv]
    if not sandbox:
        return Launch(inner, "none", pid_namespace=False)
    support = probe_sandbox()
    if support.bwrap is None or support.kind == "none":
        return Launch(inner, "none", pid_namespace=False)
    prefix = bwrap_argv(
        support.bwrap,
        cwd=cwd,
        writable=writable,
        pid=support.pid,
        network=support.network,
        readable=runtime_paths(program),
    )
    return Launch([*prefix, *inner], support.kind, pid_namespace=support.pid)


def resolve_program(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> str:
    """The file ``execvpe`` would run for ``argv[0]``; ``OSError`` when there is none."""
    if not argv:
        raise FileNotFoundError("empty argv")
    name = argv[0]
    if "/" in name:
        path = name if os.path.isabs(name) else os.path.join(cwd, name)
        if not os.path.exists(path):
            raise FileNotFoundError(2, "No such file or directory", name)
        if not os.access(path, os.X_OK) or os.path.isdir(path):
            raise PermissionError(13, "Permission denied", name)
        return path
    found = shutil.which(name, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(2, "No such file or directory", name)
    # A relative PATH entry resolves against the directory the program starts in.
    return found if os.path.isabs(found) else os.path.join(cwd, found)
