"""Scanning recorded sessions: boundaries, and failed commands run again after a boundary.

For each session: how many compactions, restarts and child handoffs it recorded, and every
re-run of a command that had failed before a boundary, split into ``repeatedFailures`` (the
re-run failed again) and ``rerunsPassed`` (it passed: a fix being verified). Commands match
after whitespace normalisation (so an exact match is a match too).
"""

from __future__ import annotations

import os
import secrets
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, NonNegativeInt
from pydantic.alias_generators import to_camel

from lorelab.errors import InvalidInput, UsageError
from lorelab.evaluation.context._fixture import (
    BoundaryEvent,
    CommandEvent,
    ContextFixture,
    iter_events,
    parse_fixture,
    utf8_path,
)
from lorelab.evaluation.context._import import session_fixture
from lorelab.evaluation.context._receipt import EvaluatorIdentity, evaluator_identity
from lorelab.evaluation.context._run import check_output_location
from lorelab.evaluation.context._score import normalise
from lorelab.evaluation.context._session_read import (
    SESSION_LIMIT,
    Agent,
    Session,
    SessionRefused,
    SourceFile,
    check_limit,
)
from lorelab.evaluation.context._sessions import join_sessions, parse_session
from lorelab.io import ReceiptDir, create_output_dir, pretty_json, read_bounded, sha256_bytes
from lorelab.memory._redact import redact

SCAN_JSON: Final = "context-scan.json"
SCAN_MARKDOWN: Final = "context-scan.md"
SCAN_KIND: Final = "lorelab.context-scan"


class _Model(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True
    )


class Rerun(_Model):
    """One re-run, after a boundary, of a command that had failed before it."""

    command: str = Field(description="The command, redacted.")
    failed_at: NonNegativeInt = Field(description="Event index of the last failure before it.")
    rerun_at: NonNegativeInt = Field(description="Event index of the re-run.")
    boundary_at: NonNegativeInt = Field(description="Event index of the boundary in between.")
    turns_between: NonNegativeInt = Field(
        description="Agent events (messages and commands) between the failure and the re-run."
    )
    outcome: Literal["failed", "passed", "unknown"] = Field(
        description="'failed' (a repeated failure), 'passed', or 'unknown' (no outcome recorded)."
    )


class InputFile(_Model):
    """One input file as read."""

    path: str = Field(description="The path as found.")
    bytes: NonNegativeInt = Field(description="Bytes read.")
    sha256: str = Field(description="SHA-256 of exactly the bytes read.")


class SessionRow(_Model):
    """The scan of one session: metrics only, no prompt text and no command output."""

    session_id: str | None = Field(description="The session id as recorded; null if none.")
    agent: Agent | Literal["fixture"] = Field(description="The format the session was read from.")
    agent_version: str | None = Field(description="The agent's version, if recorded.")
    models: list[str] = Field(description="Models the session recorded, in order of first use.")
    files: list[InputFile] = Field(description="The files the session was read from.")
    events: NonNegativeInt = Field(description="Events in the trace, child traces included.")
    commands: NonNegativeInt = Field(description="Shell commands run.")
    failed_commands: NonNegativeInt = Field(description="Commands recorded as failed.")
    compactions: NonNegativeInt = Field(description="Compaction boundaries (children included).")
    restarts: NonNegativeInt = Field(description="Restarts (resumed sessions).")
    handoffs: NonNegativeInt = Field(description="Child handoffs (subagents).")
    repeated_failures: NonNegativeInt = Field(
        description="Re-runs after a boundary of a command that failed before it, failing again."
    )
    reruns_passed: NonNegativeInt = Field(description="Such re-runs that passed.")
    reruns_unknown: NonNegativeInt = Field(description="Such re-runs with no recorded outcome.")
    reruns: list[Rerun] = Field(description="Every such re-run.")
    unknown_event_types: dict[str, int] = Field(
        description="Record types the reader does not know, with their counts."
    )
    input_tokens: NonNegativeInt | None = Field(description="Input tokens recorded; null: unknown.")
    output_tokens: NonNegativeInt | None = Field(
        description="Output tokens recorded; null: unknown."
    )


