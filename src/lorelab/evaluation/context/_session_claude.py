"""Claude Code session files (``~/.claude/projects/<project>/<session>.jsonl``) as a trace.

Boundaries come only from recorded events: the ``compact_boundary`` system record or an
``isCompactSummary`` message, a change of session id (a resumed session), subagent records.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from lorelab.evaluation.context._session_read import (
    Node,
    Session,
    SourceFile,
    clip,
    int_value,
    is_one_of,
    text_of,
)

_CLAUDE_TYPES: Final = frozenset(
    {"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation"}
)
_CLAUDE_BLOCKS: Final = frozenset(
    {"text", "tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
)
# Structured result headers written by the tools themselves (not prose of the model).
_CLAUDE_EXIT: Final = re.compile(r"\AExit code (-?\d+)\b")


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
    kind = record.get("type")
    if not is_one_of(kind, _CLAUDE_TYPES):
        state.session.unknown[str(kind)] += 1
        return
    if kind in ("summary", "file-history-snapshot", "queue-operation"):
        return
    sidechain = record.get("isSidechain") is True and not state.sidechain_file
    _claude_meta(state, record, sidechain)
    message = record.get("message")
    message = message if isinstance(message, dict) else {}
    target = _claude_target(state, sidechain)
    if kind == "system":
        _claude_system(state, record, message, target)
    elif kind == "user":
        _claude_user(state, record, message, target)
    else:
        _claude_assistant(state, message, target, sidechain)


def _claude_meta(state: _ClaudeState, record: dict[str, Any], sidechain: bool) -> None:
    """What a record says about the session: first timestamp, ids (a resume), version, cwd."""
    session = state.session
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


def _claude_system(
    state: _ClaudeState, record: dict[str, Any], message: dict[str, Any], target: list[Node]
) -> None:
    nested = (
        message.get("subtype") == "compact_boundary" or message.get("type") == "compact_boundary"
    )
    if record.get("subtype") == "compact_boundary" or nested:
        _claude_boundary(state, target)


def _claude_user(
    state: _ClaudeState, record: dict[str, Any], message: dict[str, Any], target: list[Node]
) -> None:
    content = message.get("content")
    if record.get("isCompactSummary") is True:
        # An older session may record the summary without a boundary record before it.
        if not state.last_was_boundary:
            _claude_boundary(state, target)
        text = text_of(content)
        target.append(
            Node(kind="message", author="system", text=clip(text) if state.keep_text else "")
        )
        state.last_was_boundary = False
        return
    state.last_was_boundary = False
    for block_type, block in _blocks(state, target, content, "user", None):
        if block_type == "tool_result":
            _claude_result(state, block, record, target)


def _claude_assistant(
    state: _ClaudeState, message: dict[str, Any], target: list[Node], sidechain: bool
) -> None:
    session = state.session
    state.last_was_boundary = False
    model = message.get("model") if isinstance(message.get("model"), str) else None
    if model is not None and model not in session.models and model != "<synthetic>":
        session.models.append(model)
    if not sidechain:
        _claude_usage(state, message)
    for block_type, block in _blocks(state, target, message.get("content"), "agent", model):
        if block_type == "tool_use":
            _claude_tool_use(state, block, target, model, sidechain)


def _blocks(
    state: _ClaudeState, target: list[Node], content: Any, author: str, model: str | None
) -> Iterator[tuple[Any, dict[str, Any]]]:
    """A message's content blocks in order: text is appended here, unknown types counted, and
    the other known blocks (tool calls and results) handed back to the caller."""
    if not isinstance(content, list):
        _append_text(state, target, author, content, model)
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        block_type = block.get("type")
        if block_type == "text":
            _append_text(state, target, author, block.get("text"), model)
        elif not is_one_of(block_type, _CLAUDE_BLOCKS):
            state.session.unknown[f"content:{block_type}"] += 1
        else:
            yield block_type, block


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
        int_value(usage.get(name))
        for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    tokens_in = None if parts[0] is None else sum(p or 0 for p in parts)
    tokens_out = int_value(usage.get("output_tokens"))
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
    text = text_of(block.get("content"))
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
