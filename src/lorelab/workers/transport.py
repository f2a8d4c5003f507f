"""The worker transport: one bounded, attributable call of one role, never retried.

``call_worker`` writes the canonical payload (with ``transportBudget`` appended) to the worker's
stdin, reads at most ``maxOutputBytes`` of stdout, keeps a capped stderr tail, kills the whole
process group at the timeout, parses exactly one JSON object and validates it for the role. The
bound identity is checked before the launch and after the response. Whatever happens, the result
is a :class:`RoleReceipt`; only bad arguments raise (before anything runs).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, get_args

from pydantic import Field, ValidationError

from lorelab._model import DEFAULT_MAX_OUTPUT_BYTES as DEFAULT_MAX_OUTPUT_BYTES
from lorelab._model import DEFAULT_TIMEOUT_MS as DEFAULT_TIMEOUT_MS
from lorelab._model import RecordModel
from lorelab.errors import JSONInputError, SchemaError, UsageError
from lorelab.io import MIB, ProcessResult, canonical_bytes, json_bytes, loads_strict, run_bounded
from lorelab.workers._secrets import redact_secrets
from lorelab.workers.identity import WorkerIdentity, rebind_identity
from lorelab.workers.prompts import prompt_hash
from lorelab.workers.roles import (
    MAX_TIMEOUT_MS,
    PROMPT_VERSION,
    PROTOCOL,
    Role,
    Usage,
    check_role,
    validate_payload,
    validate_response,
)

MAX_OUTPUT_BYTES_CAP: Final = 16 * MIB
RAW_RESPONSE_CAP: Final = 8192
STDERR_TAIL_CAP: Final = 4096

FailureClass = Literal[
    "spawn-failed",
    "identity-changed",
    "timeout",
    "output-too-large",
    "nonzero-exit",
    "empty-output",
    "invalid-json",
    "multiple-json",
    "invalid-response",
]
FAILURE_CLASSES: Final[tuple[str, ...]] = get_args(FailureClass)


class ModelClaim(RecordModel):
    """The model a worker says it used: recorded as a claim, never verified."""

    claimed: str | None = Field(description="The response's `model`; null when not reported.")
    verified: None = Field(default=None, description="Always null: lorelab cannot verify it.")


class RoleReceipt(RecordModel):
    """What happened in one role call. Byte counts follow the protocol's byte accounting."""

    schema_version: Literal["lorelab.role-receipt/1"] = "lorelab.role-receipt/1"
    protocol: Literal["lorelab.worker/1"] = PROTOCOL
    role: Role
    attempt: int = Field(description="1-based attempt number given by the caller; never retried.")
    spawned: bool = Field(description="Whether a process was started.")
    exit_code: int | None = Field(description="Exit status; null if not spawned or signalled.")
    signal: int | None = Field(description="The signal that ended the worker, if any.")
    duration_ms: int = Field(description="Wall time from launch to reaping, in milliseconds.")
    timeout_ms: int = Field(description="The timeout the call ran under.")
    max_output_bytes: int = Field(description="The stdout bound the call ran under.")
    input_bytes: int = Field(
        description="UTF-8 length of the canonical payload before transportBudget is appended."
    )
    output_bytes: int | None = Field(
        description="UTF-8 length of the canonical JSON of the parsed response; null if none."
    )
    stdout_bytes: int = Field(description="Stdout bytes read (at most maxOutputBytes + 1).")
    stderr_bytes: int = Field(description="Stderr bytes the worker wrote (only a tail is kept).")
    usage: Usage | None = Field(description="Usage the worker reported; null when not reported.")
    usage_rejected: list[str] = Field(
        default_factory=list,
        description="Reported usage items not kept in usage (wrong type, unknown key), one each.",
    )
    model: ModelClaim
    evidence_kind: str | None = Field(
        description="The response's evidenceKind ('protocol-fixture' for fixture workers)."
    )
    failure: FailureClass | None = Field(description="Why the call failed; null on success.")
    failure_detail: str | None = Field(description="One line explaining the failure.")
    identity_changes: list[str] = Field(description="Changes found by the identity checks.")
    raw_response: str | None = Field(
        description="The stdout of a rejected call, capped; null on success or without output."
    )
    raw_response_truncated: bool = Field(description="Whether rawResponse was cut at its cap.")
    stderr_tail: str = Field(description="The last bytes of stderr, capped.")
    prompt_version: str = Field(description="The role-prompt version in effect.")
    prompt_hash: str = Field(description="SHA-256 of the role prompt in effect.")


