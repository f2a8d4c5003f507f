"""The checkpoint a context trial writes at its managed boundary, built from the evidence.

The summary lists every line of evidence (``[index] author kind: content``), the oldest lines
dropped past a size budget; the request messages, failed commands and evidence indices are kept
whole. The checkpoint goes through :mod:`lorelab.context`, the same store agents use.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

from lorelab.context import (
    MAX_CHECKPOINT_BYTES,
    BoundaryKind,
    Checkpoint,
    CheckpointStore,
    FailedCommand,
    RequestContext,
    RequestMessage,
    new_checkpoint,
)
from lorelab.errors import UsageError
from lorelab.evaluation.context._fixture import (
    AnswerEvent,
    BoundaryEvent,
    CommandEvent,
    ContextFixture,
    LoadedFixture,
    MessageEvent,
    iter_events,
)
from lorelab.io import json_bytes

MAX_SUMMARY_BYTES: Final = 64 * 1024
MAX_EVENT_CHARS: Final = 2000

_VERB: Final = {"compaction": "compacted", "restart": "restarted"}


def _clip(text: str) -> str:
    return text if len(text) <= MAX_EVENT_CHARS else text[:MAX_EVENT_CHARS] + " [...]"


def summary_lines(events: Sequence[Any]) -> list[str]:
    """One line per line of evidence: ``[index] author kind: content``; child events indented."""
    lines: list[str] = []
    for event, depth in iter_events(list(events)):
        head = f"{'  ' * depth}[{event.index}] {event.author}"
        if isinstance(event, MessageEvent):
            body = _clip(event.text).splitlines() or [""]
            lines += [f"{head} message: {line}" for line in body]
        elif isinstance(event, CommandEvent):
            outcome = (
                f"exit {event.exit_code}"
                if event.exit_code is not None
                else "no exit code recorded" + (", error flag set" if event.error else "")
            )
            lines.append(f"{head} command: {event.command} -> {outcome}")
        elif isinstance(event, BoundaryEvent):
            detail = ""
            if event.child is not None:
                state = "complete" if event.child.complete else "incomplete"
                detail = f" (child trace follows, {state})"
            lines.append(f"{head} boundary: {event.boundary}{detail}")
        elif isinstance(event, AnswerEvent):
            lines += [f"{head} answer: {fact.id} = {_clip(fact.value)}" for fact in event.facts]
            lines += [f"{head} answer claim: {_clip(claim.text)}" for claim in event.claims]
    return lines


def summarise_evidence(events: Sequence[Any]) -> str:
    """The checkpoint summary: the evidence lines, the oldest dropped past the size budget."""
    lines = summary_lines(events)
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        size += len(line.encode("utf-8")) + 1
        if size > MAX_SUMMARY_BYTES:
            break
        kept.append(line)
    kept.reverse()
    omitted = len(lines) - len(kept)
    if omitted:
        kept.insert(0, f"[... {omitted} earlier lines omitted to fit the summary budget]")
    return "\n".join(kept)


def draft_checkpoint(
    fixture: ContextFixture,
    evidence: Sequence[Any],
    *,
    scope: str,
    boundary: BoundaryKind,
    created_at: datetime | None = None,
) -> Checkpoint:
    """The checkpoint of ``evidence`` at a managed ``boundary``, built but not stored."""
    flat = list(iter_events(list(evidence)))
    requests = [
        RequestMessage(index=event.index, author=event.author, text=event.text)
        for event in evidence
        if isinstance(event, MessageEvent) and event.author == "user"
    ]
    # A checkpoint's failed command carries its exit code; one recorded without a code is
    # still in the summary lines, with its error flag.
    failed = [
        FailedCommand(command=event.command, exit_code=event.exit_code, index=event.index)
        for event, _ in flat
        if isinstance(event, CommandEvent) and event.exit_code is not None and event.exit_code != 0
    ]
    boundaries = [
        f"{event.boundary} at event {event.index}"
        for event in evidence
        if isinstance(event, BoundaryEvent)
    ]
    notes = [
        "Source boundaries already crossed: " + (", ".join(boundaries) or "none") + ".",
        f"{len(failed)} command(s) already failed; do not repeat them unchanged.",
        "Cite evidence by event index; indices of the source trace are unchanged.",
    ]
    return new_checkpoint(
        scope=scope,
        boundary=boundary,
        summary=summarise_evidence(evidence),
        notes=notes,
        request_context=RequestContext(task=fixture.task, messages=requests),
        failed_commands=failed,
        source_event_indices=[event.index for event, _ in flat],
        created_at=created_at,
    )


def build_checkpoint(
    store: CheckpointStore,
    fixture: ContextFixture,
    evidence: Sequence[Any],
    *,
    scope: str,
    boundary: BoundaryKind,
) -> Checkpoint:
    """Write the checkpoint of ``evidence`` at a managed ``boundary`` through lorelab.context."""
    checkpoint = draft_checkpoint(fixture, evidence, scope=scope, boundary=boundary)
    store.write(checkpoint)
    return checkpoint


def evidence_of(fixture: ContextFixture) -> list[Any]:
    # Every top-level event but the answers: the source's own answer is not evidence.
    return [event for event in fixture.trace if not isinstance(event, AnswerEvent)]


def check_checkpoint_fits(item: LoadedFixture, boundary: BoundaryKind, *, run_id: str) -> None:
    """Refuse (exit 2) a fixture whose trial checkpoint would exceed the store's size limit.

    The summary is budgeted, but the request messages, failed commands and evidence indices
    are kept whole, so a fixture can outgrow a checkpoint; this is found before the output
    exists rather than in the middle of a run. The longest timestamp form is measured.
    """
    trial_id = f"{item.fixture.id}#{boundary}"
    draft = draft_checkpoint(
        item.fixture,
        evidence_of(item.fixture),
        scope=f"{run_id}/{trial_id}",
        boundary=boundary,
        created_at=datetime.now(UTC).replace(microsecond=999_999),
    )
    size = json_bytes(draft)
    if size > MAX_CHECKPOINT_BYTES:
        raise UsageError(
            f"{item.path}: the checkpoint of trial {trial_id} would be {size} bytes, over the "
            f"store limit of {MAX_CHECKPOINT_BYTES} (its request messages, failed commands and "
            "evidence indices are kept whole)"
        )


def request_text(boundary: BoundaryKind) -> str:
    """The isolated requesting turn a trial appends after the evidence."""
    return (
        f"The context was {_VERB[boundary]}. Answer the task from the recovered context: state "
        "each fact the task asks for with the indices of the events that support it, and do not "
        "repeat commands that already failed."
    )
