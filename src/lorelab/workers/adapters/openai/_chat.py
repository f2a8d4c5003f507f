"""Chat completions in the server's own dialect of schema-constrained output, read strictly.

Dialects (``--schema-dialect``): ``json_schema`` (OpenAI, vLLM, Ollama, LM Studio:
``response_format {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}``),
``llama-cpp`` (llama-cpp-python's server, which refuses ``json_schema`` with HTTP 500:
``{"type": "json_object", "schema": ...}``) and ``none`` (no constraint: the prompt alone asks
for the JSON, and one fenced block is accepted). The answer is parsed as strict JSON except
that raw control characters inside strings are accepted (a grammar-constrained sampler lets raw
newlines into strings), then validated against the role's model by the caller.

Completions are streamed by default (``"stream": true``, with ``stream_options.include_usage``):
a server that streams writes each token as it is made, so it sees the connection close when the
adapter gives up, and stops generating (llama-cpp-python's server checks after every chunk; a
non-streamed completion runs to its end however long ago the client left). A server that does
not report usage in a stream (llama-cpp-python) leaves the usage unknown (``null``);
``--no-stream`` asks for one JSON reply instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from lorelab.errors import JSONInputError
from lorelab.io import loads_strict
from lorelab.workers.adapters._agent import AdapterFailure, as_count, usage_or_none
from lorelab.workers.adapters.openai._http import Endpoint, HttpFailure, request
from lorelab.workers.roles import Usage

Dialect = Literal["json_schema", "llama-cpp", "none"]
DIALECTS: Final = ("json_schema", "llama-cpp", "none")
SYSTEM_PROMPT: Final = "You are a careful software engineer. Answer with one JSON object only."
_FENCE: Final = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL)
_CONTROL_IN_TEXT: Final = re.compile(r"[\x00-\x1f]")


def _array(items: dict[str, Any], *, min_items: int, max_items: int | None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "items": items, "minItems": min_items}
    if max_items is not None:
        schema["maxItems"] = max_items
    return schema


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _limit(payload: Mapping[str, Any], key: str) -> int | None:
    limits = payload.get("limits")
    value = limits.get(key) if isinstance(limits, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def role_schema(role: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON Schema the server constrains a role's answer to (limits from the payload)."""
    text = {"type": "string"}
    if role == "architect":
        case = _object({"name": text, "intent": text})
        return _object({"cases": _array(case, min_items=1, max_items=_limit(payload, "maxCases"))})
    if role == "author":
        entry = _object({"path": text, "content": text})
        return _object({"files": _array(entry, min_items=1, max_items=_limit(payload, "maxFiles"))})
    if role == "reviewer":
        verdict = {"type": "string", "enum": ["approve", "reject"]}
        return _object({"verdict": verdict, "reasons": _array(text, min_items=0, max_items=8)})
    if role == "host":
        edit = _object({"path": text, "search": text, "replace": text})
        return _object({"summary": text, "edits": _array(edit, min_items=0, max_items=8)})
    raise AdapterFailure("unsupported-role", f"the openai adapter does not play {role!r}")