@dataclass(frozen=True, slots=True)
class RoleCall:
    """A receipt and, when the call succeeded, the validated response object."""

    receipt: RoleReceipt
    response: dict[str, Any] | None

    @property
    def ok(self) -> bool:
        """Whether the call succeeded."""
        return self.receipt.failure is None


def check_bounds(timeout_ms: int, max_output_bytes: int, attempt: int = 1) -> None:
    """Refuse budgets outside the transport's limits with a :class:`UsageError`."""
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
        raise UsageError(f"timeout {timeout_ms!r} must be an integer number of milliseconds")
    if not 0 < timeout_ms <= MAX_TIMEOUT_MS:
        raise UsageError(f"timeout {timeout_ms} ms must be between 1 and {MAX_TIMEOUT_MS} ms")
    if isinstance(max_output_bytes, bool) or not isinstance(max_output_bytes, int):
        raise UsageError(f"output bound {max_output_bytes!r} must be an integer number of bytes")
    if not 0 < max_output_bytes <= MAX_OUTPUT_BYTES_CAP:
        raise UsageError(
            f"output bound {max_output_bytes} bytes must be between 1 and {MAX_OUTPUT_BYTES_CAP}"
        )
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise UsageError(f"attempt {attempt!r} must be an integer of at least 1")


@dataclass(frozen=True, slots=True)
class WorkerBounds:
    """The two bounds of every worker call: how long it may take and how much it may print."""

    timeout_ms: int = DEFAULT_TIMEOUT_MS
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES

    def check(self, attempt: int = 1) -> None:
        """Refuse bounds (or an attempt number) outside the transport's limits."""
        check_bounds(self.timeout_ms, self.max_output_bytes, attempt)


DEFAULT_BOUNDS: Final = WorkerBounds()


@dataclass(frozen=True, slots=True)
class _Parsed:
    value: dict[str, Any] | None
    failure: FailureClass | None
    detail: str | None


def parse_one_object(data: bytes) -> _Parsed:
    """Parse stdout as exactly one strict JSON object (surrounding whitespace allowed)."""
    if not data.strip():
        return _Parsed(None, "empty-output", "the worker printed nothing on stdout")
    try:
        value = loads_strict(data, "worker stdout")
    except JSONInputError as exc:
        if _holds_several_values(data):
            return _Parsed(None, "multiple-json", "stdout holds more than one JSON value")
        return _Parsed(None, "invalid-json", str(exc))
    if not isinstance(value, dict):
        return _Parsed(
            None, "invalid-json", f"stdout is a JSON {type(value).__name__}, not an object"
        )
    return _Parsed(value, None, None)


def _holds_several_values(data: bytes) -> bool:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    decoder = json.JSONDecoder()
    position = len(text) - len(text.lstrip())
    count = 0
    while position < len(text):
        try:
            _, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            return False
        count += 1
        position = end + (len(text[end:]) - len(text[end:].lstrip()))
    return count > 1


_USAGE_FIELDS: Final = ("inputTokens", "outputTokens", "costUSD")


