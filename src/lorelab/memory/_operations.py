"""The memory's operations table: one entry per operation, from which ``lorelab mcp`` serves its
tools and ``lorelab memory`` builds its commands.

An entry names the operation, its request and result models, whether it only reads, what it
does (the MCP tool's description) and its handler. Adding an operation here adds it to both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Generic, TypeVar

from pydantic import BaseModel

from lorelab.memory._context import (
    CheckpointRequest,
    CheckpointResult,
    RecoverRequest,
    RecoverResult,
    checkpoint,
    recover_context,
)
from lorelab.memory._export import export_skills
from lorelab.memory._models import (
    Brief,
    CheckRequest,
    CheckRun,
    DreamRequest,
    DreamResult,
    EvaluationLock,
    ListRequest,
    ListResult,
    OutcomeRequest,
    OutcomeResult,
    PrepareRequest,
    PromoteCandidateRequest,
    PromoteRequest,
    RecordRequest,
    RecordResult,
    ShowRequest,
    ShowResult,
    Skill,
    SkillHealthRequest,
    SkillHealthResult,
    StartRequest,
    StartResult,
)
from lorelab.memory._protocol import MemoryStore
from lorelab.memory._requests import (
    CandidateCheckRequest,
    LockClearRequest,
    LockRequest,
    LocksRequest,
    LocksResult,
    SkillsExportRequest,
    SkillsExportResult,
    SkillsRequest,
    SnapshotRequest,
    SnapshotResult,
)
from lorelab.memory._retrieval_models import (
    ExplainRequest,
    ExplainResult,
    FeedbackRequest,
    FeedbackResult,
    ReindexRequest,
    ReindexResult,
    ValidityRequest,
    ValidityResult,
)

ALLOW_CHECKS_ENV: Final = "LORELAB_MCP_ALLOW_CHECKS"
"""The operator's consent to candidate checks over MCP, set where the server is registered (the
SDK starts stdio servers with a minimal environment, so an agent's own environment does not
reach it)."""

Req = TypeVar("Req", bound=BaseModel)
Res = TypeVar("Res", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Target:
    """Where an operation acts: the store, the memory home and the project directory.

    Each is a callable, so a command opens only what its operation uses (and creates a
    missing store or home only where its operation may).
    """

    store: Callable[[], MemoryStore]
    home: Callable[[], Path]
    project_dir: Callable[[], Path]


@dataclass(frozen=True, slots=True)
class Operation(Generic[Req, Res]):
    """One memory operation, as both the MCP server and the CLI offer it."""

    name: str
    """The command under ``lorelab memory`` (words separated by spaces for subgroups)."""
    tool: str | None
    """The MCP tool's name; ``None`` for an operator's operation the server does not offer."""
    request: type[Req]
    result: type[Res]
    read_only: bool
    description: str
    handler: Callable[[Target, Req], Res]
    creates: bool = False
    """Whether a missing store (or memory home) is created: the first record or brief is."""
    needs_consent: bool = False
    """Served over MCP only with the operator's consent (it runs recorded commands)."""


def _check(target: Target, request: CheckRequest) -> CheckRun:
    return target.store().check_candidate(
        CandidateCheckRequest(
            candidate_id=request.candidate_id,
            project_dir=str(target.project_dir()),
            timeout_seconds=request.timeout_seconds,
        )
    )


def _export(target: Target, request: SkillsExportRequest) -> SkillsExportResult:
    skills = target.store().skills(
        SkillsRequest(include_review_required=request.include_review_required)
    )
    written = export_skills(skills.skills, request.directory)
    return SkillsExportResult(paths=[str(path) for path in written])


