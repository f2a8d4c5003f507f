"""Reading recorded agent sessions (Claude Code and Codex CLI JSONL) into one neutral trace.

Both formats are JSON Lines, one record per line. A session file is read through one file
descriptor, bounded while reading, and parsed completely before anything uses it: a line that
is not valid UTF-8 or not a JSON object refuses the whole session with its line number, so a
session is never half-read. Record types the reader does not know are counted by name.

Boundaries come only from recorded events (Claude Code's ``compact_boundary`` system record or
an ``isCompactSummary`` message; Codex's ``compacted`` item or ``context_compacted`` event;
resumed sessions; subagent records), never from prose.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from lorelab.errors import InputFileError, SchemaError, UsageError
from lorelab.io import MIB, open_regular

Agent = Literal["claude-code", "codex"]
AGENTS: Final[tuple[Agent, ...]] = ("claude-code", "codex")

SESSION_LIMIT: Final = 32 * MIB
"""Default read bound of one session file."""
SESSION_CEILING: Final = 1024 * MIB
"""Largest ``--max-bytes`` accepted for one session file (1 GiB)."""
TEXT_CLIP: Final = 4000
"""Characters of one message or tool output an import keeps (the rest is marked as clipped)."""

_CHUNK: Final = 1024 * 1024

_CLAUDE_TYPES: Final = frozenset(
    {"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation"}
)
_CLAUDE_BLOCKS: Final = frozenset(
    {"text", "tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
)
_CODEX_TYPES: Final = frozenset(
    {"session_meta", "response_item", "compacted", "turn_context", "event_msg"}
)
_CODEX_ITEMS: Final = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "local_shell_call",
        "custom_tool_call",
        "custom_tool_call_output",
        "web_search_call",
        "compaction",
        "compaction_summary",
    }
)
# Events Codex persists that carry nothing this reader needs beyond what other records hold.
_CODEX_EVENTS: Final = frozenset(
    {
        "user_message",
        "agent_message",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "token_count",
        "exec_command_end",
        "context_compacted",
        "task_started",
        "task_complete",
        "turn_started",
        "turn_complete",
        "turn_aborted",
        "patch_apply_end",
        "mcp_tool_call_end",
        "web_search_end",
        "thread_name_updated",
        "entered_review_mode",
        "exited_review_mode",
        "thread_rolled_back",
        "error",
        "item_completed",
        "plan_update",
    }
)
_SHELL_TOOLS: Final = frozenset({"shell", "container.exec", "exec_command", "local_shell"})
_SHELLS: Final = frozenset(
    {"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash"}
)
_SHELL_FLAGS: Final = frozenset({"-c", "-lc", "-ic"})
# Structured result headers written by the tools themselves (not prose of the model).
_CLAUDE_EXIT: Final = re.compile(r"\AExit code (-?\d+)\b")
_CODEX_EXIT: Final = re.compile(r"\AExit code: (-?\d+)\b")


@dataclass(slots=True)
class Node:
    """One event of a parsed session, before it gets its fixture index."""

    kind: Literal["message", "command", "boundary", "answer"]
    author: Literal["user", "agent", "tool", "system"]
    text: str = ""
    command: str = ""
    exit_code: int | None = None
    error: bool | None = None
    boundary: Literal["compaction", "restart", "child_handoff"] | None = None
    child: list[Node] | None = None
    child_complete: bool = False
    model: str | None = None


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A session file as read: its path, size and the SHA-256 of exactly the bytes read."""

    path: str
    size: int
    sha256: str


@dataclass(slots=True)
class Session:
    """One parsed session file (or several files of one session, joined)."""

    agent: Agent
    files: list[SourceFile]
    session_id: str | None = None
    agent_version: str | None = None
    cwd: str | None = None
    models: list[str] = field(default_factory=list)
    events: list[Node] = field(default_factory=list)
    unknown: Counter[str] = field(default_factory=Counter)
    input_tokens: int | None = None
    output_tokens: int | None = None
    parent_id: str | None = None
    """Set when the whole file is a subagent's trace: the id of the session it works for."""
    first_timestamp: str | None = None
    records: int = 0


class SessionRefused(SchemaError):
    """A session file read whole but refused (a malformed line); carries the file's digest."""

    def __init__(self, message: str, sha256: str) -> None:
        super().__init__(message)
        self.sha256 = sha256


