"""Importing a recorded session as an unlabelled context fixture.

The fixture keeps the session's events in order (user turns, agent messages, shell commands
with their recorded outcome, tool output, boundaries, child traces) with every text and command
redacted and long texts clipped. Labels are a person's job: expected facts stay empty, the
fixture is marked ``unlabelled``, and each command that failed before the first boundary is a
*proposed* forbidden command.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lorelab.errors import OutputExistsError, UsageError
from lorelab.evaluation.context._fixture import ContextFixture, utf8_path
from lorelab.evaluation.context._session_read import (
    SESSION_LIMIT,
    Agent,
    Node,
    Session,
    check_limit,
)
from lorelab.evaluation.context._sessions import join_sessions, parse_session
from lorelab.io import pretty_json
from lorelab.memory._redact import redact

MAX_ID: int = 200


def _redacted(text: str) -> str:
    return redact(text)[0]


def _event(node: Node, index: int, *, redact_text: bool) -> dict[str, Any]:
    event: dict[str, Any] = {"index": index, "author": node.author, "kind": node.kind}
    if node.model is not None:
        event["model"] = node.model
    if node.kind == "message":
        event["text"] = _redacted(node.text) if redact_text else node.text
    elif node.kind == "command":
        event["command"] = _redacted(node.command) if redact_text else node.command
        event["exitCode"] = node.exit_code
        if node.error is not None:
            event["error"] = node.error
    elif node.kind == "boundary":
        event["boundary"] = node.boundary
    else:
        event.update(facts=[], claims=[])
    return event


def _number(
    nodes: list[Node], start: int, *, redact_text: bool
) -> tuple[list[dict[str, Any]], int]:
    """Fixture events for ``nodes`` with indices in trace order (a child right after its
    boundary), and the next free index."""
    events: list[dict[str, Any]] = []
    index = start
    for node in nodes:
        event = _event(node, index, redact_text=redact_text)
        index += 1
        if node.kind == "boundary" and node.boundary == "child_handoff":
            child, index = _number(node.child or [], index, redact_text=redact_text)
            event["child"] = {"trace": child, "complete": node.child_complete}
        events.append(event)
    return events, index


def _with_answer(nodes: list[Node]) -> list[Node]:
    """``nodes`` with an answer event after the last top-level agent message, if there is one."""
    for position in range(len(nodes) - 1, -1, -1):
        node = nodes[position]
        if node.kind == "message" and node.author == "agent":
            answer = Node(kind="answer", author="agent", model=node.model)
            return [*nodes[: position + 1], answer, *nodes[position + 1 :]]
    return nodes


def proposed_forbidden(events: Sequence[dict[str, Any]]) -> list[str]:
    """Commands that failed at top level before the first boundary, each once, in order."""
    found: list[str] = []
    for event in events:
        if event["kind"] == "boundary":
            break
        if event["kind"] != "command":
            continue
        code = event["exitCode"]
        failed = code != 0 if code is not None else event.get("error") is True
        if failed and event["command"] not in found:
            found.append(event["command"])
    return found


def session_fixture(
    session: Session, *, synthetic: bool = False, redact_text: bool = True
) -> ContextFixture:
    """The unlabelled fixture of a parsed session (validated).

    ``redact_text`` False leaves texts and commands as parsed: only for a fixture that is never
    written (a scan redacts what it reports itself).
    """
    nodes = _with_answer(session.events)
    trace, _ = _number(nodes, 0, redact_text=redact_text)
    first_user = next(
        (e["text"] for e in trace if e["kind"] == "message" and e["author"] == "user"), ""
    )
    fixture_id = session.session_id or Path(session.files[0].path).stem
    raw = {
        "schemaVersion": 1,
        "id": fixture_id[:MAX_ID] or "session",
        "task": first_user,
        "expectedFacts": [],
        "forbiddenCommands": proposed_forbidden(trace),
        "requiredBoundaries": [e["boundary"] for e in trace if e["kind"] == "boundary"],
        "trace": trace,
        "complete": True,
        "labels": {"expected": None, "status": "unlabelled", "forbiddenCommands": "proposed"},
        "provenance": {
            "sourceRevision": None,
            "runId": session.session_id,
            "model": session.models[0] if len(session.models) == 1 else None,
            "synthetic": synthetic,
            "agent": session.agent,
            "agentVersion": session.agent_version,
            "sessionId": session.session_id,
            "cwd": _redacted(session.cwd) if session.cwd is not None and redact_text else None,
            "sourceDigests": [f.sha256 for f in session.files],
            "unknownEventTypes": dict(sorted(session.unknown.items())),
        },
        "usage": {
            "inputTokens": session.input_tokens,
            "outputTokens": session.output_tokens,
            "costUSD": None,
            "wallMs": None,
        },
    }
    return ContextFixture.model_validate(raw)


def fixture_bytes(fixture: ContextFixture) -> bytes:
    """The fixture as a file holds it (camelCase JSON; optional fields at their default left
    out)."""
    return pretty_json(fixture.model_dump(by_alias=True, exclude_defaults=True)).encode("utf-8")


def write_new_file(path: str, data: bytes) -> None:
    """Write ``data`` to a new file ``path`` (0600), atomically; an existing path is refused."""
    target = Path(path)
    if target.exists() or target.is_symlink():
        raise OutputExistsError(f"--output {path}: already exists; lorelab never overwrites it")
    parent = target.parent
    if not parent.is_dir():
        if parent.exists() or parent.is_symlink():
            raise UsageError(f"--output {path}: {parent} is not a directory")
        # New directories are private: the fixture holds (redacted) session text.
        parent.mkdir(mode=0o700, parents=True)
    temporary = parent / f".{target.name}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, target)
        except FileExistsError:
            raise OutputExistsError(
                f"--output {path}: already exists; lorelab never overwrites it"
            ) from None
    finally:
        temporary.unlink(missing_ok=True)


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import wrote."""

    fixture: ContextFixture
    session: Session
    output: str


def import_session(
    files: Sequence[str],
    *,
    agent: Agent,
    output: str,
    max_bytes: int = SESSION_LIMIT,
    synthetic: bool = False,
) -> ImportResult:
    """Import the files of one session (a resumed session may span several) into ``output``.

    Every file is read and parsed before anything is written; a malformed line refuses the
    import (exit 2) and nothing is written.
    """
    if not files:
        raise UsageError("give at least one session file")
    limit = check_limit(max_bytes)
    name = utf8_path(output, "--output")
    parts = [
        parse_session(utf8_path(path, "session"), agent=agent, limit=limit, keep_text=True)
        for path in files
    ]
    ids = {part.session_id or part.parent_id for part in parts}
    if len(ids) > 1:
        shown = ", ".join(sorted(str(i) for i in ids))
        raise UsageError(f"the files belong to different sessions ({shown}); import one session")
    session = join_sessions(parts)
    fixture = session_fixture(session, synthetic=synthetic)
    write_new_file(name, fixture_bytes(fixture))
    return ImportResult(fixture=fixture, session=session, output=name)
