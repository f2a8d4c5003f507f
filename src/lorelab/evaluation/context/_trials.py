"""Simulated context trials: a managed compaction or restart built from a fixture, a worker
answering from the recovered checkpoint, and the synthetic record scored by the same scorer.

A trial keeps the fixture's evidence (every top-level event but its answers) with its original
indices and authors, its source boundaries included; writes a checkpoint through
:mod:`lorelab.context` at a new managed boundary; appends an isolated requesting turn owned by
a synthetic source owner; then calls the worker (role ``context``) at most ``max_turns`` times.
The worker sees the task, the request, the recovered checkpoint and its handoff brief: never
the labels, the expected facts or the forbidden-command list.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from lorelab.context import (
    MAX_CHECKPOINT_BYTES,
    BoundaryKind,
    Checkpoint,
    CheckpointStore,
    FailedCommand,
    RequestContext,
    RequestMessage,
    handoff_brief,
    new_checkpoint,
    recover,
)
from lorelab.errors import IntegrityFailure, UsageError
from lorelab.evaluation.context._compare import load_baseline
from lorelab.evaluation.context._fixture import (
    AnswerEvent,
    BoundaryEvent,
    Claim,
    CommandEvent,
    ContextFixture,
    Fact,
    LoadedFixture,
    MessageEvent,
    Provenance,
    Usage,
    check_trace,
    iter_events,
    usage_out_of_bounds,
    utf8_path,
)
from lorelab.evaluation.context._receipt import (
    CallMetrics,
    CallUsage,
    Qualification,
    RecordResult,
    SourceOwner,
    TrialInfo,
    cost_total,
    int_total,
)
from lorelab.evaluation.context._run import (
    EvaluationResult,
    check_output_location,
    finish,
    load_fixtures,
    new_run_id,
)
from lorelab.evaluation.context._score import (
    SCORER_VERSION,
    counting_window_start,
    score_trace,
)
from lorelab.io import canonical_bytes, create_output_dir, json_bytes, sha256_bytes
from lorelab.workers.agents import resolve_agent
from lorelab.workers.identity import WorkerIdentity, bind_identity
from lorelab.workers.roles import PROTOCOL, ContextResponse
from lorelab.workers.transport import RoleReceipt, call_worker, check_bounds

ROLE: Final = "context"
MANAGED_BOUNDARIES: Final[tuple[BoundaryKind, ...]] = ("compaction", "restart")
SOURCE_OWNER: Final = "lorelab.eval-context"
FIXTURE_CONTEXT_AGENT: Final = "fixture-context"
FIXTURE_CONTEXT_MODULE: Final = "lorelab.testing.fixture_context"
MAX_TURNS_LIMIT: Final = 20
MAX_SUMMARY_BYTES: Final = 64 * 1024
MAX_EVENT_CHARS: Final = 2000

_VERB: Final = {"compaction": "compacted", "restart": "restarted"}


def resolve_context_agent(agent: str) -> list[str]:
    """A shipped adapter's name (``fixture-context`` for the offline fixture) or a JSON argv."""
    return resolve_agent(agent)


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


def _evidence(fixture: ContextFixture) -> list[Any]:
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
        _evidence(item.fixture),
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


@dataclass(slots=True)
class _TrialRun:
    fixture: LoadedFixture
    boundary: BoundaryKind
    trace: list[Any] = field(default_factory=list)
    calls: list[CallMetrics] = field(default_factory=list)
    claimed_models: list[str] = field(default_factory=list)
    evidence_kind: str = "agent"
    failure: str | None = None
    answered: bool = False


def _metrics(turn: int, receipt: RoleReceipt) -> CallMetrics:
    usage = receipt.usage
    return CallMetrics(
        turn=turn,
        spawned=receipt.spawned,
        exit_code=receipt.exit_code,
        duration_ms=receipt.duration_ms,
        input_bytes=receipt.input_bytes,
        output_bytes=receipt.output_bytes,
        usage=CallUsage(
            input_tokens=usage.input_tokens if usage is not None else None,
            output_tokens=usage.output_tokens if usage is not None else None,
            costUSD=usage.cost_usd if usage is not None else None,
        ),
        model_claimed=receipt.model.claimed,
        failure=receipt.failure,
    )


