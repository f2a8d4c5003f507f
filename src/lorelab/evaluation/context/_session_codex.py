"""Codex CLI rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) as a trace.

Boundaries come only from recorded events: a ``compacted`` item or ``context_compacted``
event, a rollout that continues after a resume, a subagent's ``thread_spawn`` source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

from lorelab.errors import SchemaError
from lorelab.evaluation.context._session_read import (
    Node,
    Session,
    SourceFile,
    clip,
    int_value,
    is_one_of,
    loads_bounded,
    shell_command,
    text_of,
)

_SHELL_TOOLS: Final = frozenset({"shell", "container.exec", "exec_command", "local_shell"})
CODEX_TYPES: Final = frozenset(
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
_CODEX_EXIT: Final = re.compile(r"\AExit code: (-?\d+)\b")


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
    value = loads_bounded(output)
    if isinstance(value, dict):
        metadata = value.get("metadata")
        if isinstance(metadata, dict):
            return int_value(metadata.get("exit_code"))
        return None
    found = _CODEX_EXIT.match(output)
    return int(found.group(1)) if found else None


def _codex_output_text(output: Any) -> str:
    if isinstance(output, dict):
        output = output.get("content", "")
    if not isinstance(output, str):
        return ""
    value = loads_bounded(output)
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
    if not is_one_of(name, _SHELL_TOOLS):
        return
    arguments = payload.get("arguments")
    parsed = loads_bounded(arguments) if isinstance(arguments, str) else arguments
    command = None
    if isinstance(parsed, dict):
        command = shell_command(parsed.get("command", parsed.get("cmd")))
    if command is None:
        return
    node = Node(kind="command", author="agent", command=command, model=state.model)
    state.session.events.append(node)
    if call_id is not None:
        state.pending[call_id] = node


def _known_type(
    session: Session, payload: dict[str, Any], known: frozenset[str], record: str
) -> str | None:
    """The payload's type when this reader knows it; an unknown one is counted by name."""
    kind = payload.get("type")
    if is_one_of(kind, known):
        return str(kind)
    session.unknown[f"{record}:{kind}"] += 1
    return None


def _codex_item(state: _CodexState, payload: dict[str, Any]) -> None:
    session = state.session
    item = _known_type(session, payload, _CODEX_ITEMS, "response_item")
    if item is None:
        return
    if item in ("compaction", "compaction_summary"):
        _codex_compaction(state)
        return
    state.last_was_compaction = False
    if item == "message":
        role = payload.get("role")
        author = {"user": "user", "assistant": "agent"}.get(str(role))
        text = text_of(payload.get("content"))
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
    event = _known_type(session, payload, _CODEX_EVENTS, "event_msg")
    if event is None:
        return
    if event == "context_compacted":
        _codex_compaction(state)
        return
    if event == "exec_command_end":
        call_id = payload.get("call_id")
        code = int_value(payload.get("exit_code"))
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
            session.input_tokens = int_value(totals.get("input_tokens"))
            session.output_tokens = int_value(totals.get("output_tokens"))


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
        if not is_one_of(kind, CODEX_TYPES):
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
