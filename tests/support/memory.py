"""Helpers shared by the memory tests: the data folder and a valid experience request."""

from pathlib import Path
from typing import Any

from lorelab.memory import CommandRun, RecordRequest, Verification

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
