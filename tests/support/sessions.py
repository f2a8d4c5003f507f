"""Builders of agent session transcripts in the published JSONL formats, written for the tests.

Claude Code (one file per session under ``~/.claude/projects/<project>/``): records with
``type`` user/assistant/system, ``sessionId``, ``version``, ``cwd``, ``isSidechain``,
``message.model`` and ``message.usage``; ``tool_use``/``tool_result`` content blocks with
``is_error``; compaction as a ``{"type": "system", "subtype": "compact_boundary",
"compactMetadata": {...}}`` record followed by a user message with ``isCompactSummary: true``.
Imitated from the format notes in DRMacIver/claude-reliability ``notes/transcript-format.md``,
chrisguillory/claude-session-mcp ``CLAUDE.md`` (record types and system subtypes),
alicoding/claude-parser ``docs/JSONL-STRUCTURE.md`` and microsoft/amplifier
``ai_working/claude_code_logging/`` (compaction behaviour).

Codex CLI (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``): lines ``{timestamp, type,
payload}`` with ``type`` session_meta / response_item / compacted / turn_context / event_msg,
as ``RolloutItem`` in openai/codex ``codex-rs/protocol/src/protocol.rs`` serialises them;
``function_call``/``function_call_output`` response items joined by ``call_id``, and
``exec_command_end`` events carrying ``exit_code``.
"""

import json
from pathlib import Path
from typing import Any

SID = "11111111-2222-4333-8444-555555555555"


class Claude:
    """A Claude Code session being written, record by record."""

    def __init__(self, session_id: str = SID, sidechain: bool = False) -> None:
        self.session_id = session_id
        self.sidechain = sidechain
        self.records: list[dict[str, Any]] = []
        self.clock = 0
        self.tool = 0

    def _base(self, kind: str, **extra: Any) -> dict[str, Any]:
        self.clock += 1
        record = {
            "parentUuid": None,
            "isSidechain": self.sidechain,
            "userType": "external",
            "cwd": "/home/dev/project",
            "sessionId": self.session_id,
            "version": "2.0.14",
            "gitBranch": "main",
            "type": kind,
            "uuid": f"uuid-{self.clock}",
            "timestamp": f"2026-11-30T09:{self.clock // 60:02d}:{self.clock % 60:02d}.000Z",
        }
        record.update(extra)
        self.records.append(record)
        return record

    def user(self, text: str, **extra: Any) -> "Claude":
        self._base("user", message={"role": "user", "content": text}, **extra)
        return self

    def say(self, text: str, model: str = "claude-sonnet-4-5", usage: Any = None) -> "Claude":
        self.clock += 0
        message = {
            "id": f"msg_{self.clock}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "usage": usage or {"input_tokens": 10, "output_tokens": 5},
        }
        self._base("assistant", message=message)
        return self

    def bash(
        self, command: str, *, exit_code: int = 0, output: str = "ok", sidechain: bool = False
    ) -> "Claude":
        self.tool += 1
        tool_id = f"toolu_{self.tool:04d}"
        use = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
        message = {
            "id": f"msg_t{self.tool}",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [use],
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        self._base("assistant", message=message, **({"isSidechain": True} if sidechain else {}))
        failed = exit_code != 0
        text = f"Exit code {exit_code}\n{output}" if failed else output
        result = {
            "tool_use_id": tool_id,
            "type": "tool_result",
            "content": text,
            "is_error": failed,
        }
        self._base(
            "user",
            message={"role": "user", "content": [result]},
            toolUseResult={"stdout": output, "stderr": "", "interrupted": False, "isImage": False},
            **({"isSidechain": True} if sidechain else {}),
        )
        return self

    def task(self, tool_id: str = "toolu_task") -> "Claude":
        use = {
            "type": "tool_use",
            "id": tool_id,
            "name": "Task",
            "input": {"description": "sub", "prompt": "do it", "subagent_type": "general-purpose"},
        }
        message = {"id": "msg_task", "role": "assistant", "model": "claude-sonnet-4-5",
                   "content": [use], "usage": {"input_tokens": 10, "output_tokens": 5}}  # fmt: skip
        self._base("assistant", message=message)
        return self

    def task_result(self, tool_id: str = "toolu_task") -> "Claude":
        result = {"tool_use_id": tool_id, "type": "tool_result", "content": "done"}
        self._base("user", message={"role": "user", "content": [result]})
        return self

    def compact(self, nested: bool = False, summary: bool = True, **extra: Any) -> "Claude":
        metadata = {"trigger": "auto", "preTokens": 155000}
        if nested:
            # Older versions nested the marker under `message`.
            self._base(
                "system",
                message={"subtype": "compact_boundary", "compactMetadata": metadata},
                **extra,
            )
        else:
            self._base(
                "system",
                subtype="compact_boundary",
                content="Conversation compacted",
                compactMetadata=metadata,
                **extra,
            )
        if summary:
            self.compact_summary(**extra)
        return self

    def compact_summary(self, **extra: Any) -> "Claude":
        self._base(
            "user",
            isCompactSummary=True,
            message={"role": "user", "content": "This session is being continued..."},
            **extra,
        )
        return self

    def raw(self, record: dict[str, Any]) -> "Claude":
        self.records.append(record)
        return self

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records))
        return path


