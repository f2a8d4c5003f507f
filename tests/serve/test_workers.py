"""``lorelab serve --workers N``: N processes on one socket and one store, stopped as one."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import secrets
import signal
import sqlite3
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from lorelab._state import query_vectors_file, server_file
from lorelab.serve._fast import proof
from tests.serve.test_faults import (
    KILL_AFTER,
    WRITERS,
    Writers,
    assert_every_acknowledged_record_stored,
)
from tests.serve.test_hook_trust import _env, _hook, _prompt, _seed
from tests.support.processes import alive, children, gone_soon
from tests.support.serve import (
    make_token,
    mcp_call_body,
    mcp_post,
    running_server,
    start_server,
    stop,
    wait_for_state,
)


def _server_with_workers(tmp_path: Path, count: int):
    """A server of ``count`` processes on a new home: home, project, a write token, process."""
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    token = make_token(home, project, "writer", "write")
    return home, project, token, start_server(home, project, args=["--workers", str(count)])


def test_every_acknowledged_record_survives_a_sigkill_of_a_server_with_two_workers(tmp_path):
    home, project, token, process = _server_with_workers(tmp_path, 2)
    try:
        state = wait_for_state(process, home)
        workers = children(process.pid)
        assert len(workers) == 1  # the server serves too: two processes in all
        writers = Writers(state["url"], token)
        threads = [threading.Thread(target=writers.run, args=(n,)) for n in range(WRITERS)]
        for thread in threads:
            thread.start()
        assert writers.enough.wait(timeout=600), f"only {len(writers.acked)} acknowledged"
        assert alive(workers[0])
        process.send_signal(signal.SIGKILL)
        for thread in threads:
            thread.join(timeout=300)
        assert process.wait(timeout=120) == -signal.SIGKILL
        # The kernel kills the worker with the server: nothing is left serving the socket.
        assert gone_soon(workers[0], 120)
    finally:
        stop(process)
    assert len(writers.acked) >= KILL_AFTER
    assert writers.unanswered >= 1  # killed with requests in flight, not between them
    assert_every_acknowledged_record_stored(home, project, writers, args=["--workers", "2"])


def test_sigterm_stops_every_worker_and_withdraws_the_state_file(tmp_path):
    home, _, token, process = _server_with_workers(tmp_path, 3)
    try:
        state = wait_for_state(process, home)
        workers = children(process.pid)
        assert len(workers) == 2
        body = mcp_call_body(1, "lore_list", {})
        for _ in range(6):  # each on a new connection: any of the three may answer
            assert mcp_post(state["url"], token, body, "lore_list").status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 143
    finally:
        stop(process)
    assert all(gone_soon(pid, 120) for pid in workers)
    assert not server_file(home).exists()
    assert not (home / "serve.json").exists()


def test_one_worker_is_the_server_alone(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    process = start_server(home, project, args=["--workers", "1"])
    try:
        wait_for_state(process, home)
        assert children(process.pid) == []
    finally:
        assert stop(process) == 143


def _owner(pids: list[int], local_port: int, server_port: int) -> int | None:
    """Which of ``pids`` holds the server's end of the connection from ``local_port``."""
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = fields[1], fields[2]
        if int(local.split(":")[1], 16) == server_port and int(remote.split(":")[1], 16) == (
            local_port
        ):
            inode = fields[9]
    if inode is None:
        return None
    for pid in pids:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return pid
            except OSError:
                continue
    return None


def _proven_by(url: str, key: bytes, pids: list[int]) -> int | None:
    """One ``GET /proof`` on a new connection: the proof must verify; which process answered."""
    parts = urlsplit(url)
    assert parts.hostname is not None
    assert parts.port is not None
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        nonce = secrets.token_bytes(32)
        connection.request("GET", "/proof", headers={"X-Lorelab-Nonce": nonce.hex()})
        response = connection.getresponse()
        assert response.status == 200
        assert json.loads(response.read())["proof"] == proof(key, nonce)
        assert connection.sock is not None
        return _owner(pids, connection.sock.getsockname()[1], parts.port)
    finally:
        connection.close()


def test_every_worker_proves_the_one_key_and_no_command_line_holds_a_secret(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    _seed(home, project)
    with running_server(home, project, scope=None, args=["--workers", "2"]) as server:
        key, token = bytes.fromhex(server.state["proof_key"]), server.state["token"]
        pids = [server.process.pid, *children(server.process.pid)]
        assert len(pids) == 2
        for pid in pids:  # the secrets came through a pipe: not in argv, not in the environment
            for name in ("cmdline", "environ"):
                seen = Path(f"/proc/{pid}/{name}").read_bytes()
                assert token.encode() not in seen
                assert key.hex().encode() not in seen
                assert key not in seen
        answered: set[int | None] = set()
        deadline = time.monotonic() + 120
        while set(pids) - answered and time.monotonic() < deadline:
            answered.add(_proven_by(server.url, key, pids))
        assert set(pids) <= answered  # both processes answered, each with the one key
        env = _env(LORELAB_HOME=str(home), LORELAB_HOOK_SERVER_DEADLINE_S="120")
        for _ in range(3):
            done = _hook("UserPromptSubmit", _prompt(project), env)
            assert "lorelab: verified memory for this task" in done.stdout
    log = home / "hooks.log"
    written = log.read_text() if log.exists() else ""
    assert "did not prove" not in written
    assert "handled in-process" not in written


def test_the_workers_share_their_query_vectors_through_a_private_file(tmp_path):
    home, _, token, process = _server_with_workers(tmp_path, 2)
    try:
        state = wait_for_state(process, home)
        check = {"command": "pytest -q tests/test_export.py", "exit_code": 0}
        record = {
            "task": "Fix the flaky export job",
            "summary": "Made the retry idempotent.",
            "outcome": "passed",
            "verification": check,
            "commands": [check],
        }
        answer = mcp_post(state["url"], token, mcp_call_body(1, "lore_record", record)).json()
        assert answer["result"]["structuredContent"]["id"] == "exp-1"
        tasks = [f"Repair the export retry, case {number}" for number in range(4)]
        for ident, task in enumerate(tasks * 2, start=2):  # each on a new connection
            body = mcp_call_body(ident, "lore_prepare", {"task": task})
            assert mcp_post(state["url"], token, body, "lore_prepare").status_code == 200
        shared = query_vectors_file(home / "memory.db")
        assert shared.stat().st_mode & 0o777 == 0o600
        with contextlib.closing(sqlite3.connect(f"{shared.as_uri()}?mode=ro", uri=True)) as conn:
            assert conn.execute("SELECT count(*) FROM query_vectors").fetchone()[0] == len(tasks)
    finally:
        assert stop(process) == 143
    # The vectors live as long as the server: it deletes them when it stops.
    assert not [path for path in shared.parent.iterdir() if path.name.startswith(shared.name)]
