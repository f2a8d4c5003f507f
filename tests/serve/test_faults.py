"""``lorelab serve`` killed with SIGKILL under load: every acknowledged record survives."""

from __future__ import annotations

import signal
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import httpx2

from tests.support.serve import (
    make_token,
    mcp_call_body,
    mcp_headers,
    start_server,
    stop,
    wait_for_state,
)

WRITERS = 8
KILL_AFTER = 150
RECORD = {
    "summary": "Made the retry idempotent; the export test passes again.",
    "outcome": "passed",
    "verification": {"command": "pytest -q tests/test_export.py", "exit_code": 0},
    "commands": [{"command": "pytest -q tests/test_export.py", "exit_code": 0}],
}


class Writers:
    """Clients that record experiences with unique tasks until the server goes away."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.acked: dict[str, str] = {}
        self.unanswered = 0
        self.lock = threading.Lock()
        self.enough = threading.Event()

    def run(self, writer: int) -> None:
        headers = mcp_headers(self.token, "lore_record")
        with httpx2.Client(headers=headers, timeout=120) as client:
            for n in range(100_000):
                task = f"Fix the flaky export job w{writer}-{n} after the retry change"
                body = mcp_call_body(n, "lore_record", {**RECORD, "task": task})
                try:
                    response = client.post(f"{self.url}/mcp", content=body)
                except httpx2.TransportError:  # the server was killed with this one in flight
                    with self.lock:
                        self.unanswered += 1
                    return
                assert response.status_code == 200, response.text
                ident = response.json()["result"]["structuredContent"]["id"]
                with self.lock:
                    self.acked[ident] = task
                    if len(self.acked) >= KILL_AFTER:
                        self.enough.set()


def _stored(home: Path) -> tuple[dict[int, str], str]:
    conn = sqlite3.connect(f"{(home / 'memory.db').as_uri()}?mode=ro", uri=True)
    try:
        tasks = {int(i): str(t) for i, t in conn.execute("SELECT id, task FROM experiences")}
        return tasks, str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def assert_every_acknowledged_record_stored(
    home: Path, project: Path, writers: Writers, args: Sequence[str] = ()
) -> None:
    """Start a server on the store again (its start runs recovery), stop it, and check that
    every record ``writers`` saw acknowledged is stored as sent, and the store's integrity."""
    again = start_server(home, project, args=args)
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


def test_every_acknowledged_record_survives_a_sigkill_under_load(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    token = make_token(home, project, "writer", "write")
    process = start_server(home, project)
    try:
        state = wait_for_state(process, home)
        writers = Writers(state["url"], token)
        threads = [threading.Thread(target=writers.run, args=(n,)) for n in range(WRITERS)]
        for thread in threads:
            thread.start()
        assert writers.enough.wait(timeout=600), f"only {len(writers.acked)} acknowledged"
        process.send_signal(signal.SIGKILL)
        for thread in threads:
            thread.join(timeout=300)
        assert process.wait(timeout=120) == -signal.SIGKILL
    finally:
        stop(process)
    assert len(writers.acked) >= KILL_AFTER
    assert writers.unanswered >= 1  # killed with requests in flight, not between them
    # The killed server's lock went with it: a new server starts on the same store.
    assert_every_acknowledged_record_stored(home, project, writers)