def check_limit(max_bytes: int) -> int:
    """``max_bytes`` if it lies between 1 byte and :data:`SESSION_CEILING`."""
    if not 0 < max_bytes <= SESSION_CEILING:
        raise UsageError(
            f"--max-bytes {max_bytes}: must be between 1 and {SESSION_CEILING} bytes (1 GiB)"
        )
    return max_bytes


def read_lines(path: str, limit: int) -> tuple[SourceFile, list[tuple[int, dict[str, Any]]]]:
    """Every non-empty line of ``path`` as a JSON object with its 1-based line number.

    One descriptor, regular files only, ``limit`` enforced while reading. Raises
    :class:`SchemaError` naming the line for invalid UTF-8, invalid JSON or a non-object.
    """
    fd, st = open_regular(path)
    digest = hashlib.sha256()
    chunks: list[bytes] = []
    total = 0
    try:
        if st.st_size > limit:
            raise InputFileError(
                f"{path}: {st.st_size} bytes exceeds the session limit of {limit} bytes "
                "(raise it with --max-bytes)"
            )
        while True:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise InputFileError(f"{path}: grew past the session limit of {limit} bytes")
            digest.update(chunk)
            chunks.append(chunk)
    finally:
        os.close(fd)
    source = SourceFile(path=path, size=total, sha256=digest.hexdigest())
    data = b"".join(chunks)
    try:
        return source, list(_parse_lines(path, data))
    except SchemaError as exc:
        raise SessionRefused(str(exc), source.sha256) from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


# One decoder for every line (building one per line costs more than decoding short lines).
_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)


def _parse_lines(path: str, data: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    lines = data.split(b"\n")
    last = len(lines)
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaError(
                f"{path}: line {number}: not valid UTF-8 (byte {exc.start}); session refused"
            ) from None
        try:
            value = _DECODER.decode(text)
        except json.JSONDecodeError as exc:
            truncated = " (the last line is cut off)" if number == last else ""
            raise SchemaError(
                f"{path}: line {number}: not valid JSON{truncated}: {exc.msg} (column "
                f"{exc.colno}); session refused"
            ) from None
        except ValueError as exc:
            truncated = " (the last line is cut off)" if number == last else ""
            message = str(exc).split(":", 1)[0]
            raise SchemaError(
                f"{path}: line {number}: not valid JSON{truncated}: {message}; session refused"
            ) from None
        if not isinstance(value, dict):
            raise SchemaError(f"{path}: line {number}: not a JSON object; session refused")
        yield number, value


def detect_agent(records: list[tuple[int, dict[str, Any]]]) -> Agent | None:
    """The agent whose format the first record follows, or ``None`` for an empty file."""
    for _, record in records:
        if record.get("type") in _CODEX_TYPES and "payload" in record:
            return "codex"
        return "claude-code"
    return None


def clip(text: str) -> str:
    """``text`` cut to :data:`TEXT_CLIP` characters, saying how much was cut."""
    if len(text) <= TEXT_CLIP:
        return text
    return f"{text[:TEXT_CLIP]}\n[... {len(text) - TEXT_CLIP} characters clipped on import]"


def shell_command(argv: Any) -> str | None:
    """The command string of a shell call's argv (``bash -lc CMD`` gives ``CMD``)."""
    if isinstance(argv, str):
        return argv or None
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        return None
    if len(argv) == 3 and argv[0] in _SHELLS and argv[1] in _SHELL_FLAGS:
        return str(argv[2]) or None
    return shlex.join(argv)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- Claude Code ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Handoff:
    boundary: Node
    tool_use_id: str | None
    closed: bool = False


@dataclass(slots=True)
class _ClaudeState:
    session: Session
    keep_text: bool
    pending: dict[str, Node] = field(default_factory=dict)
    handoffs: list[_Handoff] = field(default_factory=list)
    usage_by_message: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)
    usage_unknown: bool = False
    main_session_ids: list[str] = field(default_factory=list)
    last_was_boundary: bool = False
    sidechain_file: bool = False
    """The whole file is one subagent's trace (newer versions write one file per subagent)."""


