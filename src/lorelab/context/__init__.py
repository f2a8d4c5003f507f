"""Durable context: checkpoints written at compaction, restart and child-handoff boundaries,
the store that keeps them under a memory home, and the handoff brief a new context starts from.
"""

from lorelab.context._checkpoint import (
    BOUNDARY_KINDS,
    Author,
    BoundaryKind,
    Checkpoint,
    FailedCommand,
    FailedExitCode,
    RequestContext,
    RequestMessage,
    handoff_brief,
)
from lorelab.context._store import (
    MAX_CHECKPOINT_BYTES,
    CheckpointDetails,
    CheckpointStore,
    new_checkpoint,
    recover,
    scope_key,
    write_checkpoint,
)

__all__ = [
    "BOUNDARY_KINDS",
    "MAX_CHECKPOINT_BYTES",
    "Author",
    "BoundaryKind",
    "Checkpoint",
    "CheckpointDetails",
    "CheckpointStore",
    "FailedCommand",
    "FailedExitCode",
    "RequestContext",
    "RequestMessage",
    "handoff_brief",
    "new_checkpoint",
    "recover",
    "scope_key",
    "write_checkpoint",
]