def _trial_usage(calls: Sequence[CallMetrics]) -> tuple[Usage, list[str]]:
    """Reported usage summed over calls, and the fields left unknown for being out of range.

    A field any call did not report stays unknown. A field whose reported values (or their
    total) exceed the :class:`Usage` maxima is not a usable report: it stays unknown too, and
    is named in the second element so the receipt says why (the calls keep what was reported).
    """
    if not calls:
        return Usage(), []
    costs = [c.usage.cost_usd for c in calls]
    cost: float | None = None
    out_of_range: list[str] = []
    if all(c is not None for c in costs):
        if usage_out_of_bounds({"costUSD": max(c for c in costs if c is not None)}):
            # Never sum such values: two reports of 1e308 overflow to infinity.
            out_of_range.append("costUSD")
        else:
            cost = cost_total(costs)
    totals: dict[str, int | float | None] = {
        "inputTokens": int_total([c.usage.input_tokens for c in calls]),
        "outputTokens": int_total([c.usage.output_tokens for c in calls]),
        "costUSD": cost,
        "wallMs": int_total([c.duration_ms for c in calls]),
    }
    out_of_range += usage_out_of_bounds(totals)
    for name in out_of_range:
        totals[name] = None
    return Usage.model_validate(totals), sorted(set(out_of_range))


def _payload(
    run: _TrialRun,
    *,
    trial_id: str,
    checkpoint: Checkpoint,
    boundary_index: int,
    owner: SourceOwner,
    turn: int,
    max_turns: int,
    transcript_from: int,
    next_index: int,
) -> dict[str, Any]:
    transcript = [
        event.model_dump(mode="json", by_alias=True) for event in run.trace[transcript_from:]
    ]
    return {
        "protocol": PROTOCOL,
        "role": ROLE,
        "trial": {
            "id": trial_id,
            "boundary": run.boundary,
            "boundaryIndex": boundary_index,
            "turn": turn,
            "maxTurns": max_turns,
        },
        "task": run.fixture.fixture.task,
        "request": {
            "index": owner.request_index,
            "text": request_text(run.boundary),
            "sourceOwner": owner.model_dump(mode="json", by_alias=True),
        },
        "recovered": checkpoint.model_dump(mode="json", by_alias=True),
        "brief": handoff_brief(checkpoint),
        "transcript": transcript,
        "nextIndex": next_index,
    }


def run_trial(
    item: LoadedFixture,
    boundary: BoundaryKind,
    *,
    run_id: str,
    store: CheckpointStore,
    argv: Sequence[str],
    identity: WorkerIdentity,
    max_turns: int,
    timeout_ms: int,
    max_output_bytes: int,
    fixture_agent: bool,
    payload_log: list[dict[str, Any]] | None = None,
) -> RecordResult:
    """Run one managed-boundary trial of ``item`` and score its synthetic record.

    ``identity`` binds the worker in the trial's working directory; the transport checks it
    before each launch and after each response.
    """
    fixture = item.fixture
    trial_id = f"{fixture.id}#{boundary}"
    evidence = _evidence(fixture)
    highest = max((event.index for event, _ in iter_events(list(fixture.trace))), default=-1)
    boundary_index, request_index = highest + 1, highest + 2
    scope = f"{run_id}/{trial_id}"
    written = build_checkpoint(store, fixture, evidence, scope=scope, boundary=boundary)
    if boundary == "restart":
        # A restart keeps nothing in memory: the new context reads the checkpoint back from disk.
        checkpoint = recover(CheckpointStore(store.home), scope)
        if checkpoint is None or checkpoint != written:
            raise IntegrityFailure(f"trial {trial_id}: checkpoint {written.id} did not read back")
    else:
        checkpoint = written
    owner = SourceOwner(owner=SOURCE_OWNER, request_index=request_index)
    run = _TrialRun(fixture=item, boundary=boundary)
    run.trace = [
        *evidence,
        BoundaryEvent(index=boundary_index, author="system", kind="boundary", boundary=boundary),
        MessageEvent(
            index=request_index, author="user", kind="message", text=request_text(boundary)
        ),
    ]
    transcript_from = len(run.trace)
    next_index = request_index + 1
    cwd = Path(identity.cwd)
    for turn in range(1, max_turns + 1):
        payload = _payload(
            run,
            trial_id=trial_id,
            checkpoint=checkpoint,
            boundary_index=boundary_index,
            owner=owner,
            turn=turn,
            max_turns=max_turns,
            transcript_from=transcript_from,
            next_index=next_index,
        )
        if payload_log is not None:
            payload_log.append(payload)
        call = call_worker(
            argv,
            ROLE,
            payload,
            cwd=cwd,
            timeout_ms=timeout_ms,
            max_output_bytes=max_output_bytes,
            attempt=turn,
            identity=identity,
        )
        metrics = _metrics(turn, call.receipt)
        run.calls.append(metrics)
        if metrics.model_claimed is not None:
            run.claimed_models.append(metrics.model_claimed)
        if call.receipt.evidence_kind == "protocol-fixture":
            run.evidence_kind = "protocol-fixture"
        if call.response is None:
            run.failure = metrics.failure or "no-response"
            break
        # The transport already validated the response for the role; this only types it.
        response = ContextResponse.model_validate(call.response)
        for command in response.commands:
            run.trace.append(
                CommandEvent(
                    index=next_index,
                    author="agent",
                    kind="command",
                    command=command.command,
                    exit_code=command.exit_code,
                )
            )
            next_index += 1
        if response.answer is not None:
            run.trace.append(
                AnswerEvent(
                    index=next_index,
                    author="agent",
                    kind="answer",
                    facts=[
                        Fact(id=fact.id, value=fact.value, evidence=list(fact.evidence))
                        for fact in response.answer.facts
                    ],
                    claims=[
                        Claim(text=claim.text, evidence=list(claim.evidence))
                        for claim in response.answer.claims
                    ],
                )
            )
            run.answered = True
            break
    if fixture_agent:
        run.evidence_kind = "protocol-fixture"
    return _record(
        run,
        trial_id=trial_id,
        checkpoint=checkpoint,
        boundary_index=boundary_index,
        owner=owner,
        argv=argv,
        identity=identity,
        max_turns=max_turns,
        run_id=run_id,
    )


