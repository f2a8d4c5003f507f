"""The program's entry point: a hook call is handled without click, everything else by click."""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from lorelab.cli._entry import hook_call

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["hooks", "run", "Stop"], ("Stop", "claude-code", False)),
        (["hooks", "run", "Stop", "--agent", "codex"], ("Stop", "codex", False)),
        (["hooks", "run", "Stop", "--agent", "codex", "--via-server"], ("Stop", "codex", True)),
        (["hooks", "run", "AfterTool", "--agent", "gemini"], ("AfterTool", "gemini", False)),
        # The spelling earlier releases installed takes the same path.
        (["hook", "Stop"], ("Stop", "claude-code", False)),
        (["hook", "Stop", "--agent", "codex"], ("Stop", "codex", False)),
        (["hook", "Stop", "--agent", "codex", "--via-server"], ("Stop", "codex", True)),
        (["hook", "AfterTool", "--agent", "gemini"], ("AfterTool", "gemini", False)),
        # Everything else is click's: help, an unknown agent (a usage error), other shapes.
        (["hook", "--help"], None),
        (["hook", "Stop", "--agent", "nobody"], None),
        (["hook", "Stop", "--agent"], None),
        (["hook", "--agent", "codex", "Stop"], None),
        (["hook", "Stop", "--agent=codex"], None),
        (["hook"], None),
        (["hooks", "run"], None),
        (["hooks", "run", "--help"], None),
        (["hooks", "Stop"], None),
        (["hooks", "install", "codex"], None),
        (["run", "Stop"], None),
        (["memory", "prepare", "Stop"], None),
        ([], None),
    ],
)
def test_only_the_installed_hook_command_line_takes_the_short_path(args, expected):
    assert hook_call(args) == expected


def test_the_installed_program_starts_at_the_entry_point():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["lorelab"] == "lorelab.cli._entry:main"


def _python(argv: list[str], payload: bytes, env: dict[str, str], cwd: Path):
    return subprocess.run(
        [sys.executable, *argv],
        input=payload,
        capture_output=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def _program(args: list[str], payload: bytes, env: dict[str, str], cwd: Path):
    return _python(["-m", "lorelab", *args], payload, env, cwd)


def _through_click(args: list[str], payload: bytes, env: dict[str, str], cwd: Path):
    code = (
        "import sys\n"
        "from lorelab.cli.main import main\n"
        f"sys.argv = ['lorelab', *{args!r}]\n"
        "main()\n"
    )
    return _python(["-c", code], payload, env, cwd)


@pytest.mark.parametrize("spelling", [["hooks", "run"], ["hook"]])
def test_a_hook_answers_the_same_on_the_short_path_as_through_click(tmp_path, spelling):
    # Claude Code's UserPromptSubmit input (code.claude.com/docs/en/hooks: session_id,
    # transcript_path, cwd, hook_event_name, prompt), against a store with one verified
    # experience, so the answer carries a brief.
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "LORELAB_HOME": str(home)}
    recorded = _program(
        [
            "memory",
            "record",
            "--task",
            "Fix the failing date parser test",
            "--summary",
            "Parse ISO dates with a timezone",
            "--outcome",
            "passed",
            "--verify-command",
            "pytest -q tests/test_dates.py",
            "--verify-exit-code",
            "0",
        ],
        b"",
        env,
        project,
    )
    assert recorded.returncode == 0, recorded.stderr
    payload = json.dumps(
        {
            "session_id": "s-1",
            "transcript_path": str(tmp_path / "t.jsonl"),
            "cwd": str(project),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Fix the failing date parser test",
        }
    ).encode()
    args = [*spelling, "UserPromptSubmit", "--agent", "claude-code"]
    short = _program(args, payload, env, project)
    clicked = _through_click(args, payload, env, project)
    assert (short.returncode, clicked.returncode) == (0, 0)
    context = json.loads(short.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "[exp-1]" in context
    assert short.stdout == clicked.stdout
    assert short.stderr == clicked.stderr == b""


def test_a_hook_with_an_unknown_agent_is_a_one_line_usage_error(tmp_path):
    done = _program(
        ["hooks", "run", "Stop", "--agent", "nobody"], b"{}", dict(os.environ), tmp_path
    )
    assert done.returncode == 2
    assert done.stdout == b""
    assert len(done.stderr.decode().strip().splitlines()) == 1
    assert "nobody" in done.stderr.decode()
