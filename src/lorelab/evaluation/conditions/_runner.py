"""The automated four-condition runner: ``lorelab eval conditions run``.

For every task x condition: a fresh copy of the project, the verify command before the host
edits, one host process per attempt through the worker transport (role ``host``), the verify
command after each attempt, rework up to the manifest's budget. Memory is reached as an MCP
client; the evaluation lock is written before any run. Order: baseline, memory_guided and
skill_planned for every task; then one Dream (candidates checked in a sandbox, promoted only
when their checks pass); then dreaming for every task. Receipts go to a fresh 0700 directory,
the runs file among them; nothing is retried and no run is dropped.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import anyio
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from lorelab.errors import IntegrityFailure, LorelabError, PreflightError, UsageError
from lorelab.evaluation.conditions._integrity import (
    ServedCheck,
    check_memory_clean,
    check_seeds,
    check_served,
    edited_verify_files,
    lock_tasks,
)
from lorelab.evaluation.conditions._manifest import (
    MAX_HOST_CALL_MS,
    ConditionsManifest,
    TaskSpec,
    load_manifest,
    project_dir,
)
from lorelab.evaluation.conditions._memory import (
    PROFILES,
    MemoryProfile,
    MemoryToolError,
    MemoryUnderTest,
    lorelab_server_argv,
    open_memory,
)
from lorelab.evaluation.conditions._relevance import estimate_tokens, named_keys, relevance_keys
from lorelab.evaluation.conditions._snapshot import Snapshot, take_snapshot
from lorelab.evaluation.conditions._verify import VerifyResult, command_env, run_verify
from lorelab.io import (
    SCRIPT_HASH_CAP,
    ReceiptDir,
    create_output_dir,
    read_json,
    sha256_file,
    validate_model,
)
from lorelab.mcp import ALLOW_CHECKS_ENV
from lorelab.memory import PromoteRequest, RecordRequest
from lorelab.workers import (
    PROTOCOL,
    VERIFICATION_SCOPE,
    WorkerIdentity,
    adapter_argv,
    bind_identity,
    call_worker,
    is_fixture_agent,
    resolve_agent,
)

RUNS_FILE: Final = "beta2_runs.json"
RUN_FILE: Final = "run.json"
PREFLIGHT_FILE: Final = "preflight.json"
DREAM_FILE: Final = "dream.json"
ABORTED_FILE: Final = "aborted.json"
FIXTURE_KIND: Final = "protocol-fixture"
VERIFY_TIMEOUT_S: Final = 300.0
CHECK_TIMEOUT_S: Final = 120.0
BRIEF_BUDGET_TOKENS: Final = 1200
FIRST_PHASE: Final = ("baseline", "memory_guided", "skill_planned")
# Shipped adapters that take ``--model M`` and pass it to their tool (fixture-host echoes it).
MODEL_ADAPTERS: Final = ("claude", "codex", "gemini", "fixture-host")
BYTE_ACCOUNTING: Final[dict[str, str]] = {
    "inputBytes": (
        "UTF-8 length of the canonical JSON of the host payload before transportBudget is appended"
    ),
    "outputBytes": "UTF-8 length of the canonical JSON of the parsed host response",
}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class _Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class SeedMemory(BaseModel):
    """Experiences to record in a fresh memory before the evaluation, and the Skill to promote.

    ``experiences`` and ``promoteSkill`` are handed to the memory's record and promote tools
    unchanged (for lorelab: ``lore_record`` and ``lore_promote_skill`` arguments). The ids the
    memory assigns must be the ones the manifest declares, or the run stops before any task.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    schema_version: int = Field(description="Seed-file format version (1).")
    experiences: list[dict[str, Any]] = Field(min_length=1)
    promote_skill: dict[str, Any] = Field(description="Arguments of the promote tool.")


