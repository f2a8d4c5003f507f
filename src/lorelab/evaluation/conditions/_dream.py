"""The Dream step between the first three conditions and dreaming: ask the memory for Dream
candidates, have each checked in its sandbox, and promote only those whose checks passed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from lorelab.evaluation.conditions._guidance import items
from lorelab.evaluation.conditions._memory import MemoryToolError, MemoryUnderTest
from lorelab.evaluation.conditions._receipts import DreamCheck, DreamCheckResult, DreamReceipt

CHECK_TIMEOUT_S: Final = 120.0


@dataclass(slots=True)
class DreamOutcome:
    """The Dream step: candidates, their sandbox checks, what was promoted."""

    supported: bool
    candidate_ids: list[str] = field(default_factory=list)
    checks: list[DreamCheck] = field(default_factory=list)
    promoted: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    tool_errors: int = 0
    failed_calls: list[str] = field(default_factory=list)

    def receipt(self) -> DreamReceipt:
        """The ``dream.json`` receipt."""
        return DreamReceipt(
            supported=self.supported,
            candidate_ids=self.candidate_ids,
            checks=self.checks,
            promoted=self.promoted,
            errors=self.errors,
            tool_errors=self.tool_errors,
        )


async def _check(memory: MemoryUnderTest, candidate_id: str, outcome: DreamOutcome) -> None:
    if not memory.supports("check"):
        error = "the memory offers no check operation; the candidate stays unused"
        outcome.checks.append(DreamCheck(candidate_id=candidate_id, error=error))
        return
    try:
        run = await memory.call(
            "check", {"candidate_id": candidate_id, "timeout_seconds": CHECK_TIMEOUT_S}
        )
    except MemoryToolError as exc:
        outcome.tool_errors += 1
        outcome.failed_calls.append(exc.operation)
        outcome.checks.append(DreamCheck(candidate_id=candidate_id, error=str(exc)))
        return
    check = DreamCheck(
        candidate_id=candidate_id,
        passed=run.get("passed") is True,
        results=[
            DreamCheckResult(
                command=item.get("command"),
                expected_exit_code=item.get("expected_exit_code"),
                exit_code=item.get("exit_code"),
                status=item.get("status"),
            )
            for item in items(run.get("results"))
        ],
        check_run_id=run.get("id"),
    )
    if check.passed and memory.supports("promote_candidate"):
        try:
            skill = await memory.call("promote_candidate", {"candidate_id": candidate_id})
        except MemoryToolError as exc:
            check = check.model_copy(update={"error": str(exc)})
            outcome.tool_errors += 1
            outcome.failed_calls.append(exc.operation)
        else:
            outcome.promoted[candidate_id] = str(skill.get("id"))
    outcome.checks.append(check)


async def run_dream(memory: MemoryUnderTest) -> DreamOutcome:
    """One Dream: its candidates, each candidate's sandbox check and promotion when it passed."""
    if not memory.supports("dream"):
        return DreamOutcome(supported=False, errors=["the memory offers no dream operation"])
    outcome = DreamOutcome(supported=True)
    try:
        result = await memory.call("dream", {})
    except MemoryToolError as exc:
        outcome.errors.append(str(exc))
        outcome.tool_errors += 1
        outcome.failed_calls.append(exc.operation)
        return outcome
    for candidate in items(result.get("candidates")):
        candidate_id = str(candidate.get("id"))
        outcome.candidate_ids.append(candidate_id)
        await _check(memory, candidate_id, outcome)
    return outcome