def _record(
    run: _TrialRun,
    *,
    trial_id: str,
    checkpoint: Checkpoint,
    boundary_index: int,
    owner: SourceOwner,
    argv: Sequence[str],
    identity: WorkerIdentity,
    max_turns: int,
    run_id: str,
) -> RecordResult:
    item = run.fixture
    fixture = item.fixture
    check_trace(run.trace)
    required = [*fixture.required_boundaries, run.boundary]
    # A trial the worker broke off is a truncated record; the turn cap is not (no answer is).
    complete = fixture.complete and run.failure is None
    # The window opens where the fixture's own does: requiring the managed boundary must not
    # turn a source boundary the fixture did not require into a window opener.
    source_window = counting_window_start(fixture.trace, fixture.required_boundaries)
    score = score_trace(
        expected_facts=fixture.expected_facts,
        forbidden_commands=fixture.forbidden_commands,
        required_boundaries=required,
        trace=run.trace,
        complete=complete,
        window_start=source_window if source_window is not None else boundary_index,
        normalise_commands=fixture.labels.forbidden_commands == "proposed",
    )
    record = {
        "id": trial_id,
        "requiredBoundaries": required,
        "complete": complete,
        "trace": [event.model_dump(mode="json", by_alias=True) for event in run.trace],
    }
    models = set(run.claimed_models)
    usage, usage_out_of_range = _trial_usage(run.calls)
    return RecordResult(
        record_id=trial_id,
        fixture_id=fixture.id,
        fixture_path=item.path,
        fixture_digest=item.digest,
        boundary_kinds=required,
        observed_boundaries=list(score.observed_boundaries),
        failures=score.failures,
        forbidden_history=score.forbidden_history,
        verdict=score.verdict,
        label=None,
        label_agrees=None,
        provenance=Provenance(
            source_revision=fixture.provenance.source_revision,
            run_id=f"{run_id}/{trial_id}",
            model=models.pop() if len(models) == 1 else None,
            synthetic=True,
        ),
        usage=usage,
        synthetic=True,
        qualification=Qualification(
            mode="trial",
            evidence_kind=run.evidence_kind,
            synthetic=True,
            scorer=SCORER_VERSION,
            managed_boundary=run.boundary,
            max_turns=max_turns,
        ),
        trial=TrialInfo(
            trial_id=trial_id,
            managed_boundary=run.boundary,
            boundary_index=boundary_index,
            checkpoint_id=checkpoint.id,
            checkpoint_sha256=sha256_bytes(canonical_bytes(checkpoint)),
            source_owner=owner,
            agent_argv=list(argv),
            worker_identity_sha256=sha256_bytes(canonical_bytes(identity)),
            evidence_kind=run.evidence_kind,
            turns_used=len(run.calls),
            max_turns=max_turns,
            turn_cap_reached=not run.answered and run.failure is None,
            failure=run.failure,
            usage_out_of_range=usage_out_of_range,
            calls=run.calls,
            record_digest=sha256_bytes(canonical_bytes(record)),
        ),
    )


def _check_worker_cwd(
    cwd: str | os.PathLike[str],
    loaded: Sequence[LoadedFixture],
    output: str | os.PathLike[str],
) -> None:
    """Refuse a worker directory that holds a fixture (the worker must never see its labels)
    or the output directory (a worker must not read the scores of earlier trials, nor alter
    the records written while it runs)."""
    root = Path(os.path.realpath(cwd))
    for item in loaded:
        if Path(os.path.realpath(item.path)).is_relative_to(root):
            raise UsageError(
                f"--cwd {os.fspath(cwd)}: contains fixture {item.path}, whose labels and "
                "expected facts the worker must never see; choose another directory"
            )
    if Path(os.path.realpath(output)).is_relative_to(root):
        raise UsageError(
            f"--cwd {os.fspath(cwd)}: contains the output directory {os.fspath(output)}, whose "
            "trial records the worker must not read or alter; choose another directory"
        )


