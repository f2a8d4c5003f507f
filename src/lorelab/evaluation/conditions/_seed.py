"""Seeding a fresh memory before a conditions run: the seed file's model, and the seeding.

The seed file holds lorelab's record and promote requests whatever the memory; the memory's
profile translates them for its server. A memory that assigns its own ids (MemCoder) has them
captured: the seeding receipt maps each declared id to the memory's, and the runner uses the
memory's ids from then on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from pydantic import Field

from lorelab._model import RecordModel
from lorelab.errors import PreflightError
from lorelab.evaluation.conditions._manifest import ConditionsManifest
from lorelab.evaluation.conditions._memory import (
    MemoryToolError,
    MemoryUnderTest,
    MemoryUnsupported,
)
from lorelab.evaluation.conditions._receipts import SeededExperience, SeededSkill, SeedingReceipt
from lorelab.io import read_json, validate_model
from lorelab.memory import PromoteRequest, RecordRequest

IDS_RULE: Final = (
    "the memory assigns its own ids: each declared seed id maps to the id it returned for the "
    "seed experience with that taskId, and the declared Skill id to the id of the promoted "
    "Skill; receipts and runs carry the memory's ids"
)
PROOFS: Final = {
    "returned-id": "every seed's record answer named an id no other seed got, and matched none "
    "of the profile's refusal patterns",
    "show": "every seed's record answer named an id no other seed got, and the memory showed "
    "each id",
}
# Seed commands were run when the seed file was written; seeding does not run them again.
SEED_EVIDENCE: Final = {"evidence_source": "as recorded in the seed file; not re-run"}


class SeedMemory(RecordModel):
    """Experiences to record in a fresh memory before the evaluation, and the Skill to promote.

    ``experiences`` and ``promoteSkill`` are lorelab's record and promote requests
    (``lore_record`` and ``lore_promote_skill`` arguments); the memory's profile translates
    them for its server. A memory that takes the ids as given (lorelab) must assign the ones
    the manifest declares, or the run stops before any task; a memory that assigns its own
    (MemCoder) has them captured and mapped to the declared ones in the receipts.
    """

    schema_version: int = Field(description="Seed-file format version (1).")
    experiences: list[dict[str, Any]] = Field(min_length=1)
    promote_skill: dict[str, Any] = Field(description="Arguments of the promote tool.")


def read_seed(path: Path) -> SeedMemory:
    """Read and check a seed file: each entry against lorelab's record and promote requests.

    The seed file holds lorelab's requests whatever the profile (profiles translate them), so
    a malformed entry is bad input, named here before anything starts, not a memory failure
    halfway through seeding."""
    source = os.fspath(path)
    seed = validate_model(SeedMemory, read_json(path, "manifest"), source)
    for index, experience in enumerate(seed.experiences):
        validate_model(RecordRequest, experience, f"{source}: experiences[{index}]")
    validate_model(PromoteRequest, seed.promote_skill, f"{source}: promoteSkill")
    return seed


async def _record_seeds(
    memory: MemoryUnderTest, seed: SeedMemory, declared_by_task: Mapping[str, str]
) -> tuple[list[SeededExperience], dict[str, str], dict[str, Mapping[str, Any]]]:
    """Record every seed experience: what the memory answered, the declared -> memory id map
    (for a memory that assigns ids), and the seed experiences by the memory's ids."""
    assigns = memory.profile.assigns_ids
    recorded: list[SeededExperience] = []
    ids: dict[str, str] = {}
    by_memory_id: dict[str, Mapping[str, Any]] = {}
    for index, experience in enumerate(seed.experiences):
        try:
            result = await memory.call("record", experience, SEED_EVIDENCE)
        except (MemoryToolError, MemoryUnsupported) as exc:
            raise PreflightError(
                f"seeding the memory failed at experiences[{index}]: {exc}"
            ) from None
        memory_id = result.get("id")
        # Seeding proves every seed stored: an answer without an id, or with an id another
        # seed already got (a silent overwrite or discard), stops the run.
        if memory_id is None:
            reasons = "; ".join(map(str, result.get("rejected") or [])) or "no id returned"
            raise PreflightError(
                f"seeding the memory failed at experiences[{index}]: the memory did not "
                f"record it: {reasons}"
            )
        if str(memory_id) in by_memory_id:
            raise PreflightError(
                f"seeding the memory failed at experiences[{index}]: the memory answered id "
                f"{memory_id}, which an earlier seed already has (overwritten or merged, not "
                "stored)"
            )
        if memory.profile.seed_proof == "show":
            try:
                await memory.call("show", {"id": str(memory_id)})
            except (MemoryToolError, MemoryUnsupported) as exc:
                raise PreflightError(
                    f"seeding the memory failed at experiences[{index}]: stored id {memory_id} "
                    f"cannot be shown: {exc}"
                ) from None
        declared = declared_by_task.get(str(experience.get("task_id")))
        entry = SeededExperience(id=memory_id, verified=result.get("verified"))
        if assigns and declared is not None:
            ids[declared] = str(memory_id)
            entry = SeededExperience(id=memory_id, verified=entry.verified, declared_id=declared)
        recorded.append(entry)
        if memory_id is not None:
            by_memory_id[str(memory_id)] = experience
    return recorded, ids, by_memory_id


