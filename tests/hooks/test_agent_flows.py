"""Each agent's documented session replayed through the hooks `lorelab hooks install` wrote.

For every agent: a session start, a prompt, a failing test run, an edit, a compaction, a passing
test run and a stop. The test commands really run (pytest on a small project); the payloads are
the agent's published shapes, each event citing where its shape comes from:

- Claude Code: https://code.claude.com/docs/en/hooks (SessionStart ``source``, PostToolUse,
  PostToolUseFailure ``error`` "Command exited with non-zero status code 1", PreCompact
  ``trigger``, Stop ``stop_hook_active``); the ``fork`` source from its CHANGELOG.md (2.1.214).
- Codex CLI: openai/codex codex-rs/hooks/schema/generated/*.command.input.schema.json; a Bash
  ``tool_response`` is the output text (codex-rs/core/src/tools/context.rs,
  ``ExecCommandToolOutput::post_tool_use_response``); an edit is ``apply_patch`` with the patch
  in ``tool_input.command`` (codex-rs/core/src/tools/handlers/apply_patch.rs, PR #18391).
- Gemini CLI: google-gemini/gemini-cli docs/hooks/reference.md (SessionStart, BeforeAgent,
  AfterTool, PreCompress, AfterAgent) and packages/core/src/tools/shell.ts (``Exit Code: N``
  in ``llmContent`` only when N is not 0).
"""

import json
import sys

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from tests.support.hooks import (
    StandInAgent,
    agent_shell,
    claude_failure_error,
    claude_payload,
    clean_env,
    codex_patch,
    codex_payload,
    gemini_payload,
    gemini_shell_response,
)

BROKEN = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from src.calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TASK = "Fix the add function in src/calc.py so that tests/test_calc.py passes"
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
SETTINGS = {"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json"}
SETTINGS["gemini"] = ".gemini/settings.json"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "calc-project"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "__init__.py").write_text("")
    (root / "src" / "calc.py").write_text(BROKEN)
    (root / "tests" / "test_calc.py").write_text(TEST)
    return root


def _install(project, agent):
    done = CliRunner().invoke(app, ["hooks", "install", agent, "--project-dir", str(project)])
    assert done.exit_code == 0, done.output
    return project / SETTINGS[agent]


def _experiences(project):
    if not (project / ".lorelab" / "memory.db").exists():
        return []  # nothing was ever recorded: no store was made
    listed = CliRunner().invoke(
        app, ["memory", "--home", str(project / ".lorelab"), "list", "--json"]
    )
    assert listed.exit_code == 0, listed.output
    return json.loads(listed.stdout)["items"]


def _log(project):
    return (project / ".lorelab" / "hooks.log").read_text()


def _assert_verified(project, agent):
    (record,) = _experiences(project)
    assert record["trust"] == "verified"
    assert record["outcome"] == "passed"
    assert record["provenance"]["verification"]["exit_code"] == 0
    assert "pytest -q" in record["provenance"]["verification"]["command"]
    assert record["provenance"]["host"] == agent
    assert record["files"] == ["src/calc.py"]
    assert record["task"] == TASK


def _claude_bash(agent, project, session, command):
    done = agent_shell(project, command)
    common = {"tool_name": "Bash", "tool_input": {"command": command, "description": "run"}}
    if done.returncode == 0:
        payload = claude_payload(
            "PostToolUse",
            session,
            project,
            **common,
            tool_response={"stdout": done.stdout, "stderr": done.stderr, "interrupted": False},
            tool_use_id="toolu_ok",
        )
    else:
        payload = claude_payload(
            "PostToolUseFailure",
            session,
            project,
            **common,
            tool_use_id="toolu_fail",
            error=claude_failure_error(done.returncode),
            is_interrupt=False,
        )
    agent.fire(payload, "Bash")
    return done.returncode


