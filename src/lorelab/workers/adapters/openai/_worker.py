"""The openai adapter's roles: architect, author and reviewer answered by one completion each,
the host by the agentless loop of :mod:`._host`.

Every completion's ``model`` is recorded; a server that names another model on a later
completion of the same call fails the call (``identity-changed``). The key (``OPENAI_API_KEY``
or the variable ``--api-key-env`` names) is read from the environment and removed from every
message the adapter prints.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass, field
from typing import Any, Final

from lorelab.errors import LorelabError
from lorelab.io import canonical_bytes
from lorelab.workers._secrets import redact_secrets
from lorelab.workers.adapters._agent import AdapterFailure, Answer, Request, sum_counts
from lorelab.workers.adapters.openai._chat import (
    DIALECTS,
    ChatSettings,
    Completion,
    complete,
    parse_answer,
    role_schema,
)
from lorelab.workers.adapters.openai._http import RESPONSE_LIMIT, parse_base_url
from lorelab.workers.adapters.openai._serial import serialized
from lorelab.workers.prompts import build_prompt
from lorelab.workers.roles import Usage, validate_response

DEFAULT_KEY_VARIABLE: Final = "OPENAI_API_KEY"
# The answer budget of each role, in tokens: what its largest acceptable answer needs. The
# architect's grows with the cases it may plan; every budget is also capped by the call's output
# bound (a token is at least one byte of answer) and by --max-tokens when given.
ROLE_TOKENS: Final = {"reviewer": 384, "author": 2048, "host": 1536}
ARCHITECT_BASE_TOKENS: Final = 64
ARCHITECT_CASE_TOKENS: Final = 96
ARCHITECT_DEFAULT_CASES: Final = 8
ANSWER_ROLES: Final = ("architect", "author", "reviewer")
# Keep this much of the budget to report after the last completion.
REPORT_MARGIN_S: Final = 2.0


def build_parser(description: str) -> argparse.ArgumentParser:
    """The adapter's options (no abbreviations: the identity binder reads them as named)."""
    parser = argparse.ArgumentParser(
        prog="openai-adapter", description=description, allow_abbrev=False
    )
    parser.add_argument("--model", "-m", required=True, help="The model name to request.")
    parser.add_argument("--base-url", required=True, help="The API base, e.g. http://h:8000/v1.")
    parser.add_argument(
        "--api-key-env",
        default=None,
        help=f"The variable holding the key (default {DEFAULT_KEY_VARIABLE}; unset: no key).",
    )
    parser.add_argument("--model-file", default=None, help="The local model file (bound only).")
    parser.add_argument("--schema-dialect", choices=DIALECTS, default="json_schema")
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help="A ceiling on each completion's max_tokens (default: each role's answer budget).",
    )
    parser.add_argument(
        "--serialize-calls",
        action="store_true",
        help="One completion at a time to this base URL across this user's adapter processes.",
    )
    parser.add_argument(
        "--no-stream",
        dest="stream",
        action="store_false",
        help="Ask for one JSON reply instead of a stream (a server then cannot see a timed-out "
        "call leave, and generates on).",
    )
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--host-attempts", type=int, default=1, help="Edit rounds per host call.")
    parser.add_argument("--host-context-bytes", type=int, default=8_000)
    parser.add_argument("--host-max-files", type=int, default=6)
    return parser


def api_key(options: argparse.Namespace, env: dict[str, str] | os._Environ[str]) -> str | None:
    """The key from the named variable (``None``: no key is sent)."""
    variable = options.api_key_env or DEFAULT_KEY_VARIABLE
    value = env.get(variable) or None
    if value is None and options.api_key_env:
        raise AdapterFailure("key-missing", f"--api-key-env {variable}: the variable is not set")
    return value


def redact(text: str, key: str | None) -> str:
    """``text`` with the key (and its last 8 characters, as providers echo them) and every
    bearer-token shape removed."""
    return redact_secrets(text, key)


