"""The Dream step between the first three conditions and dreaming: ask the memory for Dream
candidates, have each checked in its sandbox, and promote only those whose checks passed.

A memory that runs no Dream checks itself (``profile.checks_by_runner``: MemCoder) has them run
by the runner, as verify commands are run, in a disposable copy of the project snapshot; the
evidence goes to the memory's verify operation, which promotes what passed.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from lorelab.evaluation.conditions._guidance import items
from lorelab.evaluation.conditions._memory import MemoryToolError, MemoryUnderTest
from lorelab.evaluation.conditions._profiles import shared_commands
from lorelab.evaluation.conditions._receipts import DreamCheck, DreamCheckResult, DreamReceipt
from lorelab.evaluation.conditions._snapshot import Snapshot
from lorelab.evaluation.conditions._verify import run_verify

CHECK_TIMEOUT_S: Final = 120.0
RUNNER_CHECKS: Final = (
    "run by the runner as verify commands are (in bubblewrap as far as the machine allows, "
    "each result saying the sandbox it got; argv without a shell, own process group, timeout), "
    "in a disposable copy of the project snapshot; the evidence is handed to the memory"
)


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
        return DreamReceipt.model_validate(
            {name: getattr(self, name) for name in DreamReceipt.model_fields}
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


@dataclass(frozen=True, slots=True)
class RunnerChecks:
    """What the runner needs to run Dream checks itself: the project snapshot, a scratch
    directory for its disposable copies, the commands' environment, and the seed experiences
    by the ids the memory gave them (a candidate's checks are their shared commands)."""

    snapshot: Snapshot
    root: Path
    env: Mapping[str, str]
    seeded: Mapping[str, Mapping[str, Any]]

    def commands(self, candidate: Mapping[str, Any]) -> list[str]:
        """The candidate's checks: the commands (exit 0) every source experience ran, when the
        seed file tells them for every source; none otherwise."""
        sources = [str(value) for value in candidate.get("source_experience_ids") or []]
        known = [self.seeded[source] for source in sources if source in self.seeded]
        if not known or len(known) != len(sources):
            return []
        return shared_commands(known)

    def run(self, commands: list[str], number: int) -> list[DreamCheckResult]:
        """Run ``commands`` in a fresh copy of the snapshot, removed afterwards."""
        copy = self.snapshot.materialise(self.root / f"dream-check-{number}")
        results = []
        try:
            for command in commands:
                done = run_verify(command, copy, self.env, CHECK_TIMEOUT_S)
                results.append(
                    DreamCheckResult(
                        command=command,
                        expected_exit_code=0,
                        exit_code=done.exit_code,
                        status="passed" if done.exit_code == 0 else "failed",
                        output_sha256=done.output_sha256,
                        sandbox=done.sandbox,
                    )
                )
        finally:
            shutil.rmtree(copy, ignore_errors=True)
        return results


def _evidence(results: list[DreamCheckResult]) -> list[dict[str, Any]]:
    return [
        {
            "name": result.command,
            "passed": result.exit_code == 0,
            "evidence": (
                f"exit code {result.exit_code} (expected 0) in a disposable copy of the project; "
                f"output sha256 {result.output_sha256}"
            ),
        }
        for result in results
    ]


async def _check_by_runner(
    memory: MemoryUnderTest,
    checks: RunnerChecks,
    number: int,
    candidate: Mapping[str, Any],
    outcome: DreamOutcome,
) -> None:
    """Run one candidate's checks, hand the evidence to the memory's verify operation, and
    keep what it promoted."""
    candidate_id = str(candidate.get("id"))
    commands = checks.commands(candidate)
    if not commands:
        error = (
            "no command known for every source experience of this candidate; it is left "
            "unverified and unused"
        )
        outcome.checks.append(DreamCheck(candidate_id=candidate_id, error=error))
        return
    results = checks.run(commands, number)
    try:
        verdict = await memory.call(
            "verify_candidate", {"candidate_id": candidate_id, "checks": _evidence(results)}
        )
    except MemoryToolError as exc:
        outcome.tool_errors += 1
        outcome.failed_calls.append(exc.operation)
        outcome.checks.append(
            DreamCheck(candidate_id=candidate_id, results=results, error=str(exc))
        )
        return
    check = DreamCheck(
        candidate_id=candidate_id,
        passed=verdict.get("passed") is True,
        results=results,
        memory_status=verdict.get("status"),
    )
    if verdict.get("promoted_id"):
        outcome.promoted[candidate_id] = str(verdict["promoted_id"])
        check = check.model_copy(update={"promoted_kind": verdict.get("promoted_kind")})
    outcome.checks.append(check)


async def run_dream(memory: MemoryUnderTest, checks: RunnerChecks | None = None) -> DreamOutcome:
    """One Dream: its candidates, each candidate's sandbox check and promotion when it passed.

    When the profile says the memory runs no checks (``checks_by_runner``), ``checks`` runs
    them here and the evidence goes to the memory's verify operation."""
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
    if memory.profile.checks_by_runner:
        if checks is None:
            raise RuntimeError("this memory's Dream checks are run by the runner: give checks")
        for number, candidate in enumerate(items(result.get("candidates")), start=1):
            outcome.candidate_ids.append(str(candidate.get("id")))
            await _check_by_runner(memory, checks, number, candidate, outcome)
        return outcome
    for candidate in items(result.get("candidates")):
        candidate_id = str(candidate.get("id"))
        outcome.candidate_ids.append(candidate_id)
        await _check(memory, candidate_id, outcome)
    return outcome