async def seed_memory(
    memory: MemoryUnderTest, seed: SeedMemory, manifest: ConditionsManifest
) -> tuple[SeedingReceipt, dict[str, Mapping[str, Any]]]:
    """Record the seed experiences and promote the seed Skill through the memory's profile;
    stop at the first failure.

    A memory that assigns its own ids (``profile.assigns_ids``) has them captured: each seed
    experience whose ``task_id`` is a manifest seed gets that seed's declared id mapped to the
    memory's id, the Skill's declared id likewise, and the promote request names the memory's
    ids. Returns the seeding receipt and the seed experiences by the memory's ids."""
    assigns = memory.profile.assigns_ids
    declared_by_task = {entry.task_id: entry.experience_id for entry in manifest.seeds}
    recorded, ids, by_memory_id = await _record_seeds(memory, seed, declared_by_task)
    if not memory.supports("promote_skill"):
        # No Skills in this memory: skill_planned is not applicable, nothing is promoted.
        return SeedingReceipt(
            experiences=recorded,
            skill=None,
            ids=ids if assigns else None,
            ids_rule=IDS_RULE if assigns else None,
            proof=PROOFS[memory.profile.seed_proof],
        ), by_memory_id
    promote = dict(seed.promote_skill)
    promote_context: dict[str, Any] = {}
    if assigns:
        named = [str(value) for value in promote.get("experience_ids", [])]
        promote["experience_ids"] = [ids.get(value, value) for value in named]
        promote_context["sources"] = [
            by_memory_id[value] for value in promote["experience_ids"] if value in by_memory_id
        ]
    try:
        skill = await memory.call("promote_skill", promote, promote_context)
    except (MemoryToolError, MemoryUnsupported) as exc:
        raise PreflightError(f"seeding the memory failed at promoteSkill: {exc}") from None
    if not assigns:
        return SeedingReceipt(
            experiences=recorded,
            skill=SeededSkill(id=skill.get("id"), name=skill.get("name")),
            proof=PROOFS[memory.profile.seed_proof],
        ), by_memory_id
    if skill.get("id") is not None:
        ids[manifest.skill.id] = str(skill["id"])
    promoted = SeededSkill(
        id=skill.get("id"),
        name=skill.get("name"),
        declared_id=manifest.skill.id,
        seed_name=seed.promote_skill.get("name"),
    )
    receipt = SeedingReceipt(
        experiences=recorded,
        skill=promoted,
        ids=ids,
        ids_rule=IDS_RULE,
        proof=PROOFS[memory.profile.seed_proof],
    )
    return receipt, by_memory_id