@dataclass(frozen=True, slots=True)
class RunOptions:
    """Everything ``lorelab eval conditions run`` was asked to do."""

    manifest_path: Path
    host: str
    output: Path
    memory_home: Path | None = None
    memory_argv: list[str] | None = None
    seed_memory: Path | None = None
    identity: str | None = None
    verify_timeout_s: float = VERIFY_TIMEOUT_S


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What the run wrote and how it ended."""

    output: Path
    runs: int
    passed: int
    host_failures: int
    identity_changes: int
    evidence_kind: str | None
    exit_code: int
    memory_failures: int = 0
    model_mismatches: int = 0
    flagged_runs: int = 0


@dataclass(frozen=True, slots=True)
class Guidance:
    """What a memory condition handed the host, and what it came from."""

    payload: dict[str, Any] | None
    text: str | None
    brief_id: str | None = None
    plan_id: str | None = None
    skill_id: str | None = None
    skill_ids: tuple[str, ...] = ()
    served_ids: tuple[str, ...] = ()
    note: str | None = None
    error: str | None = None
    brief_items: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(slots=True)
class DreamOutcome:
    """The Dream step: candidates, their sandbox checks, what was promoted."""

    supported: bool
    candidate_ids: list[str] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    promoted: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    tool_errors: int = 0


@dataclass(slots=True)
class _Context:
    manifest: ConditionsManifest
    manifest_sha256: str
    snapshot: Snapshot
    root: Path
    argv: list[str]
    identity: WorkerIdentity
    env: dict[str, str]
    receipts: ReceiptDir
    runs_dir: ReceiptDir
    verify_timeout_s: float
    fixture: bool
    memory: MemoryUnderTest | None = None
    dream: DreamOutcome | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    host_failures: int = 0
    identity_changes: int = 0
    memory_failures: int = 0
    model_mismatches: int = 0
    flagged_runs: int = 0


def _manifest_host_argv(manifest: ConditionsManifest) -> list[str] | None:
    declared = manifest.host.argv
    if declared is None:
        return None
    if len(declared) == 1:
        # A one-element argv may name a shipped adapter, exactly as --host does.
        try:
            return resolve_agent(declared[0], flag="host.argv")
        except UsageError:
            return list(declared)
    return list(declared)


def resolve_host(manifest: ConditionsManifest, host: str) -> list[str]:
    """The host argv from ``--host``; it must match the manifest's ``host.argv`` when set."""
    argv = resolve_agent(host, flag="--host")
    declared = _manifest_host_argv(manifest)
    if declared is not None and declared != argv:
        raise UsageError(
            f"--host resolves to {argv} but the manifest declares host.argv {declared}; the "
            "host must be identical for every condition and declared before any run"
        )
    return argv


def with_model(argv: list[str], model: str | None) -> tuple[list[str], str | None]:
    """``argv`` with ``--model MODEL`` appended when it runs a shipped adapter that takes one,
    and how the model was passed (``None``: it could not be, and only the claim is checked)."""
    if model is None:
        return argv, None
    for name in MODEL_ADAPTERS:
        if argv == adapter_argv(name):
            return [*argv, "--model", model], "--model"
    return argv, None


def model_matches(declared: str, claimed: str) -> bool:
    """Whether a host's claimed model is the declared one: equal, or the declared name inside
    the claimed one, case-insensitively (an alias such as ``sonnet`` matches
    ``claude-sonnet-4-5-20250929``)."""
    return declared.casefold() in claimed.casefold()


def resolve_memory(
    manifest: ConditionsManifest, options: RunOptions, project: Path
) -> tuple[MemoryProfile, list[str], Path | None]:
    """The profile, server argv and memory home the run will use (checked before anything
    runs). The default lorelab server's ``--project`` is ``project`` here; the run replaces it
    with its pristine copy of the snapshot once that exists."""
    profile = PROFILES[manifest.memory.profile]
    home = Path(os.path.abspath(options.memory_home)) if options.memory_home else None
    if home is not None and home.exists() and not home.is_dir():
        raise UsageError(f"--memory-home {options.memory_home}: exists and is not a directory")
    if home is not None:
        real_home, real_project = Path(os.path.realpath(home)), Path(os.path.realpath(project))
        if real_home == real_project or real_project in real_home.parents:
            # The snapshot leaves out only directories named .lorelab; any other memory home
            # inside the project would be copied into every condition's project, baseline too.
            raise UsageError(
                f"--memory-home {options.memory_home}: is inside the project {project}; a "
                "baseline host would find the memory in its copy (put the home elsewhere)"
            )
    argv = options.memory_argv or manifest.memory.argv
    if argv:
        return profile, list(argv), home
    if profile.name != "lorelab":
        raise UsageError(
            f"memory profile {profile.name} has no default server; give --memory-argv or "
            "memory.argv in the manifest"
        )
    if home is None:
        raise UsageError(
            "the lorelab memory profile needs --memory-home DIR: the memory home under test"
        )
    return profile, lorelab_server_argv(home, project), home