class RefusedInput(_Model):
    """A session file that was refused, never half-read."""

    path: str = Field(description="The file.")
    reason: str = Field(description="Why, with the line number where there is one.")
    sha256: str | None = Field(
        default=None,
        description="SHA-256 of the file when it was read whole (a malformed line); null when "
        "it was not read whole (over the size bound, not a regular file).",
    )


class ScanTotals(_Model):
    """Sums over every session scanned."""

    sessions: NonNegativeInt = Field(description="Sessions scanned.")
    refused: NonNegativeInt = Field(description="Files refused.")
    compactions: NonNegativeInt = Field(description="Compactions.")
    restarts: NonNegativeInt = Field(description="Restarts.")
    handoffs: NonNegativeInt = Field(description="Child handoffs.")
    repeated_failures: NonNegativeInt = Field(description="Repeated failures.")
    reruns_passed: NonNegativeInt = Field(description="Re-runs that passed.")
    reruns_unknown: NonNegativeInt = Field(description="Re-runs with no recorded outcome.")


class ScanReceipt(_Model):
    """The receipt of one ``lorelab eval context scan`` run."""

    schema_version: Literal[1] = Field(default=1, description="Version of this receipt format.")
    kind: Literal["lorelab.context-scan"] = Field(default=SCAN_KIND, description="What it is.")
    run_id: str = Field(description="Identity of this scan.")
    created_at: AwareDatetime = Field(description="When the scan finished (UTC).")
    evaluator: EvaluatorIdentity = Field(description="The evaluator's identity.")
    max_bytes: NonNegativeInt = Field(description="The read bound of one session file.")
    sessions: list[SessionRow] = Field(description="One row per session.")
    refused: list[RefusedInput] = Field(description="Files refused, with the reason.")
    totals: ScanTotals = Field(description="Sums.")
    exit_code: int = Field(description="The exit code the scan ended with.")


@dataclass(frozen=True, slots=True)
class _Counts:
    compactions: int
    restarts: int
    handoffs: int
    commands: int
    failed: int
    events: int
    reruns: list[Rerun]


def _redacted(command: str) -> str:
    return redact(command)[0]


def scan_trace(trace: Sequence[Any]) -> _Counts:
    """Boundary counts and re-runs of one trace (fixture events), in trace order.

    A re-run is a command whose normalised form failed at an earlier event with a boundary
    (compaction, restart or child handoff, at any depth) between that failure and it.
    """
    flat = [event for event, _ in iter_events(list(trace))]
    kinds: dict[str, int] = defaultdict(int)
    failures: dict[str, list[int]] = defaultdict(list)
    agent_before: list[int] = []
    agent_count = 0
    last_boundary: int | None = None
    reruns: list[Rerun] = []
    commands = failed_commands = 0
    for position, event in enumerate(flat):
        agent_before.append(agent_count)
        if isinstance(event, BoundaryEvent):
            kinds[event.boundary] += 1
            last_boundary = position
        elif isinstance(event, CommandEvent):
            commands += 1
            key = normalise(event.command)
            failed = event.failed
            earlier = [
                p for p in failures.get(key, []) if last_boundary is not None and p < last_boundary
            ]
            if earlier and last_boundary is not None:
                before = earlier[-1]
                reruns.append(
                    Rerun(
                        command=_redacted(key),
                        failed_at=flat[before].index,
                        rerun_at=event.index,
                        boundary_at=flat[last_boundary].index,
                        turns_between=agent_count - agent_before[before] - 1,
                        outcome="unknown" if failed is None else ("failed" if failed else "passed"),
                    )
                )
            if failed:
                failed_commands += 1
                failures[key].append(position)
        if event.author == "agent":
            agent_count += 1
    return _Counts(
        compactions=kinds["compaction"],
        restarts=kinds["restart"],
        handoffs=kinds["child_handoff"],
        commands=commands,
        failed=failed_commands,
        events=len(flat),
        reruns=reruns,
    )


