"""The worker-based Dream: a ``dreamer`` worker proposes candidate Skills from verified work.

The worker sees only verified experiences (as stored, so already redacted), is called once
through the bounded transport with a bound identity, and is never retried. Each proposal is then
judged by the store on its own; the sound ones become unchecked candidates (origin ``worker``)
that, like mined ones, reach nothing until ``check`` passes and ``promote-candidate`` promotes
them. A failed call stores nothing and comes back with its receipt.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic import Field

from lorelab._model import OutputModel, timestamp
from lorelab.errors import UsageError
from lorelab.io import MIB, json_bytes
from lorelab.memory._item_models import Experience
from lorelab.memory._models import (
    Candidate,
    CandidateProposal,
    ClaimedModel,
    ProposalOutcome,
    SkillStep,
    WorkerDreamRequest,
    WorkerProvenance,
)
from lorelab.memory._protocol import MemoryStore
from lorelab.memory._requests import CandidateRequest, ProposalsRequest, VerifiedExperiencesRequest
from lorelab.workers import PROTOCOL, RoleReceipt, WorkerBounds, bind_identity, call_worker
from lorelab.workers.roles import DreamerResponse

ROLE: Final = "dreamer"
SCHEMA_VERSION: Final = "lorelab.worker-dream/1"
# Half the shipped fixture's payload bound, and far beyond what an agent's context holds:
# a larger payload is refused (lower --limit) rather than cut without telling anyone.
MAX_PAYLOAD_BYTES: Final = 4 * MIB


class WorkerDreamResult(OutputModel):
    """What a worker-based Dream did: the call's receipt, and each proposal's fate."""

    schema_version: str = Field(default=SCHEMA_VERSION)
    worker: list[str] = Field(description="The worker's argv as declared.")
    cwd: str | None = Field(
        description="The project directory the worker ran in; null for a private temporary one."
    )
    considered_experiences: int = Field(description="Verified experiences given to the worker.")
    offered_experience_ids: list[str] = Field(description="Their ids, newest first.")
    receipt: RoleReceipt | None = Field(
        description="The role receipt of the one call (camelCase); null when no call was made."
    )
    ok: bool = Field(
        description="Whether nothing failed: the call succeeded, or no call was needed; nothing "
        "is stored when it failed."
    )
    skipped: str | None = Field(
        default=None,
        description="Why the worker was not called (too few verified experiences); null when "
        "it was.",
    )
    proposals: list[ProposalOutcome] = Field(
        description="Each proposal in the response's order, stored or refused with its reason."
    )
    candidates: list[Candidate] = Field(description="The candidates stored, all unchecked.")
    stored: int
    refused: int


def dreamer_experience(experience: Experience) -> dict[str, Any]:
    """One verified experience as the ``dreamer`` payload carries it (camelCase, as stored)."""
    verification = experience.provenance.verification
    return {
        "id": experience.id,
        "task": experience.task,
        "summary": experience.summary,
        "commands": [
            {"command": command.command, "exitCode": command.exit_code}
            for command in experience.commands
        ],
        "verification": {"command": verification.command, "exitCode": verification.exit_code},
    }


def dreamer_payload(experiences: Sequence[Experience], max_candidates: int) -> dict[str, Any]:
    """The ``dreamer`` role payload for ``experiences``; refuses any that is not verified."""
    unverified = [item.id for item in experiences if item.trust != "verified"]
    if unverified:
        # The store only hands out verified ones; this keeps a future store honest too.
        raise UsageError(f"experience {unverified[0]} is not verified; a dreamer never sees it")
    return {
        "protocol": PROTOCOL,
        "role": ROLE,
        "experiences": [dreamer_experience(item) for item in experiences],
        "limits": {"maxCandidates": max_candidates},
    }


def _proposals(response: Mapping[str, Any]) -> list[CandidateProposal]:
    # The transport validated the response for this role; this only reads it.
    parsed = DreamerResponse.model_validate(response)
    return [
        CandidateProposal(
            name=item.name,
            description=item.description,
            steps=list(item.steps),
            checks=[
                SkillStep(command=check.command, expected_exit_code=check.expected_exit_code)
                for check in item.checks
            ],
            source_experience_ids=list(item.source_experience_ids),
        )
        for item in parsed.candidates
    ]


def dream_with_worker(
    store: MemoryStore,
    request: WorkerDreamRequest,
    argv: Sequence[str],
    *,
    cwd: Path | None,
    bounds: WorkerBounds,
    operator_identity: str | None = None,
    env: Mapping[str, str] | None = None,
) -> WorkerDreamResult:
    """Ask the worker ``argv`` (role ``dreamer``) for candidates; store the sound proposals.

    The worker runs in ``cwd`` (the project directory), or in a private temporary directory
    removed afterwards when ``cwd`` is ``None``. Raises before anything runs for bad bounds, a
    missing ``cwd``, a payload over :data:`MAX_PAYLOAD_BYTES` or an argv that cannot be bound;
    everything after the launch is in the result. With fewer than two verified experiences no
    proposal could be sound, so the worker is not called: the result says why (``skipped``),
    as mining says "0 new candidates" on the same store.
    """
    bounds.check()
    cwd = Path(os.path.abspath(cwd)) if cwd is not None else None
    if cwd is not None and not cwd.is_dir():
        raise UsageError(f"project directory {cwd}: not a directory")
    experiences = store.verified_experiences(
        VerifiedExperiencesRequest(project=request.project, limit=request.limit)
    ).experiences
    if len(experiences) < 2:
        scope = f" of project {request.project!r}" if request.project is not None else ""
        return WorkerDreamResult(
            worker=list(argv),
            cwd=str(cwd) if cwd is not None else None,
            considered_experiences=len(experiences),
            offered_experience_ids=[],
            receipt=None,
            ok=True,
            proposals=[],
            candidates=[],
            stored=0,
            refused=0,
            skipped=(
                f"a Dream needs at least two verified experiences{scope}; the store has "
                f"{len(experiences)}; the worker was not called"
            ),
        )
    payload = dreamer_payload(experiences, request.max_candidates)
    size = json_bytes(payload)
    if size > MAX_PAYLOAD_BYTES:
        raise UsageError(
            f"the dreamer payload of {len(experiences)} experiences is {size:,} bytes, over the "
            f"{MAX_PAYLOAD_BYTES:,}-byte cap; lower --limit; nothing was run"
        )
    worker = _Worker(list(argv), bounds, operator_identity, env)
    if cwd is not None:
        return _dream_in(store, worker, experiences, payload, cwd, cwd)
    # No project: a private (0700) directory, so the worker reads nothing it was not given.
    with tempfile.TemporaryDirectory(
        prefix="lorelab-dream-", ignore_cleanup_errors=True
    ) as private:
        return _dream_in(store, worker, experiences, payload, Path(private), None)


@dataclass(frozen=True, slots=True)
class _Worker:
    argv: list[str]
    bounds: WorkerBounds
    operator_identity: str | None
    env: Mapping[str, str] | None


def _dream_in(
    store: MemoryStore,
    worker: _Worker,
    experiences: Sequence[Experience],
    payload: dict[str, Any],
    cwd: Path,
    shown_cwd: Path | None,
) -> WorkerDreamResult:
    argv = worker.argv
    identity = bind_identity(
        argv, cwd=cwd, operator_identity=worker.operator_identity, env=worker.env
    )
    called_at = timestamp()
    # One call, never retried: a failure is reported, not papered over by a second try.
    call = call_worker(
        argv,
        ROLE,
        payload,
        cwd=cwd,
        bounds=worker.bounds,
        identity=identity,
        env=worker.env,
    )
    offered = [item.id for item in experiences]
    outcomes: list[ProposalOutcome] = []
    candidates: list[Candidate] = []
    if call.ok and call.response is not None:
        receipt = call.receipt
        provenance = WorkerProvenance(
            worker_argv=argv,
            operator_identity=worker.operator_identity,
            launcher_sha256=identity.launcher.sha256,
            prompt_version=receipt.prompt_version,
            prompt_hash=receipt.prompt_hash,
            model=ClaimedModel(claimed=receipt.model.claimed),
            evidence_kind=receipt.evidence_kind,
            called_at=called_at,
        )
        outcomes = store.add_proposed_candidates(
            ProposalsRequest(
                proposals=_proposals(call.response), offered_ids=offered, provenance=provenance
            )
        ).outcomes
        candidates = [
            store.candidate(CandidateRequest(candidate_id=outcome.candidate_id))
            for outcome in outcomes
            if outcome.candidate_id is not None
        ]
    return WorkerDreamResult(
        worker=argv,
        cwd=str(shown_cwd) if shown_cwd is not None else None,
        considered_experiences=len(experiences),
        offered_experience_ids=offered,
        receipt=call.receipt,
        ok=call.ok,
        proposals=outcomes,
        candidates=candidates,
        stored=sum(1 for outcome in outcomes if outcome.status == "stored"),
        refused=sum(1 for outcome in outcomes if outcome.status == "refused"),
    )