def _claude_target(state: _ClaudeState, sidechain: bool) -> list[Node]:
    """Where an event goes: the main trace, or the child trace of the open subagent handoff."""
    if not sidechain:
        return state.session.events
    for handoff in state.handoffs:
        if not handoff.closed:
            assert handoff.boundary.child is not None
            return handoff.boundary.child
    # Subagent records with no Task call on record: a handoff is still a recorded fact.
    boundary = Node(kind="boundary", author="system", boundary="child_handoff", child=[])
    state.session.events.append(boundary)
    state.handoffs.append(_Handoff(boundary=boundary, tool_use_id=None))
    assert boundary.child is not None
    return boundary.child


def _claude_boundary(state: _ClaudeState, target: list[Node]) -> None:
    target.append(Node(kind="boundary", author="system", boundary="compaction"))
    state.last_was_boundary = True


def _claude_record(state: _ClaudeState, record: dict[str, Any]) -> None:
    session = state.session
    kind = record.get("type")
    if kind not in _CLAUDE_TYPES:
        session.unknown[str(kind)] += 1
        return
    if kind in ("summary", "file-history-snapshot", "queue-operation"):
        return
    sidechain = record.get("isSidechain") is True and not state.sidechain_file
    if session.first_timestamp is None and isinstance(record.get("timestamp"), str):
        session.first_timestamp = record["timestamp"]
    sid = record.get("sessionId")
    if isinstance(sid, str) and state.sidechain_file:
        session.parent_id = sid
    elif isinstance(sid, str) and not sidechain:
        if state.main_session_ids and state.main_session_ids[-1] != sid:
            # The same file continues under another session id: a resumed session.
            session.events.append(Node(kind="boundary", author="system", boundary="restart"))
        if not state.main_session_ids or state.main_session_ids[-1] != sid:
            state.main_session_ids.append(sid)
    if isinstance(record.get("version"), str):
        session.agent_version = record["version"]
    if session.cwd is None and isinstance(record.get("cwd"), str):
        session.cwd = record["cwd"]
    message = record.get("message")
    message = message if isinstance(message, dict) else {}
    target = _claude_target(state, sidechain)

    if kind == "system":
        nested = (
            message.get("subtype") == "compact_boundary"
            or message.get("type") == "compact_boundary"
        )
        if record.get("subtype") == "compact_boundary" or nested:
            _claude_boundary(state, target)
        return

    if kind == "user":
        content = message.get("content")
        if record.get("isCompactSummary") is True:
            # An older session may record the summary without a boundary record before it.
            if not state.last_was_boundary:
                _claude_boundary(state, target)
            text = _text_of(content)
            target.append(
                Node(kind="message", author="system", text=clip(text) if state.keep_text else "")
            )
            state.last_was_boundary = False
            return
        state.last_was_boundary = False
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                block_type = block.get("type")
                if block_type == "tool_result":
                    _claude_result(state, block, record, target)
                elif block_type == "text":
                    _append_text(state, target, "user", block.get("text"), None)
                elif block_type not in _CLAUDE_BLOCKS:
                    session.unknown[f"content:{block_type}"] += 1
        else:
            _append_text(state, target, "user", content, None)
        return

    # assistant
    state.last_was_boundary = False
    model = message.get("model") if isinstance(message.get("model"), str) else None
    if model is not None and model not in session.models and model != "<synthetic>":
        session.models.append(model)
    if not sidechain:
        _claude_usage(state, message)
    content = message.get("content")
    if not isinstance(content, list):
        _append_text(state, target, "agent", content, model)
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        block_type = block.get("type")
        if block_type == "text":
            _append_text(state, target, "agent", block.get("text"), model)
        elif block_type == "tool_use":
            _claude_tool_use(state, block, target, model, sidechain)
        elif block_type not in _CLAUDE_BLOCKS:
            session.unknown[f"content:{block_type}"] += 1


def _append_text(
    state: _ClaudeState, target: list[Node], author: Any, text: Any, model: str | None
) -> None:
    if not isinstance(text, str) or not text.strip():
        return
    target.append(
        Node(
            kind="message",
            author=author,
            text=clip(text) if state.keep_text else "",
            model=model,
        )
    )