def _row(
    fixture: ContextFixture,
    *,
    agent: Agent | Literal["fixture"],
    files: list[InputFile],
    session: Session | None,
) -> SessionRow:
    counts = scan_trace(fixture.trace)
    outcomes = [r.outcome for r in counts.reruns]
    models = (
        session.models
        if session is not None
        else ([fixture.provenance.model] if fixture.provenance.model else [])
    )
    unknown = (
        dict(sorted(session.unknown.items()))
        if session is not None
        else dict(fixture.provenance.unknown_event_types)
    )
    return SessionRow(
        session_id=fixture.provenance.session_id if session is None else session.session_id,
        agent=agent,
        agent_version=fixture.provenance.agent_version,
        models=list(models),
        files=files,
        events=counts.events,
        commands=counts.commands,
        failed_commands=counts.failed,
        compactions=counts.compactions,
        restarts=counts.restarts,
        handoffs=counts.handoffs,
        repeated_failures=outcomes.count("failed"),
        reruns_passed=outcomes.count("passed"),
        reruns_unknown=outcomes.count("unknown"),
        reruns=counts.reruns,
        unknown_event_types=unknown,
        input_tokens=fixture.usage.input_tokens,
        output_tokens=fixture.usage.output_tokens,
    )


def _input(source: SourceFile) -> InputFile:
    return InputFile(path=source.path, bytes=source.size, sha256=source.sha256)


def _outside(path: str, root: str) -> bool:
    """Whether ``path`` is a symbolic link whose target lies outside the directory ``root``."""
    if not os.path.islink(path):
        return False
    target = os.path.realpath(path)
    return os.path.commonpath([target, root]) != root


def _below(name: str) -> tuple[list[str], list[RefusedInput]]:
    """Every ``*.jsonl`` under directory ``name``, sorted, and the symbolic links among them
    that lead out of it (refused, never opened: ``/etc/passwd``, another user's session)."""
    root = os.path.realpath(name)
    found: list[str] = []
    refused: list[RefusedInput] = []
    for folder, dirs, files in os.walk(name):  # links to directories are not followed
        dirs.sort()
        for file in sorted(f for f in files if f.endswith(".jsonl")):
            path = os.path.join(folder, file)
            if _outside(path, root):
                reason = f"{path}: a symbolic link to a file outside {name}; not followed"
                refused.append(RefusedInput(path=path, reason=reason))
            else:
                found.append(path)
    return found, refused


def collect_paths(paths: Sequence[str]) -> tuple[list[str], list[RefusedInput]]:
    """The files to scan: each file given, and every ``*.jsonl`` under each directory, sorted;
    and the files under a directory that are symbolic links out of it, refused."""
    if not paths:
        raise UsageError("give at least one file or directory to scan")
    found: list[str] = []
    refused: list[RefusedInput] = []
    for given in paths:
        name = utf8_path(given, "scan path")
        if os.path.isdir(name):
            below, links = _below(name)
            found += below
            refused += links
        elif os.path.lexists(name):
            found.append(name)
        else:
            raise UsageError(f"{name}: no such file or directory")
    return list(dict.fromkeys(found)), refused


@dataclass(frozen=True, slots=True)
class ScanResult:
    """A finished scan: the receipt, where it was written (if anywhere), and the exit code."""

    receipt: ScanReceipt
    output: Path | None
    exit_code: int


def _read(
    paths: Sequence[str],
    *,
    agent: Agent | None,
    limit: int,
    progress: Callable[[str], None],
) -> tuple[list[SessionRow], list[RefusedInput]]:
    rows: list[SessionRow] = []
    refused: list[RefusedInput] = []
    grouped: dict[tuple[str, str], list[Session]] = {}
    order: list[tuple[str, str]] = []
    for path in paths:
        try:
            if path.endswith(".json"):
                data = read_bounded(path, "fixture")
                fixture = parse_fixture(data, path)
                data_file = InputFile(path=path, bytes=len(data), sha256=sha256_bytes(data))
                rows.append(_row(fixture, agent="fixture", files=[data_file], session=None))
            else:
                session = parse_session(path, agent=agent, limit=limit, keep_text=False)
                key = session.session_id or session.parent_id or f"file:{path}"
                group: tuple[str, str] = (session.agent, key)
                if group not in grouped:
                    grouped[group] = []
                    order.append(group)
                grouped[group].append(session)
        except InvalidInput as exc:
            digest = exc.sha256 if isinstance(exc, SessionRefused) else None
            refused.append(RefusedInput(path=path, reason=str(exc), sha256=digest))
        progress(path)
    for found in order:
        session = join_sessions(grouped[found])
        fixture = session_fixture(session, redact_text=False)
        rows.append(
            _row(
                fixture,
                agent=session.agent,
                files=[_input(f) for f in session.files],
                session=session,
            )
        )
    return rows, refused