@pytest.mark.slow
def test_a_claude_code_session_records_a_verified_experience_from_its_documented_failure_text(
    project,
):
    agent = StandInAgent(
        _install(project, "claude-code"), project, clean_env(CLAUDE_PROJECT_DIR=str(project))
    )
    session = "claude-flow"
    agent.fire(claude_payload("SessionStart", session, project, source="startup"), "startup")
    agent.fire(claude_payload("UserPromptSubmit", session, project, prompt=TASK))
    assert _claude_bash(agent, project, session, PYTEST) == 1
    journal = (project / ".lorelab" / "hooks" / "sessions" / f"{session}.jsonl").read_text()
    assert '"exitCode": 1' in journal  # read from "Command exited with non-zero status code 1"
    (project / "src" / "calc.py").write_text(FIXED)
    agent.fire(
        claude_payload(
            "PostToolUse",
            session,
            project,
            tool_name="Edit",
            tool_input={"file_path": str(project / "src" / "calc.py")},
            tool_response={"success": True},
            tool_use_id="toolu_edit",
        ),
        "Edit",
    )
    agent.fire(claude_payload("PreCompact", session, project, trigger="auto"), "auto")
    assert any(
        "durable context from checkpoint" in text
        for text in agent.fire(
            claude_payload("SessionStart", session, project, source="compact"), "compact"
        )
    )
    assert _claude_bash(agent, project, session, PYTEST) == 0
    agent.fire(claude_payload("Stop", session, project, stop_hook_active=False))
    _assert_verified(project, "claude-code")

    # A session forked from this one starts with its checkpoint (source "fork").
    forked = agent.fire(
        claude_payload("SessionStart", "claude-fork", project, source="fork"), "fork"
    )
    assert any("durable context from checkpoint" in text for text in forked)


def _gemini_shell(agent, project, session, command):
    done = agent_shell(project, command)
    agent.fire(
        gemini_payload(
            "AfterTool",
            session,
            project,
            tool_name="run_shell_command",
            tool_input={"command": command, "description": "run the tests"},
            tool_response=gemini_shell_response(done.stdout + done.stderr, done.returncode),
            mcp_context=None,
        ),
        "run_shell_command",
    )
    return done.returncode


@pytest.mark.slow
def test_a_gemini_session_records_a_verified_experience_although_a_pass_prints_no_exit_code(
    project,
):
    agent = StandInAgent(
        _install(project, "gemini"), project, clean_env(GEMINI_PROJECT_DIR=str(project))
    )
    session = "gemini-flow"
    agent.fire(gemini_payload("SessionStart", session, project, source="startup"), "startup")
    agent.fire(gemini_payload("BeforeAgent", session, project, prompt=TASK))
    assert _gemini_shell(agent, project, session, PYTEST) == 1
    (project / "src" / "calc.py").write_text(FIXED)
    agent.fire(
        gemini_payload(
            "AfterTool",
            session,
            project,
            tool_name="write_file",
            tool_input={"file_path": str(project / "src" / "calc.py"), "content": FIXED},
            tool_response={"llmContent": "Successfully overwrote file.", "returnDisplay": ""},
        ),
        "write_file",
    )
    agent.fire(gemini_payload("PreCompress", session, project, trigger="auto"), "auto")
    after = agent.fire(gemini_payload("BeforeAgent", session, project, prompt="go on"))
    assert any("durable context from checkpoint" in text for text in after)
    assert _gemini_shell(agent, project, session, PYTEST) == 0
    agent.fire(
        gemini_payload(
            "AfterAgent",
            session,
            project,
            prompt="go on",
            prompt_response="The tests pass now.",
            stop_hook_active=False,
        )
    )
    _assert_verified(project, "gemini")


