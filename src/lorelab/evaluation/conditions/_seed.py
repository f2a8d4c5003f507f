"""Seeding a fresh memory before a conditions run: the seed file's model, and the seeding.

The experiences and the Skill to promote are handed to the memory's record and promote tools
unchanged; what the memory answered is the run's seeding receipt.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field

from lorelab._model import RecordModel
from lorelab.errors import PreflightError
from lorelab.evaluation.conditions._memory import MemoryProfile, MemoryToolError, MemoryUnderTest
from lorelab.evaluation.conditions._receipts import SeededExperience, SeededSkill, SeedingReceipt
from lorelab.io import read_json, validate_model
from lorelab.memory import PromoteRequest, RecordRequest


class SeedMemory(RecordModel):
    """Experiences to record in a fresh memory before the evaluation, and the Skill to promote.

    ``experiences`` and ``promoteSkill`` are handed to the memory's record and promote tools
    unchanged (for lorelab: ``lore_record`` and ``lore_promote_skill`` arguments). The ids the
    memory assigns must be the ones the manifest declares, or the run stops before any task.
    """

    schema_version: int = Field(description="Seed-file format version (1).")
    experiences: list[dict[str, Any]] = Field(min_length=1)
    promote_skill: dict[str, Any] = Field(description="Arguments of the promote tool.")


def read_seed(path: Path, profile: MemoryProfile) -> SeedMemory:
    """Read and check a seed file; for the lorelab profile, each entry against its tool."""
    source = os.fspath(path)
    seed = validate_model(SeedMemory, read_json(path, "manifest"), source)
    if profile.name == "lorelab":
        # The lorelab profile's tools take these models: a malformed entry is bad input,
        # named here before anything starts, not a memory failure halfway through seeding.
        for index, experience in enumerate(seed.experiences):
            validate_model(RecordRequest, experience, f"{source}: experiences[{index}]")
        validate_model(PromoteRequest, seed.promote_skill, f"{source}: promoteSkill")
    return seed


async def seed_memory(memory: MemoryUnderTest, seed: SeedMemory) -> SeedingReceipt:
    """Record the seed experiences and promote the seed Skill; stop at the first failure."""
    recorded = []
    for index, experience in enumerate(seed.experiences):
        try:
            result = await memory.call("record", experience)
        except MemoryToolError as exc:
            raise PreflightError(
                f"seeding the memory failed at experiences[{index}]: {exc}"
            ) from None
        recorded.append(SeededExperience(id=result.get("id"), verified=result.get("verified")))
    try:
        skill = await memory.call("promote_skill", seed.promote_skill)
    except MemoryToolError as exc:
        raise PreflightError(f"seeding the memory failed at promoteSkill: {exc}") from None
    return SeedingReceipt(
        experiences=recorded, skill=SeededSkill(id=skill.get("id"), name=skill.get("name"))
    )
