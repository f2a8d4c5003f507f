"""The served tools check the caller's scope themselves too, behind the 403 gate."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp_types import CallToolRequestParams

from lorelab.memory import open_store
from lorelab.serve._app import ServedLorelab

RECORD = {
    "task": "Fix the flaky export job after the retry change",
    "summary": "Made the retry idempotent; the export test passes again.",
    "outcome": "passed",
    "verification": {"command": "pytest -q tests/test_export.py", "exit_code": 0},
}


def _as(scopes: list[str]) -> SimpleNamespace:
    user = AuthenticatedUser(AccessToken(token="t", client_id="reader", scopes=scopes))
    return SimpleNamespace(request=SimpleNamespace(scope={"user": user}))


def _experiences(home: Path) -> int:
    conn = sqlite3.connect(f"{(home / 'memory.db').as_uri()}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM experiences").fetchone()[0])
    finally:
        conn.close()


def test_a_write_tool_called_past_the_gate_with_a_read_token_runs_nothing(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    store = open_store(str(tmp_path / "home"), project)
    try:
        server = ServedLorelab(store, tmp_path / "home", project)
        params = CallToolRequestParams(name="lore_record", arguments=RECORD)
        refused = anyio.run(server._call_tool, _as(["read"]), params)
        assert _experiences(tmp_path / "home") == 0
        assert refused.is_error
        assert refused.content[0].text == (  # type: ignore[union-attr]
            "forbidden: token 'reader' has scope read; lore_record needs write"
        )
        recorded = anyio.run(server._call_tool, _as(["read", "write"]), params)
        assert not recorded.is_error, recorded.content
        assert _experiences(tmp_path / "home") == 1
    finally:
        store.close()
