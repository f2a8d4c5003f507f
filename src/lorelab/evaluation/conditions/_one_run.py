"""One task x condition: a fresh copy of the project, the verify command before the host edits,
the guidance, the host's attempts (each followed by the verify command), and one receipt.

Host calls and verify commands run in the caller's (the main) thread, blocking the event loop
while they run: nothing else is in flight then, and an interrupt (Ctrl-C, SIGTERM) raises right
where the process is awaited, whose handlers kill its whole group. In a worker thread the
process would outlive the interrupt.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from lorelab._model import PROTOCOL_FIXTURE, estimate_tokens, timestamp
from lorelab.evaluation.conditions._dream import DreamOutcome
from lorelab.evaluation.conditions._guidance import Guidance, guidance_for
from lorelab.evaluation.conditions._integrity import ServedCheck, check_served, edited_verify_files
from lorelab.evaluation.conditions._manifest import (
    MAX_HOST_CALL_MS,
    Condition,
    ConditionsManifest,
    TaskSpec,
)
from lorelab.evaluation.conditions._memory import MemoryUnderTest
from lorelab.evaluation.conditions._receipts import (
    AttemptReceipt,
    ConditionRun,
    GuidanceReceipt,
    HostResponse,
    RunReceipt,
    VerifySnapshot,
)
from lorelab.evaluation.conditions._relevance import named_keys, relevance_keys
from lorelab.evaluation.conditions._rework import meaningful_cycles, rework_from_cycles
from lorelab.evaluation.conditions._snapshot import Snapshot
from lorelab.evaluation.conditions._verify import VerifyReceipt, run_verify
from lorelab.evaluation.executors import TrialExecutor
from lorelab.evaluation.runlog import RunLog
from lorelab.io import Tick, interrupts_deferred, no_progress
from lorelab.workers import PROTOCOL, WorkerBounds, WorkerIdentity, call_worker

RUNS_DIR = "runs"
MEMORY_FAILURE = "memory-failure"


def model_matches(declared: str, claimed: str) -> bool:
    """Whether a host's claimed model is the declared one: equal, or the declared name inside
    the claimed one, case-insensitively (an alias such as ``sonnet`` matches
    ``claude-sonnet-4-5-20250929``)."""
    return declared.casefold() in claimed.casefold()


class HostSide(Protocol):
    """What running a host needs (a :class:`RunContext`, or a worker's copy of its parts)."""

    @property
    def manifest(self) -> ConditionsManifest: ...
    @property
    def argv(self) -> list[str]: ...
    @property
    def identity(self) -> WorkerIdentity: ...
    @property
    def env(self) -> dict[str, str]: ...
    @property
    def verify_timeout_s(self) -> float: ...


@dataclass(slots=True)
class RunCounts:
    """What went wrong or was flagged over the runs; the summary and ``run.json`` carry each."""

    host_failures: int = 0
    identity_changes: int = 0
    memory_failures: int = 0
    model_mismatches: int = 0
    flagged_runs: int = 0
    executor_failures: int = 0

    @property
    def failures(self) -> int:
        """Host, memory, model-claim and executor failures: any of them makes the exit 1."""
        return (
            self.host_failures
            + self.memory_failures
            + self.model_mismatches
            + self.executor_failures
        )


@dataclass(slots=True)
class RunContext:
    """What every run of one evaluation shares, and the counts the run summary needs."""

    manifest: ConditionsManifest
    manifest_sha256: str
    snapshot: Snapshot
    root: Path
    argv: list[str]
    identity: WorkerIdentity
    env: dict[str, str]
    log: RunLog
    verify_timeout_s: float
    fixture: bool
    memory: MemoryUnderTest | None = None
    dream: DreamOutcome | None = None
    # Conditions not applicable to this memory, with the reason (never run).
    not_applicable: dict[str, str] = field(default_factory=dict)
    records: list[ConditionRun] = field(default_factory=list)
    counts: RunCounts = field(default_factory=RunCounts)
    tick: Tick = no_progress
    executor: TrialExecutor | None = None
    # The first identity change seen: the one line a refused run's exit names.
    identity_change: str | None = None


@dataclass(slots=True)
class _Attempts:
    calls: list[AttemptReceipt] = field(default_factory=list)
    verifications: list[VerifyReceipt] = field(default_factory=list)
    passed: bool = False
    failure: str | None = None
    failure_detail: str | None = None
    summary: str | None = None
    commands: list[dict[str, Any]] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    evidence_kind: str | None = None
    note: str | None = None
    host_ms: int = 0
    # Calls that reported their cycles, and the meaningful cycles they reported.
    cycles_reported: int = 0
    cycle_count: int = 0

    @property
    def host_cycles(self) -> int | None:
        """The host's meaningful cycles; None unless every call answered and reported them."""
        if self.calls and self.cycles_reported == len(self.calls):
            return self.cycle_count
        return None


def _last_verification(task: TaskSpec, verification: VerifyReceipt) -> dict[str, Any]:
    return {
        "command": task.verify,
        "exitCode": verification.exit_code,
        "outputTail": verification.output_tail,
    }


def _model_switched(result: _Attempts, claimed: str | None) -> bool:
    """Record the model a host call names; a second, different one makes the run
    identity-changed (what answered changed mid-run; the run stays in the record)."""
    if claimed and claimed not in result.models:
        result.models.append(claimed)
    if len(result.models) < 2:
        return False
    result.failure = "identity-changed"
    result.failure_detail = f"the host named model {result.models[-1]!r} after {result.models[0]!r}"
    return True


def _host_attempts(
    ctx: HostSide,
    task: TaskSpec,
    copy: Path,
    guidance: dict[str, Any] | None,
    before: VerifyReceipt,
) -> _Attempts:
    manifest = ctx.manifest
    result = _Attempts()
    # The budget is host-call time only: verify commands between attempts have their own
    # timeout and do not use it up.
    budget_ms = manifest.host.time_budget_s * 1000
    # Attempt 1 is told the verification before any edit, as the protocol has the host run it.
    last = _last_verification(task, before)
    prompt = manifest.render_prompt(task)
    for attempt in range(1, manifest.rework_budget + 2):
        remaining_ms = budget_ms - result.host_ms
        if remaining_ms <= 0:
            result.note = f"time budget of {manifest.host.time_budget_s} s exhausted"
            break
        payload = {
            "protocol": PROTOCOL,
            "role": "host",
            "task": {"id": task.id, "prompt": prompt, "verify": task.verify},
            "guidance": guidance,
            "attempt": attempt,
            "lastVerification": last,
        }
        started = time.monotonic()
        call = call_worker(
            ctx.argv,
            "host",
            payload,
            cwd=copy,
            bounds=WorkerBounds(timeout_ms=min(MAX_HOST_CALL_MS, remaining_ms)),
            attempt=attempt,
            identity=ctx.identity,
            env=ctx.env,
        )
        result.host_ms += int((time.monotonic() - started) * 1000)
        receipt = call.receipt
        if receipt.evidence_kind:
            result.evidence_kind = receipt.evidence_kind
        if _model_switched(result, receipt.model.claimed) and call.ok:
            result.calls.append(AttemptReceipt(receipt=receipt))
            break
        if not call.ok or call.response is None:
            result.calls.append(AttemptReceipt(receipt=receipt))
            result.failure = receipt.failure or "invalid-response"
            result.failure_detail = receipt.failure_detail
            if receipt.identity_changes:
                result.failure_detail = f"{receipt.failure_detail}: {receipt.identity_changes[0]}"
            break
        response = call.response
        result.summary = str(response.get("summary", ""))
        result.commands += [c for c in response.get("commands", []) if isinstance(c, dict)]
        cycles = response.get("cycles")
        if isinstance(cycles, list):
            result.cycles_reported += 1
            result.cycle_count += meaningful_cycles(
                [c for c in cycles if isinstance(c, dict)], task.verify
            )
        verification = run_verify(task.verify, copy, ctx.env, ctx.verify_timeout_s)
        result.calls.append(
            AttemptReceipt(
                receipt=receipt,
                response=HostResponse(
                    summary=result.summary, commands=response.get("commands", []), cycles=cycles
                ),
                verification=verification,
            )
        )
        result.verifications.append(verification)
        if verification.exit_code == 0:
            result.passed = True
            break
        last = _last_verification(task, verification)
    return result


def receipt_name(task: TaskSpec, condition: str) -> str:
    """The file name of one run's receipt in ``runs/``."""
    return f"{task.id}--{condition}.json"


@dataclass(slots=True)
class _Observed:
    """What one run produced, before it is judged."""

    before: VerifyReceipt | None
    after: VerifyReceipt | None
    guidance: Guidance
    served: ServedCheck
    attempts: _Attempts
    changed: list[str]
    notes: list[str]


@dataclass(frozen=True, slots=True)
class Served:
    """One run's guidance as the memory served it, and the check of what it served."""

    task: TaskSpec
    condition: Condition
    guidance: Guidance
    served: ServedCheck


async def serve(ctx: RunContext, task: TaskSpec, condition: Condition) -> Served:
    """Ask the memory for one run's guidance (before its host runs) and check what it served."""
    guidance = await guidance_for(ctx.memory, task, condition)
    served = ServedCheck(checked=True)
    if guidance.served_ids and ctx.memory is not None:
        served = await check_served(
            ctx.memory, ctx.manifest, task, guidance.served_ids, guidance.brief_items
        )
    if guidance.error:
        ctx.counts.memory_failures += 1
    return Served(task, condition, guidance, served)


@dataclass(frozen=True, slots=True)
class HostOutcome:
    """What running the host in a copy produced: the verifications, the host's attempts, the
    files changed, and (for a run on a worker) where it ran."""

    before: VerifyReceipt
    after: VerifyReceipt
    attempts: _Attempts
    changed: list[str]
    worker: dict[str, Any] | None = None


def run_in_copy(
    host: HostSide, snapshot: Snapshot, copy: Path, task: TaskSpec, served: Served
) -> HostOutcome:
    """In a fresh copy of ``snapshot`` at ``copy``: verify, let the host work (unless its memory
    call failed), verify again; the copy is removed afterwards."""
    materialised = snapshot.materialise(copy)
    try:
        before = run_verify(task.verify, materialised, host.env, host.verify_timeout_s)
        attempts = (
            _Attempts()
            if served.guidance.error
            else _host_attempts(host, task, materialised, served.guidance.payload, before)
        )
        if attempts.verifications and not attempts.failure:
            after = attempts.verifications[-1]
        else:
            # The host failed or never ran: verify once more so the record shows the tree's
            # state, but the run stays failed (a failed call counts zero).
            after = run_verify(task.verify, materialised, host.env, host.verify_timeout_s)
        changed = snapshot.changed_files(materialised)
    finally:
        shutil.rmtree(materialised, ignore_errors=True)
    return HostOutcome(before, after, attempts, changed)


def observed(ctx: RunContext, served: Served, outcome: HostOutcome | None) -> _Observed:
    """What one run produced (``outcome`` None: its worker died and nothing came back)."""
    guidance = served.guidance
    notes: list[str] = [guidance.note] if guidance.note else []
    if outcome is None:
        return _Observed(None, None, guidance, served.served, _Attempts(), [], notes)
    attempts = outcome.attempts
    if guidance.error:
        attempts = _Attempts(failure=MEMORY_FAILURE, failure_detail=guidance.error)
        notes.append(guidance.error)
    count_failures(ctx, attempts, notes)
    return _Observed(
        outcome.before, outcome.after, guidance, served.served, attempts, outcome.changed, notes
    )


def count_failures(ctx: RunContext, attempts: _Attempts, notes: list[str]) -> None:
    """Count a failed host call (and a changed identity) and note it; note the attempts'."""
    if attempts.failure and attempts.failure != MEMORY_FAILURE:
        notes.append(f"host call failed ({attempts.failure}): {attempts.failure_detail}")
        ctx.counts.host_failures += 1
        if attempts.failure == "identity-changed":
            ctx.counts.identity_changes += 1
            ctx.identity_change = ctx.identity_change or attempts.failure_detail
    if attempts.note:
        notes.append(attempts.note)


def _flags(
    ctx: RunContext, task: TaskSpec, seen: _Observed
) -> tuple[list[str], bool | None, list[str]]:
    """The run's integrity flags (notes appended), whether the host claimed another model, and
    the verify files it edited."""
    declared_model = ctx.manifest.host.model
    models = seen.attempts.models
    mismatch: bool | None = None
    if declared_model is not None and models:
        mismatch = not all(model_matches(declared_model, claimed) for claimed in models)
    edited = edited_verify_files(task, ctx.snapshot.paths(), seen.changed)
    flags: list[str] = []
    if edited:
        flags.append("verify-files-edited")
        seen.notes.append(f"the host edited what the verify command runs: {', '.join(edited)}")
    if mismatch:
        flags.append("host-model-mismatch")
        ctx.counts.model_mismatches += 1
        seen.notes.append(
            f"the host claims model {', '.join(models)}; the manifest declares {declared_model}"
        )
    if seen.served.own_solutions:
        flags.append("own-solution-served")
        seen.notes.append(
            f"memory served holdout {task.id} its own past solution: "
            f"{', '.join(seen.served.own_solutions)}"
        )
    if seen.served.unchecked:
        flags.append("unchecked-items-served")
        seen.notes.append(f"memory served unchecked item(s): {', '.join(seen.served.unchecked)}")
    if flags:
        ctx.counts.flagged_runs += 1
    return flags, mismatch, edited


def _snapshot(result: VerifyReceipt | None) -> VerifySnapshot | None:
    if result is None:
        return None
    return VerifySnapshot(exit_code=result.exit_code, output_sha256=result.output_sha256)


def _record(
    ctx: RunContext, task: TaskSpec, condition: Condition, seen: _Observed
) -> tuple[ConditionRun, list[str]]:
    flags, mismatch, edited = _flags(ctx, task, seen)
    attempts, guidance = seen.attempts, seen.guidance
    memory_condition = condition != "baseline"
    named = named_keys(guidance.text, relevance_keys(task))
    fixture = ctx.fixture or attempts.evidence_kind == PROTOCOL_FIXTURE
    extra: dict[str, Any] = {}
    if memory_condition:
        # Baseline rows leave retrieval_relevant out (no retrieval happened): null would be
        # refused by other readers of the same runs file (MemCoder's evaluate).
        extra["retrieval_relevant"] = bool(named)
        extra["unchecked_items_served"] = seen.served.unchecked_served
        extra["own_solutions_served"] = list(seen.served.own_solutions)
        if seen.served.tiers is not None:
            extra["served_tiers"] = seen.served.tiers
    failed_calls = [guidance.failed_call] if guidance.failed_call else []
    if condition == "dreaming":
        dream = ctx.dream or DreamOutcome(supported=False)
        # A Dream whose memory calls failed leaves every dreaming run without its treatment.
        failed_calls += dream.failed_calls
        promoted = set(dream.promoted.values())
        extra["dream_candidate_ids"] = list(dream.candidate_ids)
        extra["dream_checks"] = list(dream.checks)
        extra["dream_promoted_ids"] = sorted(promoted)
        extra["dream_items_served"] = sorted(set(guidance.served_ids) & promoted)
    if failed_calls:
        extra["memory_calls_failed"] = list(dict.fromkeys(failed_calls))
    rework = rework_from_cycles(attempts.host_cycles)
    if rework is not None:
        # Left out when unknown, never null: MemCoder's evaluate refuses a null rework_count.
        extra["rework_count"] = rework
    record = ConditionRun(
        task_id=task.id,
        condition=condition,
        passed=attempts.passed and attempts.failure is None,
        guidance_tokens=estimate_tokens(guidance.text),
        notes="; ".join(seen.notes),
        holdout=task.holdout,
        plan_id=guidance.plan_id,
        skill_id=guidance.skill_id,
        skill_ids=list(guidance.skill_ids),
        brief_id=guidance.brief_id,
        verification_before=_snapshot(seen.before),
        verification_after=_snapshot(seen.after),
        changed_files=seen.changed,
        verify_files_edited=edited,
        host_calls=len(attempts.calls),
        reprompt_count=max(0, len(attempts.calls) - 1),
        host_cycles=attempts.host_cycles,
        host_failure=attempts.failure,
        host_model_declared=ctx.manifest.host.model,
        host_models_claimed=list(attempts.models),
        host_model_mismatch=mismatch,
        evidence_kind=PROTOCOL_FIXTURE if fixture else None,
        flags=flags,
        receipt=f"{RUNS_DIR}/{receipt_name(task, condition)}",
        **extra,
    )
    return record, named


def _guidance_receipt(task: TaskSpec, seen: _Observed, named: list[str]) -> GuidanceReceipt:
    guidance = seen.guidance
    return GuidanceReceipt(
        payload=guidance.payload,
        brief_id=guidance.brief_id,
        plan_id=guidance.plan_id,
        skill_id=guidance.skill_id,
        skill_ids=list(guidance.skill_ids),
        served_ids=list(guidance.served_ids),
        served_checked=seen.served.checked,
        served_items=seen.served.items,
        tokens_estimate=estimate_tokens(guidance.text),
        relevance_keys=relevance_keys(task),
        named_keys=named,
        note=guidance.note,
        error=guidance.error,
    )


async def one_run(ctx: RunContext, task: TaskSpec, condition: Condition) -> ConditionRun:
    """Run ``task`` under ``condition``; write its receipt at once; return its record."""
    served = await serve(ctx, task, condition)
    outcome = run_in_copy(ctx, ctx.snapshot, ctx.root / f"{task.id}--{condition}", task, served)
    return write_run(ctx, task, condition, observed(ctx, served, outcome))


def write_run(
    ctx: RunContext,
    task: TaskSpec,
    condition: Condition,
    seen: _Observed,
    worker: dict[str, Any] | None = None,
) -> ConditionRun:
    """Judge what one run produced; write its receipt at once; add and return its record."""
    record, named = _record(ctx, task, condition, seen)
    attempts = seen.attempts
    receipt = RunReceipt(
        evaluation_id=ctx.manifest.id,
        task_id=task.id,
        condition=record.condition,
        holdout=task.holdout,
        finished_at=timestamp(),
        record=record,
        verification_before=seen.before,
        verification_after=seen.after,
        guidance=_guidance_receipt(task, seen, named) if condition != "baseline" else None,
        host_summary=attempts.summary,
        host_commands=attempts.commands,
        host_model_declared=record.host_model_declared,
        host_models_claimed=list(attempts.models),
        host_model_claimed=attempts.models[-1] if attempts.models else None,
        host_time_ms=attempts.host_ms,
        attempts=attempts.calls,
        changed_files=record.changed_files,
        verify_files_edited=record.verify_files_edited,
        flags=record.flags,
        worker=worker,
    )
    # The receipt and its record in ctx.records (what aborted.json counts) go together: an
    # interrupt between them would leave a receipt the abort record does not count.
    with interrupts_deferred():
        ctx.log.unit(RUNS_DIR, receipt_name(task, condition), receipt)
        ctx.records.append(record)
    ctx.tick(f"{task.id} {condition}")
    return record
