"""Running a task's verify command: argv without a shell, own process group, real timeout.

The process runs through the runners' ``run_process``: stdout and stderr together are hashed
in full while only a tail is kept for receipts and for the host's next attempt.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from lorelab._model import RecordModel
from lorelab.io import SandboxKind, run_process

TAIL_CHARS: Final = 4000


class VerifyReceipt(RecordModel):
    """One run of a verify command, as receipts record it."""

    command: str
    exit_code: int | None
    timed_out: bool
    output_sha256: str
    output_tail: str
    duration_ms: int
    error: str | None = None
    # The confinement the command really ran in (bubblewrap, partial, none); null if not started.
    sandbox: SandboxKind | None = None


def command_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of verify commands and hosts.

    The directory of the Python running lorelab comes first on PATH, so ``python`` in a
    verify command is that interpreter; ``LORELAB_HOME`` is removed so no process finds the
    memory under test through the environment; bytecode is not written into project copies.
    """
    env = dict(os.environ if base is None else base)
    env.pop("LORELAB_HOME", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PATH"] = os.pathsep.join(
        [os.path.dirname(sys.executable), *[p for p in env.get("PATH", "").split(os.pathsep) if p]]
    )
    return env


def run_verify(command: str, cwd: Path, env: Mapping[str, str], timeout_s: float) -> VerifyReceipt:
    """Run ``command`` (split with shlex) in ``cwd``; kill its whole group at the timeout."""
    started = time.monotonic()
    try:
        # Verify commands run the project's tests, which the host under evaluation edited.
        result = run_process(
            shlex.split(command),
            cwd=cwd,
            env=env,
            timeout_s=timeout_s,
            tail_bytes=TAIL_CHARS * 4,
            sandbox=True,
        )
    except OSError as exc:
        return VerifyReceipt(
            command=command,
            exit_code=None,
            timed_out=False,
            output_sha256=hashlib.sha256(b"").hexdigest(),
            output_tail="",
            duration_ms=int((time.monotonic() - started) * 1000),
            error=f"could not start: {exc.strerror or exc}",
        )
    return VerifyReceipt(
        command=command,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        output_sha256=result.output_sha256,
        output_tail=result.output_tail.decode("utf-8", "replace")[-TAIL_CHARS:],
        duration_ms=result.duration_ms,
        sandbox=result.sandbox,
        error=(
            f"timed out after {timeout_s:g} s; the process group was killed"
            if result.timed_out
            else None
        ),
    )
