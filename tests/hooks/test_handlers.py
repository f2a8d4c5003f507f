"""`lorelab hooks run EVENT` replayed with recorded payloads in each agent's published format.

Claude Code: hooks reference, https://code.claude.com/docs/en/hooks (input and output of
SessionStart, UserPromptSubmit, PostToolUse, PostToolUseFailure, PreCompact, Stop).
Codex CLI: openai/codex codex-rs/hooks/schema/generated/*.command.{input,output}.schema.json.
Gemini CLI: google-gemini/gemini-cli docs/hooks/reference.md (BeforeAgent, AfterTool,
PreCompress, AfterAgent; stdout must be one JSON object).
"""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.hooks import LOG_NAME, is_verification, run_hook, session_file
from tests.support.hooks import SECRET, claude_payload, codex_payload, gemini_payload

TASK = "Make the slugify helper strip accents from titles"
ENV: dict[str, str] = {}


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "slug-project"
    root.mkdir()
    return root


def _hook(agent, payload, event=None, raw=None):
    event = event or payload["hook_event_name"]
    data = raw if raw is not None else json.dumps(payload).encode()
    return run_hook(agent, event, data, dict(ENV))


def _log_lines(project):
    log = project / ".lorelab" / LOG_NAME
    return log.read_text().splitlines() if log.exists() else []


def _seed_verified_experience(project):
    result = CliRunner().invoke(
        app,
        [
            "memory",
            "--home",
            str(project / ".lorelab"),
            "record",
            "--task",
            TASK,
            "--summary",
            "Normalise with unicodedata NFKD and drop combining marks",
            "--outcome",
            "passed",
            "--verify-command",
            "pytest -q tests/test_slug.py",
            "--verify-exit-code",
            "0",
            "--project-name",
            project.name,
        ],
    )
    assert result.exit_code == 0, result.output


def _experiences(project):
    listed = CliRunner().invoke(
        app, ["memory", "--home", str(project / ".lorelab"), "list", "--json"]
    )
    return json.loads(listed.stdout)["items"] if listed.exit_code == 0 else []


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"not json at all", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (json.dumps({"hook_event_name": "PostToolUse", "cwd": "/"}).encode(), "no session_id"),
    ],
)
def test_a_payload_of_the_wrong_shape_logs_one_line_and_adds_nothing(
    project, monkeypatch, raw, problem
):
    monkeypatch.chdir(project)
    assert _hook("claude-code", {}, event="PostToolUse", raw=raw) == ""
    lines = _log_lines(project)
    assert len(lines) == 1
    assert "wrong shape" in lines[0]
    assert problem in lines[0]
    assert not (project / ".lorelab" / "hooks").exists()


def test_a_payload_for_another_event_is_the_wrong_shape(project, monkeypatch):
    monkeypatch.chdir(project)
    payload = claude_payload("Stop", "s1", project, stop_hook_active=False)
    assert _hook("claude-code", payload, event="PreCompact") == ""
    assert "is for 'Stop', not 'PreCompact'" in _log_lines(project)[0]


def test_a_tool_payload_without_a_tool_input_object_adds_nothing(project, monkeypatch):
    monkeypatch.chdir(project)
    payload = claude_payload("PostToolUse", "s1", project, tool_name="Bash", tool_input="ls")
    assert _hook("claude-code", payload) == ""
    assert not session_file(project / ".lorelab", "s1").exists()
    assert len(_log_lines(project)) == 1


def test_gemini_always_answers_one_json_object_even_for_a_wrong_payload(project, monkeypatch):
    monkeypatch.chdir(project)
    assert json.loads(_hook("gemini", {}, event="BeforeAgent", raw=b"{")) == {}


