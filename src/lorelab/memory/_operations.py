"""The memory's operations table: one entry per operation, from which ``lorelab mcp`` serves its
tools and ``lorelab memory`` builds its commands.

An entry names the operation, its request and result models, whether it only reads, what it
does (the MCP tool's description) and its handler. Adding an operation here adds it to both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Generic, TypeVar, get_type_hints

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
from lorelab.memory._models import CheckRequest, CheckRun
from lorelab.memory._protocol import MemoryStore
from lorelab.memory._requests import (
    CandidateCheckRequest,
    SkillsExportRequest,
    SkillsExportResult,
    SkillsRequest,
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


def _on_store(
    name: str,
    tool: str | None,
    method: Callable[[MemoryStore, Req], Res],
    read_only: bool,
    description: str,
    *,
    creates: bool = False,
) -> Operation[Req, Res]:
    """The operation that calls the store's ``method``: its request and result types are the
    ones :class:`MemoryStore` declares for it."""
    hints = get_type_hints(method)

    def handler(target: Target, request: Req) -> Res:
        bound: Callable[[Req], Res] = getattr(target.store(), method.__name__)
        return bound(request)

    return Operation(
        name, tool, hints["request"], hints["return"], read_only, description, handler, creates
    )


OPERATIONS: Final[tuple[Operation[Any, Any], ...]] = (
    _on_store(
        "record",
        "lore_record",
        MemoryStore.record,
        False,
        "Record one experience after verifying it: task, summary, outcome, verification "
        "{command, exit_code}, commands run. Returns {id, verified, redactions}. Refused for "
        "a holdout task of an active evaluation lock.",
        creates=True,
    ),
    _on_store(
        "prepare",
        "lore_prepare",
        MemoryStore.prepare,
        False,
        "Brief a new task with relevant verified memory: experiences, commands to avoid, "
        "Skills, within budget_tokens. empty: true when nothing clears the relevance floor.",
        creates=True,
    ),
    _on_store(
        "promote",
        "lore_promote_skill",
        MemoryStore.promote_skill,
        False,
        "Promote two or more verified, QA-approved experiences whose successful command "
        "sequences share at least two commands into a Skill.",
    ),
    _on_store(
        "start",
        "lore_start",
        MemoryStore.start,
        False,
        "Plan a task with the best healthy Skill: {plan_id, skill_id, steps, brief}; "
        "plan_id null and the reason when no Skill clears the floor.",
        creates=True,
    ),
    _on_store(
        "outcome",
        "lore_report_outcome",
        MemoryStore.report_outcome,
        False,
        "Report whether a plan worked (once per plan); updates the Skill's health.",
    ),
    _on_store(
        "health",
        "lore_skill_health",
        MemoryStore.skill_health,
        True,
        "Health of one Skill (skill_id) or of every Skill.",
    ),
    _on_store(
        "dream",
        "lore_dream",
        MemoryStore.dream,
        False,
        "Mine candidate Skills from command sequences shared by two or more verified "
        "experiences. Candidates are untrusted until their checks pass (run by the "
        "operator: lore_check_candidate exists only when the operator allowed it).",
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
    _on_store(
        "promote-candidate",
        "lore_promote_candidate",
        MemoryStore.promote_candidate,
        False,
        "Promote a candidate whose checks passed into a trusted Skill.",
    ),
    _on_store(
        "list",
        "lore_list",
        MemoryStore.list_items,
        True,
        "The most recent items of one kind (experience, skill, plan, brief, candidate, "
        "lock, lesson), newest first.",
    ),
    _on_store(
        "show",
        "lore_show",
        MemoryStore.show,
        True,
        "One item by id (exp-N, skill-N, plan-N, brief-N, cand-N) with its provenance.",
    ),
    _on_store(
        "explain",
        "lore_explain",
        MemoryStore.explain,
        True,
        "Explain retrieval for a task without recording a brief: every candidate experience "
        "with its lexical, semantic and fused scores, confidence, validity, feedback, and "
        "the reason it is served or withheld.",
    ),
    _on_store(
        "validity",
        "lore_update_validity",
        MemoryStore.update_validity,
        False,
        "Mark an experience or Skill trusted, superseded, contradicted or deprecated (with a "
        "reason). Non-trusted items are withheld from briefs and plans, never deleted.",
    ),
    _on_store(
        "feedback",
        "lore_feedback",
        MemoryStore.feedback,
        False,
        "Rate an experience a brief served: helpful, ignored, misleading or harmful. Ratings "
        "shift later ranking; one bad rating never buries an item, repeated harm withholds it.",
    ),
    _on_store(
        "reindex",
        None,
        MemoryStore.reindex,
        False,
        "Compute the embedding vector of every experience and lesson that has none (a store "
        "written before vectors existed).",
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
    _on_store(
        "lock set",
        None,
        MemoryStore.set_evaluation_lock,
        False,
        "Lock an evaluation's holdout tasks: record refuses them until the lock is cleared.",
        creates=True,
    ),
    _on_store(
        "lock clear",
        None,
        MemoryStore.clear_evaluation_lock,
        False,
        "Clear an evaluation's active lock (it stays in the record as cleared).",
    ),
    _on_store(
        "lock show",
        None,
        MemoryStore.evaluation_locks,
        True,
        "Every evaluation lock, active and cleared.",
    ),
    _on_store(
        "snapshot",
        None,
        MemoryStore.snapshot,
        True,
        "Write a consistent copy of the store to a new file, with its SHA-256.",
    ),
)
"""Every memory operation, in the order the MCP server lists its tools."""


def operation(name: str) -> Operation[Any, Any]:
    """The operation called ``name`` (a KeyError for an unknown one)."""
    for entry in OPERATIONS:
        if entry.name == name:
            return entry
    raise KeyError(name)
