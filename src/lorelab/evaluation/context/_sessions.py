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

from collections import Counter
from typing import Any

from lorelab.errors import SchemaError
from lorelab.evaluation.context._session_claude import parse_claude
from lorelab.evaluation.context._session_codex import CODEX_TYPES, parse_codex
from lorelab.evaluation.context._session_read import Agent, Node, Session, is_one_of, read_lines


def detect_agent(records: list[tuple[int, dict[str, Any]]]) -> Agent | None:
    """The agent whose format the first record follows, or ``None`` for an empty file."""
    for _, record in records:
        if is_one_of(record.get("type"), CODEX_TYPES) and "payload" in record:
            return "codex"
        return "claude-code"
    return None


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
