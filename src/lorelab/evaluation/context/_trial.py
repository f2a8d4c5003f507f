"""One simulated context trial: a managed compaction or restart built from a fixture, a worker
answering from the recovered checkpoint, and the synthetic record scored by the same scorer.

A trial keeps the fixture's evidence (every top-level event but its answers) with its original
indices and authors, its source boundaries included; writes a checkpoint through
:mod:`lorelab.context` at a new managed boundary; appends an isolated requesting turn owned by
a synthetic source owner; then calls the worker (role ``context``) at most ``max_turns`` times.
The worker sees the task, the request, the recovered checkpoint and its handoff brief: never
the labels, the expected facts or the forbidden-command list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from lorelab.context import BoundaryKind, Checkpoint, CheckpointStore, handoff_brief, recover
from lorelab.errors import IntegrityFailure
from lorelab.evaluation.context._fixture import (
    AnswerEvent,
    BoundaryEvent,
    Claim,
    CommandEvent,
    Fact,
    LoadedFixture,
    MessageEvent,
    Provenance,
    Usage,
    check_trace,
    iter_events,
    usage_out_of_bounds,
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
from lorelab.evaluation.context._score import (
    SCORER_VERSION,
    Score,
    counting_window_start,
    score_trace,
)
from lorelab.evaluation.context._trial_checkpoint import build_checkpoint, evidence_of, request_text
from lorelab.io import canonical_bytes, sha256_bytes
from lorelab.workers.identity import WorkerIdentity
from lorelab.workers.roles import PROTOCOL, ContextResponse
from lorelab.workers.transport import RoleCall, RoleReceipt, WorkerBounds, call_worker

ROLE: Final = "context"
SOURCE_OWNER: Final = "lorelab.eval-context"


@dataclass(slots=True)
class _TrialRun:
    """One trial as it goes: the opening (checkpoint, boundary, request), then each turn."""

    fixture: LoadedFixture
    boundary: BoundaryKind
    run_id: str
    trial_id: str
    checkpoint: Checkpoint
    boundary_index: int
    owner: SourceOwner
    trace: list[Any] = field(default_factory=list)
    transcript_from: int = 0
    next_index: int = 0
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


def _payload(run: _TrialRun, *, turn: int, max_turns: int) -> dict[str, Any]:
    transcript = [
        event.model_dump(mode="json", by_alias=True) for event in run.trace[run.transcript_from :]
    ]
    return {
        "protocol": PROTOCOL,
        "role": ROLE,
        "trial": {
            "id": run.trial_id,
            "boundary": run.boundary,
            "boundaryIndex": run.boundary_index,
            "turn": turn,
            "maxTurns": max_turns,
        },
        "task": run.fixture.fixture.task,
        "request": {
            "index": run.owner.request_index,
            "text": request_text(run.boundary),
            "sourceOwner": run.owner.model_dump(mode="json", by_alias=True),
        },
        "recovered": run.checkpoint.model_dump(mode="json", by_alias=True),
        "brief": handoff_brief(run.checkpoint),
        "transcript": transcript,
        "nextIndex": run.next_index,
    }


def _open_trial(
    item: LoadedFixture, boundary: BoundaryKind, *, run_id: str, store: CheckpointStore
) -> _TrialRun:
    """The evidence, the checkpoint written (and read back on a restart), the request turn."""
    fixture = item.fixture
    trial_id = f"{fixture.id}#{boundary}"
    evidence = evidence_of(fixture)
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
    run = _TrialRun(
        fixture=item,
        boundary=boundary,
        run_id=run_id,
        trial_id=trial_id,
        checkpoint=checkpoint,
        boundary_index=boundary_index,
        owner=SourceOwner(owner=SOURCE_OWNER, request_index=request_index),
    )
    run.trace = [
        *evidence,
        BoundaryEvent(index=boundary_index, author="system", kind="boundary", boundary=boundary),
        MessageEvent(
            index=request_index, author="user", kind="message", text=request_text(boundary)
        ),
    ]
    run.transcript_from = len(run.trace)
    run.next_index = request_index + 1
    return run


@dataclass(frozen=True, slots=True)
class TrialWorker:
    """The worker every trial of a run calls, with the bounds of each call and of the turns."""

    argv: list[str]
    max_turns: int
    bounds: WorkerBounds
    fixture_agent: bool
    """The shipped offline fixture: every trial's evidence is labelled ``protocol-fixture``."""
    payload_log: list[dict[str, Any]] | None = None
    """When given, receives every payload sent."""


