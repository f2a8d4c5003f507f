"""Reading an agent's hook payload: its shape, a shell command's exit status, edited files, and
the transcript's last assistant message.

What each agent sends, as read for this module:

- Claude Code (https://code.claude.com/docs/en/hooks): a Bash call that succeeded is
  ``PostToolUse``; one that failed is ``PostToolUseFailure`` whose ``error`` starts
  ``Command exited with non-zero status code N`` (older releases: ``Exit code N``).
- Codex CLI (openai/codex ``codex-rs/core/src/tools/context.rs``,
  ``ExecCommandToolOutput::post_tool_use_response``): a Bash ``tool_response`` is the
  command's output text alone; the exit code goes only to the model. An edit is
  ``apply_patch`` with the patch in ``tool_input.command`` (``codex-rs/core/src/tools/
  handlers/apply_patch.rs``).
- Gemini CLI (google-gemini/gemini-cli ``packages/core/src/tools/shell.ts``):
  ``tool_response.llmContent`` is ``Output: ...`` followed by trailer lines; ``Exit Code: N``
  is among them only when N is not 0.

A command's own output comes before any line the agent adds, so only the agent's trailer (the
last lines) is trusted: output that prints ``Exit Code: 0`` cannot pass a failing run.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from lorelab.hooks._agents import AgentSpec, EventSpec

PAYLOAD_LIMIT: Final = 1024 * 1024
TRANSCRIPT_TAIL: Final = 256 * 1024
# Claude Code's PostToolUseFailure error text for Bash, at its start only.
_CLAUDE_FAILURE = re.compile(
    r"\A\s*(?:Command exited with non-zero status code|Exit code)\s+(-?\d+)\b", re.IGNORECASE
)
# What gemini-cli's shell tool appends after the output (shell.ts), in this order.
_GEMINI_EXIT = re.compile(r"Exit Code: (-?\d+|\(none\))")
_GEMINI_AFTER_EXIT = re.compile(r"(Signal: .*|Background PIDs: .*|Process Group PGID: .*)")
_GEMINI_WRAPPER = ("<untrusted_context>", "</untrusted_context>")
_PATCH_FILE = re.compile(
    r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.MULTILINE
)


class WrongShape(ValueError):
    """The payload is not what the agent's published format says; nothing is added."""


@dataclass(frozen=True, slots=True)
class Payload:
    """The fields lorelab reads from a hook payload."""

    data: dict[str, Any]
    session_id: str
    project: Path

    def text(self, key: str) -> str | None:
        value = self.data.get(key)
        return value if isinstance(value, str) else None


def is_no_project(project: Path) -> bool:
    """True for the filesystem root: a hook started there has no project to remember for."""
    try:
        return project.resolve() == Path(project.anchor or "/")
    except OSError:
        return True


