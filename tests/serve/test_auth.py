"""Bearer tokens through the SDK's own HTTP client: each refusal is refused, and changes nothing.

Refusals: no token, a wrong token, a revoked token (401); a read token calling a write tool
(403, with a JSON-RPC error naming the scope); a non-loopback bind without tokens, or with
``--no-auth`` (the server refuses to start). The store is compared row by row before and after.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.serve import revoke_token
from mcp import MCPError
from tests.support.serve import Running, http_client, make_token, running_server, serve_once

EXPERIENCE = {
    "task": "Regenerate the parquet fixtures after the orders schema change",
    "summary": "Regenerated the fixtures and checked they parse.",
    "outcome": "passed",
    "verification": {"command": "pytest tests/fixtures", "exit_code": 0},
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


def store_rows(home: Path) -> dict[str, list[str]]:
    """Every row of every table of the store (its whole content), token book included."""
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


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    root = tmp_path_factory.mktemp("auth")
    home, project = root / "home", root / "project"
    project.mkdir()
    with running_server(home, project, scope="write") as running:
        yield running


async def _record(url: str, token: str | None) -> dict[str, Any]:
    async with http_client(url, token) as client:
        result = await client.call_tool("lore_record", EXPERIENCE, read_timeout_seconds=60)
        assert not result.is_error, result.content
        assert result.structured_content is not None
        return result.structured_content


def _refused_on_connect(url: str, token: str | None) -> None:
    async def main() -> None:
        async with http_client(url, token) as client:
            await client.call_tool("lore_record", EXPERIENCE, read_timeout_seconds=60)

    # The SDK's client cannot even initialize: the transport's answer is an error.
    with pytest.raises((MCPError, httpx2.HTTPError, ExceptionGroup)):
        anyio.run(main)


def _raw_status(url: str, token: str | None) -> tuple[int, httpx2.Response]:
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    response = httpx2.post(url, json=INITIALIZE, headers=headers, timeout=60)
    return response.status_code, response


def test_a_request_without_a_token_gets_401_and_stores_nothing(server):
    before = store_rows(server.home)
    _refused_on_connect(server.mcp_url, None)
    status, response = _raw_status(server.mcp_url, None)
    assert status == 401
    assert response.headers["www-authenticate"].startswith("Bearer ")
    assert store_rows(server.home) == before


def test_a_wrong_token_gets_401_and_stores_nothing(server):
    before = store_rows(server.home)
    assert server.token is not None
    wrong = server.token[:-4] + ("AAAA" if not server.token.endswith("AAAA") else "BBBB")
    _refused_on_connect(server.mcp_url, wrong)
    assert _raw_status(server.mcp_url, wrong)[0] == 401
    assert _raw_status(server.mcp_url, "not-even-a-lorelab-token")[0] == 401
    assert store_rows(server.home) == before


def test_a_revoked_token_is_refused_at_its_next_request_and_stores_nothing(server):
    project = server.home.parent / "project"
    token = make_token(server.home, project, "soon-revoked", "write")
    recorded = anyio.run(_record, server.mcp_url, token)  # live: it works
    assert recorded["verified"] is True
    revoke_token(server.home / "memory.db", "soon-revoked")
    before = store_rows(server.home)
    _refused_on_connect(server.mcp_url, token)
    assert _raw_status(server.mcp_url, token)[0] == 401
    assert store_rows(server.home) == before


def test_a_read_token_calling_a_write_tool_gets_403_and_stores_nothing(server):
    project = server.home.parent / "project"
    reader = make_token(server.home, project, "reader", "read")
    before = store_rows(server.home)

    async def main() -> str:
        async with http_client(server.mcp_url, reader) as client:
            listed = await client.list_tools()  # reading is allowed
            assert "lore_record" in {tool.name for tool in listed.tools}
            with pytest.raises(MCPError) as refused:
                await client.call_tool("lore_record", EXPERIENCE, read_timeout_seconds=60)
            return str(refused.value)

    message = anyio.run(main)
    assert message == "forbidden: token 'reader' has scope read; lore_record needs write"
    assert store_rows(server.home) == before
    # The status itself, for the same call sent raw over the reader's session.
    headers = {
        "Authorization": f"Bearer {reader}",
        "Accept": "application/json, text/event-stream",
    }
    with httpx2.Client(timeout=60) as raw:
        opened = raw.post(server.mcp_url, json=INITIALIZE, headers=headers)
        session = {"mcp-session-id": opened.headers["mcp-session-id"]}
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "lore_record", "arguments": EXPERIENCE},
        }
        response = raw.post(server.mcp_url, json=call, headers={**headers, **session})
    assert response.status_code == 403
    assert response.json()["id"] == 7
    assert store_rows(server.home) == before


def test_a_write_token_records_and_the_record_names_it_in_show_and_explain(server):
    recorded = anyio.run(_record, server.mcp_url, server.token)
    runner = CliRunner()
    shown = runner.invoke(
        app, ["memory", "--home", str(server.home), "show", recorded["id"], "--json"]
    )
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["provenance"]["recorded_by"] == "test-client"
    explained = runner.invoke(
        app, ["memory", "--home", str(server.home), "explain", EXPERIENCE["task"], "--json"]
    )
    assert explained.exit_code == 0, explained.output
    by_id = {c["id"]: c for c in json.loads(explained.stdout)["candidates"]}
    assert by_id[recorded["id"]]["recorded_by"] == "test-client"
    text = runner.invoke(app, ["memory", "--home", str(server.home), "explain", EXPERIENCE["task"]])
    assert "recorded by token test-client" in text.stdout


def test_a_non_loopback_bind_without_tokens_is_refused_and_nothing_is_stored(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    done = serve_once(home, project, "--host", "0.0.0.0")
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip() == (
        "lorelab: error: --host 0.0.0.0: a non-loopback address needs a token: create one "
        "with `lorelab serve token create NAME --scope read|write|admin`"
    )
    assert not home.exists()  # refused before the store was even created
    refused = serve_once(home, project, "--host", "0.0.0.0", "--no-auth")
    assert refused.returncode == 3
    assert "--no-auth serves only 127.0.0.1 or ::1 (any spelling)" in refused.stderr
    assert not home.exists()
    # An existing store with only the hooks' own token is refused the same, unchanged.
    make_token(home, project, "local", "write")
    rows = store_rows(home)
    again = serve_once(home, project, "--host", "0.0.0.0")
    assert again.returncode == 3
    assert "a non-loopback address needs a token" in again.stderr
    assert store_rows(home) == rows


def test_no_auth_serves_loopback_without_tokens_and_records_no_token_name(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    with running_server(home, project, scope=None, args=["--no-auth"]) as running:
        assert running.state["token"] is None
        recorded = anyio.run(_record, running.mcp_url, None)
    rows = store_rows(home)
    assert rows["serve_tokens"] == []  # no local token either
    shown = CliRunner().invoke(
        app, ["memory", "--home", str(home), "show", recorded["id"], "--json"]
    )
    assert json.loads(shown.stdout)["provenance"]["recorded_by"] is None
