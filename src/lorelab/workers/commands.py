"""What ``lorelab worker identity`` and ``lorelab worker call`` do, as library functions."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lorelab.errors import InputFileError, LorelabError, OutputExistsError, UsageError
from lorelab.io import pretty_json, read_json
from lorelab.workers.agents import resolve_agent
from lorelab.workers.identity import WorkerIdentity, bind_identity
from lorelab.workers.roles import check_role, validate_payload
from lorelab.workers.transport import RoleCall, WorkerBounds, call_worker


def agent_identity(agent: str, *, cwd: Path, operator_identity: str | None) -> WorkerIdentity:
    """Bind the worker named by ``agent`` (adapter name or JSON argv) in ``cwd``; run nothing."""
    return bind_identity(resolve_agent(agent), cwd=cwd, operator_identity=operator_identity)


@dataclass(frozen=True, slots=True)
class AgentCall:
    """One call made from the command line, with the identity it was bound to."""

    identity: WorkerIdentity
    call: RoleCall
    response_error: LorelabError | None = None
    """Why ``--response-out`` could not be written after the call, if it could not."""


def call_agent(
    agent: str,
    role: str,
    payload_path: Path,
    *,
    cwd: Path,
    bounds: WorkerBounds,
    operator_identity: str | None,
    response_out: Path | None = None,
) -> AgentCall:
    """Check the budget, read and validate the payload, bind the worker, make one call.

    Every refusal happens before the worker runs. With ``response_out``, a successful call's
    response is written there (0600, never over an existing file); its directory is checked
    before anything runs, and a write that still fails after the call is returned as
    ``response_error`` (the call happened; its receipt must not be lost).
    """
    checked = check_role(role)
    bounds.check()
    if response_out is not None:
        check_new_file(response_out)
    argv = resolve_agent(agent)
    payload = read_json(payload_path, "manifest")
    if not isinstance(payload, dict):
        raise UsageError(f"{payload_path}: the payload must be a JSON object")
    validate_payload(checked, payload, str(payload_path))
    identity = bind_identity(argv, cwd=cwd, operator_identity=operator_identity)
    call = call_worker(argv, checked, payload, cwd=cwd, bounds=bounds, identity=identity)
    if response_out is not None and call.response is not None:
        try:
            _write_new(response_out, pretty_json(call.response).encode("utf-8"))
        except (InputFileError, OutputExistsError) as exc:
            return AgentCall(identity, call, exc)
    return AgentCall(identity, call)


def check_new_file(path: Path) -> None:
    """Refuse ``path`` as a new output file unless it is absent and its directory is writable."""
    if os.path.lexists(path):
        raise OutputExistsError(f"{path}: already exists; choose a new file")
    parent = Path(os.path.abspath(path)).parent
    if not parent.is_dir():
        what = "does not exist" if not os.path.lexists(parent) else "is not a directory"
        raise InputFileError(f"{path}: its directory {parent} {what}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputFileError(f"{path}: its directory {parent} is not writable")


def _write_new(path: Path, data: bytes) -> None:
    try:
        fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600
        )
    except FileExistsError:
        raise OutputExistsError(f"{path}: already exists; choose a new file") from None
    except OSError as exc:
        raise InputFileError(f"{path}: cannot create it: {exc.strerror or exc}") from None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError as exc:
        raise InputFileError(f"{path}: cannot write it: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
