"""Input and output with guarantees: bounded reads, strict and canonical JSON, hashes, receipts,
and the one process supervisor (bounded output, deadlines, no orphans).

The supervisor, the sandbox probe and receipt directories are loaded on first use: commands
that never start a process (``memory prepare``, every hook) do not pay for them.
"""

import typing as _typing

from lorelab._lazy import lazy_exports as _lazy_exports
from lorelab.io._bounded import (
    FIXTURE_LIMIT,
    LIMITS,
    MANIFEST_LIMIT,
    MIB,
    open_regular,
    read_bounded,
    stream_regular,
)
from lorelab.io._hash import LAUNCHER_HASH_CAP, SCRIPT_HASH_CAP, sha256_bytes, sha256_file
from lorelab.io._json import (
    MAX_DEPTH,
    canonical_bytes,
    canonical_json,
    json_bytes,
    loads_strict,
    pretty_json,
)
from lorelab.io._models import describe_validation_error, read_json, read_model, validate_model
from lorelab.io._text import escape_control

__all__ = [
    "FIXTURE_LIMIT",
    "LAUNCHER_HASH_CAP",
    "LIMITS",
    "MANIFEST_LIMIT",
    "MAX_DEPTH",
    "MIB",
    "SCRIPT_HASH_CAP",
    "Confinement",
    "ExecutionCancelled",
    "ProcessResult",
    "ProcessScope",
    "ReceiptDir",
    "SandboxKind",
    "SandboxSupport",
    "Tick",
    "at_terminal",
    "canonical_bytes",
    "canonical_json",
    "create_output_dir",
    "describe_validation_error",
    "escape_control",
    "interrupts_deferred",
    "json_bytes",
    "loads_strict",
    "no_progress",
    "open_regular",
    "pretty_json",
    "probe_sandbox",
    "progress_bar",
    "quiet_progress",
    "read_bounded",
    "read_json",
    "read_model",
    "remove_tree",
    "require_sandbox",
    "run_bounded",
    "run_process",
    "sandbox_kind",
    "sha256_bytes",
    "sha256_file",
    "stream_regular",
    "validate_model",
]

if _typing.TYPE_CHECKING:
    from lorelab.io._process import ProcessResult, run_bounded, run_process
    from lorelab.io._progress import (
        Tick,
        at_terminal,
        no_progress,
        progress_bar,
        quiet_progress,
    )
    from lorelab.io._receipts import ReceiptDir, create_output_dir
    from lorelab.io._sandbox import (
        Confinement,
        SandboxKind,
        SandboxSupport,
        probe_sandbox,
        require_sandbox,
        sandbox_kind,
    )
    from lorelab.io._scope import ExecutionCancelled, ProcessScope
    from lorelab.io._signals import interrupts_deferred
    from lorelab.io._tree import remove_tree

_WHERE: _typing.Final = {
    "ExecutionCancelled": "lorelab.io._scope",
    "ProcessResult": "lorelab.io._process",
    "ProcessScope": "lorelab.io._scope",
    "run_bounded": "lorelab.io._process",
    "run_process": "lorelab.io._process",
    "Tick": "lorelab.io._progress",
    "at_terminal": "lorelab.io._progress",
    "no_progress": "lorelab.io._progress",
    "progress_bar": "lorelab.io._progress",
    "quiet_progress": "lorelab.io._progress",
    "ReceiptDir": "lorelab.io._receipts",
    "create_output_dir": "lorelab.io._receipts",
    "Confinement": "lorelab.io._sandbox",
    "SandboxKind": "lorelab.io._sandbox",
    "SandboxSupport": "lorelab.io._sandbox",
    "probe_sandbox": "lorelab.io._sandbox",
    "require_sandbox": "lorelab.io._sandbox",
    "sandbox_kind": "lorelab.io._sandbox",
    "interrupts_deferred": "lorelab.io._signals",
    "remove_tree": "lorelab.io._tree",
}


__getattr__, __dir__ = _lazy_exports(__name__, globals(), _WHERE)