def test_the_installed_program_exits_0_on_garbage_and_prints_nothing(project):
    done = subprocess.run(
        [sys.executable, "-m", "lorelab", "hooks", "run", "SessionStart", "--agent", "claude-code"],
        input=b"\x00\xff garbage",
        capture_output=True,
        cwd=project,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout == b""
    assert len(_log_lines(project)) == 1


def test_a_bash_call_is_journaled_redacted_and_bounded(project):
    command = f"GITHUB_TOKEN={SECRET} ./deploy.sh " + "x" * 5000
    payload = claude_payload(
        "PostToolUse",
        "s1",
        project,
        tool_name="Bash",
        tool_input={"command": command},
        tool_response={"stdout": "", "stderr": "", "interrupted": False, "isImage": False},
        tool_use_id="t1",
    )
    assert _hook("claude-code", payload) == ""
    journal = session_file(project / ".lorelab", "s1")
    (entry,) = [json.loads(line) for line in journal.read_text().splitlines()]
    assert entry["kind"] == "command"
    assert entry["exitCode"] == 0
    assert SECRET not in entry["command"]
    assert len(entry["command"]) <= 2000
    assert journal.stat().st_mode & 0o777 == 0o600


def test_a_failed_bash_call_keeps_the_exit_code_claude_code_reported(project):
    payload = claude_payload(
        "PostToolUseFailure",
        "s1",
        project,
        tool_name="Bash",
        tool_input={"command": "make test"},
        tool_use_id="t2",
        error="Exit code 2\nmake: *** [test] Error 2",
        is_interrupt=False,
    )
    _hook("claude-code", payload)
    (entry,) = [
        json.loads(line)
        for line in session_file(project / ".lorelab", "s1").read_text().splitlines()
    ]
    assert entry["exitCode"] == 2


def test_a_prompt_gets_a_brief_only_when_memory_clears_the_relevance_floor(project):
    _seed_verified_experience(project)
    unrelated = _hook(
        "claude-code",
        claude_payload("UserPromptSubmit", "s1", project, prompt="Upgrade the CI runner image"),
    )
    assert unrelated == ""
    answer = json.loads(
        _hook("claude-code", claude_payload("UserPromptSubmit", "s1", project, prompt=TASK))
    )
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    assert "NFKD" in output["additionalContext"]


def test_nothing_is_injected_or_recorded_under_an_active_evaluation_lock(project):
    _seed_verified_experience(project)
    home = project / ".lorelab"
    locked = CliRunner().invoke(
        app, ["memory", "--home", str(home), "lock", "set", "cond-1", "--task", "other task"]
    )
    assert locked.exit_code == 0, locked.output
    assert (
        _hook("claude-code", claude_payload("UserPromptSubmit", "s1", project, prompt=TASK)) == ""
    )
    _hook(
        "claude-code",
        claude_payload(
            "PostToolUse",
            "s1",
            project,
            tool_name="Edit",
            tool_input={"file_path": str(project / "slug.py")},
            tool_response={},
            tool_use_id="e",
        ),
    )
    _hook(
        "claude-code",
        claude_payload(
            "PostToolUse",
            "s1",
            project,
            tool_name="Bash",
            tool_input={"command": "pytest -q"},
            tool_response={},
            tool_use_id="b",
        ),
    )
    _hook("claude-code", claude_payload("Stop", "s1", project, stop_hook_active=False))
    assert len(_experiences(project)) == 1  # only the seeded one
    assert not session_file(home, "s1").exists()
    assert all("evaluation lock 'cond-1' is active" in line for line in _log_lines(project))


def _edit_then(project, session, command, exit_code=None, failed=False):
    _hook("claude-code", claude_payload("UserPromptSubmit", session, project, prompt=TASK))
    _hook(
        "claude-code",
        claude_payload(
            "PostToolUse",
            session,
            project,
            tool_name="Write",
            tool_input={"file_path": str(project / "slug.py"), "content": "x"},
            tool_response={},
            tool_use_id="w",
        ),
    )
    if command is None:
        return
    if failed:
        payload = claude_payload(
            "PostToolUseFailure",
            session,
            project,
            tool_name="Bash",
            tool_input={"command": command},
            tool_use_id="b",
            error=f"Exit code {exit_code}",
        )
    else:
        payload = claude_payload(
            "PostToolUse",
            session,
            project,
            tool_name="Bash",
            tool_input={"command": command},
            tool_response={"stdout": "ok"},
            tool_use_id="b",
        )
    _hook("claude-code", payload)


def test_stop_without_a_verification_after_the_last_edit_records_nothing(project):
    _edit_then(project, "s1", "git status")
    _hook("claude-code", claude_payload("Stop", "s1", project, stop_hook_active=False))
    assert _experiences(project) == []
    assert "no verification command ran after the last edit" in _log_lines(project)[-1]


def test_a_failed_verification_is_recorded_unverified_and_never_served(project):
    _edit_then(project, "s1", "pytest -q", exit_code=1, failed=True)
    _hook("claude-code", claude_payload("Stop", "s1", project, stop_hook_active=False))
    (experience,) = _experiences(project)
    assert experience["trust"] != "verified"
    assert experience["outcome"] == "failed"
    assert (
        _hook("claude-code", claude_payload("UserPromptSubmit", "s2", project, prompt=TASK)) == ""
    )


def test_stop_twice_records_the_experience_once(project):
    _edit_then(project, "s1", "python -m pytest -q")
    for _ in range(2):
        _hook("claude-code", claude_payload("Stop", "s1", project, stop_hook_active=False))
    (experience,) = _experiences(project)
    assert experience["trust"] == "verified"
    assert experience["provenance"]["host"] == "claude-code"


def test_gemini_reads_the_exit_code_from_llm_content_and_gets_the_checkpoint_with_the_next_prompt(
    project,
):
    shell = gemini_payload(
        "AfterTool",
        "g1",
        project,
        tool_name="run_shell_command",
        tool_input={"command": "npm test"},
        tool_response={
            "llmContent": "Command: npm test\nExit Code: 1\n",
            "returnDisplay": "failed",
        },
    )
    assert json.loads(_hook("gemini", shell)) == {}
    assert (
        json.loads(_hook("gemini", gemini_payload("PreCompress", "g1", project, trigger="auto")))
        == {}
    )
    first = json.loads(
        _hook("gemini", gemini_payload("BeforeAgent", "g1", project, prompt="go on"))
    )
    context = first["hookSpecificOutput"]["additionalContext"]
    assert first["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "npm test" in context
    again = json.loads(
        _hook("gemini", gemini_payload("BeforeAgent", "g1", project, prompt="and then"))
    )
    assert again == {}


def test_codex_gets_the_checkpoint_in_its_own_output_schema_after_a_compaction(project):
    _hook("codex", codex_payload("UserPromptSubmit", "c1", project, prompt=TASK))
    _hook(
        "codex",
        codex_payload(
            "PostToolUse",
            "c1",
            project,
            tool_name="Bash",
            tool_input={"command": "cargo test"},
            tool_use_id="u1",
            permission_mode="default",
            tool_response="exit code: 101",
        ),
    )
    _hook("codex", codex_payload("PreCompact", "c1", project, trigger="auto"))
    answer = json.loads(
        _hook("codex", codex_payload("UserPromptSubmit", "c1", project, prompt="continue"))
    )
    # additionalProperties is false in user-prompt-submit.command.output.schema.json
    assert set(answer) == {"hookSpecificOutput"}
    assert set(answer["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    assert "cargo test" in answer["hookSpecificOutput"]["additionalContext"]


def test_an_event_lorelab_does_not_handle_logs_one_line(project, monkeypatch):
    monkeypatch.chdir(project)
    assert _hook("claude-code", {}, event="Notification", raw=b"{}") == ""
    assert "not an event lorelab handles" in _log_lines(project)[0]


@pytest.mark.parametrize(
    ("command", "verifies"),
    [
        ("pytest -q", True),
        ("python -m pytest tests/", True),
        ("npm test", True),
        ("npm run test -- --watch=false", True),
        ("cd app && go test ./...", True),
        ("cargo test", True),
        ("node --test", True),
        ("make test", True),
        ("git status", False),
        ("cat pytest.ini", False),
        ("echo test", False),
    ],
)
def test_what_counts_as_a_verification_command(command, verifies):
    assert is_verification(command) is verifies
