"""What every shipped tool adapter shares: read one payload, run one tool bounded, answer once.

An adapter prints exactly one JSON object on stdout. On success it is the role's response
(exit 0). On failure it is ``{"error": {"kind", "message"}, "usage", "model"}`` with exit 1 (2
for a payload it cannot read), so the transport records ``nonzero-exit`` with the reason and
still sees any usage the tool reported for the tokens it spent.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NoReturn

from lorelab._model import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_MS
from lorelab.errors import JSONInputError, LorelabError
from lorelab.io import MIB, ProcessResult, canonical_bytes, loads_strict, run_bounded
from lorelab.workers._tools import (
    ToolSpec,
    choose_tool,
    describe_choice,
    find_executable,
    split_path,
)
from lorelab.workers.prompts import build_prompt
from lorelab.workers.roles import MAX_TIMEOUT_MS, Usage, validate_payload
from lorelab.workers.transport import WorkerBounds

PAYLOAD_LIMIT: Final = 32 * MIB
TOOL_STDOUT_LIMIT: Final = 64 * MIB
# Leave the adapter time to report before the transport kills the process group.
TIMEOUT_MARGIN_MS: Final = 5_000
MIN_TOOL_TIMEOUT_MS: Final = 1_000
_RESERVED_KEYS: Final = ("usage", "model", "evidenceKind")
_FENCE: Final = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL)


class AdapterFailure(Exception):
    """Why an adapter could not answer, with whatever usage the tool reported."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        usage: Usage | None = None,
        model: str | None = None,
        exit_code: int = 1,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.usage = usage
        self.model = model
        self.exit_code = exit_code


@dataclass(frozen=True, slots=True)
class Budget(WorkerBounds):
    """The transport budget the payload carried (defaults when called without one)."""

    @property
    def tool_timeout_s(self) -> float:
        """Seconds the adapter gives its tool: the budget less a margin for reporting."""
        return max(self.timeout_ms - TIMEOUT_MARGIN_MS, MIN_TOOL_TIMEOUT_MS) / 1000


@dataclass(frozen=True, slots=True)
class Request:
    """One validated payload and the options the adapter was started with."""

    role: str
    payload: dict[str, Any]
    budget: Budget
    options: argparse.Namespace
    cwd: Path


@dataclass(frozen=True, slots=True)
class Answer:
    """A role response, and what the tool reported about itself."""

    response: dict[str, Any]
    usage: Usage | None = None
    model: str | None = None
    notes: list[str] = field(default_factory=list)


def usage_or_none(
    input_tokens: int | None, output_tokens: int | None, cost_usd: float | None
) -> Usage | None:
    """A :class:`Usage`, or ``None`` when the tool reported nothing at all."""
    if input_tokens is None and output_tokens is None and cost_usd is None:
        return None
    return Usage.model_validate(
        {"inputTokens": input_tokens, "outputTokens": output_tokens, "costUSD": cost_usd}
    )


def as_count(value: Any) -> int | None:
    """A non-negative integer the tool reported, or ``None``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def as_cost(value: Any) -> float | None:
    """A finite non-negative cost the tool reported, or ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    try:
        cost = float(value)
    except OverflowError:  # an integer beyond any float: not a usable cost
        return None
    return cost if math.isfinite(cost) else None


def sum_counts(values: Sequence[int | None]) -> int | None:
    """The sum of the reported counts; ``None`` when none was reported."""
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def extract_json_answer(
    text: str, tool: str, *, usage: Usage | None = None, model: str | None = None
) -> dict[str, Any]:
    """The one JSON object in a model's answer: the whole text, or one fenced ```json block.

    A refusal carries ``usage`` and ``model``: the call was made (and paid for) all the same.
    """
    stripped = text.strip()
    candidates = [stripped]
    fenced = _FENCE.findall(stripped)
    if len(fenced) == 1:
        candidates.append(fenced[0])
    for candidate in candidates:
        try:
            value = loads_strict(candidate.encode("utf-8"), f"{tool} answer")
        except JSONInputError:
            continue
        if isinstance(value, dict):
            return value
    preview = stripped[:200].replace("\n", " ")
    raise AdapterFailure(
        "invalid-answer",
        f"the {tool} answer is not one JSON object: {preview!r}",
        usage=usage,
        model=model,
    )


