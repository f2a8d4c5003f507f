"""``lorelab serve`` under hostile clients (issue 40), each over real sockets to a real server.

``--no-auth`` only on 127.0.0.1 and ::1 (any spelling); the Host and Origin check on every
loopback address, with and without tokens, on every path; ``/hooks`` without auth; the body
limit and the body deadline on ``/hooks`` as on ``/mcp``; idle bodies that hold no slot; a
TLS file that is not PEM refused in one line before anything is served; a read token that
prepares (unrecorded).
"""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest

from lorelab.memory import CommandRun, RecordRequest, Verification, open_store
from tests.support.hooks import claude_payload
from tests.support.serve import (
    PROTOCOL,
    http_client,
    make_token,
    mcp_call_body,
    mcp_post,
    running_server,
    serve_once,
)

TASK = "Regenerate the parquet fixtures after the orders schema change"
SUMMARY = "Ran the fixture generator and checked the files parse."


def _seed(home: Path, project: Path) -> None:
    store = open_store(home, project)
    try:
        store.record(
            RecordRequest(
                task=TASK,
                summary=SUMMARY,
                outcome="passed",
                verification=Verification(command="pytest tests/fixtures", exit_code=0),
                commands=[CommandRun(command="make fixtures-legacy", exit_code=2)],
            )
        )
    finally:
        store.close()


def _address(url: str) -> tuple[str, int]:
    hostport = url.split("://", 1)[1]
    host, _, port = hostport.rpartition(":")
    return host.strip("[]"), int(port)


def _raw(url: str, request: bytes, *, timeout: float = 120) -> tuple[int, bytes]:
    """Send ``request`` as it is; the status and body of the answer (read until closed)."""
    with socket.create_connection(_address(url), timeout=timeout) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    response = b"".join(chunks)
    return int(response.split(b" ", 2)[1]), response.partition(b"\r\n\r\n")[2]


def _head(path: str, host: str, length: int | None, *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}", *headers, "Connection: close"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _mcp_headers(token: str | None, tool: str) -> tuple[str, ...]:
    auth = () if token is None else (f"Authorization: Bearer {token}",)
    return (
        *auth,
        "Accept: application/json, text/event-stream",
        "Content-Type: application/json",
        f"Mcp-Protocol-Version: {PROTOCOL}",
        "Mcp-Method: tools/call",
        f"Mcp-Name: {tool}",
    )


def _hook_body(project: Path) -> bytes:
    payload = claude_payload("UserPromptSubmit", "sess-1", project, prompt=TASK.lower())
    return b"{}\n" + json.dumps(payload).encode()


def _hostport(url: str) -> str:
    return url.split("://", 1)[1]


# --- 1. --no-auth only on 127.0.0.1 and ::1; Host and Origin on every loopback address ---


@pytest.mark.parametrize("host", ["127.0.0.2", "127.0.1.1", "127.255.255.254", "localhost"])
def test_no_auth_is_refused_on_every_address_but_127_0_0_1_and_1(tmp_path, host):
    project = tmp_path / "project"
    project.mkdir()
    done = serve_once(tmp_path / "home", project, "--host", host, "--no-auth")
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip() == (
        f"lorelab: error: --host {host}: --no-auth serves only 127.0.0.1 or ::1 (any "
        "spelling); other addresses, other 127/8 ones and names included, need tokens"
    )
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("host", ["0:0:0:0:0:0:0:1", "::0001", "[::1]"])
def test_no_auth_on_any_spelling_of_1_serves_and_checks_host_and_origin(tmp_path, host):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    body = mcp_call_body(1, "lore_list", {})
    with running_server(home, project, scope=None, args=["--no-auth", "--host", host]) as server:
        assert server.url.startswith("http://[::1]:")
        own = _hostport(server.url)
        port = own.rpartition(":")[2]
        headers = _mcp_headers(None, "lore_list")
        served = _raw(server.url, _head("/mcp", own, len(body), *headers) + body)
        assert served[0] == 200
        long_spelling = f"[0:0:0:0:0:0:0:1]:{port}"
        assert _raw(server.url, _head("/mcp", long_spelling, len(body), *headers) + body)[0] == 200
        rebound = _raw(
            server.url, _head("/mcp", f"evil.example:{port}", len(body), *headers) + body
        )
        assert rebound == (421, b"Invalid Host header")
        origin = (*headers, "Origin: http://evil.example")
        assert _raw(server.url, _head("/mcp", own, len(body), *origin) + body) == (
            403,
            b"Invalid Origin header",
        )