def _managed(boundaries: Sequence[str]) -> list[BoundaryKind]:
    unknown = [kind for kind in boundaries if kind not in MANAGED_BOUNDARIES]
    if unknown:
        raise UsageError(f"--boundary {unknown[0]!r}: trials manage only compaction and restart")
    kinds = [kind for kind in MANAGED_BOUNDARIES if kind in boundaries]
    if not kinds:
        raise UsageError("give at least one managed boundary")
    return kinds


def run_trials(
    fixtures: Sequence[str | os.PathLike[str]],
    *,
    agent: str,
    output: str | os.PathLike[str],
    baseline: str | os.PathLike[str] | None = None,
    boundaries: Sequence[str] = MANAGED_BOUNDARIES,
    max_turns: int = 4,
    timeout_ms: int = 115_000,
    max_output_bytes: int = 65_536,
    cwd: str | os.PathLike[str] | None = None,
    payload_log: list[dict[str, Any]] | None = None,
    checkpoint_home: str | os.PathLike[str] | None = None,
) -> EvaluationResult:
    """Run managed compaction/restart trials from each fixture and write receipts.

    Everything is checked before the output directory is created: the fixtures, the baseline,
    the bounds, and the worker's identity in every trial's working directory (bad input exits
    2, an unbindable worker 3). Each trial's record is written to ``trials/`` the moment it is
    scored; the run's receipt follows. Without ``cwd`` every trial gets a fresh empty working
    directory, removed after the run. ``payload_log``, when given, receives every payload sent.

    Checkpoints hold trace text (messages, tool output), so they never go into the receipts,
    which hold metrics only (each trial records its checkpoint's id and SHA-256). They are
    written to a private temporary home removed after the run, or to ``checkpoint_home`` (a
    memory home the caller keeps; it must lie outside ``output``).
    """
    if not 1 <= max_turns <= MAX_TURNS_LIMIT:
        raise UsageError(f"--max-turns {max_turns} must be between 1 and {MAX_TURNS_LIMIT}")
    check_bounds(timeout_ms, max_output_bytes)
    kinds = _managed(boundaries)
    try:
        agent.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("--agent: not valid UTF-8 (the receipts record the worker argv)") from None
    if cwd is not None:
        utf8_path(cwd, "--cwd")
    if checkpoint_home is not None:
        utf8_path(checkpoint_home, "checkpoint home")
    argv = resolve_context_agent(agent)
    fixture_agent = FIXTURE_CONTEXT_MODULE in argv
    loaded = load_fixtures(fixtures)
    checked = load_baseline(baseline) if baseline is not None else None
    check_output_location(output, [item.path for item in loaded])
    if cwd is not None:
        _check_worker_cwd(cwd, loaded, output)
    home: Path | None = None
    if checkpoint_home is not None:
        home = Path(os.path.realpath(checkpoint_home))
        if home.is_relative_to(os.path.realpath(output)):
            raise UsageError(
                f"checkpoint home {os.fspath(checkpoint_home)}: inside the output directory, "
                "whose receipts hold metrics only"
            )
    plan = [(item, kind) for item in loaded for kind in kinds]
    run_id = new_run_id()
    for item, kind in plan:
        check_checkpoint_fits(item, kind, run_id=run_id)
    scratch: Path | None = None
    private_home: Path | None = None
    try:
        if cwd is None:
            scratch = Path(tempfile.mkdtemp(prefix="lorelab-context-trials-"))
        if home is None:
            private_home = home = Path(tempfile.mkdtemp(prefix="lorelab-context-checkpoints-"))
        identities: list[WorkerIdentity] = []
        for number in range(len(plan)):
            if scratch is not None:
                trial_cwd = scratch / f"{number:04d}"
                trial_cwd.mkdir(mode=0o700)
            else:
                trial_cwd = Path(os.path.abspath(os.fspath(cwd)))  # type: ignore[arg-type]
            identities.append(bind_identity(argv, cwd=trial_cwd, operator_identity=None))
        out = create_output_dir(output)
        trials_dir = out.subdir("trials")
        store = CheckpointStore(home)
        records: list[RecordResult] = []
        for (item, kind), identity in zip(plan, identities, strict=True):
            record = run_trial(
                item,
                kind,
                run_id=run_id,
                store=store,
                argv=argv,
                identity=identity,
                max_turns=max_turns,
                timeout_ms=timeout_ms,
                max_output_bytes=max_output_bytes,
                fixture_agent=fixture_agent,
                payload_log=payload_log,
            )
            trials_dir.write_json(f"{len(records) + 1:04d}-{kind}.json", record)
            records.append(record)
    finally:
        for temporary in (scratch, private_home):
            if temporary is not None:
                shutil.rmtree(temporary, ignore_errors=True)
    return finish(out, run_id=run_id, mode="trial", records=records, baseline=checked)