def tool_executable(request: Request, spec: ToolSpec) -> str:
    """The tool's executable, found as the identity binder finds it, as an absolute path.

    Named by the adapter's option, else its environment variable, else the default name; a
    relative name resolves against the trial cwd and a bare one along PATH (relative entries
    against the trial cwd), so the file that runs is the file the identity bound.
    """
    declared, source = choose_tool(spec, getattr(request.options, spec.dest, None), os.environ)
    found = find_executable(declared, request.cwd, split_path(os.environ.get("PATH", os.defpath)))
    if found is None:
        raise AdapterFailure(
            "tool-missing",
            f"cannot find {spec.tool}: {describe_choice(spec, declared, source)} names no "
            f"executable file; install it, or set {spec.option} or {spec.variable}",
        )
    return str(found.path)


def run_tool(
    argv: Sequence[str],
    *,
    request: Request,
    stdin: bytes | None,
    tool: str,
    variable: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
) -> ProcessResult:
    """Run the tool in the adapter's process group (so the transport's kill reaches it).

    The tool runs in the trial cwd unless ``cwd`` says otherwise, with the adapter's
    environment unless ``env`` says otherwise, for at most the budget's tool timeout unless
    ``timeout_s`` (what is left of it) says otherwise.
    """
    limit = request.budget.tool_timeout_s if timeout_s is None else timeout_s
    result = run_bounded(
        argv,
        cwd=request.cwd if cwd is None else cwd,
        input_bytes=stdin,
        timeout_s=limit,
        max_stdout=TOOL_STDOUT_LIMIT,
        env=os.environ if env is None else env,
        new_session=False,
    )
    if not result.spawned:
        raise AdapterFailure(
            "tool-missing",
            f"cannot start {tool} ({result.spawn_error}); install it or set {variable}",
        )
    if result.timed_out:
        raise AdapterFailure("tool-timeout", f"{tool} did not finish within {limit:.0f} s")
    if result.stdout_overflow:
        raise AdapterFailure("tool-output-too-large", f"{tool} printed more than 64 MiB")
    return result


def run_on_prompt(request: Request, argv: Sequence[str], spec: ToolSpec) -> ProcessResult:
    """Run an agent CLI (see :func:`run_tool`) with the role prompt on its stdin."""
    prompt = build_prompt(request.role, request.payload).encode("utf-8")
    return run_tool(argv, request=request, stdin=prompt, tool=spec.tool, variable=spec.variable)


def json_answer(text: str, tool: str, *, usage: Usage | None, model: str | None) -> Answer:
    """The answer whose text holds the role's one JSON object (see :func:`extract_json_answer`)."""
    response = extract_json_answer(text, tool, usage=usage, model=model)
    return Answer(response=response, usage=usage, model=model)


def stderr_excerpt(result: ProcessResult) -> str:
    """The last line or so of the tool's stderr, for an error message."""
    tail = result.output_tail.decode("utf-8", "replace").strip()
    return tail[-300:].replace("\n", " | ") if tail else "(no stderr)"