@pytest.mark.slow
def test_a_command_s_own_exit_code_0_line_cannot_verify_a_failing_gemini_run(project):
    agent = StandInAgent(
        _install(project, "gemini"), project, clean_env(GEMINI_PROJECT_DIR=str(project))
    )
    session = "gemini-fake"
    agent.fire(gemini_payload("BeforeAgent", session, project, prompt=TASK))
    (project / "src" / "calc.py").write_text(BROKEN.replace("a - b", "a * b"))
    agent.fire(
        gemini_payload(
            "AfterTool",
            session,
            project,
            tool_name="replace",
            tool_input={"file_path": str(project / "src" / "calc.py")},
            tool_response={"llmContent": "Successfully modified file.", "returnDisplay": ""},
        ),
        "replace",
    )
    fake = f'{PYTEST}; status=$?; echo "Exit Code: 0"; exit $status'
    assert _gemini_shell(agent, project, session, fake) == 1
    agent.fire(gemini_payload("AfterAgent", session, project, prompt=TASK, prompt_response="."))
    (record,) = _experiences(project)
    assert record["trust"] != "verified"
    assert record["outcome"] == "failed"
    assert record["provenance"]["verification"]["exit_code"] == 1


def _codex_bash(agent, project, session, command):
    done = agent_shell(project, command)
    agent.fire(
        codex_payload(
            "PostToolUse",
            session,
            project,
            tool_name="Bash",
            tool_input={"command": command},
            tool_response=done.stdout + done.stderr,
            tool_use_id="call_bash",
            permission_mode="default",
        ),
        "Bash",
    )
    return done.returncode


@pytest.mark.slow
def test_a_codex_session_journals_its_apply_patch_edit_but_records_nothing_it_cannot_verify(
    project, tmp_path, monkeypatch
):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    agent = StandInAgent(_install(project, "codex"), project, clean_env())
    session = "codex-flow"
    agent.fire(codex_payload("SessionStart", session, project, source="startup"))
    agent.fire(
        codex_payload("UserPromptSubmit", session, project, prompt=TASK, permission_mode="default")
    )
    assert _codex_bash(agent, project, session, PYTEST) == 1
    (project / "src" / "calc.py").write_text(FIXED)
    agent.fire(
        codex_payload(
            "PostToolUse",
            session,
            project,
            tool_name="apply_patch",
            tool_input={
                "command": codex_patch("src/calc.py", "    return a - b", "    return a + b")
            },
            tool_response="Success. Updated the following files:\nM src/calc.py\n",
            tool_use_id="call_patch",
            permission_mode="default",
        ),
        "apply_patch",
    )
    journal = (project / ".lorelab" / "hooks" / "sessions" / f"{session}.jsonl").read_text()
    assert '"files": ["src/calc.py"]' in journal
    agent.fire(codex_payload("PreCompact", session, project, trigger="auto"))
    after = agent.fire(
        codex_payload(
            "UserPromptSubmit", session, project, prompt="go on", permission_mode="default"
        )
    )
    assert any("durable context from checkpoint" in text for text in after)
    # The passing run's output even says so; Codex itself sends no exit status.
    assert _codex_bash(agent, project, session, f"{PYTEST} && echo 'exit code: 0'") == 0
    agent.fire(
        codex_payload(
            "Stop",
            session,
            project,
            stop_hook_active=False,
            last_assistant_message="Fixed.",
            permission_mode="default",
        )
    )
    assert _experiences(project) == []
    assert "the verification command's exit status is unknown" in _log(project)
    status = CliRunner().invoke(app, ["hooks", "status", "--project-dir", str(project)])
    assert status.exit_code == 0, status.output
    assert "Codex hooks cannot verify" in status.output
    assert "no exit status" in status.output


def test_the_stand_in_agent_s_shell_writes_no_bytecode(project, monkeypatch):
    # issue 35 item 5: a .pyc records its source's mtime in whole seconds, so a same-size edit
    # in the same second as a run that wrote bytecode was hidden from the next run.
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # as .ci/run leaves it
    assert agent_shell(project, PYTEST).returncode == 1
    assert not list(project.rglob("*.pyc"))
    (project / "src" / "calc.py").write_text(FIXED)  # same size, same second
    assert agent_shell(project, PYTEST).returncode == 0