def _claude_usage(state: _ClaudeState, message: dict[str, Any]) -> None:
    usage = message.get("usage")
    message_id = message.get("id")
    if not isinstance(usage, dict):
        state.usage_unknown = True
        return
    parts = [
        _int(usage.get(name))
        for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    tokens_in = None if parts[0] is None else sum(p or 0 for p in parts)
    tokens_out = _int(usage.get("output_tokens"))
    # One API message is written as several records (one per content block), each repeating
    # the message's usage: count it once per message id.
    key = message_id if isinstance(message_id, str) else f"record-{len(state.usage_by_message)}"
    state.usage_by_message[key] = (tokens_in, tokens_out)


def _claude_tool_use(
    state: _ClaudeState,
    block: dict[str, Any],
    target: list[Node],
    model: str | None,
    sidechain: bool,
) -> None:
    name = block.get("name")
    tool_id = block.get("id") if isinstance(block.get("id"), str) else None
    given = block.get("input")
    arguments: dict[str, Any] = given if isinstance(given, dict) else {}
    if name == "Bash":
        command = arguments.get("command")
        if isinstance(command, str) and command:
            node = Node(kind="command", author="agent", command=command, model=model)
            target.append(node)
            if tool_id is not None:
                state.pending[tool_id] = node
        return
    if name in ("Task", "Agent") and not sidechain:
        boundary = Node(kind="boundary", author="system", boundary="child_handoff", child=[])
        target.append(boundary)
        state.handoffs.append(_Handoff(boundary=boundary, tool_use_id=tool_id))


def _claude_result(
    state: _ClaudeState, block: dict[str, Any], record: dict[str, Any], target: list[Node]
) -> None:
    tool_id = block.get("tool_use_id")
    text = _text_of(block.get("content"))
    is_error = block.get("is_error") is True
    node = state.pending.pop(tool_id, None) if isinstance(tool_id, str) else None
    if node is not None:
        node.error = is_error
        found = _CLAUDE_EXIT.match(text) if is_error else None
        # Claude Code records an error flag, and on a failed command the tool's own
        # "Exit code N" header; a success records no code, so none is invented.
        if found is not None:
            node.exit_code = int(found.group(1))
    for handoff in state.handoffs:
        if handoff.tool_use_id is not None and handoff.tool_use_id == tool_id:
            handoff.closed = True
            assert handoff.boundary.child is not None
            handoff.boundary.child_complete = True
    if text.strip():
        target.append(
            Node(kind="message", author="tool", text=clip(text) if state.keep_text else "")
        )


def parse_claude(
    source: SourceFile, records: list[tuple[int, dict[str, Any]]], *, keep_text: bool
) -> Session:
    """A Claude Code session file (``~/.claude/projects/<project>/<session>.jsonl``)."""
    state = _ClaudeState(session=Session(agent="claude-code", files=[source]), keep_text=keep_text)
    turns = [r for _, r in records if r.get("type") in ("user", "assistant", "system")]
    state.sidechain_file = bool(turns) and all(r.get("isSidechain") is True for r in turns)
    for _, record in records:
        state.session.records += 1
        _claude_record(state, record)
    session = state.session
    if state.main_session_ids:
        session.session_id = state.main_session_ids[0]
    for handoff in state.handoffs:
        if handoff.tool_use_id is None:
            # Sidechain records with no Task call: complete only if the file ends after them
            # with the parent going on (we cannot tell), so leave them incomplete.
            handoff.boundary.child_complete = False
    usages = list(state.usage_by_message.values())
    if usages and not state.usage_unknown:
        ins = [u[0] for u in usages]
        outs = [u[1] for u in usages]
        session.input_tokens = None if None in ins else sum(i or 0 for i in ins)
        session.output_tokens = None if None in outs else sum(o or 0 for o in outs)
    return session


# --- Codex CLI --------------------------------------------------------------------------------


@dataclass(slots=True)
class _CodexState:
    session: Session
    keep_text: bool
    pending: dict[str, Node] = field(default_factory=dict)
    model: str | None = None
    metas: int = 0
    last_was_compaction: bool = False


def _codex_exit(output: Any) -> int | None:
    """The exit code a shell call's output records (JSON metadata, or the tool's header)."""
    if isinstance(output, dict):
        output = output.get("content") if "content" in output else output
    if not isinstance(output, str):
        return None
    try:
        value = json.loads(output)
    except ValueError:
        value = None
    if isinstance(value, dict):
        metadata = value.get("metadata")
        if isinstance(metadata, dict):
            return _int(metadata.get("exit_code"))
        return None
    found = _CODEX_EXIT.match(output)
    return int(found.group(1)) if found else None


def _codex_output_text(output: Any) -> str:
    if isinstance(output, dict):
        output = output.get("content", "")
    if not isinstance(output, str):
        return ""
    try:
        value = json.loads(output)
    except ValueError:
        return output
    if isinstance(value, dict) and isinstance(value.get("output"), str):
        return str(value["output"])
    return output


def _codex_compaction(state: _CodexState) -> None:
    # A `compacted` item and its `context_compacted` event are one compaction.
    if state.last_was_compaction:
        return
    state.session.events.append(Node(kind="boundary", author="system", boundary="compaction"))
    state.last_was_compaction = True


def _codex_call(state: _CodexState, payload: dict[str, Any]) -> None:
    name = payload.get("name")
    call_id = payload.get("call_id") if isinstance(payload.get("call_id"), str) else None
    if name not in _SHELL_TOOLS:
        return
    arguments = payload.get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        parsed = None
    command = None
    if isinstance(parsed, dict):
        command = shell_command(parsed.get("command", parsed.get("cmd")))
    if command is None:
        return
    node = Node(kind="command", author="agent", command=command, model=state.model)
    state.session.events.append(node)
    if call_id is not None:
        state.pending[call_id] = node


def _codex_item(state: _CodexState, payload: dict[str, Any]) -> None:
    session = state.session
    item = payload.get("type")
    if item not in _CODEX_ITEMS:
        session.unknown[f"response_item:{item}"] += 1
        return
    if item in ("compaction", "compaction_summary"):
        _codex_compaction(state)
        return
    state.last_was_compaction = False
    if item == "message":
        role = payload.get("role")
        author = {"user": "user", "assistant": "agent"}.get(str(role))
        text = _text_of(payload.get("content"))
        if author is not None and text.strip():
            session.events.append(
                Node(
                    kind="message",
                    author=author,  # type: ignore[arg-type]
                    text=clip(text) if state.keep_text else "",
                    model=state.model if author == "agent" else None,
                )
            )
    elif item == "function_call":
        _codex_call(state, payload)
    elif item == "local_shell_call":
        action = payload.get("action")
        argv = action.get("command") if isinstance(action, dict) else None
        command = shell_command(argv)
        call_id = payload.get("call_id")
        if command is not None:
            shell = Node(kind="command", author="agent", command=command, model=state.model)
            session.events.append(shell)
            if isinstance(call_id, str):
                state.pending[call_id] = shell
    elif item == "function_call_output":
        call_id = payload.get("call_id")
        node = state.pending.get(call_id) if isinstance(call_id, str) else None
        output = payload.get("output")
        if node is not None and node.exit_code is None:
            node.exit_code = _codex_exit(output)
        text = _codex_output_text(output) if state.keep_text else ""
        if text.strip():
            session.events.append(
                Node(kind="message", author="tool", text=clip(text) if state.keep_text else "")
            )


def _codex_event(state: _CodexState, payload: dict[str, Any]) -> None:
    session = state.session
    event = payload.get("type")
    if event not in _CODEX_EVENTS:
        session.unknown[f"event_msg:{event}"] += 1
        return
    if event == "context_compacted":
        _codex_compaction(state)
        return
    if event == "exec_command_end":
        call_id = payload.get("call_id")
        code = _int(payload.get("exit_code"))
        node = state.pending.get(call_id) if isinstance(call_id, str) else None
        if node is None:
            command = shell_command(payload.get("command"))
            if command is None:
                return
            node = Node(kind="command", author="agent", command=command, model=state.model)
            session.events.append(node)
            if isinstance(call_id, str):
                state.pending[call_id] = node
        if code is not None:
            # The structured end event is the authority on the exit code.
            node.exit_code = code
        state.last_was_compaction = False
        return
    if event == "token_count":
        info = payload.get("info")
        totals = info.get("total_token_usage") if isinstance(info, dict) else None
        if isinstance(totals, dict):
            session.input_tokens = _int(totals.get("input_tokens"))
            session.output_tokens = _int(totals.get("output_tokens"))


def parse_codex(
    source: SourceFile, records: list[tuple[int, dict[str, Any]]], *, keep_text: bool
) -> Session:
    """A Codex CLI rollout file (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``)."""
    state = _CodexState(session=Session(agent="codex", files=[source]), keep_text=keep_text)
    session = state.session
    for number, record in records:
        session.records += 1
        kind = record.get("type")
        payload = record.get("payload")
        if session.first_timestamp is None and isinstance(record.get("timestamp"), str):
            session.first_timestamp = record["timestamp"]
        if kind not in _CODEX_TYPES:
            session.unknown[str(kind)] += 1
            continue
        if not isinstance(payload, dict):
            raise SchemaError(
                f"{source.path}: line {number}: a {kind} record without an object payload; "
                "session refused"
            )
        if kind == "session_meta":
            state.metas += 1
            meta_id = payload.get("id")
            if state.metas > 1 and meta_id == session.session_id:
                # The rollout continues after a resume: a restart on record.
                session.events.append(Node(kind="boundary", author="system", boundary="restart"))
            if session.session_id is None and isinstance(meta_id, str):
                session.session_id = meta_id
            if isinstance(payload.get("cli_version"), str):
                session.agent_version = payload["cli_version"]
            if session.cwd is None and isinstance(payload.get("cwd"), str):
                session.cwd = payload["cwd"]
            source_field = payload.get("source")
            if isinstance(source_field, dict):
                sub = source_field.get("subagent")
                spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
                if isinstance(spawn, dict) and isinstance(spawn.get("parent_thread_id"), str):
                    session.parent_id = spawn["parent_thread_id"]
        elif kind == "turn_context":
            if isinstance(payload.get("model"), str):
                state.model = payload["model"]
                if state.model not in session.models:
                    session.models.append(state.model)
        elif kind == "compacted":
            _codex_compaction(state)
        elif kind == "response_item":
            _codex_item(state, payload)
        else:
            _codex_event(state, payload)
    return session


def parse_session(path: str, *, agent: Agent | None, limit: int, keep_text: bool) -> Session:
    """Read and parse one session file; ``agent`` None detects the format from its records."""
    source, records = read_lines(path, limit)
    found = detect_agent(records)
    chosen = agent or found
    if chosen is None:
        raise SchemaError(f"{path}: no records; not a session")
    if agent is not None and found is not None and found != agent:
        raise SchemaError(f"{path}: records in the {found} format, not {agent}")
    if chosen == "codex":
        return parse_codex(source, records, keep_text=keep_text)
    return parse_claude(source, records, keep_text=keep_text)


def join_sessions(parts: list[Session]) -> Session:
    """Files of one session in order: each continuation in a new file is a restart.

    A file that holds only a subagent's trace is attached as a child handoff: into the first
    handoff of the session whose child trace is still empty, else as a new handoff at the end.
    """
    mains = [part for part in parts if part.parent_id is None]
    children = [part for part in parts if part.parent_id is not None]
    mains.sort(key=lambda part: (part.first_timestamp or "", part.files[0].path))
    base = mains[0] if mains else children.pop(0)
    joined = Session(
        agent=base.agent,
        files=list(base.files),
        session_id=base.session_id or base.parent_id,
        agent_version=base.agent_version,
        cwd=base.cwd,
        models=list(base.models),
        events=list(base.events),
        unknown=Counter(base.unknown),
        input_tokens=base.input_tokens,
        output_tokens=base.output_tokens,
        first_timestamp=base.first_timestamp,
        records=base.records,
    )
    for part in mains[1:]:
        joined.events.append(Node(kind="boundary", author="system", boundary="restart"))
        _absorb(joined, part)
        joined.events.extend(part.events)
        joined.input_tokens = _add(joined.input_tokens, part.input_tokens)
        joined.output_tokens = _add(joined.output_tokens, part.output_tokens)
    for child in children:
        _absorb(joined, child)
        empty = next(
            (
                event
                for event in joined.events
                if event.boundary == "child_handoff" and event.child == []
            ),
            None,
        )
        if empty is None:
            empty = Node(kind="boundary", author="system", boundary="child_handoff", child=[])
            joined.events.append(empty)
        assert empty.child is not None
        empty.child.extend(child.events)
        empty.child_complete = True
    return joined


def _absorb(joined: Session, part: Session) -> None:
    joined.files.extend(part.files)
    joined.unknown.update(part.unknown)
    joined.records += part.records
    if part.agent_version is not None:
        joined.agent_version = part.agent_version
    for model in part.models:
        if model not in joined.models:
            joined.models.append(model)


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b
