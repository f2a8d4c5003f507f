"""Durable context (``lorelab.context``) as memory operations: ``lore_checkpoint`` and
``lore_recover`` over MCP, ``memory checkpoint`` and ``memory recover`` on the CLI.

Checkpoints live under the memory home (``<home>/checkpoints``), beside ``memory.db``. Text
is redacted before it is written, like everything else the memory stores.
"""

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from lorelab._model import InputModel, OutputModel
from lorelab.context import (
    Checkpoint,
    CheckpointStore,
    FailedCommand,
    FailedExitCode,
    RequestContext,
    handoff_brief,
    recover,
    write_checkpoint,
)
from lorelab.errors import InputFileError
from lorelab.memory._models import EXIT_CODE_MAX, EXIT_CODE_MIN
from lorelab.memory._redact import Redactor


class FailedCommandInput(InputModel):
    """A command that already failed before the boundary."""

    command: str = Field(min_length=1, max_length=2000)
    exit_code: FailedExitCode = Field(
        ge=EXIT_CODE_MIN, le=EXIT_CODE_MAX, description="Its nonzero exit code (an integer)."
    )


class CheckpointRequest(InputModel):
    """Durable context to keep across a compaction, restart or child handoff."""

    scope: str = Field(
        min_length=1, max_length=512, description="What the context belongs to (task/session id)."
    )
    boundary: Literal["compaction", "restart", "child_handoff"]
    summary: str = Field(max_length=100_000, description="Summary of the work so far.")
    notes: list[str] = Field(
        default=[], max_length=200, description="Notes the next context keeps."
    )
    task: str | None = Field(default=None, max_length=20_000, description="The task statement.")
    failed_commands: list[FailedCommandInput] = Field(
        default=[], max_length=200, description="Commands that failed; not to be repeated."
    )


class CheckpointResult(OutputModel):
    checkpoint_id: str
    scope: str
    boundary: str
    created_at: str
    redactions: dict[str, int]


class RecoverRequest(InputModel):
    scope: str = Field(min_length=1, max_length=512)


class RecoverResult(OutputModel):
    found: bool
    checkpoint: dict[str, Any] | None = Field(description="The newest checkpoint, or null.")
    handoff_brief: str | None = Field(description="The brief a new context starts from.")


def checkpoint(home: Path, request: CheckpointRequest) -> CheckpointResult:
    """Write one checkpoint for ``request.scope`` under ``home``."""
    red = Redactor()
    try:
        written = _write(home, request, red)
    except OSError as exc:
        where = exc.filename if exc.filename is not None else home
        raise InputFileError(
            f"{where}: cannot write the checkpoint: {exc.strerror or exc}; nothing was written"
        ) from None
    return CheckpointResult(
        checkpoint_id=written.id,
        scope=written.scope,
        boundary=written.boundary,
        created_at=written.created_at.isoformat(),
        redactions=red.summary(),
    )


def _write(home: Path, request: CheckpointRequest, red: Redactor) -> Checkpoint:
    return write_checkpoint(
        CheckpointStore(home),
        scope=red(request.scope),
        boundary=request.boundary,
        summary=red(request.summary),
        notes=[red(note) for note in request.notes],
        request_context=RequestContext(
            task=red(request.task) if request.task is not None else None
        ),
        failed_commands=[
            FailedCommand(command=red(item.command), exit_code=item.exit_code)
            for item in request.failed_commands
        ],
    )


def recover_context(home: Path, request: RecoverRequest) -> RecoverResult:
    """The newest checkpoint of ``request.scope`` and its handoff brief, if there is one."""
    # Scopes are stored redacted, so the one asked for is looked up redacted.
    found = recover(CheckpointStore(home), Redactor()(request.scope))
    if found is None:
        return RecoverResult(found=False, checkpoint=None, handoff_brief=None)
    return RecoverResult(
        found=True,
        checkpoint=found.model_dump(mode="json", by_alias=True),
        handoff_brief=handoff_brief(found),
    )
