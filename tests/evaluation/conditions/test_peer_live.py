"""The peer profiles against the real servers, over MCP stdio with the SDK's own client.

server-memory runs wherever ``LORELAB_PEERS`` names a folder scripts/install_peers.sh filled
(CI installs it there); the other three are opt-in (``LORELAB_TEST_PEERS_LIVE=1``) since they
build native modules or need Python 3.12."""

import os
import shutil
from pathlib import Path

import anyio
import pytest

from lorelab.evaluation.conditions._memory import PROFILES, MemoryToolError, open_memory
from lorelab.evaluation.conditions._profile_data import (
    PEERS_ENV,
    prepare_server_dirs,
    server_values,
)
from lorelab.evaluation.conditions._runner import default_memory_argv

PEERS = os.environ.get(PEERS_ENV)
LIVE_ALL = os.environ.get("LORELAB_TEST_PEERS_LIVE") == "1"
INSTALLED = {
    "server-memory": "node_modules/@modelcontextprotocol/server-memory/dist/index.js",
    "memorix": "node_modules/memorix/dist/cli/index.js",
    "memory-keeper": "node_modules/mcp-memory-keeper/dist/index.js",
    "basic-memory": "basic-memory-venv/bin/basic-memory",
}
TASK = "parse_amount in shop/money.py turns '2.665' into 2.66; finance rounds half up."


def _record(task_id):
    return {
        "task": TASK,
        "task_id": task_id,
        "summary": "parse_amount now quantizes to CENT with ROUND_HALF_UP.",
        "outcome": "passed",
        "verification": {"command": "python -m pytest -q tests/test_money.py", "exit_code": 0},
        "files": ["shop/money.py"],
    }


def _skip_unless_installed(name):
    if PEERS is None or not (Path(PEERS) / INSTALLED[name]).exists():
        pytest.skip(f"{name} is not installed (set {PEERS_ENV}; scripts/install_peers.sh)")
    if shutil.which("node") is None and name != "basic-memory":
        pytest.skip("node is not on PATH")


def _scenario(name, tmp_path):
    profile = PROFILES[name]
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    prepare_server_dirs(profile, home, project)
    argv = default_memory_argv(profile, home, project)
    env = server_values(profile, home, project)[1]

    async def scenario():
        async with open_memory(
            profile, argv, home=home, cwd=project, stderr_path=tmp_path / "err", env=env
        ) as memory:
            first = await memory.call("record", _record("seed-1"))
            second = await memory.call("record", _record("seed-1"))
            brief = await memory.call("prepare", {"task": TASK, "include_skills": False})
            return memory.server_info, first, second, brief, memory.supports("start")

    return anyio.run(scenario)


def _check(name, tmp_path):
    try:
        info, first, second, brief, has_start = _scenario(name, tmp_path)
    except MemoryToolError as exc:
        pytest.fail(f"{name}: {exc}")
    assert info is not None
    assert info["name"]
    # Two records of one task are two stored records (the profile's unique key per record).
    assert first["id"] is not None
    assert second["id"] is not None
    assert first["id"] != second["id"]
    assert has_start is False
    return brief


def test_server_memory_stores_each_record_and_finds_it_by_the_exact_task_text(tmp_path):
    _skip_unless_installed("server-memory")
    brief = _check("server-memory", tmp_path)
    assert len(brief["experiences"]) == 2
    assert "ROUND_HALF_UP" in brief["text"]


@pytest.mark.skipif(not LIVE_ALL, reason="opt-in: LORELAB_TEST_PEERS_LIVE=1")
@pytest.mark.parametrize("name", ["memorix", "memory-keeper", "basic-memory"])
def test_a_peer_stores_each_record_and_serves_the_task_back(tmp_path, name):
    _skip_unless_installed(name)
    brief = _check(name, tmp_path)
    assert brief["experiences"]
