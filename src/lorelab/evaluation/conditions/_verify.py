"""Running a task's verify command: argv without a shell, own process group, real timeout.

Output (stdout and stderr together) goes to a private temporary file, so any amount of it is
hashed in full while only a tail is kept for receipts and for the host's next attempt.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

TAIL_CHARS: Final = 4000
_CHUNK: Final = 1 << 16


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


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)


def run_verify(command: str, cwd: Path, env: Mapping[str, str], timeout_s: float) -> VerifyResult:
    """Run ``command`` (split with shlex) in ``cwd``; kill its whole group at the timeout."""
    started = time.monotonic()
    argv = shlex.split(command)
    with tempfile.TemporaryFile() as output:
        try:
            process = subprocess.Popen(
                argv,
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
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
        timed_out = False
        try:
            exit_code: int | None = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            exit_code = None
        # Whatever the command left running in its group goes too.
        _kill_group(process)
        duration = int((time.monotonic() - started) * 1000)
        output.seek(0)
        digest = hashlib.sha256()
        tail = b""
        while chunk := output.read(_CHUNK):
            digest.update(chunk)
            tail = (tail + chunk)[-TAIL_CHARS * 4 :]
    text = tail.decode("utf-8", "replace")[-TAIL_CHARS:]
    return VerifyResult(
        command,
        exit_code,
        timed_out,
        digest.hexdigest(),
        text,
        duration,
        f"timed out after {timeout_s:g} s; the process group was killed" if timed_out else None,
    )
