"""A hook never blocks the agent and never writes where it should not, whatever the payload.

Payload shapes: Claude Code's hooks reference (https://code.claude.com/docs/en/hooks): the
common fields, ``transcript_path`` included, and UserPromptSubmit, PostToolUse and PreCompact.
"""

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lorelab.hooks import LOG_NAME, run_hook, session_file
from lorelab.hooks._journal import TEXT_LIMIT
from tests.support.hooks import SECRET, claude_payload, clean_env

HOOK_TIMEOUT = 60  # seconds; a hook that hangs fails the test instead of the suite


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "plain-project"
    root.mkdir()
    return root


def _limit_memory():
    limit = 2 * 1024**3  # a hook that reads /dev/zero dies here, not the machine
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _installed_hook(project, event, payload, *, raw=None):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "lorelab", "hooks", "run", event, "--agent", "claude-code"],
        input=raw if raw is not None else json.dumps(payload).encode(),
        capture_output=True,
        cwd=project,
        env=clean_env(),
        timeout=HOOK_TIMEOUT,
        preexec_fn=_limit_memory,
        check=False,
    )
    return done, time.monotonic() - started


def _checkpoint_written(project):
    log = (project / ".lorelab" / LOG_NAME).read_text()
    return "checkpoint" in log and "written" in log


def test_a_fifo_transcript_does_not_hang_the_pre_compact_hook(project):
    fifo = project / "transcript.jsonl"
    os.mkfifo(fifo)  # nobody ever writes to it: a blocking open would wait forever
    payload = claude_payload("PreCompact", "s-fifo", project, trigger="auto")
    payload["transcript_path"] = str(fifo)
    done, took = _installed_hook(project, "PreCompact", payload)
    assert done.returncode == 0, done.stderr
    assert took < HOOK_TIMEOUT
    assert _checkpoint_written(project)


def test_a_dev_zero_transcript_is_not_read_until_memory_runs_out(project):
    payload = claude_payload("PreCompact", "s-zero", project, trigger="manual")
    payload["transcript_path"] = "/dev/zero"
    done, _took = _installed_hook(project, "PreCompact", payload)
    assert done.returncode == 0, done.stderr
    assert _checkpoint_written(project)
    assert "MemoryError" not in (project / ".lorelab" / LOG_NAME).read_text()


def test_deeply_nested_stdin_json_is_the_wrong_shape_not_exit_70(project):
    depth = 200_000
    raw = b'{"a": ' + b"[" * depth + b"]" * depth + b"}"
    done, _took = _installed_hook(project, "UserPromptSubmit", {}, raw=raw)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout == b""
    assert done.stderr == b""
    (line,) = (project / ".lorelab" / LOG_NAME).read_text().splitlines()
    assert "wrong shape" in line
    assert "nested too deeply" in line


def test_a_hook_whose_cwd_is_the_filesystem_root_writes_nothing(project, monkeypatch):
    monkeypatch.chdir(project)
    root_home = Path("/.lorelab")
    existed = root_home.exists()
    session = f"s-root-{os.getpid()}-{time.monotonic_ns()}"
    environ = {k: v for k, v in clean_env().items() if k != "GEMINI_PROJECT_DIR"}
    payload = claude_payload("UserPromptSubmit", session, Path("/"), prompt="list the files")
    assert run_hook("claude-code", "UserPromptSubmit", json.dumps(payload).encode(), environ) == ""
    assert not session_file(root_home, session).exists()
    if not existed:
        assert not root_home.exists()
    assert not (project / ".lorelab").exists()


def test_a_hook_without_a_project_logs_only_to_a_configured_home(tmp_path, monkeypatch):
    monkeypatch.chdir("/")
    home = tmp_path / "configured-home"
    payload = claude_payload("UserPromptSubmit", "s-root", Path("/"), prompt="hello")
    environ = {**clean_env(), "LORELAB_HOME": str(home)}
    assert run_hook("claude-code", "UserPromptSubmit", json.dumps(payload).encode(), environ) == ""
    (line,) = (home / LOG_NAME).read_text().splitlines()
    assert "is no project; nothing added" in line
    assert not (home / "hooks").exists()


def test_the_journal_redacts_a_command_before_cutting_it(project):
    # The token starts 24 characters before the cut: cut first, its first 20 characters after
    # ghp_ were kept, too short for the token pattern to recognise.
    prefix = "echo " + "x" * (TEXT_LIMIT - 12 - 24 - 6) + " "
    command = prefix + SECRET + " " + "y" * 100
    payload = claude_payload(
        "PostToolUse",
        "s-cut",
        project,
        tool_name="Bash",
        tool_input={"command": command},
        tool_response={"stdout": "", "stderr": "", "interrupted": False},
        tool_use_id="t",
    )
    run_hook("claude-code", "PostToolUse", json.dumps(payload).encode(), {})
    journal = session_file(project / ".lorelab", "s-cut").read_text()
    (entry,) = [json.loads(line) for line in journal.splitlines()]
    assert len(entry["command"]) <= TEXT_LIMIT
    assert SECRET[4:16] not in journal


def test_the_journal_redacts_a_prompt_before_cutting_it(project):
    prompt = "p" * (TEXT_LIMIT - 12 - 25) + " " + SECRET
    payload = claude_payload("UserPromptSubmit", "s-prompt", project, prompt=prompt)
    run_hook("claude-code", "UserPromptSubmit", json.dumps(payload).encode(), {})
    for path in (project / ".lorelab").rglob("*"):
        if path.is_file():
            assert SECRET[4:16].encode() not in path.read_bytes(), path