def response_format(dialect: Dialect, role: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The ``response_format`` field of the request in ``dialect`` (``None``: unconstrained)."""
    if dialect == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": f"lorelab_{role}", "schema": schema, "strict": True},
        }
    if dialect == "llama-cpp":
        return {"type": "json_object", "schema": schema}
    return None


@dataclass(frozen=True, slots=True)
class ChatSettings:
    """What every completion of one adapter call sends."""

    endpoint: Endpoint
    model: str
    key: str | None
    dialect: Dialect
    max_tokens: int
    temperature: float
    stream: bool = True


@dataclass(frozen=True, slots=True)
class Completion:
    """One completion: the answer text, what the server reported, and the raw exchange."""

    text: str
    usage: Usage | None
    model: str | None
    finish_reason: str | None
    exchange: dict[str, Any]


def request_body(
    settings: ChatSettings, role: str, prompt: str, schema: dict[str, Any]
) -> dict[str, Any]:
    """The ``/chat/completions`` request body (no key: that goes in a header)."""
    body: dict[str, Any] = {
        "model": settings.model,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": prompt},
        ],
        "max_tokens": settings.max_tokens,
        "temperature": settings.temperature,
        "stream": settings.stream,
    }
    if settings.stream:
        body["stream_options"] = {"include_usage": True}
    fmt = response_format(settings.dialect, role, schema)
    if fmt is not None:
        body["response_format"] = fmt
    return body


def _error_text(body: bytes) -> str:
    text = body.decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except ValueError:
        return text[:300]
    error = value.get("error") if isinstance(value, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if isinstance(message, str):
        return message[:300]
    if isinstance(error, str):
        return error[:300]
    return text[:300]


def _usage(value: Any) -> Usage | None:
    if not isinstance(value, dict):
        return None
    return usage_or_none(
        as_count(value.get("prompt_tokens")), as_count(value.get("completion_tokens")), None
    )


def read_completion(status: int, body: bytes, overflow: bool, limit: int) -> Completion:
    """Read one ``/chat/completions`` reply; every way it can be unusable is an AdapterFailure."""
    if overflow:
        raise AdapterFailure(
            "server-reply-too-large", f"the server's reply is over the {limit}-byte bound"
        )
    if status != 200:
        raise AdapterFailure("server-error", f"HTTP {status}: {_error_text(body)}")
    try:
        reply = json.loads(body.decode("utf-8"))
    except ValueError:
        raise AdapterFailure("server-reply-invalid", "the reply is not JSON") from None
    if not isinstance(reply, dict):
        raise AdapterFailure("server-reply-invalid", "the reply is not a JSON object")
    usage = _usage(reply.get("usage"))
    model = reply.get("model") if isinstance(reply.get("model"), str) else None
    model = model.strip() or None if model is not None else None
    choices = reply.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    text = message.get("content") if isinstance(message, dict) else None
    if not isinstance(text, str):
        raise AdapterFailure(
            "server-reply-invalid",
            "the reply has no choices[0].message.content",
            usage=usage,
            model=model,
        )
    finish = first.get("finish_reason") if isinstance(first, dict) else None
    return Completion(
        text, usage, model, finish if isinstance(finish, str) else None, {"reply": reply}
    )


def _chunk(data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data.decode("utf-8"))
    except ValueError:
        raise AdapterFailure("server-reply-invalid", "a streamed chunk is not JSON") from None
    if not isinstance(value, dict):
        raise AdapterFailure("server-reply-invalid", "a streamed chunk is not a JSON object")
    if "error" in value:
        raise AdapterFailure("server-error", f"in the stream: {_error_text(data)}")
    return value


def read_stream(events: tuple[bytes, ...], overflow: bool, limit: int) -> Completion:
    """Read a streamed ``/chat/completions`` reply: the deltas' content joined, the first named
    model, the last finish reason, and the usage of the chunk that reports it (else ``None``)."""
    if overflow:
        raise AdapterFailure(
            "server-reply-too-large", f"the server's reply is over the {limit}-byte bound"
        )
    parts: list[str] = []
    model: str | None = None
    finish: str | None = None
    usage: Usage | None = None
    seen_choice = False
    for data in events:
        chunk = _chunk(data)
        named = chunk.get("model")
        if model is None and isinstance(named, str) and named.strip():
            model = named.strip()
        usage = _usage(chunk.get("usage")) or usage
        choices = chunk.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(first, dict):
            continue
        seen_choice = True
        delta = first.get("delta")
        content = delta.get("content") if isinstance(delta, dict) else None
        if isinstance(content, str):
            parts.append(content)
        if isinstance(first.get("finish_reason"), str):
            finish = first["finish_reason"]
    if not seen_choice:
        raise AdapterFailure(
            "server-reply-invalid", "the stream has no choices", usage=usage, model=model
        )
    text = "".join(parts)
    reply = {
        "model": model,
        "choices": [{"message": {"content": text}, "finish_reason": finish}],
        "usage": usage.model_dump(mode="json", by_alias=True) if usage else None,
        "streamedChunks": len(events),
    }
    return Completion(text, usage, model, finish, {"reply": reply})


def complete(
    settings: ChatSettings,
    role: str,
    prompt: str,
    schema: dict[str, Any],
    *,
    timeout_s: float,
    limit: int,
) -> Completion:
    """One completion request (never retried)."""
    body = request_body(settings, role, prompt, schema)
    try:
        reply = request(
            settings.endpoint,
            "POST",
            "/chat/completions",
            body=body,
            key=settings.key,
            timeout_s=timeout_s,
            limit=limit,
            stream=settings.stream,
        )
    except HttpFailure as failure:
        raise AdapterFailure(failure.kind, failure.message) from None
    if reply.events is not None:
        return read_stream(reply.events, reply.overflow, limit)
    return read_completion(reply.status, reply.body, reply.overflow, limit)


def parse_answer(text: str, completion: Completion, *, fenced: bool) -> dict[str, Any]:
    """The one JSON object of an answer: strict JSON (no duplicate keys, NaN or trailing text),
    except raw control characters inside strings; with ``fenced``, one fenced block too."""
    stripped = text.strip()
    candidates = [stripped]
    blocks = _FENCE.findall(stripped) if fenced else []
    if len(blocks) == 1:
        candidates.append(blocks[0])
    problem = "empty answer"
    for candidate in candidates:
        try:
            value = loads_strict(candidate.encode("utf-8"), "answer", control_in_strings=True)
        except JSONInputError as exc:
            problem = str(exc).removeprefix("answer: ")[:200]
            continue
        if isinstance(value, dict):
            return value
        problem = "the JSON value is not an object"
    if completion.finish_reason == "length":
        problem += " (the answer was cut at max_tokens)"
    preview = _CONTROL_IN_TEXT.sub(" ", stripped[:160])
    raise AdapterFailure(
        "invalid-answer",
        f"the model's answer is not one JSON object: {problem}: {preview!r}",
        usage=completion.usage,
        model=completion.model,
    )
