"""Raw bytes over the server's stdio pipe: every request with an id is answered, even malformed."""

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-pipe", "version": "0"},
    },
}
DEEP = 100_000
MALFORMED = [
    (2, b'{"jsonrpc":"2.0","id":2,"method":"tools/li', -32700, "not complete JSON"),
    (3, b'{"jsonrpc":"2.0","id":3}', -32600, "no method"),
    (4, b'{"jsonrpc":"2.0","id":4,"method":"tools/list","params":[1,2]}', -32600, "params"),
    (5, b'{"jsonrpc":"2.0","id":5,"method":"tools/list","params":"x"}', -32600, "params"),
    (
        6,
        b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"lore_record",'
        b'"arguments":{"task":' + b"[" * DEEP + b"]" * DEEP + b"}}}",
        -32700,
        "nested",
    ),
    (
        "seven",
        b'{"jsonrpc":"2.0","id":"seven","method":"tools/call","params":{"name":"lore_list",'
        b'"arguments":' + b"{" * 5,
        -32700,
        "not complete JSON",
    ),
    (8, b'{"jsonrpc":"2.0","id":8,"method":42}', -32600, "method must be a string"),
]


class _Server:
    def __init__(self, home: Path, project: Path) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lorelab",
                "mcp",
                "--home",
                str(home),
                "--project",
                str(project),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.replies.put(json.loads(line))

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        return self.replies.get(timeout=60)

    def stop(self) -> str:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
        assert self.process.stderr is not None
        return self.process.stderr.read().decode()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        self.reader.join(timeout=30)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def server(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    running = _Server(tmp_path / "home", project)
    yield running
    running.close()


def test_each_malformed_request_gets_an_error_reply_and_the_server_stays_up(server):
    server.send(json.dumps(INITIALIZE).encode())
    assert server.reply()["id"] == 1
    server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    for ident, data, code, words in MALFORMED:
        server.send(data)
        reply = server.reply()
        assert reply["id"] == ident, (ident, reply)
        assert reply["error"]["code"] == code, reply
        assert words in reply["error"]["message"], reply
        assert "\n" not in reply["error"]["message"]
    server.send(b'{"jsonrpc":"2.0","id":9,"method":"tools/list"}')
    listed = server.reply()
    assert listed["id"] == 9
    assert "lore_record" in {tool["name"] for tool in listed["result"]["tools"]}
    stderr = server.stop()
    refused = [line for line in stderr.splitlines() if "refused request" in line]
    assert len(refused) == len(MALFORMED)
    assert server.process.returncode == 0


def test_a_line_without_a_readable_id_is_answered_with_a_null_id(server):
    server.send(json.dumps(INITIALIZE).encode())
    assert server.reply()["id"] == 1
    server.send(b"[1, 2, 3]")
    reply = server.reply()
    assert reply["id"] is None
    assert reply["error"]["code"] == -32600
    server.send(b'{"jsonrpc": "2.0", "id": {"nested": 1}, "method": "tools/list"')
    reply = server.reply()
    assert reply["id"] is None
    assert reply["error"]["code"] == -32700


def test_a_malformed_notification_gets_no_reply_but_is_logged(server):
    server.send(json.dumps(INITIALIZE).encode())
    assert server.reply()["id"] == 1
    server.send(b'{"jsonrpc":"2.0","method":"notifications/x","params":[1]}')
    server.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
    assert server.reply()["id"] == 2
    assert "refused request" in server.stop()


# JSON-RPC 2.0, section 4: an id is a string, a number without a fractional part, or null;
# section 5: when the id cannot be read, the error reply's id is null.
# https://www.jsonrpc.org/specification . MCP's base protocol adds that a request id "MUST NOT
# be null" (https://modelcontextprotocol.io/specification/2025-06-18/basic).
BAD_IDS = [b"1.5", b"1e3", b"true", b"[1]", b"{}", b"null"]


def test_a_request_whose_id_is_not_a_string_or_an_integer_gets_an_error_with_a_null_id(server):
    server.send(json.dumps(INITIALIZE).encode())
    assert server.reply()["id"] == 1
    server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    for ident in BAD_IDS:
        server.send(b'{"jsonrpc":"2.0","id":' + ident + b',"method":"tools/list"}')
        reply = server.reply()
        assert reply["id"] is None, (ident, reply)
        assert reply["error"]["code"] == -32600, reply
        assert "id" in reply["error"]["message"], reply
    server.send(b'{"jsonrpc":"2.0","id":9,"method":"tools/list"}')
    assert server.reply()["id"] == 9
    stderr = server.stop()
    assert len([line for line in stderr.splitlines() if "refused request" in line]) == len(BAD_IDS)
    assert server.process.returncode == 0


def test_a_lone_surrogate_in_the_arguments_gets_an_error_reply_with_the_request_id(server):
    server.send(json.dumps(INITIALIZE).encode())
    assert server.reply()["id"] == 1
    server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    server.send(
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lore_prepare",'
        b'"arguments":{"task":"fix the \\ud800 build"}}}'
    )
    reply = server.reply()
    assert reply["id"] == 2, reply
    assert reply["error"]["code"] == -32600, reply
    assert "surrogate" in reply["error"]["message"], reply
    # A surrogate pair is a character (U+1F600), not a lone surrogate: served as usual.
    server.send(
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lore_prepare",'
        b'"arguments":{"task":"fix the \\ud83d\\ude00 build"}}}'
    )
    served = server.reply()
    assert served["id"] == 3
    assert "result" in served, served
    server.stop()
    assert server.process.returncode == 0
