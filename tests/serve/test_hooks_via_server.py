"""Hooks through a running server: the same answers as in-process, without the heavy imports.

Two homes are seeded alike; one gets a server. The same session (prompt, a shell command, an
edit, a passing test run, stop) goes through ``lorelab hook`` on each: the answers and the
journals match, and the experience the Stop hook records names the server's ``local`` token.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from lorelab._state import server_file
from lorelab.cli.main import app
from lorelab.memory import CommandRun, RecordRequest, Verification, open_store
from tests.support.hooks import claude_payload
from tests.support.serve import PY, running_server

TASK = "Regenerate the parquet fixtures after the orders schema change"
HEAVY = ("pydantic", "click", "numpy", "mcp", "lorelab.memory")
_PROBE = """
import sys
from lorelab.cli._entry import run_hook_call
run_hook_call(sys.argv[1], "claude-code", sys.argv[2] == "via")
light = ("lorelab.memory", "lorelab.memory._redact")  # the lazy package, the answer's redaction
heavy = [m for m in sys.modules if m.split(".")[0] in ("pydantic", "click", "numpy", "mcp")
         or (m.startswith("lorelab.memory") and m not in light)]
sys.stderr.write("HEAVY " + " ".join(sorted(heavy)) + "\\n")
"""


def _seed(home: Path, project: Path) -> None:
    store = open_store(home, project)
    try:
        store.record(
            RecordRequest(
                task=TASK,
                summary="Ran the fixture generator and checked the files parse.",
                outcome="passed",
                verification=Verification(command="pytest tests/fixtures", exit_code=0),
                commands=[CommandRun(command="make fixtures-legacy", exit_code=2)],
            )
        )
    finally:
        store.close()


def _hook(
    event: str, payload: dict[str, Any], home: Path, *, via: bool = False
) -> tuple[str, list[str]]:
    """Run one hook as the agent would; its stdout and the heavy modules it loaded."""
    # A loaded test machine may take longer than a hook's 2 s for a first brief.
    env = {**os.environ, "LORELAB_HOME": str(home), "LORELAB_HOOK_SERVER_DEADLINE_S": "120"}
    env.pop("CLAUDE_PROJECT_DIR", None)
    done = subprocess.run(
        [PY, "-c", _PROBE, event, "via" if via else "plain"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        timeout=120,
        check=True,
    )
    [line] = [ln for ln in done.stderr.decode().splitlines() if ln.startswith("HEAVY")]
    return done.stdout.decode(), line.split()[1:]


def _session(project: Path) -> list[tuple[str, dict[str, Any]]]:
    session = "sess-1"
    return [
        ("SessionStart", claude_payload("SessionStart", session, project, source="startup")),
        (
            "UserPromptSubmit",
            claude_payload("UserPromptSubmit", session, project, prompt=TASK.lower()),
        ),
        (
            "PostToolUse",
            claude_payload(
                "PostToolUse",
                session,
                project,
                tool_name="Edit",
                tool_input={"file_path": str(project / "fixtures.py")},
                tool_response={},
            ),
        ),
        (
            "PostToolUse",
            claude_payload(
                "PostToolUse",
                session,
                project,
                tool_name="Bash",
                tool_input={"command": "pytest tests/fixtures"},
                tool_response={"stdout": "3 passed"},
            ),
        ),
        ("Stop", claude_payload("Stop", session, project, stop_hook_active=False)),
    ]


def _journal(home: Path) -> list[dict[str, Any]]:
    [path] = (home / "hooks" / "sessions").glob("*.jsonl")
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: v for k, v in e.items() if k not in ("at", "time", "ts")} for e in entries]


def test_a_session_gets_the_same_answers_through_the_server_as_in_process(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    served_home, local_home = tmp_path / "served", tmp_path / "local"
    _seed(served_home, project)
    _seed(local_home, project)
    with running_server(served_home, project, scope=None) as server:
        served = [_hook(event, payload, server.home) for event, payload in _session(project)]
    local = [_hook(event, payload, local_home) for event, payload in _session(project)]
    assert [out for out, _ in served] == [out for out, _ in local]
    assert "lorelab: verified memory for this task" in served[1][0]  # a real brief, both ways
    # Through the server, no hook loaded pydantic, click, numpy, the SDK or the store.
    assert all(heavy == [] for _, heavy in served)
    assert all("lorelab.memory" in " ".join(heavy) for _, heavy in local[1:2])
    assert _journal(served_home) == _journal(local_home)
    shown = {
        name: CliRunner().invoke(app, ["memory", "--home", str(home), "show", "exp-2", "--json"])
        for name, home in (("served", served_home), ("local", local_home))
    }
    provenance = {name: json.loads(out.stdout)["provenance"] for name, out in shown.items()}
    assert provenance["served"]["recorded_by"] == "local"  # the server's token for the hooks
    assert provenance["local"]["recorded_by"] is None


def test_without_a_running_server_the_hook_runs_in_process_and_logs_why_via_server(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    _seed(home, project)
    with running_server(home, project, scope=None) as server:
        state = server.state
    # The server is gone; a stale state file (as after a SIGKILL) points at a closed port.
    stale = server_file(home)
    stale.write_text(json.dumps(state))
    stale.chmod(0o600)
    event, payload = _session(project)[1]
    out, heavy = _hook(event, payload, home, via=True)
    assert "lorelab: verified memory for this task" in out
    assert "lorelab.memory._sqlite" in heavy  # handled in-process
    log = (home / "hooks.log").read_text()
    assert f"claude-code UserPromptSubmit: handled in-process: no server at {state['url']}" in log


def test_a_state_file_readable_by_others_is_ignored(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    _seed(home, project)
    with running_server(home, project, scope=None) as server:
        server_file(home).chmod(0o644)
        event, payload = _session(project)[1]
        out, heavy = _hook(event, payload, server.home, via=True)
    assert "lorelab.memory._sqlite" in heavy
    assert "lorelab: verified memory for this task" in out
    assert "mode 0644 lets others in (0600 expected)" in (home / "hooks.log").read_text()


def test_hooks_install_via_server_writes_commands_that_say_so(tmp_path):
    runner = CliRunner()
    args = ["hooks", "install", "claude-code", "--project-dir", str(tmp_path)]
    installed = runner.invoke(app, [*args, "--via-server"])
    assert installed.exit_code == 0, installed.output
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    commands = [
        hook["command"]
        for groups in settings["hooks"].values()
        for g in groups
        for hook in g["hooks"]
    ]
    assert commands
    assert all(command.endswith(" --agent claude-code --via-server") for command in commands)
    # Installing again without the flag replaces them (one lorelab hook per event).
    assert runner.invoke(app, args).exit_code == 0
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    again = [
        hook["command"]
        for groups in settings["hooks"].values()
        for g in groups
        for hook in g["hooks"]
    ]
    assert len(again) == len(commands)
    assert not any("--via-server" in command for command in again)


def test_the_entry_point_reads_the_via_server_flag():
    from lorelab.cli._entry import hook_call

    assert hook_call(["hook", "Stop", "--agent", "codex", "--via-server"]) == (
        "Stop",
        "codex",
        True,
    )
    assert hook_call(["hook", "Stop"]) == ("Stop", "claude-code", False)
    assert hook_call(["hook", "--via-server"]) is None
    assert sys.executable