OPERATIONS: Final[tuple[Operation[Any, Any], ...]] = (
    Operation(
        "record",
        "lore_record",
        RecordRequest,
        RecordResult,
        False,
        "Record one experience after verifying it: task, summary, outcome, verification "
        "{command, exit_code}, commands run. Returns {id, verified, redactions}. Refused for "
        "a holdout task of an active evaluation lock.",
        lambda target, request: target.store().record(request),
        creates=True,
    ),
    Operation(
        "prepare",
        "lore_prepare",
        PrepareRequest,
        Brief,
        False,
        "Brief a new task with relevant verified memory: experiences, commands to avoid, "
        "Skills, within budget_tokens. empty: true when nothing clears the relevance floor.",
        lambda target, request: target.store().prepare(request),
        creates=True,
    ),
    Operation(
        "promote",
        "lore_promote_skill",
        PromoteRequest,
        Skill,
        False,
        "Promote two or more verified, QA-approved experiences whose successful command "
        "sequences share at least two commands into a Skill.",
        lambda target, request: target.store().promote_skill(request),
    ),
    Operation(
        "start",
        "lore_start",
        StartRequest,
        StartResult,
        False,
        "Plan a task with the best healthy Skill: {plan_id, skill_id, steps, brief}; "
        "plan_id null and the reason when no Skill clears the floor.",
        lambda target, request: target.store().start(request),
        creates=True,
    ),
    Operation(
        "outcome",
        "lore_report_outcome",
        OutcomeRequest,
        OutcomeResult,
        False,
        "Report whether a plan worked (once per plan); updates the Skill's health.",
        lambda target, request: target.store().report_outcome(request),
    ),
    Operation(
        "health",
        "lore_skill_health",
        SkillHealthRequest,
        SkillHealthResult,
        True,
        "Health of one Skill (skill_id) or of every Skill.",
        lambda target, request: target.store().skill_health(request),
    ),
    Operation(
        "dream",
        "lore_dream",
        DreamRequest,
        DreamResult,
        False,
        "Mine candidate Skills from command sequences shared by two or more verified "
        "experiences. Candidates are untrusted until their checks pass (run by the "
        "operator: lore_check_candidate exists only when the operator allowed it).",
        lambda target, request: target.store().dream(request),
    ),
    Operation(
        "check",
        "lore_check_candidate",
        CheckRequest,
        CheckRun,
        False,
        "Run a candidate's checks (commands and expected exit codes) in a disposable "
        "copy of the project and record the results. Served because the operator "
        f"allowed it ({ALLOW_CHECKS_ENV}=1).",
        _check,
        needs_consent=True,
    ),
    Operation(
        "promote-candidate",
        "lore_promote_candidate",
        PromoteCandidateRequest,
        Skill,
        False,
        "Promote a candidate whose checks passed into a trusted Skill.",
        lambda target, request: target.store().promote_candidate(request),
    ),
    Operation(
        "list",
        "lore_list",
        ListRequest,
        ListResult,
        True,
        "The most recent items of one kind (experience, skill, plan, brief, candidate, "
        "lock, lesson), newest first.",
        lambda target, request: target.store().list_items(request),
    ),
    Operation(
        "show",
        "lore_show",
        ShowRequest,
        ShowResult,
        True,
        "One item by id (exp-N, skill-N, plan-N, brief-N, cand-N) with its provenance.",
        lambda target, request: target.store().show(request),
    ),
    Operation(
        "explain",
        "lore_explain",
        ExplainRequest,
        ExplainResult,
        True,
        "Explain retrieval for a task without recording a brief: every candidate experience "
        "with its lexical, semantic and fused scores, confidence, validity, feedback, and "
        "the reason it is served or withheld.",
        lambda target, request: target.store().explain(request),
    ),
    Operation(
        "validity",
        "lore_update_validity",
        ValidityRequest,
        ValidityResult,
        False,
        "Mark an experience or Skill trusted, superseded, contradicted or deprecated (with a "
        "reason). Non-trusted items are withheld from briefs and plans, never deleted.",
        lambda target, request: target.store().update_validity(request),
    ),
    Operation(
        "feedback",
        "lore_feedback",
        FeedbackRequest,
        FeedbackResult,
        False,
        "Rate an experience a brief served: helpful, ignored, misleading or harmful. Ratings "
        "shift later ranking; one bad rating never buries an item, repeated harm withholds it.",
        lambda target, request: target.store().feedback(request),
    ),
    Operation(
        "reindex",
        None,
        ReindexRequest,
        ReindexResult,
        False,
        "Compute the embedding vector of every experience and lesson that has none (a store "
        "written before vectors existed).",
        lambda target, request: target.store().reindex(request),
    ),
    Operation(
        "checkpoint",
        "lore_checkpoint",
        CheckpointRequest,
        CheckpointResult,
        False,
        "Write durable context at a compaction, restart or child-handoff boundary.",
        lambda target, request: checkpoint(target.home(), request),
        creates=True,
    ),
    Operation(
        "recover",
        "lore_recover",
        RecoverRequest,
        RecoverResult,
        True,
        "The newest checkpoint of a scope and the handoff brief to resume from.",
        lambda target, request: recover_context(target.home(), request),
    ),
    Operation(
        "skills export",
        None,
        SkillsExportRequest,
        SkillsExportResult,
        False,
        "Write each Skill as DIRECTORY/<name>/SKILL.md (never overwriting a folder).",
        _export,
    ),
    Operation(
        "lock set",
        None,
        LockRequest,
        EvaluationLock,
        False,
        "Lock an evaluation's holdout tasks: record refuses them until the lock is cleared.",
        lambda target, request: target.store().set_evaluation_lock(request),
        creates=True,
    ),
    Operation(
        "lock clear",
        None,
        LockClearRequest,
        EvaluationLock,
        False,
        "Clear an evaluation's active lock (it stays in the record as cleared).",
        lambda target, request: target.store().clear_evaluation_lock(request),
    ),
    Operation(
        "lock show",
        None,
        LocksRequest,
        LocksResult,
        True,
        "Every evaluation lock, active and cleared.",
        lambda target, request: target.store().evaluation_locks(request),
    ),
    Operation(
        "snapshot",
        None,
        SnapshotRequest,
        SnapshotResult,
        True,
        "Write a consistent copy of the store to a new file, with its SHA-256.",
        lambda target, request: target.store().snapshot(request),
    ),
)
"""Every memory operation, in the order the MCP server lists its tools."""


def operation(name: str) -> Operation[Any, Any]:
    """The operation called ``name`` (a KeyError for an unknown one)."""
    for entry in OPERATIONS:
        if entry.name == name:
            return entry
    raise KeyError(name)