class Codex:
    """A Codex CLI rollout being written, line by line."""

    def __init__(self, session_id: str = "0193a4b2-7e55-7c1d-9f20-5a6b7c8d9e01") -> None:
        self.session_id = session_id
        self.lines: list[dict[str, Any]] = []
        self.clock = 0
        self.calls = 0
        self.meta()

    def line(self, kind: str, payload: dict[str, Any]) -> "Codex":
        self.clock += 1
        self.lines.append(
            {"timestamp": f"2026-11-30T10:00:{self.clock:02d}.000Z", "type": kind,
             "payload": payload}
        )  # fmt: skip
        return self

    def meta(self, **extra: Any) -> "Codex":
        payload = {"id": self.session_id, "timestamp": "2026-11-30T10:00:00.000Z",
                   "cwd": "/home/dev/api", "originator": "codex_cli_rs", "cli_version": "0.58.0",
                   "source": "cli", **extra}  # fmt: skip
        return self.line("session_meta", payload)

    def turn(self, model: str = "gpt-5-codex") -> "Codex":
        return self.line("turn_context", {"cwd": "/home/dev/api", "model": model})

    def user(self, text: str) -> "Codex":
        content = [{"type": "input_text", "text": text}]
        return self.line("response_item", {"type": "message", "role": "user", "content": content})

    def say(self, text: str) -> "Codex":
        content = [{"type": "output_text", "text": text}]
        return self.line(
            "response_item", {"type": "message", "role": "assistant", "content": content}
        )

    def shell(self, command: str, exit_code: int = 0, output: str = "ok") -> "Codex":
        self.calls += 1
        call_id = f"call_{self.calls}"
        argv = ["bash", "-lc", command]
        self.line("response_item", {"type": "function_call", "name": "shell",
                                    "arguments": json.dumps({"command": argv}),
                                    "call_id": call_id})  # fmt: skip
        self.line("event_msg", {"type": "exec_command_end", "call_id": call_id, "command": argv,
                                "aggregated_output": output, "exit_code": exit_code})  # fmt: skip
        result = json.dumps({"output": output, "metadata": {"exit_code": exit_code}})
        return self.line(
            "response_item", {"type": "function_call_output", "call_id": call_id, "output": result}
        )

    def compact(self) -> "Codex":
        self.line("compacted", {"message": "summary of the work so far"})
        return self.line("event_msg", {"type": "context_compacted"})

    def tokens(self, tokens_in: int, tokens_out: int) -> "Codex":
        usage = {"input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": 0}
        return self.line("event_msg", {"type": "token_count", "info": {"total_token_usage": usage}})

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path
