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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from lorelab.runners import run_process

TAIL_CHARS: Final = 4000


@dataclass(frozen=True, slots=True)
class VerifyResult:
    """One run of a verify command."""

    command: str
    exit_code: int | None
    timed_out: bool
    output_sha256: str
    output_tail: str
    duration_ms: int
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The camelCase form used in receipts."""
        return {
            "command": self.command,
            "exitCode": self.exit_code,
            "timedOut": self.timed_out,
            "outputSha256": self.output_sha256,
            "outputTail": self.output_tail,
            "durationMs": self.duration_ms,
            "error": self.error,
        }


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


def run_verify(command: str, cwd: Path, env: Mapping[str, str], timeout_s: float) -> VerifyResult:
    """Run ``command`` (split with shlex) in ``cwd``; kill its whole group at the timeout."""
    started = time.monotonic()
    try:
        result = run_process(
            shlex.split(command), cwd=cwd, env=env, timeout_s=timeout_s, tail_bytes=TAIL_CHARS * 4
        )
    except OSError as exc:
        return VerifyResult(
            command,
            None,
            False,
            hashlib.sha256(b"").hexdigest(),
            "",
            int((time.monotonic() - started) * 1000),
            f"could not start: {exc.strerror or exc}",
        )
    return VerifyResult(
        command,
        result.exit_code,
        result.timed_out,
        result.output_sha256,
        result.output_tail.decode("utf-8", "replace")[-TAIL_CHARS:],
        result.duration_ms,
        f"timed out after {timeout_s:g} s; the process group was killed"
        if result.timed_out
        else None,
    )