@dataclass(slots=True)
class Session:
    """What one adapter call has used and seen: summed usage, the models named, the deadline."""

    settings: ChatSettings
    deadline: float
    max_output_bytes: int
    input_tokens: list[int | None] = field(default_factory=list)
    output_tokens: list[int | None] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    completions: int = 0
    serialize: bool = False
    queue_wait_s: float = 0.0

    @property
    def usage(self) -> Usage | None:
        """The usage summed over this call's completions (``None`` when none was reported)."""
        if not self.completions:
            return None
        return _usage(sum_counts(self.input_tokens), sum_counts(self.output_tokens))

    @property
    def model(self) -> str | None:
        """The model the first completion named."""
        return self.models[0] if self.models else None

    def remaining_s(self) -> float:
        """Seconds left for completions and commands."""
        return self.deadline - time.monotonic() - REPORT_MARGIN_S

    def complete(self, role: str, prompt: str, schema: dict[str, Any]) -> Completion:
        """One completion within the deadline; its usage and model are recorded at once."""
        timeout = self.remaining_s()
        if timeout < 1:
            raise AdapterFailure(
                "tool-timeout", "no time left for a completion", usage=self.usage, model=self.model
            )
        try:
            completion = self._complete(role, prompt, schema, timeout)
        except AdapterFailure as failure:
            failure.usage = failure.usage or self.usage
            failure.model = failure.model or self.model
            raise
        self.completions += 1
        usage = completion.usage
        self.input_tokens.append(usage.input_tokens if usage else None)
        self.output_tokens.append(usage.output_tokens if usage else None)
        if completion.model is not None:
            if self.models and completion.model != self.models[0]:
                raise AdapterFailure(
                    "identity-changed",
                    f"the server named model {self.models[0]!r}, then {completion.model!r}",
                    usage=self.usage,
                    model=self.models[0],
                )
            if not self.models:
                self.models.append(completion.model)
        size = len(completion.text.encode("utf-8"))
        if size > self.max_output_bytes:
            raise AdapterFailure(
                "answer-too-large",
                f"the model's answer is {size} bytes, over the {self.max_output_bytes}-byte "
                "output bound",
                usage=self.usage,
                model=self.model,
            )
        return completion

    def _complete(
        self, role: str, prompt: str, schema: dict[str, Any], timeout: float
    ) -> Completion:
        if not self.serialize:
            return complete(
                self.settings, role, prompt, schema, timeout_s=timeout, limit=RESPONSE_LIMIT
            )
        ready_by = time.monotonic() + timeout - 1
        with serialized(self.settings.endpoint.base_url, ready_by) as waited:
            self.queue_wait_s += waited
            return complete(
                self.settings,
                role,
                prompt,
                schema,
                timeout_s=self.remaining_s(),
                limit=RESPONSE_LIMIT,
            )

    def describe(self) -> str:
        """The note every answer carries: completions, dialect, budget, stream, queue wait."""
        settings = self.settings
        text = (
            f"{self.completions} completion(s); dialect {settings.dialect}; max_tokens "
            f"{settings.max_tokens}; stream {settings.stream}"
        )
        if self.serialize:
            text += f"; queue wait {int(self.queue_wait_s * 1000)} ms"
        return text


def role_max_tokens(
    role: str, payload: dict[str, Any], max_output_bytes: int, ceiling: int | None
) -> int:
    """``max_tokens`` for one role's completion: its answer budget (:data:`ROLE_TOKENS`), at
    most the output bound in bytes and the ``--max-tokens`` ceiling."""
    if role == "architect":
        limits = payload.get("limits")
        cases = limits.get("maxCases") if isinstance(limits, dict) else None
        count = cases if isinstance(cases, int) and cases > 0 else ARCHITECT_DEFAULT_CASES
        budget = ARCHITECT_BASE_TOKENS + ARCHITECT_CASE_TOKENS * count
    else:
        budget = ROLE_TOKENS.get(role, ROLE_TOKENS["host"])
    budget = min(budget, max_output_bytes)
    return max(1, min(budget, ceiling) if ceiling is not None else budget)


def _usage(input_tokens: int | None, output_tokens: int | None) -> Usage | None:
    if input_tokens is None and output_tokens is None:
        return None
    return Usage.model_validate({"inputTokens": input_tokens, "outputTokens": output_tokens})


def open_session(request: Request, key: str | None) -> Session:
    """The settings and deadline of one call, from the options and the transport budget."""
    options = request.options
    if options.max_tokens is not None and options.max_tokens < 1:
        raise AdapterFailure("invalid-option", "--max-tokens must be at least 1", exit_code=2)
    settings = ChatSettings(
        endpoint=_endpoint(options.base_url),
        model=options.model,
        key=key,
        dialect=options.schema_dialect,
        max_tokens=role_max_tokens(
            request.role, request.payload, request.budget.max_output_bytes, options.max_tokens
        ),
        temperature=options.temperature,
        stream=options.stream,
    )
    return Session(
        settings=settings,
        deadline=time.monotonic() + request.budget.tool_timeout_s,
        max_output_bytes=request.budget.max_output_bytes,
        serialize=options.serialize_calls,
    )


def _endpoint(base_url: str) -> Any:
    try:
        return parse_base_url(base_url)
    except LorelabError as exc:
        raise AdapterFailure("invalid-option", str(exc), exit_code=2) from None


def answer_role(request: Request, session: Session) -> Answer:
    """Architect, author or reviewer: the shared role prompt, one constrained completion, the
    answer parsed strictly and validated against the role and the payload's limits."""
    schema = role_schema(request.role, request.payload)
    prompt = build_prompt(request.role, request.payload)
    completion = session.complete(request.role, prompt, schema)
    value = parse_answer(completion.text, completion, fenced=session.settings.dialect == "none")
    try:
        validate_response(request.role, value, payload=request.payload)
    except LorelabError as exc:
        raise AdapterFailure(
            "invalid-answer", str(exc), usage=session.usage, model=session.model
        ) from None
    notes = [session.describe()]
    return Answer(response=value, usage=session.usage, model=session.model, notes=notes)


def answer_bytes(value: dict[str, Any]) -> int:
    """The canonical size of an answer, as the output bound counts it."""
    return len(canonical_bytes(value)) + 1
