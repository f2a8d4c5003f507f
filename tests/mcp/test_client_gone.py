"""A client that disappears in the middle of a call: the server ends quietly, the store intact.

The client's half of the pipes is closed by hand, which the SDK's client cannot express: its
stdout read end first, so the server's reply to the call meets a broken pipe while stdin is
still open (the order that made the server exit 70 with a ``BrokenPipeError`` traceback), then
its stdin once the server has said that the client is gone.
"""

import json
import queue
import sqlite3
import subprocess
import sys
import threading
import time

from tests.mcp.test_raw_stdio import INITIALIZE

RECORD = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {
        "name": "lore_record",
        "arguments": {
            "task": "Regenerate the parquet fixtures after the orders schema change",
            "summary": "Generated the fixture file and checked it parses.",
            "outcome": "passed",
            "verification": {"command": "pytest -q tests/test_fixtures.py", "exit_code": 0},
        },
    },
}
GONE = "the client closed the connection"


def _wait_for(lines: "queue.Queue[str | None]", words: str, seen: list[str]) -> None:
    """Collect stderr lines until one holds ``words`` or stderr ends (60 s at most)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        if line is None:
            return
        seen.append(line)
        if words in line:
            return


def test_a_client_that_disappears_mid_call_ends_the_server_quietly_with_the_store_intact(
    tmp_path,
):
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    process = subprocess.Popen(
        [sys.executable, "-m", "lorelab", "mcp", "--home", str(home), "--project", str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    lines: queue.Queue[str | None] = queue.Queue()

    def read_stderr() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        process.stdin.write(json.dumps(INITIALIZE) + "\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1
        process.stdout.close()  # the client is gone: nobody reads the reply
        process.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        process.stdin.write(json.dumps(RECORD) + "\n")
        process.stdin.flush()
        _wait_for(lines, GONE, seen)
        process.stdin.close()
        process.wait(timeout=60)
        reader.join(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        process.stderr.close()
    while not lines.empty():
        seen.append(lines.get() or "")
    text = "".join(seen)
    assert process.returncode == 0, text
    assert GONE in text
    assert "Traceback" not in text
    assert "BrokenPipeError" not in text
    with sqlite3.connect(home / "memory.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        tasks = [row[0] for row in conn.execute("SELECT task FROM experiences")]
    assert tasks == [RECORD["params"]["arguments"]["task"]]  # type: ignore[index]