def totals(rows: Iterable[SessionRow], refused: int) -> ScanTotals:
    """Sums over ``rows``."""
    listed = list(rows)
    return ScanTotals(
        sessions=len(listed),
        refused=refused,
        compactions=sum(r.compactions for r in listed),
        restarts=sum(r.restarts for r in listed),
        handoffs=sum(r.handoffs for r in listed),
        repeated_failures=sum(r.repeated_failures for r in listed),
        reruns_passed=sum(r.reruns_passed for r in listed),
        reruns_unknown=sum(r.reruns_unknown for r in listed),
    )


def render_scan_markdown(receipt: ScanReceipt) -> str:
    """A Markdown view of a scan receipt (metrics only)."""
    t = receipt.totals
    lines = [
        "# Context scan",
        "",
        f"- run: {receipt.run_id}",
        f"- finished: {receipt.created_at.isoformat()}",
        f"- lorelab {receipt.evaluator.lorelab_version}",
        f"- sessions {t.sessions}, refused files {t.refused}; exit code {receipt.exit_code}",
        "",
        "| session | agent | compactions | restarts | handoffs | repeated failures | "
        "re-runs passed | re-runs unknown | files |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in receipt.sessions:
        lines.append(
            f"| {r.session_id or 'unknown'} | {r.agent} | {r.compactions} | {r.restarts} | "
            f"{r.handoffs} | {r.repeated_failures} | {r.reruns_passed} | {r.reruns_unknown} | "
            f"{len(r.files)} |"
        )
    lines.append(
        f"| total | | {t.compactions} | {t.restarts} | {t.handoffs} | {t.repeated_failures} | "
        f"{t.reruns_passed} | {t.reruns_unknown} | |"
    )
    if receipt.refused:
        lines += ["", "## Refused", ""]
        lines += [f"- {item.reason}" for item in receipt.refused]
    return "\n".join(lines) + "\n"


def scan_sessions(
    paths: Sequence[str],
    *,
    agent: Agent | None = None,
    output: str | None = None,
    max_bytes: int = SESSION_LIMIT,
    progress: Callable[[str], None] | None = None,
    on_files: Callable[[int], None] | None = None,
) -> ScanResult:
    """Scan session files and directories; write receipts to a fresh ``output`` if given.

    Exit code: 0 when every file was read and no session repeated a failure; 1 when a file was
    refused or a session repeated a failed command after a boundary.
    """
    limit = check_limit(max_bytes)
    files, links = collect_paths(paths)
    if output is not None:
        check_output_location(output, files)
    if on_files is not None:
        on_files(len(files))
    rows, unread = _read(files, agent=agent, limit=limit, progress=progress or (lambda _: None))
    refused = links + unread
    summed = totals(rows, len(refused))
    code = 1 if refused or summed.repeated_failures else 0
    receipt = ScanReceipt(
        run_id=f"scan-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}",
        created_at=datetime.now(UTC),
        evaluator=evaluator_identity(),
        max_bytes=limit,
        sessions=rows,
        refused=refused,
        totals=summed,
        exit_code=code,
    )
    written: Path | None = None
    if output is not None:
        out: ReceiptDir = create_output_dir(output)
        out.write_bytes(SCAN_JSON, pretty_json(receipt).encode("utf-8"))
        out.write_bytes(SCAN_MARKDOWN, render_scan_markdown(receipt).encode("utf-8"))
        written = out.path
    return ScanResult(receipt=receipt, output=written, exit_code=code)
