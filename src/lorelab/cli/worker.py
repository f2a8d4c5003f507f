"""``lorelab worker``: bind a worker's identity, or make one bounded role call."""

from __future__ import annotations

from pathlib import Path

import click

from lorelab.cli._common import LorelabGroup, echo_json, exit_with
from lorelab.cli._options import (
    agent_option,
    file_option,
    identity_option,
    max_output_bytes_option,
    worker_timeout_option,
)
from lorelab.workers.commands import agent_identity, call_agent
from lorelab.workers.roles import ROLES
from lorelab.workers.transport import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_MS, WorkerBounds

_CWD = click.Path(exists=True, file_okay=False, path_type=Path)


@click.group(name="worker", cls=LorelabGroup)
def worker_group() -> None:
    """Workers: external agent processes speaking lorelab.worker/1 on stdin/stdout."""


@worker_group.command("identity")
@agent_option(required=True, prefix="The worker:")
@click.option("--cwd", type=_CWD, default=".", show_default=True, help="The trial directory.")
@identity_option("Who operates this worker (free text).")
def identity_command(agent: str, cwd: Path, operator_identity: str | None) -> None:
    """Print what the worker argv would run, hashed, without running anything.

    Exit 2 for a credential-like operand or a launcher that cannot be resolved; exit 3 when a
    named script or module cannot be bound.
    """
    echo_json(agent_identity(agent, cwd=cwd, operator_identity=operator_identity))


@worker_group.command("call")
@agent_option(required=True, prefix="The worker:")
@click.option("--role", required=True, type=click.Choice(ROLES), help="The role to call.")
@file_option(
    "--payload",
    "payload_path",
    required=True,
    help_text="The role payload (JSON, at most 2 MiB), without transportBudget.",
)
@click.option("--cwd", type=_CWD, default=".", show_default=True, help="The trial directory.")
@worker_timeout_option(default_ms=DEFAULT_TIMEOUT_MS)
@max_output_bytes_option(
    default=DEFAULT_MAX_OUTPUT_BYTES, help_text="Fail the call when stdout passes this many bytes."
)
@identity_option("Who operates this worker (free text).")
@file_option("--response-out", help_text="Write a successful call's response to this new file.")
def call_command(
    agent: str,
    role: str,
    payload_path: Path,
    cwd: Path,
    timeout_ms: int,
    max_output_bytes: int,
    operator_identity: str | None,
    response_out: Path | None,
) -> None:
    """Make one call (never retried) and print its role receipt as JSON.

    Exit 0 when the call succeeded, 1 when it failed (timeout, output too large, invalid or
    rejected response, nonzero exit, ...), 3 when the worker's bound identity changed, 2 for
    invalid input (nothing run; --response-out in a missing or unwritable directory included).
    A response file that still cannot be written after the call exits 2 with the receipt
    printed.
    """
    result = call_agent(
        agent,
        role,
        payload_path,
        cwd=cwd,
        bounds=WorkerBounds(timeout_ms, max_output_bytes),
        operator_identity=operator_identity,
        response_out=response_out,
    )
    receipt = result.call.receipt
    echo_json(receipt)
    if result.response_error is not None:
        # The call happened and its receipt is printed; the response file is what failed.
        raise result.response_error
    if receipt.failure == "identity-changed":
        exit_with(3)
    if receipt.failure is not None:
        exit_with(1)