def _usage_value_ok(name: str, value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if name == "costUSD":
        return value >= 0
    return isinstance(value, int) and value >= 0


def _describe_json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def reported_usage(value: Mapping[str, Any] | None) -> tuple[Usage | None, list[str]]:
    """The usage a response reports, field by field, and every reported item not kept.

    Valid fields are kept whatever their neighbours hold; a field of the wrong type and a key
    the protocol does not define are listed (never silently turned into unknown). Usage is
    ``None`` when the response reports none, or when nothing it reported could be kept.
    """
    if value is None or "usage" not in value or value["usage"] is None:
        return None, []
    reported = value["usage"]
    if not isinstance(reported, Mapping):
        kind = "an array" if isinstance(reported, list) else _describe_json(reported)
        return None, [f"usage: {kind} is not an object"]
    kept: dict[str, Any] = {}
    rejected: list[str] = []
    for key in sorted(reported, key=str):
        item = reported[key]
        if key not in _USAGE_FIELDS:
            rejected.append(f"{key}: not a usage field ({_describe_json(item)} ignored)")
        elif _usage_value_ok(key, item):
            kept[key] = item
        else:
            expected = "a non-negative number" if key == "costUSD" else "a non-negative integer"
            rejected.append(f"{key}: {_describe_json(item)} is not {expected}")
    if not kept and rejected:
        return None, rejected
    try:
        return Usage.model_validate(kept), rejected
    except ValidationError as exc:
        # Unreachable with the checks above; kept so a model change cannot crash a call.
        return None, [*rejected, f"usage: {exc.errors()[0]['msg']}"]


def _claimed_model(value: Mapping[str, Any] | None) -> str | None:
    claimed = value.get("model") if value is not None else None
    # A blank claim names no model: unknown is null, never "".
    if not isinstance(claimed, str) or not claimed.strip():
        return None
    return redact_secrets(claimed)


def _adapter_error(value: Mapping[str, Any] | None) -> str | None:
    """The message of an adapter's ``{"error": {"message": ...}}`` report, if present."""
    error = value.get("error") if value is not None else None
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        kind = error.get("kind")
        return f"{kind}: {error['message']}" if isinstance(kind, str) else error["message"]
    return None


def _decode(data: bytes, cap: int) -> tuple[str, bool]:
    # What a worker printed may carry what its provider echoed: no bearer token is kept.
    text = redact_secrets(data.decode("utf-8", "replace"))
    return (text[:cap], True) if len(text) > cap else (text, False)


def call_worker(
    argv: Sequence[str],
    role: str,
    payload: dict[str, Any],
    *,
    cwd: Path,
    bounds: WorkerBounds = DEFAULT_BOUNDS,
    attempt: int = 1,
    identity: WorkerIdentity | None = None,
    env: Mapping[str, str] | None = None,
) -> RoleCall:
    """Make one call of ``role`` to the worker ``argv`` in ``cwd``; never retries.

    Raises (before anything runs) :class:`UsageError` for bad bounds, an unknown role, an argv
    that differs from ``identity``'s, or a payload that already carries ``transportBudget``,
    and :class:`SchemaError` for a payload that does not match the role. Everything after that
    is recorded in the receipt.
    """
    checked_role = check_role(role)
    bounds.check(attempt)
    if not isinstance(payload, dict):
        raise UsageError("the role payload must be a JSON object")
    if "transportBudget" in payload:
        raise UsageError("the role payload must not carry transportBudget; the transport adds it")
    validate_payload(checked_role, payload)
    argv_list = list(argv)
    if not argv_list:
        raise UsageError("worker argv is empty")
    if identity is not None and argv_list != identity.declared_argv:
        raise UsageError("worker argv differs from the argv its identity was bound for")
    cwd = Path(os.path.abspath(cwd))
    input_bytes = json_bytes(payload)
    budget = {"maxOutputBytes": bounds.max_output_bytes, "timeoutMs": bounds.timeout_ms}
    stdin = canonical_bytes({**payload, "transportBudget": budget})
    base: dict[str, Any] = {
        "role": checked_role,
        "attempt": attempt,
        "timeout_ms": bounds.timeout_ms,
        "max_output_bytes": bounds.max_output_bytes,
        "input_bytes": input_bytes,
        "prompt_version": PROMPT_VERSION,
        "prompt_hash": prompt_hash(checked_role),
    }

    executable: str | None = None
    if identity is not None:
        fresh, changes = rebind_identity(identity, cwd=cwd)
        if changes or fresh is None:
            return RoleCall(_not_launched(base, changes), None)
        # Execute exactly the file that was hashed, keeping argv[0] as declared.
        executable = fresh.launcher.path

    result = run_bounded(
        argv_list,
        cwd=cwd,
        input_bytes=stdin,
        timeout_s=bounds.timeout_ms / 1000,
        max_stdout=bounds.max_output_bytes,
        stderr_tail=STDERR_TAIL_CAP,
        env=env,
        executable=executable,
    )
    return _finish(checked_role, payload, base, result, identity, cwd)


def _not_launched(base: dict[str, Any], changes: list[str]) -> RoleReceipt:
    """The receipt of a call refused because the bound identity changed before launch."""
    return RoleReceipt(
        **base,
        spawned=False,
        exit_code=None,
        signal=None,
        duration_ms=0,
        output_bytes=None,
        stdout_bytes=0,
        stderr_bytes=0,
        usage=None,
        model=ModelClaim(claimed=None),
        evidence_kind=None,
        failure="identity-changed",
        failure_detail="the bound identity changed before launch; not launched",
        identity_changes=changes,
        raw_response=None,
        raw_response_truncated=False,
        stderr_tail="",
    )


def _finish(
    role: Role,
    payload: Mapping[str, Any],
    base: dict[str, Any],
    result: ProcessResult,
    identity: WorkerIdentity | None,
    cwd: Path,
) -> RoleCall:
    parsed, failure, detail = _process_outcome(result, base)
    changes: list[str] = []
    if identity is not None and result.spawned:
        _, changes = rebind_identity(identity, cwd=cwd)
        if changes:
            before = f"; the call itself: {failure}" if failure else ""
            failure = "identity-changed"
            detail = f"the bound identity changed during the call; response rejected{before}"
    value = parsed.value
    if failure is None and value is not None:
        failure, detail = _check_response(role, payload, value, base["max_output_bytes"])
    raw: str | None = None
    truncated = False
    if failure is not None and result.stdout:
        raw, truncated = _decode(result.stdout, RAW_RESPONSE_CAP)
    evidence = value.get("evidenceKind") if value is not None else None
    usage, usage_rejected = reported_usage(value)
    receipt = RoleReceipt(
        **base,
        spawned=result.spawned,
        exit_code=result.exit_code,
        signal=result.signal_number,
        duration_ms=result.duration_ms,
        output_bytes=json_bytes(value) if value is not None else None,
        stdout_bytes=len(result.stdout),
        stderr_bytes=result.output_bytes,
        usage=usage,
        usage_rejected=usage_rejected,
        model=ModelClaim(claimed=_claimed_model(value)),
        evidence_kind=evidence if isinstance(evidence, str) else None,
        failure=failure,
        failure_detail=redact_secrets(detail) if detail is not None else None,
        identity_changes=changes,
        raw_response=raw,
        raw_response_truncated=truncated,
        stderr_tail=_decode(result.output_tail, STDERR_TAIL_CAP)[0],
    )
    return RoleCall(receipt, value if failure is None else None)


def _process_outcome(
    result: ProcessResult, base: dict[str, Any]
) -> tuple[_Parsed, FailureClass | None, str | None]:
    """The parsed stdout and how the process itself failed: spawn, timeout, size, exit, parse."""
    if not result.spawned:
        return _Parsed(None, None, None), "spawn-failed", result.spawn_error
    if result.timed_out:
        detail = f"no exit within {base['timeout_ms']} ms; the process group was killed"
        return _Parsed(None, None, None), "timeout", detail
    if result.stdout_overflow:
        detail = f"stdout passed {base['max_output_bytes']} bytes; the read stopped there"
        return _Parsed(None, None, None), "output-too-large", detail
    parsed = parse_one_object(result.stdout)
    if result.exit_code != 0:
        status = (
            f"exit code {result.exit_code}"
            if result.exit_code is not None
            else f"signal {result.signal_number}"
        )
        reported = _adapter_error(parsed.value)
        detail = f"the worker ended with {status}" + (f": {reported}" if reported else "")
        return parsed, "nonzero-exit", detail
    return parsed, parsed.failure, parsed.detail


def _check_response(
    role: Role, payload: Mapping[str, Any], value: dict[str, Any], max_output_bytes: int
) -> tuple[FailureClass | None, str | None]:
    """A parsed response over the kept-size bound, or not valid for the role."""
    size = json_bytes(value)
    if size > max_output_bytes:
        # The bound is on what lorelab keeps and counts (the canonical JSON), not only on the
        # raw stdout: "1e9" is 3 bytes written and 12 kept.
        return "output-too-large", (
            f"the parsed response is {size} bytes of canonical JSON, over the "
            f"{max_output_bytes}-byte bound"
        )
    try:
        validate_response(role, value, payload=payload)
    except SchemaError as exc:
        return "invalid-response", str(exc)
    return None, None