def _read_request(argv: Sequence[str], parser: argparse.ArgumentParser) -> Request:
    options = parser.parse_args(list(argv))
    data = sys.stdin.buffer.read(PAYLOAD_LIMIT + 1)
    if len(data) > PAYLOAD_LIMIT:
        raise AdapterFailure("invalid-payload", "the payload exceeds 32 MiB", exit_code=2)
    try:
        payload = loads_strict(data, "payload")
        if not isinstance(payload, dict):
            raise AdapterFailure("invalid-payload", "the payload is not a JSON object", exit_code=2)
        role = payload.get("role")
        if not isinstance(role, str):
            raise AdapterFailure("invalid-payload", "the payload names no role", exit_code=2)
        validate_payload(role, payload)
    except LorelabError as exc:
        raise AdapterFailure("invalid-payload", str(exc), exit_code=2) from None
    budget = payload.get("transportBudget") or {}
    timeout_ms = budget.get("timeoutMs", DEFAULT_TIMEOUT_MS)
    max_output = budget.get("maxOutputBytes", DEFAULT_MAX_OUTPUT_BYTES)
    return Request(
        role=role,
        payload=payload,
        budget=Budget(min(timeout_ms, MAX_TIMEOUT_MS), max_output),
        options=options,
        cwd=Path.cwd(),
    )


def _emit(obj: Mapping[str, Any]) -> None:
    sys.stdout.buffer.write(canonical_bytes(obj) + b"\n")
    sys.stdout.flush()


def _fail(failure: AdapterFailure, max_output: int) -> NoReturn:
    report: dict[str, Any] = {"error": {"kind": failure.kind, "message": failure.message[:2000]}}
    if failure.usage is not None:
        report["usage"] = failure.usage.model_dump(mode="json", by_alias=True)
    if failure.model is not None:
        report["model"] = failure.model
    if len(canonical_bytes(report)) + 1 > max_output:
        report = {"error": {"kind": failure.kind, "message": failure.message[:100]}}
    print(f"lorelab adapter: {failure.kind}: {failure.message}", file=sys.stderr)
    _emit(report)
    raise SystemExit(failure.exit_code)


def finish(answer: Answer, budget: Budget) -> dict[str, Any]:
    """The response to print: the answer without reserved keys, plus the tool's own report."""
    response = dict(answer.response)
    for key in _RESERVED_KEYS:
        if key in response:
            # Only the tool's own report may say what was used; a model's claim is dropped.
            print(f"lorelab adapter: dropped {key!r} from the model's answer", file=sys.stderr)
            del response[key]
    if answer.usage is not None:
        response["usage"] = answer.usage.model_dump(mode="json", by_alias=True)
    if answer.model is not None:
        response["model"] = answer.model
    size = len(canonical_bytes(response)) + 1
    if size > budget.max_output_bytes:
        raise AdapterFailure(
            "answer-too-large",
            f"the answer is {size} bytes, over the {budget.max_output_bytes}-byte output bound",
            usage=answer.usage,
            model=answer.model,
        )
    return response


def run_adapter(
    parser: argparse.ArgumentParser,
    handle: Callable[[Request], Answer],
    argv: Sequence[str] | None = None,
) -> NoReturn:
    """Read the payload, call ``handle``, print one JSON object, exit 0 (or 1/2 on failure)."""
    max_output = DEFAULT_MAX_OUTPUT_BYTES
    try:
        request = _read_request(sys.argv[1:] if argv is None else argv, parser)
        max_output = request.budget.max_output_bytes
        answer = handle(request)
        for note in answer.notes:
            print(f"lorelab adapter: {note}", file=sys.stderr)
        _emit(finish(answer, request.budget))
    except AdapterFailure as failure:
        _fail(failure, max_output)
    raise SystemExit(0)


def agent_main(spec: ToolSpec, doc: str | None, handle: Callable[[Request], Answer]) -> NoReturn:
    """An agent adapter's entry point: ``--model`` and ``--bin``, then one role call."""
    run_adapter(base_parser(f"{spec.tool}-adapter", doc or ""), handle)


def base_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The options every agent adapter takes: ``--model`` and ``--bin``."""
    # No abbreviations: the identity binder reads --bin from the argv exactly as named.
    parser = argparse.ArgumentParser(prog=prog, description=description, allow_abbrev=False)
    parser.add_argument("--model", "-m", help="The model to request from the tool.")
    parser.add_argument("--bin", help="Path of the tool's executable (overrides the variable).")
    return parser
