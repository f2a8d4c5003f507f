"""Containment for untrusted test code: what a run may touch, measured rather than assumed.

Every test run is started through the containment launcher (:mod:`lorelab.io._reaper`), a child
subreaper that kills every descendant when the run ends, so nothing a test starts outlives it.
A run asked to be sandboxed is also wrapped in bubblewrap (``bwrap``, from the OS packages):
a PID namespace, no network (a private loopback only), and a read-only view of the filesystem
in which only the project copy, the runner's report directory and a private ``/tmp`` are
writable.

What works is found by probing once per process: bubblewrap runs a small program that tries to
write outside the writable places, to connect to a port this process listens on, and looks at
its PID namespace. Only what the probe saw is claimed: ``"bubblewrap"`` when all three held,
``"partial"`` when bubblewrap ran but some did not (the run gets those that did), ``"none"``
when there is no sandbox at all (not asked for, or bubblewrap missing or refused).
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from lorelab.io import _reaper

SandboxKind = Literal["none", "partial", "bubblewrap"]
"""What confinement a run really had; recorded in every execution receipt."""

BWRAP_ENV: Final = "LORELAB_BWRAP"
"""Names the bubblewrap executable (default: ``bwrap`` on PATH); an empty value disables it."""

REAPER_PATH: Final = str(Path(_reaper.__file__).resolve())
_PROBE_TIMEOUT_S: Final = 30.0
_PROBE: Final = r"""
import os, socket, sys
inside, outside, port, parent = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
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

    @property
    def kind(self) -> SandboxKind:
        """What a sandboxed run gets here."""
        if self.bwrap is None or not (self.filesystem or self.network or self.pid):
            return "none"
        if self.filesystem and self.network and self.pid:
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
    argv = [bwrap, "--die-with-parent", "--unshare-ipc"]
    if pid:
        argv.append("--unshare-pid")
    if network:
        argv.append("--unshare-net")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    argv += ["--tmpfs", "/var/tmp", "--tmpfs", "/dev/shm"]
    for place in dict.fromkeys(os.path.realpath(path) for path in readable):
        if _under_private_dir(place) and os.path.exists(place):
            argv += ["--ro-bind", place, place]
    for place in dict.fromkeys(str(Path(path).resolve()) for path in (cwd, *writable)):
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


def _probe_with(bwrap: str, *, pid: bool, network: bool) -> tuple[set[str], str]:
    """Run the probe program in a sandbox with these namespaces; return what it confirmed."""
    with tempfile.TemporaryDirectory(prefix="lorelab-probe-") as scratch:
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
            argv += [str(port), str(os.getpid())]
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
        return confirmed, "probed"


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
        base = [bwrap, "--ro-bind", "/", "/"]
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
        detail=detail,
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