def _items(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _brief_items(brief: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {
        str(item["id"]): item
        for key in ("experiences", "skills")
        for item in _items(brief.get(key))
        if item.get("id") is not None
    }


def _brief_skill_ids(brief: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(
        str(item["id"]) for item in _items(brief.get("skills")) if item.get("id") is not None
    )


def _guidance_text_of_brief(brief: Mapping[str, Any]) -> tuple[str | None, list[str]]:
    text = brief.get("text")
    served = list(_brief_items(brief))
    if brief.get("empty") is True or not isinstance(text, str) or not text.strip():
        return None, served
    return text, served


def _plan_text(result: Mapping[str, Any]) -> str:
    lines = [f"Plan {result.get('plan_id')} from Skill {result.get('skill_id')}:"]
    steps = result.get("steps")
    for number, step in enumerate(steps if isinstance(steps, list) else [], start=1):
        command = step.get("command") if isinstance(step, Mapping) else str(step)
        expected = step.get("expected_exit_code", 0) if isinstance(step, Mapping) else 0
        lines.append(f"{number}. `{command}` (expect exit {expected})")
    brief = result.get("brief")
    if isinstance(brief, Mapping):
        text, _ = _guidance_text_of_brief(brief)
        if text:
            lines += ["", text]
    return "\n".join(lines)


async def _guidance(ctx: _Context, task: TaskSpec, condition: str) -> Guidance:
    if condition == "baseline":
        return Guidance(None, None)
    memory = ctx.memory
    assert memory is not None
    try:
        if condition == "skill_planned":
            result = await memory.call("start", {"task": task.prompt})
            found = result.get("brief")
            brief: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
            _, served = _guidance_text_of_brief(brief)
            plan_id = result.get("plan_id")
            if not plan_id:
                return Guidance(
                    None,
                    None,
                    brief_id=_opt_str(brief.get("brief_id")),
                    served_ids=tuple(served),
                    note=f"no plan: {result.get('reason') or 'the memory gave none'}",
                    brief_items=_brief_items(brief),
                    skill_ids=_brief_skill_ids(brief),
                )
            skill_id = _opt_str(result.get("skill_id"))
            plan_text = _plan_text(result)
            payload = {
                "kind": "plan",
                "text": plan_text,
                "planId": str(plan_id),
                "skillId": skill_id,
            }
            return Guidance(
                payload,
                plan_text,
                brief_id=_opt_str(brief.get("brief_id")),
                plan_id=str(plan_id),
                skill_id=skill_id,
                skill_ids=tuple(
                    dict.fromkeys([*([skill_id] if skill_id else []), *_brief_skill_ids(brief)])
                ),
                served_ids=tuple(dict.fromkeys([*([skill_id] if skill_id else []), *served])),
                brief_items=_brief_items(brief),
            )
        include_skills = condition == "dreaming"
        brief = await memory.call(
            "prepare",
            {
                "task": task.prompt,
                "include_skills": include_skills,
                "budget_tokens": BRIEF_BUDGET_TOKENS,
            },
        )
    except MemoryToolError as exc:
        return Guidance(None, None, error=str(exc))
    text, served = _guidance_text_of_brief(brief)
    if text is None:
        return Guidance(
            None,
            None,
            brief_id=_opt_str(brief.get("brief_id")),
            served_ids=tuple(served),
            note=f"empty brief: {brief.get('reason') or 'nothing relevant'}",
            brief_items=_brief_items(brief),
        )
    # The Skills a brief served are the Skills this run used (a dreaming run's Dream products
    # among them): attributed so that repeated failures mark them review_required. One served
    # Skill is also the run's skill_id, as a plan's Skill is.
    skills = _brief_skill_ids(brief)
    return Guidance(
        {"kind": "brief", "text": text},
        text,
        brief_id=_opt_str(brief.get("brief_id")),
        skill_id=skills[0] if len(skills) == 1 else None,
        skill_ids=skills,
        served_ids=tuple(served),
        brief_items=_brief_items(brief),
    )


@dataclass(slots=True)
class _Attempts:
    calls: list[dict[str, Any]] = field(default_factory=list)
    verifications: list[VerifyResult] = field(default_factory=list)
    passed: bool = False
    failure: str | None = None
    failure_detail: str | None = None
    summary: str | None = None
    commands: list[dict[str, Any]] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    evidence_kind: str | None = None
    note: str | None = None
    host_ms: int = 0


def _host_attempts(
    ctx: _Context, task: TaskSpec, copy: Path, guidance: dict[str, Any] | None
) -> _Attempts:
    manifest = ctx.manifest
    result = _Attempts()
    # The budget is host-call time only: verify commands between attempts have their own
    # timeout and do not use it up.
    budget_ms = manifest.host.time_budget_s * 1000
    last: dict[str, Any] | None = None
    prompt = manifest.render_prompt(task)
    for attempt in range(1, manifest.rework_budget + 2):
        remaining_ms = budget_ms - result.host_ms
        if remaining_ms <= 0:
            result.note = f"time budget of {manifest.host.time_budget_s} s exhausted"
            break
        payload = {
            "protocol": PROTOCOL,
            "role": "host",
            "task": {"id": task.id, "prompt": prompt},
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
            timeout_ms=min(MAX_HOST_CALL_MS, remaining_ms),
            attempt=attempt,
            identity=ctx.identity,
            env=ctx.env,
        )
        result.host_ms += int((time.monotonic() - started) * 1000)
        receipt = call.receipt
        entry: dict[str, Any] = {"receipt": receipt.model_dump(mode="json", by_alias=True)}
        if receipt.evidence_kind:
            result.evidence_kind = receipt.evidence_kind
        if receipt.model.claimed and receipt.model.claimed not in result.models:
            result.models.append(receipt.model.claimed)
        if not call.ok or call.response is None:
            result.calls.append(entry)
            result.failure = receipt.failure or "invalid-response"
            result.failure_detail = receipt.failure_detail
            break
        response = call.response
        result.summary = str(response.get("summary", ""))
        result.commands += [c for c in response.get("commands", []) if isinstance(c, dict)]
        entry["response"] = {"summary": result.summary, "commands": response.get("commands", [])}
        verification = run_verify(task.verify, copy, ctx.env, ctx.verify_timeout_s)
        entry["verification"] = verification.as_json()
        result.calls.append(entry)
        result.verifications.append(verification)
        if verification.exit_code == 0:
            result.passed = True
            break
        last = {
            "command": task.verify,
            "exitCode": verification.exit_code,
            "outputTail": verification.output_tail,
        }
    return result


def _receipt_name(task: TaskSpec, condition: str) -> str:
    return f"{task.id}--{condition}.json"


async def _one_run(ctx: _Context, task: TaskSpec, condition: str) -> dict[str, Any]:
    # Host calls and verify commands run in this (the main) thread, blocking the event loop
    # while they run: nothing else is in flight then, and an interrupt (Ctrl-C, SIGTERM) raises
    # right where the process is awaited, whose handlers kill its whole group. In a worker
    # thread the process would outlive the interrupt.
    copy = ctx.snapshot.materialise(ctx.root / f"{task.id}--{condition}")
    served = ServedCheck(checked=True)
    try:
        before = run_verify(task.verify, copy, ctx.env, ctx.verify_timeout_s)
        guidance = await _guidance(ctx, task, condition)
        notes: list[str] = []
        if guidance.note:
            notes.append(guidance.note)
        if guidance.served_ids and ctx.memory is not None:
            served = await check_served(
                ctx.memory, ctx.manifest, task, guidance.served_ids, guidance.brief_items
            )
        if guidance.error:
            attempts = _Attempts(failure="memory-error", failure_detail=guidance.error)
            notes.append(guidance.error)
            ctx.memory_failures += 1
        else:
            attempts = _host_attempts(ctx, task, copy, guidance.payload)
        if attempts.failure and attempts.failure != "memory-error":
            notes.append(f"host call failed ({attempts.failure}): {attempts.failure_detail}")
            ctx.host_failures += 1
            if attempts.failure == "identity-changed":
                ctx.identity_changes += 1
        if attempts.note:
            notes.append(attempts.note)
        if attempts.verifications and not attempts.failure:
            after = attempts.verifications[-1]
        else:
            # The host failed or never ran: verify once more so the record shows the tree's
            # state, but the run stays failed (a failed call counts zero).
            after = run_verify(task.verify, copy, ctx.env, ctx.verify_timeout_s)
        changed = ctx.snapshot.changed_files(copy)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    passed = attempts.passed and attempts.failure is None
    host_calls = len(attempts.calls)
    rework = max(0, host_calls - 1)
    keys = relevance_keys(task)
    named = named_keys(guidance.text, keys)
    memory_condition = condition != "baseline"
    evidence = FIXTURE_KIND if (ctx.fixture or attempts.evidence_kind == FIXTURE_KIND) else None
    declared_model = ctx.manifest.host.model
    mismatch: bool | None = None
    if declared_model is not None and attempts.models:
        mismatch = not all(model_matches(declared_model, claimed) for claimed in attempts.models)
    edited = edited_verify_files(task, ctx.snapshot.paths(), changed)
    flags: list[str] = []
    if edited:
        flags.append("verify-files-edited")
        notes.append(f"the host edited what the verify command runs: {', '.join(edited)}")
    if mismatch:
        flags.append("host-model-mismatch")
        ctx.model_mismatches += 1
        notes.append(
            f"the host claims model {', '.join(attempts.models)}; the manifest declares "
            f"{declared_model}"
        )
    if served.own_solutions:
        flags.append("own-solution-served")
        notes.append(
            f"memory served holdout {task.id} its own past solution: "
            f"{', '.join(served.own_solutions)}"
        )
    if served.unchecked:
        flags.append("unchecked-items-served")
        notes.append(f"memory served unchecked item(s): {', '.join(served.unchecked)}")
    if flags:
        ctx.flagged_runs += 1
    record: dict[str, Any] = {
        "task_id": task.id,
        "condition": condition,
        "passed": passed,
        "rework_count": rework,
        "retrieval_relevant": bool(named) if memory_condition else None,
        "guidance_tokens": estimate_tokens(guidance.text),
        "notes": "; ".join(notes),
        "holdout": task.holdout,
        "plan_id": guidance.plan_id,
        "skill_id": guidance.skill_id,
        "skill_ids": list(guidance.skill_ids),
        "brief_id": guidance.brief_id,
        "verification_before": {
            "exit_code": before.exit_code,
            "output_sha256": before.output_sha256,
        },
        "verification_after": {"exit_code": after.exit_code, "output_sha256": after.output_sha256},
        "changed_files": changed,
        "verify_files_edited": edited,
        "host_calls": host_calls,
        "host_failure": attempts.failure,
        "host_model_declared": declared_model,
        "host_models_claimed": list(attempts.models),
        "host_model_mismatch": mismatch,
        "evidence_kind": evidence,
        "flags": flags,
        "receipt": f"runs/{_receipt_name(task, condition)}",
    }
    if memory_condition:
        record["unchecked_items_served"] = served.unchecked_served
        record["own_solutions_served"] = list(served.own_solutions)
    if condition == "dreaming":
        dream = ctx.dream or DreamOutcome(supported=False)
        served_ids = set(guidance.served_ids)
        record.update(
            {
                "dream_candidate_ids": list(dream.candidate_ids),
                "dream_checks": list(dream.checks),
                "dream_promoted_ids": sorted(dream.promoted.values()),
                "dream_items_served": sorted(served_ids & set(dream.promoted.values())),
            }
        )
    receipt = {
        "schemaVersion": 1,
        "evaluationId": ctx.manifest.id,
        "byteAccounting": BYTE_ACCOUNTING,
        "taskId": task.id,
        "condition": condition,
        "holdout": task.holdout,
        "finishedAt": _now(),
        "record": record,
        "verificationBefore": before.as_json(),
        "verificationAfter": after.as_json(),
        "guidance": {
            "payload": guidance.payload,
            "briefId": guidance.brief_id,
            "planId": guidance.plan_id,
            "skillId": guidance.skill_id,
            "skillIds": list(guidance.skill_ids),
            "servedIds": list(guidance.served_ids),
            "servedChecked": served.checked,
            "servedItems": served.items,
            "tokensEstimate": estimate_tokens(guidance.text),
            "relevanceKeys": keys,
            "namedKeys": named,
            "note": guidance.note,
            "error": guidance.error,
        }
        if memory_condition
        else None,
        "hostSummary": attempts.summary,
        "hostCommands": attempts.commands,
        "hostModelDeclared": declared_model,
        "hostModelsClaimed": list(attempts.models),
        "hostModelClaimed": attempts.models[-1] if attempts.models else None,
        "hostTimeMs": attempts.host_ms,
        "attempts": attempts.calls,
        "changedFiles": changed,
        "verifyFilesEdited": edited,
        "flags": flags,
    }
    ctx.runs_dir.write_json(_receipt_name(task, condition), receipt)
    return record


async def _dream(ctx: _Context) -> DreamOutcome:
    memory = ctx.memory
    assert memory is not None
    if not memory.supports("dream"):
        return DreamOutcome(supported=False, errors=["the memory offers no dream operation"])
    outcome = DreamOutcome(supported=True)
    try:
        result = await memory.call("dream", {})
    except MemoryToolError as exc:
        outcome.errors.append(str(exc))
        outcome.tool_errors += 1
        return outcome
    for candidate in _items(result.get("candidates")):
        candidate_id = str(candidate.get("id"))
        outcome.candidate_ids.append(candidate_id)
        check: dict[str, Any] = {"candidateId": candidate_id, "passed": False, "results": []}
        if not memory.supports("check"):
            check["error"] = "the memory offers no check operation; the candidate stays unused"
            outcome.checks.append(check)
            continue
        try:
            run = await memory.call(
                "check", {"candidate_id": candidate_id, "timeout_seconds": CHECK_TIMEOUT_S}
            )
        except MemoryToolError as exc:
            check["error"] = str(exc)
            outcome.tool_errors += 1
            outcome.checks.append(check)
            continue
        check["passed"] = run.get("passed") is True
        check["checkRunId"] = run.get("id")
        check["results"] = [
            {
                "command": item.get("command"),
                "expectedExitCode": item.get("expected_exit_code"),
                "exitCode": item.get("exit_code"),
                "status": item.get("status"),
            }
            for item in _items(run.get("results"))
        ]
        outcome.checks.append(check)
        if check["passed"] and memory.supports("promote_candidate"):
            try:
                skill = await memory.call("promote_candidate", {"candidate_id": candidate_id})
            except MemoryToolError as exc:
                check["error"] = str(exc)
                outcome.tool_errors += 1
                continue
            outcome.promoted[candidate_id] = str(skill.get("id"))
    return outcome


async def _seed(memory: MemoryUnderTest, seed: SeedMemory) -> dict[str, Any]:
    recorded = []
    for index, experience in enumerate(seed.experiences):
        try:
            result = await memory.call("record", experience)
        except MemoryToolError as exc:
            raise PreflightError(
                f"seeding the memory failed at experiences[{index}]: {exc}"
            ) from None
        recorded.append({"id": result.get("id"), "verified": result.get("verified")})
    try:
        skill = await memory.call("promote_skill", seed.promote_skill)
    except MemoryToolError as exc:
        raise PreflightError(f"seeding the memory failed at promoteSkill: {exc}") from None
    return {"experiences": recorded, "skill": {"id": skill.get("id"), "name": skill.get("name")}}


def _runs_document(ctx: _Context) -> dict[str, Any]:
    return {
        "runs": ctx.records,
        "evaluation_id": ctx.manifest.id,
        "manifest_sha256": ctx.manifest_sha256,
        "evidence_kind": FIXTURE_KIND if ctx.fixture else None,
    }


def _memory_env(profile: MemoryProfile) -> dict[str, str]:
    # Running the evaluation is the operator's consent to its Dream step: lorelab's server
    # serves lore_check_candidate only when told so (agents cannot reach this environment).
    return {ALLOW_CHECKS_ENV: "1"} if profile.name == "lorelab" else {}


async def _execute(
    ctx: _Context,
    profile: MemoryProfile,
    memory_argv: list[str],
    home: Path | None,
    seed: SeedMemory | None,
    preflight: dict[str, Any],
    clean: Path,
) -> None:
    async with open_memory(
        profile,
        memory_argv,
        home=home,
        cwd=clean,
        stderr_path=ctx.root / "memory-server.stderr",
        env=_memory_env(profile),
    ) as memory:
        ctx.memory = memory
        preflight["memory"]["tools"] = sorted(memory.listed)
        if seed is not None:
            preflight["seeding"] = await _seed(memory, seed)
        try:
            preflight["seedsInMemory"] = await check_seeds(memory, ctx.manifest)
            preflight["holdoutsInMemory"] = await check_memory_clean(memory, ctx.manifest)
            # Said before the lock is written: a run stopped while it is being written still
            # tells finalize there may be a lock to clear.
            preflight["lockRequested"] = True
            lock = await memory.set_lock(ctx.manifest.id, lock_tasks(ctx.manifest))
        except MemoryToolError as exc:
            raise PreflightError(str(exc)) from None
        preflight["lock"] = lock.model_dump(mode="json", by_alias=True)
        ctx.receipts.write_json(PREFLIGHT_FILE, preflight)
        for task in ctx.manifest.tasks:
            for condition in FIRST_PHASE:
                ctx.records.append(await _one_run(ctx, task, condition))
        ctx.dream = await _dream(ctx)
        ctx.memory_failures += ctx.dream.tool_errors
        ctx.receipts.write_json(
            DREAM_FILE,
            {
                "supported": ctx.dream.supported,
                "candidateIds": ctx.dream.candidate_ids,
                "checks": ctx.dream.checks,
                "promoted": ctx.dream.promoted,
                "errors": ctx.dream.errors,
                "toolErrors": ctx.dream.tool_errors,
            },
        )
        for task in ctx.manifest.tasks:
            ctx.records.append(await _one_run(ctx, task, "dreaming"))


def _interrupt(_signal_number: int, _frame: object) -> None:
    raise KeyboardInterrupt


def run_async(function: Callable[..., Awaitable[None]], *args: Any) -> None:
    """Run ``function`` in an event loop; an interrupt, a lorelab error or an OS error inside a
    task group is raised as itself, not wrapped in an exception group.

    Ctrl-C raises ``KeyboardInterrupt`` wherever the main thread is (asyncio's own handler
    would only cancel the main task and wait for a blocking host call to end)."""
    handler = None
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ):
        handler = signal.signal(signal.SIGINT, _interrupt)
    try:
        anyio.run(function, *args)
    except BaseExceptionGroup as group:
        leaf = _first_leaf(group)
        if leaf is not None:
            raise leaf from None
        raise
    finally:
        if handler is not None:
            signal.signal(signal.SIGINT, handler)


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    leaves: list[BaseException] = []

    def walk(found: BaseExceptionGroup[BaseException]) -> None:
        for exc in found.exceptions:
            if isinstance(exc, BaseExceptionGroup):
                walk(exc)
            else:
                leaves.append(exc)

    walk(group)
    # An interrupt wins over whatever it caused (a broken session, a cancelled call).
    for leaf in leaves:
        if isinstance(leaf, KeyboardInterrupt):
            return leaf
    for leaf in leaves:
        if isinstance(leaf, LorelabError | OSError):
            return leaf
    return None


def _read_seed(path: Path, profile: MemoryProfile) -> SeedMemory:
    source = os.fspath(path)
    seed = validate_model(SeedMemory, read_json(path, "manifest"), source)
    if profile.name == "lorelab":
        # The lorelab profile's tools take these models: a malformed entry is bad input,
        # named here before anything starts, not a memory failure halfway through seeding.
        for index, experience in enumerate(seed.experiences):
            validate_model(RecordRequest, experience, f"{source}: experiences[{index}]")
        validate_model(PromoteRequest, seed.promote_skill, f"{source}: promoteSkill")
    return seed


def _write_aborted(ctx: _Context, preflight: dict[str, Any], exc: BaseException) -> None:
    if isinstance(exc, KeyboardInterrupt):
        outcome = "interrupted"
    elif isinstance(exc, LorelabError | OSError):
        outcome = "failed"
    else:
        outcome = "crashed"
    error = str(exc) or type(exc).__name__
    receipts = ctx.receipts
    if not receipts.contains(PREFLIGHT_FILE):
        receipts.write_json(PREFLIGHT_FILE, preflight)
    receipts.write_json(
        ABORTED_FILE,
        {
            "schemaVersion": 1,
            "evaluationId": ctx.manifest.id,
            "abortedAt": _now(),
            "outcome": outcome,
            "error": error if outcome != "interrupted" else f"interrupted ({error})",
            "runsCompleted": len(ctx.records),
            "runs": ctx.records,
            "lockActive": "lock" in preflight or bool(preflight.get("lockRequested")),
            "recovery": "lorelab eval conditions finalize --output DIR clears the lock",
            "statement": "the run did not complete; these runs are not a runs file",
        },
    )


def run_conditions(options: RunOptions) -> RunSummary:
    """Run every task x condition of the manifest; write receipts and the runs file.

    Refusals before anything runs: bad manifest, host or memory options (exit 2); a host
    that cannot be bound or a memory that cannot be reached (exit 3). Exit code in the
    summary: 0 when every run completed (whatever its outcome), 1 when a run could not
    complete as declared (a host call or a memory operation failed, or the host claimed
    another model; such runs stay in the record as failed or flagged), 3 when a bound
    identity changed.
    """
    manifest = load_manifest(options.manifest_path)
    manifest_sha = sha256_file(options.manifest_path, cap=SCRIPT_HASH_CAP)
    source = project_dir(manifest, options.manifest_path)
    named_argv = resolve_host(manifest, options.host)
    argv, model_passed = with_model(named_argv, manifest.host.model)
    profile, memory_argv, home = resolve_memory(manifest, options, source)
    seed = _read_seed(options.seed_memory, profile) if options.seed_memory else None
    snapshot = take_snapshot(source)
    env = command_env()
    root = Path(tempfile.mkdtemp(prefix="lorelab-conditions-"))
    try:
        preflight_copy = snapshot.materialise(root / "preflight")
        # The memory server gets a pristine copy as its project, never the source: Dream checks
        # copy that project, and must see exactly what every condition's host sees.
        clean = snapshot.materialise(root / "memory-project")
        if not (options.memory_argv or manifest.memory.argv) and home is not None:
            memory_argv = lorelab_server_argv(home, clean)
        identity = bind_identity(
            argv, cwd=preflight_copy, operator_identity=options.identity, env=env
        )
        requested = identity.model.requested
        if manifest.host.model is not None and requested not in (None, manifest.host.model):
            raise UsageError(
                f"the host argv asks for model {requested!r} but the manifest declares "
                f"host.model {manifest.host.model!r}"
            )
        receipts = create_output_dir(options.output)
        fixture = is_fixture_agent(argv)
        receipts.write_json(
            "manifest.json",
            {"sha256": manifest_sha, "manifest": manifest.model_dump(mode="json", by_alias=True)},
        )
        preflight: dict[str, Any] = {
            "schemaVersion": 1,
            "evaluationId": manifest.id,
            "startedAt": _now(),
            "manifestSha256": manifest_sha,
            "byteAccounting": BYTE_ACCOUNTING,
            "project": {
                "source": str(source),
                "sha256": snapshot.sha256,
                "files": len(snapshot.files),
            },
            "host": {
                "argv": argv,
                "declared": manifest.host.model_dump(mode="json", by_alias=True),
                "identity": identity.model_dump(mode="json", by_alias=True),
                "evidenceKind": FIXTURE_KIND if fixture else None,
                "model": {
                    "declared": manifest.host.model,
                    "requested": requested,
                    "passedAs": model_passed,
                    "rule": (
                        "each response's claimed model is recorded per run; a claim that does "
                        "not contain the declared model (case-insensitively) is flagged "
                        "host-model-mismatch; an unreported claim stays null"
                    ),
                },
                "timeBudget": {
                    "timeBudgetS": manifest.host.time_budget_s,
                    "maxAttempts": manifest.rework_budget + 1,
                    "maxPerCallS": MAX_HOST_CALL_MS // 1000,
                    "counts": "host-call time only; verify commands have their own timeout",
                },
                "settingsAndPermissions": "recorded as declared; lorelab cannot apply them",
            },
            "verificationScope": VERIFICATION_SCOPE,
            "verifyTimeoutS": options.verify_timeout_s,
            "environment": {
                "path": "the directory of lorelab's Python first, then the inherited PATH",
                "removed": ["LORELAB_HOME"],
                "set": {"PYTHONDONTWRITEBYTECODE": "1"},
            },
        }
        preflight["memory"] = {
            "profile": profile.name,
            "argv": memory_argv,
            "argvKind": "custom" if (options.memory_argv or manifest.memory.argv) else "default",
            "home": str(home) if home else None,
            "tools": None,
            "candidateChecks": (
                f"allowed by running the evaluation ({ALLOW_CHECKS_ENV}=1 in the server's "
                "environment)"
                if profile.name == "lorelab"
                else None
            ),
            "projectForChecks": (
                "a pristine copy of the project snapshot (the default lorelab server's "
                "--project), removed when the run ends"
            ),
        }
        ctx = _Context(
            manifest=manifest,
            manifest_sha256=manifest_sha,
            snapshot=snapshot,
            root=root,
            argv=argv,
            identity=identity,
            env=env,
            receipts=receipts,
            runs_dir=receipts.subdir("runs"),
            verify_timeout_s=options.verify_timeout_s,
            fixture=fixture,
        )
        try:
            run_async(_execute, ctx, profile, memory_argv, home, seed, preflight, clean)
        except BaseException as exc:
            # Whatever stops the run (an error, Ctrl-C, SIGTERM, a bug) leaves aborted.json, so
            # finalize can clear the lock; the temporary copies go in the finally below.
            _write_aborted(ctx, preflight, exc)
            if isinstance(exc, LorelabError) or not isinstance(exc, OSError):
                raise
            raise IntegrityFailure(f"the run stopped: {exc}") from None
        receipts.write_json(RUNS_FILE, _runs_document(ctx))
        incomplete = ctx.host_failures + ctx.memory_failures + ctx.model_mismatches
        exit_code = 3 if ctx.identity_changes else 1 if incomplete else 0
        summary = RunSummary(
            output=receipts.path,
            runs=len(ctx.records),
            passed=sum(1 for record in ctx.records if record["passed"]),
            host_failures=ctx.host_failures,
            identity_changes=ctx.identity_changes,
            evidence_kind=FIXTURE_KIND if fixture else None,
            exit_code=exit_code,
            memory_failures=ctx.memory_failures,
            model_mismatches=ctx.model_mismatches,
            flagged_runs=ctx.flagged_runs,
        )
        receipts.write_json(
            RUN_FILE,
            {
                "schemaVersion": 1,
                "status": "complete",
                "evaluationId": manifest.id,
                "finishedAt": _now(),
                "runs": summary.runs,
                "passed": summary.passed,
                "hostFailures": summary.host_failures,
                "memoryFailures": summary.memory_failures,
                "modelMismatches": summary.model_mismatches,
                "flaggedRuns": summary.flagged_runs,
                "identityChanges": summary.identity_changes,
                "evidenceKind": summary.evidence_kind,
                "exitCode": exit_code,
                "byteAccounting": BYTE_ACCOUNTING,
                "runsFile": RUNS_FILE,
                "lock": "active until `lorelab eval conditions finalize` clears it",
                "finalized": False,
            },
        )
        return summary
    finally:
        shutil.rmtree(root, ignore_errors=True)