def _experience_count(home: Path) -> int:
    conn = sqlite3.connect(f"{(home / 'memory.db').as_uri()}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM experiences").fetchone()[0])
    finally:
        conn.close()


def test_a_server_on_another_127_address_checks_host_and_origin_even_with_a_valid_token(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    record = {
        "task": TASK,
        "summary": SUMMARY,
        "outcome": "passed",
        "verification": {"command": "pytest tests/fixtures", "exit_code": 0},
    }
    body = mcp_call_body(1, "lore_record", record)
    with running_server(home, project, scope="write", args=["--host", "127.0.0.2"]) as server:
        assert server.token is not None
        port = _hostport(server.url).rpartition(":")[2]
        headers = _mcp_headers(server.token, "lore_record")
        rebound = _head("/mcp", f"attacker.example:{port}", len(body), *headers)
        assert _raw(server.url, rebound + body) == (421, b"Invalid Host header")
        hooks = _head(
            "/hooks/claude-code/Stop",
            f"attacker.example:{port}",
            3,
            f"Authorization: Bearer {server.token}",
        )
        assert _raw(server.url, hooks + b"{}\n") == (421, b"Invalid Host header")
        origin = (*headers, "Origin: https://attacker.example")
        cross = _head("/mcp", _hostport(server.url), len(body), *origin)
        assert _raw(server.url, cross + body) == (403, b"Invalid Origin header")
        assert _experience_count(home) == 0
        # Its own address, and localhost, are served.
        assert (
            _raw(server.url, _head("/mcp", _hostport(server.url), len(body), *headers) + body)[0]
            == 200
        )
    assert _experience_count(home) == 1


def test_hooks_on_a_loopback_server_check_host_and_origin(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    body = _hook_body(project)
    with running_server(home, project, scope=None, args=["--no-auth"]) as server:
        port = _hostport(server.url).rpartition(":")[2]
        path = "/hooks/claude-code/UserPromptSubmit"
        rebound = _head(path, f"rebind.example:{port}", len(body))
        assert _raw(server.url, rebound + body) == (421, b"Invalid Host header")
        cross = _head(path, f"localhost:{port}", len(body), "Origin: http://rebind.example")
        assert _raw(server.url, cross + body) == (403, b"Invalid Origin header")


# --- 2. /hooks without auth ---


def test_hooks_on_a_no_auth_server_answer_the_hook(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    _seed(home, project)
    body = _hook_body(project)
    with running_server(home, project, scope=None, args=["--no-auth"]) as server:
        path = "/hooks/claude-code/UserPromptSubmit"
        status, answer = _raw(server.url, _head(path, _hostport(server.url), len(body)) + body)
    assert status == 200, answer
    context = json.loads(answer)["hookSpecificOutput"]["additionalContext"]
    assert SUMMARY in context


# --- 3. the body limit and the body deadline on /hooks, as on /mcp ---


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """A server whose bodies must arrive within 5 s: its URL, a write token, its project."""
    root = tmp_path_factory.mktemp("bodies")
    home, project = root / "home", root / "project"
    project.mkdir()
    with running_server(home, project, scope="write", args=["--body-timeout-s", "5"]) as server:
        assert server.token is not None
        yield server.url, server.token, project


@pytest.mark.parametrize("path", ["/hooks/claude-code/Stop", "/mcp"])
def test_a_body_declared_over_4_mib_is_refused_with_413_before_it_is_read(quick, path):
    url, token, _ = quick
    head = _head(path, _hostport(url), 300 * 1024 * 1024, f"Authorization: Bearer {token}")
    status, answer = _raw(url, head + b"{}\n", timeout=60)
    assert status == 413
    assert answer == b"request body over 4194304 bytes"


def test_a_chunked_hook_body_past_4_mib_is_refused_with_413(quick):
    url, token, _ = quick
    head = _head(
        "/hooks/claude-code/Stop",
        _hostport(url),
        None,
        f"Authorization: Bearer {token}",
        "Transfer-Encoding: chunked",
    )
    # One byte past the limit, in 1 MiB chunks, and no last chunk: a server that reads
    # bodies of any size waits for more (bounded here by the socket's timeout).
    sizes = [1024 * 1024] * 4 + [1]
    with socket.create_connection(_address(url), timeout=60) as sock:
        sock.sendall(head)
        for size in sizes:
            sock.sendall(f"{size:x}\r\n".encode() + b"x" * size + b"\r\n")
        response = b""
        while chunk := sock.recv(65536):
            response += chunk
    assert int(response.split(b" ", 2)[1]) == 413


@pytest.mark.parametrize("path", ["/hooks/claude-code/Stop", "/mcp"])
def test_a_body_that_never_arrives_gets_408_at_its_deadline(quick, path):
    url, token, _ = quick
    head = _head(path, _hostport(url), 1000, f"Authorization: Bearer {token}")
    # The 5 s deadline fires in the server; the 60 s here only bounds a server that has none.
    status, answer = _raw(url, head + b"{}\n", timeout=60)
    assert status == 408
    assert answer == b"request body not received within 5 s"


# --- 4. idle bodies hold no slot ---


@contextmanager
def _idle_body(url: str, *headers: str) -> Iterator[socket.socket]:
    """A connection whose request announces a body and sends only its first byte."""
    sock = socket.create_connection(_address(url), timeout=120)
    try:
        sock.sendall(_head("/mcp", _hostport(url), 10_000, *headers) + b"{")
        yield sock
    finally:
        sock.close()


def test_four_idle_bodies_of_a_read_token_do_not_starve_another_client(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    args = ["--max-in-flight", "4", "--max-queue", "0", "--body-timeout-s", "600"]
    with running_server(home, project, scope="write", args=args) as server:
        assert server.token is not None
        reader = make_token(home, project, "reader", "read")
        with ExitStack() as stack:
            idle = [
                stack.enter_context(_idle_body(server.url, *_mcp_headers(reader, "lore_list")))
                for _ in range(4)
            ]
            # Slowloris: headers that never end, and bodies without a token, hold nothing.
            slow = socket.create_connection(_address(server.url), timeout=120)
            stack.callback(slow.close)
            slow.sendall(b"POST /mcp HTTP/1.1\r\nHost: " + _hostport(server.url).encode())
            answered = mcp_post(
                server.url, server.token, mcp_call_body(2, "lore_list", {}), "lore_list"
            )
            assert answered.status_code == 200, answered.text
            assert "result" in answered.json()
            health = httpx2.get(f"{server.url}/healthz", timeout=60).json()
            assert (health["inFlight"], health["queued"], health["refused"]) == (0, 0, 0)
            no_token = _head("/mcp", _hostport(server.url), 10_000, *_mcp_headers(None, "x"))
            assert _raw(server.url, no_token + b"{")[0] == 401
            for sock in idle:  # still connected, still waiting for their own bodies
                sock.setblocking(False)
                with pytest.raises(BlockingIOError):
                    sock.recv(1)


# --- 5. TLS files that are not PEM ---


def test_a_tls_certificate_that_is_not_pem_is_one_line_exit_2_before_anything_serves(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    bogus = tmp_path / "cert.pem"
    bogus.write_text("this is not a certificate\n")
    done = serve_once(home, project, "--tls-cert", str(bogus), "--tls-key", str(bogus))
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(
        f"lorelab: error: --tls-cert {bogus} --tls-key {bogus}: not a PEM certificate and its "
        "unencrypted private key ("
    )
    assert "serve:" not in done.stderr
    assert not home.exists()


# --- 6. a read token prepares, and stores nothing ---


def _rows(home: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(f"{(home / 'memory.db').as_uri()}?mode=ro", uri=True)
    try:
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE "
                "'CREATE VIRTUAL%' AND name NOT LIKE '%_fts_%'"
            )
        ]
        return {t: sorted(map(repr, conn.execute(f"SELECT * FROM {t}"))) for t in tables}
    finally:
        conn.close()


def test_a_read_token_prepares_a_brief_that_is_not_recorded(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    _seed(home, project)
    with running_server(home, project, scope="write") as server:
        reader = make_token(home, project, "reader", "read")

        async def prepare(token: str | None) -> dict[str, object]:
            async with http_client(server.mcp_url, token) as client:
                result = await client.call_tool(
                    "lore_prepare", {"task": TASK.lower()}, read_timeout_seconds=60
                )
                assert not result.is_error, result.content
                assert result.structured_content is not None
                return result.structured_content

        # A write token's brief is recorded (and the first retrieval brings the store's
        # derived search counts up to date, as any retrieval does).
        recorded = anyio.run(prepare, server.token)
        assert str(recorded["brief_id"]).startswith("brief-")
        before = _rows(home)
        brief = anyio.run(prepare, reader)
        assert brief["brief_id"] is None
        assert SUMMARY in str(brief["text"])
        assert brief["text"] == recorded["text"]
        assert _rows(home) == before
