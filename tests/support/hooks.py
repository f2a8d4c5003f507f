"""Hook payloads in the agents' published formats, and a stand-in agent that runs installed hooks.

Payload shapes imitate, field for field:
- Claude Code: the hooks reference, https://code.claude.com/docs/en/hooks (common input
  session_id, transcript_path, cwd, permission_mode, hook_event_name; SessionStart ``source``
  startup|resume|clear|compact; UserPromptSubmit ``prompt``; PostToolUse ``tool_name``,
  ``tool_input``, ``tool_response``, ``tool_use_id``; PostToolUseFailure ``error``; PreCompact
  ``trigger``; Stop ``stop_hook_active``; SessionEnd ``reason``).
- Codex CLI: codex-rs/hooks/schema/generated/*.command.input.schema.json in openai/codex.
- Gemini CLI: docs/hooks/reference.md in google-gemini/gemini-cli (base fields plus
  ``timestamp``; BeforeAgent ``prompt``; AfterTool ``tool_response.llmContent``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def claude_payload(event: str, session: str, project: Path, **fields: Any) -> dict[str, Any]:
    """One Claude Code hook input (common fields from the hooks reference, then the event's)."""
    return {
        "session_id": session,
        "transcript_path": str(project / ".transcripts" / f"{session}.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def gemini_payload(event: str, session: str, project: Path, **fields: Any) -> dict[str, Any]:
    """One Gemini CLI hook input (base input schema of docs/hooks/reference.md)."""
    return {
        "session_id": session,
        "transcript_path": str(project / ".transcripts" / f"{session}.json"),
        "cwd": str(project),
        "hook_event_name": event,
        "timestamp": "2026-12-01T10:30:00Z",
        **fields,
    }


def codex_payload(event: str, session: str, project: Path, **fields: Any) -> dict[str, Any]:
    """One Codex CLI hook input (the required fields of its generated input schemas)."""
    return {
        "session_id": session,
        "transcript_path": None,
        "cwd": str(project),
        "hook_event_name": event,
        "model": "gpt-5-codex",
        "turn_id": "turn-1",
        **fields,
    }


def _matches(matcher: object, target: str | None) -> bool:
    if matcher in (None, "", "*") or target is None:
        return True
    return isinstance(matcher, str) and re.fullmatch(matcher, target) is not None


@dataclass
class StandInAgent:
    """Runs the hook commands of a settings file exactly as the configuration lists them.

    Like the agents: every group of the event whose matcher matches the tool name (or the
    SessionStart source) runs, each command through the shell with the payload on stdin, in
    the project directory. ``additionalContext`` of every JSON answer is collected.
    """

    settings: Path
    project: Path
    env: dict[str, str]
    injected: list[tuple[str, str]] = field(default_factory=list)
    runs: list[subprocess.CompletedProcess[str]] = field(default_factory=list)

    def fire(self, payload: dict[str, Any], target: str | None = None) -> list[str]:
        config = json.loads(self.settings.read_text())
        event = payload["hook_event_name"]
        contexts = []
        for group in config.get("hooks", {}).get(event, []):
            if not _matches(group.get("matcher"), target):
                continue
            for hook in group["hooks"]:
                done = subprocess.run(
                    hook["command"],
                    shell=True,
                    input=json.dumps(payload),
                    capture_output=True,
                    text=True,
                    cwd=self.project,
                    env=self.env,
                    timeout=120,
                    check=False,
                )
                self.runs.append(done)
                assert done.returncode == 0, (hook["command"], done.stderr)
                text = done.stdout.strip()
                if text.startswith("{"):
                    context = (
                        json.loads(text).get("hookSpecificOutput", {}).get("additionalContext")
                    )
                    if context:
                        contexts.append(context)
                        self.injected.append((event, context))
        return contexts


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any memory home, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("LORELAB_HOME", "CLAUDE_PROJECT_DIR")}
    env.update(extra)
    return env


def agent_shell(project: Path, command: str) -> subprocess.CompletedProcess[str]:
    """Run ``command`` the way a stand-in agent's shell tool does, in ``project``.

    ``PYTHONDONTWRITEBYTECODE`` is set as lorelab's own verify and runner paths set it: a
    ``.pyc`` records its source's mtime in whole seconds, so a same-size edit landing in the
    same second as a run that wrote bytecode would otherwise be hidden from the next run.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("LORELAB_HOME",)}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run(
        command,
        shell=True,
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def claude_failure_error(code: int) -> str:
    """Claude Code's PostToolUseFailure ``error`` for a Bash call that exited ``code``.

    Copied from the PostToolUseFailure input example of https://code.claude.com/docs/en/hooks
    (``"error": "Command exited with non-zero status code 1"``).
    """
    return f"Command exited with non-zero status code {code}"


def gemini_shell_response(output: str, code: int | None, pgid: int = 4242) -> dict[str, Any]:
    """What gemini-cli's shell tool hands an AfterTool hook for a finished command.

    google-gemini/gemini-cli packages/core/src/tools/shell.ts: ``llmContent`` is
    ``Output: ...``, then ``Exit Code: N`` only when N is not 0 (since PR #17538), then
    ``Process Group PGID: N``, wrapped by ``wrapUntrusted`` (packages/core/src/utils/
    textUtils.ts); packages/core/src/core/coreToolHookTriggers.ts passes ``llmContent``,
    ``returnDisplay`` and ``error`` (absent unless the command could not run).
    """
    parts = [f"Output: {output or '(empty)'}"]
    if code is not None and code != 0:
        parts.append(f"Exit Code: {code}")
    parts.append(f"Process Group PGID: {pgid}")
    body = "\n".join(parts).replace("</untrusted_context>", "&lt;/untrusted_context&gt;")
    return {
        "llmContent": f"<untrusted_context>\n{body}\n</untrusted_context>",
        "returnDisplay": output,
    }


def codex_patch(path: str, old: str, new: str) -> str:
    """An apply_patch patch in Codex's grammar (codex-rs/apply-patch), updating one line."""
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n"
