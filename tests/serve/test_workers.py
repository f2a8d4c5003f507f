"""``lorelab serve --workers N``: N processes on one socket and one store, stopped as one."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

from tests.serve.test_faults import KILL_AFTER, WRITERS, Writers, _stored
from tests.support.processes import alive, gone_soon
from tests.support.serve import (
    make_token,
    mcp_call_body,
    mcp_post,
    start_server,
    stop,
    wait_for_state,
)


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        found += [
            int(child) for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        ]
    return found


def test_every_acknowledged_record_survives_a_sigkill_of_a_server_with_two_workers(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    token = make_token(home, project, "writer", "write")
    process = start_server(home, project, args=["--workers", "2"])
    try:
        state = wait_for_state(process, home)
        workers = _children(process.pid)
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
    again = start_server(home, project, args=["--workers", "2"])
    try:
        wait_for_state(again, home)
    finally:
        assert stop(again) == 143
    stored, integrity = _stored(home)
    missing = {
        ident: task
        for ident, task in writers.acked.items()
        if stored.get(int(ident.removeprefix("exp-"))) != task
    }
    assert missing == {}
    assert integrity == "ok"


def test_sigterm_stops_every_worker_and_withdraws_serve_json(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    token = make_token(home, project, "writer", "write")
    process = start_server(home, project, args=["--workers", "3"])
    try:
        state = wait_for_state(process, home)
        workers = _children(process.pid)
        assert len(workers) == 2
        body = mcp_call_body(1, "lore_list", {})
        for _ in range(6):  # each on a new connection: any of the three may answer
            assert mcp_post(state["url"], token, body, "lore_list").status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 143
    finally:
        stop(process)
    assert all(gone_soon(pid, 120) for pid in workers)
    assert not (home / "serve.json").exists()


def test_one_worker_is_the_server_alone(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    process = start_server(home, project, args=["--workers", "1"])
    try:
        wait_for_state(process, home)
        assert _children(process.pid) == []
    finally:
        assert stop(process) == 143
