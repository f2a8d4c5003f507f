"""A whole Claude Code session replayed through the hooks `lorelab hooks install` wrote.

Payloads follow Claude Code's hooks reference (https://code.claude.com/docs/en/hooks); the
stand-in agent runs each hook command exactly as .claude/settings.json lists it, through the
shell, and really runs the session's Bash commands in the project.
"""

import json
import sys

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from tests.support.hooks import (
    SECRET,
    StandInAgent,
    agent_shell,
    claude_failure_error,
    claude_payload,
    clean_env,
)

SESSION = "5b2c6f0e-claude-session"
USER_HOOKS = {
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "echo bash >> user-hook.log"}],
            }
        ],
        "SessionStart": [
            {"hooks": [{"type": "command", "command": "echo start >> user-hook.log"}]}
        ],
    },
    "permissions": {"allow": ["Bash(pytest:*)"]},
}
BROKEN = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from src.calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TASK = "Fix the add function in src/calc.py so that tests/test_calc.py passes"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "calc-project"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "__init__.py").write_text("")
    (root / "src" / "calc.py").write_text(BROKEN)
    (root / "tests" / "test_calc.py").write_text(TEST)
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(json.dumps(USER_HOOKS, indent=2))
    (root / ".transcripts").mkdir()
    return root


def _bash(agent, project, command):
    """Run ``command`` for real, then fire the event Claude Code fires for its outcome."""
    done = agent_shell(project, command)
    tool_input = {"command": command, "description": "run it"}
    if done.returncode == 0:
        payload = claude_payload(
            "PostToolUse",
            SESSION,
            project,
            tool_name="Bash",
            tool_input=tool_input,
            tool_response={
                "stdout": done.stdout,
                "stderr": done.stderr,
                "interrupted": False,
                "isImage": False,
            },
            tool_use_id="toolu_01",
        )
        agent.fire(payload, "Bash")
    else:
        payload = claude_payload(
            "PostToolUseFailure",
            SESSION,
            project,
            tool_name="Bash",
            tool_input=tool_input,
            tool_use_id="toolu_02",
            error=claude_failure_error(done.returncode),
            is_interrupt=False,
        )
        agent.fire(payload, "Bash")
    return done.returncode


def _edit(agent, project, relative, content):
    path = project / relative
    old = path.read_text()
    path.write_text(content)
    agent.fire(
        claude_payload(
            "PostToolUse",
            SESSION,
            project,
            tool_name="Edit",
            tool_input={"file_path": str(path), "old_string": old, "new_string": content},
            tool_response={"filePath": str(path), "success": True},
            tool_use_id="toolu_03",
        ),
        "Edit",
    )


@pytest.mark.slow
def test_installed_hooks_record_a_verified_experience_and_inject_the_checkpoint_after_compaction(
    project,
):
    before = json.loads((project / ".claude" / "settings.json").read_text())
    installed = CliRunner().invoke(
        app, ["hooks", "install", "claude-code", "--project", "--project-dir", str(project)]
    )
    assert installed.exit_code == 0, installed.output
    settings = project / ".claude" / "settings.json"
    after = json.loads(settings.read_text())
    assert after["permissions"] == before["permissions"]
    assert list(project.joinpath(".claude").glob("settings.json.lorelab-backup-*"))
    agent = StandInAgent(settings, project, clean_env(CLAUDE_PROJECT_DIR=str(project)))
    transcript = project / ".transcripts" / f"{SESSION}.jsonl"
    transcript.write_text(
        json.dumps(
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "The subtraction in add is the bug; fixing it."}
                    ],
                },
            }
        )
        + "\n"
    )

    assert (
        agent.fire(claude_payload("SessionStart", SESSION, project, source="startup"), "startup")
        == []
    )
    assert agent.fire(claude_payload("UserPromptSubmit", SESSION, project, prompt=TASK)) == []
    assert _bash(agent, project, f"{sys.executable} -m pytest -q -p no:cacheprovider") != 0
    assert _bash(agent, project, f"GITHUB_TOKEN={SECRET} echo configured") == 0
    _edit(agent, project, "src/calc.py", FIXED)

    agent.fire(
        claude_payload("PreCompact", SESSION, project, trigger="auto", custom_instructions="")
    )
    after_compaction = agent.fire(
        claude_payload("SessionStart", SESSION, project, source="compact"), "compact"
    )
    assert len(after_compaction) == 1
    assert "durable context from checkpoint" in after_compaction[0]
    assert "pytest -q" in after_compaction[0]  # the command that failed before the compaction
    assert TASK in after_compaction[0]

    assert _bash(agent, project, f"{sys.executable} -m pytest -q -p no:cacheprovider") == 0
    agent.fire(claude_payload("Stop", SESSION, project, stop_hook_active=False))
    resumed = agent.fire(
        claude_payload("SessionStart", SESSION, project, source="resume"), "resume"
    )
    assert any("durable context from checkpoint" in text for text in resumed)
    agent.fire(claude_payload("SessionEnd", SESSION, project, reason="other"))

    home = project / ".lorelab"
    listed = CliRunner().invoke(app, ["memory", "--home", str(home), "list", "--json"])
    experiences = json.loads(listed.stdout)["items"]
    assert len(experiences) == 1
    record = experiences[0]
    assert record["trust"] == "verified"
    assert record["outcome"] == "passed"
    assert "pytest -q" in record["provenance"]["verification"]["command"]
    assert record["provenance"]["verification"]["exit_code"] == 0
    assert record["files"] == ["src/calc.py"]
    assert record["task"] == TASK
    recovered = CliRunner().invoke(
        app, ["memory", "--home", str(home), "recover", f"session:{SESSION}", "--json"]
    )
    assert recovered.exit_code == 0, recovered.output
    found = json.loads(recovered.stdout)
    assert found["found"] is True
    assert "add is the bug" in found["handoff_brief"]

    # The user's own hooks kept running beside lorelab's.
    assert (project / "user-hook.log").read_text().split() == [
        "start",
        "bash",
        "start",
        "bash",
        "start",
    ]
    # Nothing lorelab wrote holds the secret the session typed.
    for path in home.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path

    # A new session on the same task is briefed with the verified experience.
    agent_two = StandInAgent(settings, project, agent.env)
    second = agent_two.fire(
        claude_payload("UserPromptSubmit", "second-session", project, prompt=TASK)
    )
    assert len(second) == 1
    assert "verified memory for this task" in second[0]
    assert "pytest -q" in second[0]


def test_uninstall_leaves_exactly_the_user_s_hooks(project):
    settings = project / ".claude" / "settings.json"
    original = json.loads(settings.read_text())
    runner = CliRunner()
    for _ in range(2):
        assert (
            runner.invoke(
                app, ["hooks", "install", "claude-code", "--project-dir", str(project)]
            ).exit_code
            == 0
        )
    removed = runner.invoke(
        app, ["hooks", "uninstall", "claude-code", "--project-dir", str(project)]
    )
    assert removed.exit_code == 0, removed.output
    assert json.loads(settings.read_text()) == original
