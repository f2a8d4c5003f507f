"""Containment: nothing a test run starts outlives it, sandboxed or not, and the sandbox
confines what it claims to (probed, never assumed)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from lorelab.errors import SandboxUnavailable
from lorelab.io import ProcessScope, _sandbox, probe_sandbox, run_process
from tests.support.missing_tools import bubblewrap_reason
from tests.support.sleepers import (
    DETACHED_SLEEPERS,
    KILLS_ITS_LAUNCHER,
    kill_sleepers,
    sleepers_gone,
)

ENV = dict(os.environ)
SUPPORT = probe_sandbox()
needs_bubblewrap = pytest.mark.skipif(
    SUPPORT.kind != "bubblewrap",
    reason=bubblewrap_reason(SUPPORT.detail),
)


def _token() -> str:
    return f"lorelab-sleeper-{uuid.uuid4().hex}"


@pytest.mark.parametrize("sandbox", [False, True])
def test_children_that_leave_the_process_group_do_not_outlive_the_run(tmp_path, sandbox):
    pid_file = tmp_path / "sleepers.pid"
    token = _token()
    result = run_process(
        [sys.executable, "-c", DETACHED_SLEEPERS, str(pid_file), token],
        cwd=tmp_path,
        env=ENV,
        timeout_s=60,
        sandbox=sandbox,
    )
    assert result.exit_code == 0, result.output_tail
    try:
        assert sleepers_gone(token)
    finally:
        kill_sleepers(token)


def test_detached_children_of_a_run_that_times_out_are_killed_too(tmp_path):
    pid_file = tmp_path / "sleepers.pid"
    token = _token()
    result = run_process(
        [sys.executable, "-c", DETACHED_SLEEPERS, str(pid_file), token, "hang"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=5,
    )
    assert result.timed_out
    assert result.signal == "SIGKILL"
    try:
        assert sleepers_gone(token)
    finally:
        kill_sleepers(token)


def test_cancelling_a_scope_kills_detached_children_of_a_running_test(tmp_path):
    pid_file = tmp_path / "sleepers.pid"
    token = _token()
    outcome = []

    def run():
        try:
            outcome.append(
                run_process(
                    [sys.executable, "-c", DETACHED_SLEEPERS, str(pid_file), token, "hang"],
                    cwd=tmp_path,
                    env=ENV,
                    timeout_s=600,
                )
            )
        except Exception as exc:  # the cancellation, reported by the thread
            outcome.append(exc)

    scope = ProcessScope()
    thread = threading.Thread(target=scope.bind(run))
    thread.start()
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    scope.cancel()
    thread.join(timeout=60)
    assert not thread.is_alive()
    try:
        assert sleepers_gone(token)
        assert type(outcome[0]).__name__ == "ExecutionCancelled"
    finally:
        kill_sleepers(token)


def test_without_a_sandbox_the_run_says_none(tmp_path):
    result = run_process(["true"], cwd=tmp_path, env=ENV, timeout_s=30)
    assert result.sandbox == "none"


@needs_bubblewrap
def test_a_sandboxed_run_cannot_delete_a_file_outside_its_writable_places(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text("keep me\n")
    home_victim = Path.home() / f".lorelab-test-victim-{os.getpid()}"
    home_victim.write_text("keep me too\n")
    script = (
        "import os, sys\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        os.remove(path)\n"
        "        print('removed', path)\n"
        "    except OSError as exc:\n"
        "        print('refused', path, exc.errno)\n"
        "open('inside.txt', 'w').write('ok')\n"
        "open('/tmp/private.txt', 'w').write('ok')\n"
    )
    try:
        result = run_process(
            [sys.executable, "-c", script, str(victim), str(home_victim)],
            cwd=project,
            env=ENV,
            timeout_s=60,
            sandbox=True,
        )
        assert result.sandbox == "bubblewrap"
        assert result.exit_code == 0, result.output_tail
        assert victim.read_text() == "keep me\n"
        assert home_victim.read_text() == "keep me too\n"
        assert b"removed" not in result.output_tail
        assert (project / "inside.txt").read_text() == "ok"
        assert not Path("/tmp/private.txt").exists()
    finally:
        home_victim.unlink(missing_ok=True)


def test_without_the_sandbox_the_same_deletion_succeeds(tmp_path):
    """The control for the test above: the deletion is real when nothing confines it."""
    victim = tmp_path / "victim.txt"
    victim.write_text("gone soon\n")
    result = run_process(
        [sys.executable, "-c", "import os, sys; os.remove(sys.argv[1])", str(victim)],
        cwd=tmp_path,
        env=ENV,
        timeout_s=60,
    )
    assert result.exit_code == 0
    assert not victim.exists()


def _connect_script(port: int) -> str:
    return (
        "import socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=5).close()\n"
        "    print('connected')\n"
        "except OSError as exc:\n"
        "    print('refused', exc)\n"
    )


@pytest.mark.parametrize("sandbox", [False, True])
def test_only_a_sandboxed_run_cannot_reach_a_port_listening_outside(tmp_path, sandbox):
    if sandbox and not SUPPORT.network:
        pytest.skip(f"no network namespace for bubblewrap here ({SUPPORT.detail})")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        result = run_process(
            [sys.executable, "-c", _connect_script(port)],
            cwd=tmp_path,
            env=ENV,
            timeout_s=60,
            sandbox=sandbox,
        )
    assert result.exit_code == 0, result.output_tail
    if sandbox:
        assert b"refused" in result.output_tail
    else:
        assert b"connected" in result.output_tail


@needs_bubblewrap
def test_a_sandboxed_run_sees_its_own_pid_namespace(tmp_path):
    script = f"import os; print(os.path.exists('/proc/{os.getpid()}'), os.getpid())"
    result = run_process(
        [sys.executable, "-c", script], cwd=tmp_path, env=ENV, timeout_s=60, sandbox=True
    )
    visible, pid = result.output_tail.split()
    assert visible == b"False"
    assert int(pid) < 100


@needs_bubblewrap
def test_a_signal_inside_the_sandbox_is_reported_as_the_signal(tmp_path):
    result = run_process(
        [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=60,
        sandbox=True,
    )
    assert result.signal == "SIGKILL"
    assert result.exit_code is None


def test_a_fake_bubblewrap_that_confines_nothing_is_never_claimed(tmp_path, monkeypatch):
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\n"
        "# Accepts every option and confines nothing: runs what follows '--'.\n"
        'while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done\n'
        'if [ "$#" -gt 0 ]; then shift; exec "$@"; fi\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(_sandbox.BWRAP_ENV, str(fake))
    _sandbox.probe_sandbox.cache_clear()
    try:
        support = _sandbox.probe_sandbox()
        result = run_process(["true"], cwd=tmp_path, env=ENV, timeout_s=30, sandbox=True)
    finally:
        _sandbox.probe_sandbox.cache_clear()
    assert support.kind == "none"
    assert result.sandbox == "none"


def test_a_missing_bubblewrap_falls_back_to_containment_and_says_none(tmp_path, monkeypatch):
    monkeypatch.setenv(_sandbox.BWRAP_ENV, "")
    _sandbox.probe_sandbox.cache_clear()
    pid_file = tmp_path / "sleepers.pid"
    token = _token()
    try:
        result = run_process(
            [sys.executable, "-c", DETACHED_SLEEPERS, str(pid_file), token],
            cwd=tmp_path,
            env=ENV,
            timeout_s=60,
            sandbox=True,
        )
    finally:
        _sandbox.probe_sandbox.cache_clear()
    try:
        assert result.sandbox == "none"
        assert sleepers_gone(token)
    finally:
        kill_sleepers(token)


def test_a_program_that_cannot_start_is_still_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        run_process(["/nonexistent/program"], cwd=tmp_path, env=ENV, timeout_s=30)
    with pytest.raises(FileNotFoundError):
        run_process(
            ["no-such-program-lorelab"], cwd=tmp_path, env={"PATH": "/usr/bin"}, timeout_s=30
        )


@needs_bubblewrap
def test_a_program_and_interpreter_path_under_tmp_stay_readable_in_the_sandbox(tmp_path):
    # The sandbox mounts a private, empty /tmp. A program kept under /tmp (here pytest's
    # tmp_path), like lorelab or its virtual environment checked out there, is bound back
    # read-only so the run can start; the rest of /tmp stays hidden and nothing there is
    # writable.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "hello"
    program.write_text('#!/bin/sh\necho hello from $0\ntouch "$0.written" 2>/dev/null\n')
    program.chmod(0o755)
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("hidden\n")
    project = tmp_path / "project"
    project.mkdir()
    result = run_process(
        [str(program), str(secret)], cwd=project, env=ENV, timeout_s=60, sandbox=True
    )
    output = result.output_tail.decode()
    assert result.sandbox == "bubblewrap"
    assert result.exit_code == 0, output
    assert "hello from" in output
    # Bound back read-only: a write beside it lands in the private /tmp, never out here.
    assert not (bin_dir / "hello.written").exists()
    hidden = run_process(
        ["/bin/cat", str(secret)], cwd=project, env=ENV, timeout_s=60, sandbox=True
    )
    assert hidden.exit_code != 0  # the rest of /tmp is still private


def _capabilities_script() -> str:
    return (
        "fields = dict(line.split(':', 1) for line in open('/proc/self/status'))\n"
        "print('CapEff', fields['CapEff'].strip(), 'CapPrm', fields['CapPrm'].strip())\n"
    )


@needs_bubblewrap
def test_a_sandboxed_run_holds_no_capabilities_even_when_lorelab_runs_as_root(tmp_path):
    # Issue 31 item 1: bubblewrap started by root kept every capability (CapEff
    # 000001fffeffffff), so a test could `mount -o remount,rw /` and write the real /root.
    result = run_process(
        [sys.executable, "-c", _capabilities_script()],
        cwd=tmp_path,
        env=ENV,
        timeout_s=60,
        sandbox=True,
    )
    assert result.exit_code == 0, result.output_tail
    assert result.sandbox == "bubblewrap"
    assert result.output_tail.split() == [
        b"CapEff",
        b"0000000000000000",
        b"CapPrm",
        b"0000000000000000",
    ]


@needs_bubblewrap
def test_a_sandboxed_run_cannot_remount_the_root_read_write(tmp_path):
    script = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "MS_REMOUNT, MS_BIND = 32, 4096\n"
        "rc = libc.mount(b'none', b'/', None, MS_REMOUNT | MS_BIND, None)\n"
        "print('remounted' if rc == 0 else 'refused', ctypes.get_errno())\n"
    )
    result = run_process(
        [sys.executable, "-c", script], cwd=tmp_path, env=ENV, timeout_s=60, sandbox=True
    )
    assert result.exit_code == 0, result.output_tail
    assert result.output_tail.startswith(b"refused"), result.output_tail


def test_a_bubblewrap_that_keeps_capabilities_is_never_recorded_as_bubblewrap(
    tmp_path, monkeypatch
):
    # A bwrap that ignores --cap-drop: everything else confines, the capabilities stay.
    real = shutil.which("bwrap")
    if real is None or SUPPORT.bwrap is None:
        pytest.skip(f"bubblewrap is not usable here ({SUPPORT.detail})")
    if os.geteuid() != 0:
        pytest.skip("only root's bubblewrap can hold capabilities (unprivileged: a user namespace)")
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\n"
        "# Drops --cap-drop ALL, then runs the real bubblewrap with everything else.\n"
        'for arg in "$@"; do\n'
        "    shift\n"
        '    if [ "$skip" = 1 ]; then skip=0; continue; fi\n'
        '    if [ "$arg" = --cap-drop ]; then skip=1; continue; fi\n'
        '    set -- "$@" "$arg"\n'
        "done\n"
        f'exec {real} "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv(_sandbox.BWRAP_ENV, str(fake))
    _sandbox.probe_sandbox.cache_clear()
    try:
        support = _sandbox.probe_sandbox()
        result = run_process(["true"], cwd=tmp_path, env=ENV, timeout_s=30, sandbox=True)
    finally:
        _sandbox.probe_sandbox.cache_clear()
    assert not support.capabilities_dropped
    assert support.kind == "partial"
    assert result.sandbox == "partial"


def _unix_client_script(path: str) -> str:
    return (
        "import socket, sys\n"
        "client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "client.settimeout(5)\n"
        "try:\n"
        f"    client.connect({path!r})\n"
        "    print('connected', client.recv(64).decode())\n"
        "except OSError as exc:\n"
        "    print('refused', exc.errno)\n"
    )


def _outside_socket_dirs() -> list[Path]:
    """Writable places outside /tmp where a real machine keeps listening sockets."""
    places = [Path.home()]
    for candidate in (os.environ.get("XDG_RUNTIME_DIR"), "/run"):
        if candidate and os.access(candidate, os.W_OK | os.X_OK):
            places.append(Path(candidate))
    return places


@pytest.mark.parametrize("sandbox", [False, True])
def test_only_a_sandboxed_run_cannot_reach_a_unix_socket_listening_outside(tmp_path, sandbox):
    # Issue 31 item 2: on a real machine that is docker.sock, the session bus, agent sockets.
    if sandbox and SUPPORT.kind != "bubblewrap":
        pytest.skip(f"no full bubblewrap sandbox on this machine ({SUPPORT.detail})")
    for place in _outside_socket_dirs():
        folder = Path(tempfile.mkdtemp(prefix="lorelab-sock-", dir=place))
        path = str(folder / "s")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
                server.bind(path)
                server.listen(4)
                server.settimeout(0.5)

                def answer(server=server):
                    with contextlib.suppress(OSError), server.accept()[0] as peer:
                        peer.sendall(b"secret")

                thread = threading.Thread(target=answer)
                thread.start()
                result = run_process(
                    [sys.executable, "-c", _unix_client_script(path)],
                    cwd=tmp_path,
                    env=ENV,
                    timeout_s=60,
                    sandbox=sandbox,
                )
                thread.join(timeout=10)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        assert result.exit_code == 0, result.output_tail
        if sandbox:
            assert result.output_tail.startswith(b"refused"), (place, result.output_tail)
        else:
            assert result.output_tail.startswith(b"connected secret"), (place, result.output_tail)


@needs_bubblewrap
def test_a_sandboxed_run_still_reaches_a_unix_socket_inside_its_project(tmp_path):
    script = (
        "import os, socket\n"
        "server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "server.bind('own.sock')\n"
        "server.listen(1)\n"
        "client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "client.connect('own.sock')\n"
        "print('connected')\n"
    )
    result = run_process(
        [sys.executable, "-c", script], cwd=tmp_path, env=ENV, timeout_s=60, sandbox=True
    )
    assert result.exit_code == 0, result.output_tail
    assert result.output_tail.strip() == b"connected"


@pytest.mark.parametrize("sandbox", [False, True])
def test_a_program_that_kills_its_launcher_leaves_no_daemon_behind(tmp_path, sandbox):
    # Issue 31 item 3: with the launcher (the subreaper) gone, a setsid daemon was re-parented
    # to init and outlived the run.
    pid_file = tmp_path / "sleepers.pid"
    token = _token()
    try:
        result = run_process(
            [sys.executable, "-c", KILLS_ITS_LAUNCHER, str(pid_file), token],
            cwd=tmp_path,
            env=ENV,
            timeout_s=60,
            sandbox=sandbox,
        )
        assert pid_file.exists(), result.output_tail
        assert result.exit_code != 0
        assert sleepers_gone(token)
    finally:
        kill_sleepers(token)


def test_after_a_killed_launcher_other_children_of_this_process_are_left_alone(tmp_path):
    # The orphans are found among this process's children; one it started itself is not one.
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(900)"])
    # Start times are in clock ticks (10 ms): a child started in the run's first tick counts
    # as the run's (the documented limit), so the bystander must be older than that tick.
    time.sleep(0.05)
    token = _token()
    try:
        run_process(
            [sys.executable, "-c", KILLS_ITS_LAUNCHER, str(tmp_path / "pid"), token],
            cwd=tmp_path,
            env=ENV,
            timeout_s=60,
        )
        assert sleepers_gone(token)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
        kill_sleepers(token)


def test_require_sandbox_refuses_without_bubblewrap_unless_unconfined_runs_are_allowed(
    monkeypatch,
):
    monkeypatch.setenv(_sandbox.BWRAP_ENV, "")
    _sandbox.probe_sandbox.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match=r"apt-get install bubblewrap") as refused:
            _sandbox.require_sandbox("lorelab eval learning", allow_unsandboxed=False)
        allowed = _sandbox.require_sandbox("lorelab eval learning", allow_unsandboxed=True)
    finally:
        _sandbox.probe_sandbox.cache_clear()
    assert refused.value.exit_code == 2
    assert "\n" not in str(refused.value)
    assert allowed.model_dump(by_alias=True) == {
        "sandbox": "none",
        "detail": "bubblewrap not found",
        "allowUnsandboxed": True,
        "unconfinedBecause": None,
    }


@needs_bubblewrap
def test_require_sandbox_with_bubblewrap_records_it_and_no_allowance():
    confinement = _sandbox.require_sandbox("--sandbox")
    assert confinement.sandbox == "bubblewrap"
    assert confinement.allow_unsandboxed is False
