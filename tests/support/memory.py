"""Helpers shared by the memory tests: the data folder, a valid experience request and a pair
of experiences that promote to a Skill."""

from pathlib import Path
from typing import Any

from lorelab.memory import CommandRun, MemoryStore, RecordRequest, Verification

DATA = Path(__file__).resolve().parents[1] / "memory" / "data"


def experience(
    task: str = "Fix failing test_refund_partial_amount after Decimal rounding change",
    summary: str = "Switched money helpers to ROUND_HALF_UP and quantize before comparing.",
    *,
    passed: bool = True,
    exit_code: int = 0,
    verify: str = "pytest tests/test_refunds.py",
    commands: list[tuple[str, int]] | None = None,
    qa: str = "approved",
    project: str | None = "payments-api",
    **extra: Any,
) -> RecordRequest:
    """A realistic experience; keyword arguments override fields."""
    ran = (
        commands
        if commands is not None
        else [
            ("pytest tests/test_refunds.py -x", 1),
            ("python scripts/regen_rates.py", 0),
            ("pytest tests/test_refunds.py -x", 0),
        ]
    )
    return RecordRequest(
        task=task,
        summary=summary,
        outcome="passed" if passed else "failed",
        verification=Verification(command=verify, exit_code=exit_code),
        commands=[CommandRun(command=c, exit_code=x) for c, x in ran],
        qa=qa,  # type: ignore[arg-type]
        project=project,
        **extra,
    )


REFUND_TASK = "partial refund test off by one cent, Decimal rounding in refunds"


def record_refund_pair(store: MemoryStore) -> tuple[str, str]:
    """Two approved, verified refund experiences sharing their successful commands."""
    first = store.record(experience())
    second = store.record(
        experience(
            task="Refund rounding test fails again after rates script change",
            summary="Quantized refund amounts to cents with ROUND_HALF_UP.",
            commands=[("python scripts/regen_rates.py", 0), ("pytest tests/test_refunds.py -x", 0)],
        )
    )
    return first.id, second.id
