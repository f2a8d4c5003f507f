"""One store per project: a command, a hook or `lorelab mcp` run in a subdirectory finds the
project as git finds a repository (the nearest `.lorelab` above, else the repository root), and
never creates a second store below an existing one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
from click.testing import CliRunner
from mcp.client.stdio import StdioServerParameters, stdio_client

from lorelab.cli.main import app
from lorelab.hooks import run_hook
from lorelab.memory import find_project
from mcp import Client
from tests.support.hooks import claude_payload

TASK = "fix the flaky payment test"
RECORD = [
    "memory", "record", "--task", TASK, "--outcome", "passed",
    "--summary", "pinned the clock in the payment test",
    "--verify-command", "pytest -q tests/test_payment.py", "--verify-exit-code", "0",
]  # fmt: skip


def _repository(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / "src" / "payments").mkdir(parents=True)
    (root / ".git").mkdir()
    return root


def _clean_env(monkeypatch) -> None:
    monkeypatch.delenv("LORELAB_HOME", raising=False)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)


def test_find_project_is_the_repository_root_from_a_subdirectory(tmp_path):
    root = _repository(tmp_path)
    assert find_project(root / "src" / "payments") == root


def test_find_project_prefers_the_nearest_store_above_to_a_nested_repository(tmp_path):
    root = _repository(tmp_path)
    (root / ".lorelab").mkdir()
    nested = root / "vendor" / "lib"
    (nested / ".git").mkdir(parents=True)
    assert find_project(nested / "deep") == root


def test_find_project_accepts_a_git_file_as_in_a_worktree(tmp_path):
    root = tmp_path / "wt"
    (root / "pkg").mkdir(parents=True)
    (root / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")
    assert find_project(root / "pkg") == root


def test_find_project_outside_any_repository_is_the_directory_itself(tmp_path):
    alone = tmp_path / "alone" / "dir"
    alone.mkdir(parents=True)
    assert find_project(alone) == alone


def test_memory_prepare_in_a_subdirectory_reads_the_store_at_the_repository_root(
    tmp_path, monkeypatch
):
    _clean_env(monkeypatch)
    root = _repository(tmp_path)
    monkeypatch.chdir(root)
    assert CliRunner().invoke(app, RECORD).exit_code == 0
    monkeypatch.chdir(root / "src")
    brief = CliRunner().invoke(app, ["memory", "prepare", "the payment test is flaky again"])
    assert brief.exit_code == 0, brief.output
    assert "exp-1" in brief.output
    assert not (root / "src" / ".lorelab").exists()


def test_a_record_in_a_subdirectory_never_creates_a_store_below_an_existing_one(
    tmp_path, monkeypatch
):
    _clean_env(monkeypatch)
    # No repository at all: only the store at the top tells where the project is.
    top = tmp_path / "plain"
    (top / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(top)
    assert CliRunner().invoke(app, RECORD).exit_code == 0
    monkeypatch.chdir(top / "a" / "b")
    again = CliRunner().invoke(app, [*RECORD[:3], "fix the flaky refund test", *RECORD[4:]])
    assert again.exit_code == 0, again.output
    assert not (top / "a" / "b" / ".lorelab").exists()
    listed = CliRunner().invoke(app, ["memory", "list", "--json"])
    assert json.loads(listed.stdout)["total"] == 2


def test_a_hook_whose_cwd_is_a_subdirectory_briefs_from_the_projects_store(tmp_path, monkeypatch):
    _clean_env(monkeypatch)
    root = _repository(tmp_path)
    monkeypatch.chdir(root)
    assert CliRunner().invoke(app, RECORD).exit_code == 0
    payload = claude_payload("UserPromptSubmit", "s1", root / "src" / "payments", prompt=TASK)
    answer = run_hook("claude-code", "UserPromptSubmit", json.dumps(payload).encode(), {})
    assert "pinned the clock" in json.loads(answer)["hookSpecificOutput"]["additionalContext"]
    assert not (root / "src" / "payments" / ".lorelab").exists()


def test_lorelab_mcp_started_in_a_subdirectory_serves_the_projects_store(tmp_path, monkeypatch):
    _clean_env(monkeypatch)
    root = _repository(tmp_path)
    monkeypatch.chdir(root)
    assert CliRunner().invoke(app, RECORD).exit_code == 0
    env = {k: v for k, v in os.environ.items() if k not in ("LORELAB_HOME",)}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "lorelab", "mcp"], env=env, cwd=root / "src"
    )

    async def listed() -> dict:
        async with Client(stdio_client(params), read_timeout_seconds=60) as client:
            result = await client.call_tool("lore_list", {}, read_timeout_seconds=60)
            assert not result.is_error, result.content
            return dict(result.structured_content or {})

    assert anyio.run(listed)["total"] == 1
    assert not (root / "src" / ".lorelab").exists()


def test_the_hook_program_in_a_subdirectory_logs_into_the_projects_store(tmp_path):
    root = _repository(tmp_path)
    (root / ".lorelab").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("LORELAB_HOME", "CLAUDE_PROJECT_DIR")}
    done = subprocess.run(
        [sys.executable, "-m", "lorelab", "hooks", "run", "NotAnEvent"],
        input=b"{}", cwd=root / "src", env=env, capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0
    assert not (root / "src" / ".lorelab").exists()
    assert any((root / ".lorelab").iterdir())