def run_trial(
    item: LoadedFixture,
    boundary: BoundaryKind,
    *,
    run_id: str,
    store: CheckpointStore,
    worker: TrialWorker,
    identity: WorkerIdentity,
) -> RecordResult:
    """Run one managed-boundary trial of ``item`` and score its synthetic record.

    ``identity`` binds the worker in the trial's working directory; the transport checks it
    before each launch and after each response.
    """
    run = _open_trial(item, boundary, run_id=run_id, store=store)
    cwd = Path(identity.cwd)
    for turn in range(1, worker.max_turns + 1):
        payload = _payload(run, turn=turn, max_turns=worker.max_turns)
        if worker.payload_log is not None:
            worker.payload_log.append(payload)
        call = call_worker(
            worker.argv,
            ROLE,
            payload,
            cwd=cwd,
            bounds=worker.bounds,
            attempt=turn,
            identity=identity,
        )
        if not _take_turn(run, turn, call):
            break
    if worker.fixture_agent:
        run.evidence_kind = "protocol-fixture"
    return _record(run, argv=worker.argv, identity=identity, max_turns=worker.max_turns)


def _take_turn(run: _TrialRun, turn: int, call: RoleCall) -> bool:
    """Record one worker call and its commands or answer; whether the trial goes on."""
    metrics = _metrics(turn, call.receipt)
    run.calls.append(metrics)
    if metrics.model_claimed is not None:
        run.claimed_models.append(metrics.model_claimed)
    if call.receipt.evidence_kind == "protocol-fixture":
        run.evidence_kind = "protocol-fixture"
    if call.response is None:
        run.failure = metrics.failure or "no-response"
        return False
    # The transport already validated the response for the role; this only types it.
    response = ContextResponse.model_validate(call.response)
    for command in response.commands:
        run.trace.append(
            CommandEvent(
                index=run.next_index,
                author="agent",
                kind="command",
                command=command.command,
                exit_code=command.exit_code,
            )
        )
        run.next_index += 1
    if response.answer is None:
        return True
    run.trace.append(
        AnswerEvent(
            index=run.next_index,
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
    return False


def _score(run: _TrialRun) -> tuple[list[BoundaryKind], bool, Score]:
    """The required boundaries, completeness and score of the synthetic record."""
    fixture = run.fixture.fixture
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
        window_start=source_window if source_window is not None else run.boundary_index,
        normalise_commands=fixture.labels.forbidden_commands == "proposed",
    )
    return required, complete, score


def _record(
    run: _TrialRun, *, argv: Sequence[str], identity: WorkerIdentity, max_turns: int
) -> RecordResult:
    item = run.fixture
    fixture = item.fixture
    required, complete, score = _score(run)
    models = set(run.claimed_models)
    usage, usage_out_of_range = _trial_usage(run.calls)
    return RecordResult(
        record_id=run.trial_id,
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
            run_id=f"{run.run_id}/{run.trial_id}",
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
        trial=_trial_info(
            run,
            argv=argv,
            identity=identity,
            max_turns=max_turns,
            required=required,
            complete=complete,
            usage_out_of_range=usage_out_of_range,
        ),
    )


def _trial_info(
    run: _TrialRun,
    *,
    argv: Sequence[str],
    identity: WorkerIdentity,
    max_turns: int,
    required: list[BoundaryKind],
    complete: bool,
    usage_out_of_range: list[str],
) -> TrialInfo:
    """The trial's own facts: checkpoint, owner, worker, turns, and the record's digest."""
    record = {
        "id": run.trial_id,
        "requiredBoundaries": required,
        "complete": complete,
        "trace": [event.model_dump(mode="json", by_alias=True) for event in run.trace],
    }
    return TrialInfo(
        trial_id=run.trial_id,
        managed_boundary=run.boundary,
        boundary_index=run.boundary_index,
        checkpoint_id=run.checkpoint.id,
        checkpoint_sha256=sha256_bytes(canonical_bytes(run.checkpoint)),
        source_owner=run.owner,
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
    )
