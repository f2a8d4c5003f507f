"""The checkpoint: durable context written at a compaction, restart or child-handoff boundary."""

import re
import secrets
from datetime import UTC, datetime
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, AwareDatetime, Field, field_validator

from lorelab._model import RecordModel

BoundaryKind = Literal["compaction", "restart", "child_handoff"]
Author = Literal["user", "agent", "tool", "system"]

BOUNDARY_KINDS: Final[tuple[BoundaryKind, ...]] = ("compaction", "restart", "child_handoff")
CHECKPOINT_ID: Final = re.compile(r"ckpt-[0-9]{8}T[0-9]{12}Z-[0-9a-f]{12}")
MAX_SCOPE_LENGTH: Final = 512


def _nonzero(value: int) -> int:
    if value == 0:
        raise ValueError("a failed command has a nonzero exit code")
    return value


FailedExitCode = Annotated[int, AfterValidator(_nonzero)]
"""The exit code of a failed command: any integer but 0."""


class FailedCommand(RecordModel):
    """A command that already failed before the boundary: the next context must not rerun it."""

    command: str = Field(min_length=1, description="The exact command string that was run.")
    exit_code: FailedExitCode = Field(description="Its exit code (never 0: a failed command).")
    index: int | None = Field(
        default=None, description="Index of the command event in the source trace, if known."
    )


class RequestMessage(RecordModel):
    """One turn of the request the work was answering, as recovered at the boundary."""

    index: int | None = Field(
        default=None, description="Index of the message event in the source trace, if known."
    )
    author: Author = Field(description="Who wrote the turn.")
    text: str = Field(description="The turn's text.")


class RequestContext(RecordModel):
    """What the user asked for: the task and the request turns, recovered verbatim."""

    task: str | None = Field(default=None, description="The task statement, if there is one.")
    messages: list[RequestMessage] = Field(
        default_factory=list, description="The request turns, oldest first."
    )


class Checkpoint(RecordModel):
    """Durable context written at a boundary; immutable once written (a new one gets a new id)."""

    schema_version: Literal[1] = Field(default=1, description="Version of this file format.")
    id: str = Field(description="Checkpoint id: ckpt-<UTC timestamp>-<12 hex digits>.")
    boundary: BoundaryKind = Field(description="The boundary the checkpoint was written at.")
    scope: str = Field(
        min_length=1,
        max_length=MAX_SCOPE_LENGTH,
        description="What the context belongs to (a task, session or trial id); recover by scope.",
    )
    notes: list[str] = Field(
        default_factory=list, description="Working notes the next context must keep."
    )
    summary: str = Field(description="Summary of the work before the boundary.")
    request_context: RequestContext = Field(
        default_factory=RequestContext, description="The recovered request."
    )
    failed_commands: list[FailedCommand] = Field(
        default_factory=list, description="Commands that already failed; do not repeat them."
    )
    created_at: AwareDatetime = Field(description="When the checkpoint was written (UTC).")
    source_event_indices: list[int] = Field(
        default_factory=list, description="Indices of the source events the checkpoint covers."
    )

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not CHECKPOINT_ID.fullmatch(value):
            raise ValueError(f"checkpoint id {value!r} is not ckpt-<YYYYMMDDTHHMMSSffffff>Z-<hex>")
        return value


def new_checkpoint_id(created_at: datetime) -> str:
    """A fresh id that sorts by creation time: ``ckpt-<UTC timestamp>-<random hex>``."""
    stamp = created_at.astimezone(UTC).strftime("%Y%m%dT%H%M%S%f")
    return f"ckpt-{stamp}Z-{secrets.token_hex(6)}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _code(command: str) -> str:
    # A command that itself contains backticks needs a longer fence to stay one code span.
    fence = "``" if "`" in command else "`"
    return f"{fence} {command} {fence}" if fence == "``" else f"`{command}`"


def handoff_brief(checkpoint: Checkpoint) -> str:
    """The Markdown brief a new context (after compaction, restart or handoff) starts from.

    Deterministic: the same checkpoint always gives the same text.
    """
    boundary = checkpoint.boundary.replace("_", " ")
    lines = [
        f"# Handoff brief: resuming after a {boundary}",
        "",
        f"- checkpoint: {checkpoint.id}",
        f"- scope: {_one_line(checkpoint.scope)}",
        f"- written: {checkpoint.created_at.astimezone(UTC).isoformat()}",
        "",
        "## Request",
        "",
    ]
    request = checkpoint.request_context
    if request.task is not None:
        lines += [request.task.rstrip(), ""]
    for message in request.messages:
        where = f"[{message.index}] " if message.index is not None else ""
        lines.append(f"- {where}{message.author}: {_one_line(message.text)}")
    if request.task is None and not request.messages:
        lines.append("(no request was recorded)")
    lines += ["", "## Summary", "", checkpoint.summary.rstrip() or "(empty)", ""]
    if checkpoint.notes:
        lines += ["## Notes", ""]
        lines += [f"- {_one_line(note)}" for note in checkpoint.notes]
        lines.append("")
    if checkpoint.failed_commands:
        lines += ["## Commands that already failed (do not repeat them unchanged)", ""]
        for failed in checkpoint.failed_commands:
            where = f", event {failed.index}" if failed.index is not None else ""
            lines.append(f"- {_code(failed.command)} (exit {failed.exit_code}{where})")
        lines.append("")
    return "\n".join(lines)