def parse(spec: EventSpec, raw: bytes, environ: dict[str, str]) -> Payload:
    """The payload of one ``spec`` event, or :class:`WrongShape` naming the problem."""
    if len(raw) > PAYLOAD_LIMIT:
        raise WrongShape(f"payload larger than {PAYLOAD_LIMIT} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WrongShape(f"payload is not JSON: {exc}") from None
    except RecursionError:
        raise WrongShape("payload is nested too deeply") from None
    if not isinstance(data, dict):
        raise WrongShape("payload is not a JSON object")
    for key in ("session_id", "cwd", "hook_event_name"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise WrongShape(f"payload has no {key} string")
    if data["hook_event_name"] != spec.event:
        raise WrongShape(f"payload is for {data['hook_event_name']!r}, not {spec.event!r}")
    if spec.action == "prompt" and not isinstance(data.get("prompt"), str):
        raise WrongShape("payload has no prompt string")
    if spec.action in ("tool", "tool_failed") and (
        not isinstance(data.get("tool_name"), str) or not isinstance(data.get("tool_input"), dict)
    ):
        raise WrongShape("payload has no tool_name string and tool_input object")
    cwd = Path(data["cwd"])
    if not cwd.is_absolute() or not cwd.is_dir():
        raise WrongShape(f"cwd {data['cwd']!r} is not an existing absolute directory")
    project = cwd
    for variable in ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"):
        candidate = environ.get(variable)
        if candidate and Path(candidate).is_absolute() and Path(candidate).is_dir():
            project = Path(candidate)
            break
    return Payload(data, data["session_id"], project)


def exit_code(agent: AgentSpec, data: dict[str, Any], failed: bool) -> int | None:
    """The shell command's exit status as the agent reported it; None when it did not say."""
    response = data.get("tool_response")
    if isinstance(response, dict):
        for key in ("exit_code", "exitCode", "returncode", "returnCode"):
            value = response.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        if response.get("interrupted") is True:
            return None
    if agent.name == "gemini":
        return _gemini_exit_code(response)
    if agent.name == "claude-code":
        if not failed:
            # Claude Code sends PostToolUse only for a call that succeeded (a failed one is
            # PostToolUseFailure), so a Bash call here exited 0.
            return 0
        if data.get("is_interrupt") is True:
            return None
        error = data.get("error")
        match = _CLAUDE_FAILURE.match(error) if isinstance(error, str) else None
        return int(match.group(1)) if match else None
    # Codex: the tool response is the output text, which the command itself wrote.
    return None


def _gemini_exit_code(response: object) -> int | None:
    if not isinstance(response, dict) or response.get("error") is not None:
        return None  # the command did not run to an exit status (shell.ts executionError)
    text = response.get("llmContent")
    if not isinstance(text, str):
        return None
    lines = text.strip().splitlines()
    if lines and lines[0].strip() == _GEMINI_WRAPPER[0]:
        lines = lines[1:]
    if lines and lines[-1].strip() == _GEMINI_WRAPPER[1]:
        lines = lines[:-1]
    index = len(lines) - 1
    while index >= 0 and _GEMINI_AFTER_EXIT.fullmatch(lines[index].strip()):
        index -= 1
    if index >= 0:
        found = _GEMINI_EXIT.fullmatch(lines[index].strip())
        if found:
            # The last Exit Code line, where the shell tool writes it: after the output.
            return None if found.group(1) == "(none)" else int(found.group(1))
    # No exit line: gemini-cli omits it for 0, but only a run that finished has this shape.
    finished = bool(lines) and lines[0].startswith("Output: ")
    interrupted = any(line.startswith(("Error: ", "Signal: ")) for line in lines)
    return 0 if finished and not interrupted else None


def edited_files(tool_input: dict[str, Any], project: Path) -> list[str]:
    """The files an edit tool call names, relative to ``project`` where they are inside it."""
    paths: list[str] = []
    for key in ("file_path", "path", "notebook_path"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            paths.append(value)
    # Codex's apply_patch: the patch is tool_input.command (older builds: input or patch).
    for key in ("command", "input", "patch"):
        patch = tool_input.get(key)
        if isinstance(patch, str) and "*** Begin Patch" in patch:
            paths += [a or b for a, b in _PATCH_FILE.findall(patch.replace("\r\n", "\n"))]
            break
    found = []
    for value in dict.fromkeys(path.strip() for path in paths if path.strip()):
        path = Path(value)
        if path.is_absolute():
            try:
                value = path.resolve().relative_to(project.resolve()).as_posix()
            except ValueError:
                value = path.as_posix()  # outside the project: kept, but never recorded
        found.append(value)
    return found


def read_tail(transcript: str | None) -> str | None:
    """The last :data:`TRANSCRIPT_TAIL` bytes of a regular file, never blocking on anything else.

    The file is opened non-blocking, so a FIFO does not wait for a writer, and anything that
    is not a regular file (a FIFO, ``/dev/zero``, a directory) is not read at all.
    """
    if not transcript:
        return None
    try:
        descriptor = os.open(transcript, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            return None
        start = max(0, info.st_size - TRANSCRIPT_TAIL)
        os.lseek(descriptor, start, os.SEEK_SET)
        chunks: list[bytes] = []
        left = TRANSCRIPT_TAIL
        while left > 0:
            chunk = os.read(descriptor, min(left, 64 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    return b"".join(chunks).decode("utf-8", errors="replace")


def last_assistant_text(transcript: str | None) -> str | None:
    """The last assistant text in a JSON-lines transcript (its tail only is read)."""
    tail = read_tail(transcript)
    if tail is None:
        return None
    last = None
    for line in tail.splitlines():
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        message = record.get("message") if isinstance(record, dict) else None
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str):
            last = content
        elif isinstance(content, list):
            texts = [
                block["text"]
                for block in content
                if isinstance(block, dict)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
            ]
            if texts:
                last = "\n".join(texts)
    return last
