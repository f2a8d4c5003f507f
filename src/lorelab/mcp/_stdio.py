"""The stdio transport with a guard: every malformed request that has an id gets an error reply.

The SDK's stdio transport drops a line it cannot decode, so a client that sent truncated JSON,
a request without a method, non-object params, arguments nested too deep or holding a lone
surrogate, or an id that is not a string or an integer (which the SDK reads as a notification)
would wait forever. Each line is checked first (without recursion, so no depth can crash the
check): a sound line goes on to the SDK unchanged; a malformed one is answered with a JSON-RPC error
naming the problem (carrying the request's id when one can be read, else ``null``), logged in
one line, and the server keeps serving.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from io import TextIOWrapper
from typing import Any, Final

import anyio
import anyio.to_thread
from anyio.abc import ObjectSendStream
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from lorelab.io import MAX_DEPTH, describe_validation_error

LOG: Final = logging.getLogger("lorelab.mcp")
MAX_NESTING: Final = MAX_DEPTH
"""The deepest nesting of objects and arrays a message may have."""
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


@dataclass(frozen=True, slots=True)
class Refusal:
    """A line that is not a sound JSON-RPC message: its id (when readable) and the problem."""

    id: int | str | None
    has_id: bool
    code: int
    message: str

    def reply(self) -> JSONRPCError:
        return JSONRPCError(
            jsonrpc="2.0", id=self.id, error=ErrorData(code=self.code, message=self.message)
        )


def _tokens(text: str) -> Iterator[tuple[str, int, int]]:
    """The strings and brackets of JSON text, in order, as ``(kind, start, end)``: a string's
    kind is ``"`` (``text[start:end]`` with its quotes, only once it closes), a bracket's is
    itself. Brackets inside strings are none."""
    in_string = escaped = False
    start = 0
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                yield '"', start, index + 1
        elif char == '"':
            in_string = True
            start = index
        elif char in "{[}]":
            yield char, index, index + 1


def _nesting(text: str) -> int:
    """The deepest nesting of ``{`` and ``[`` outside strings (no recursion)."""
    depth = deepest = 0
    for kind, _, _ in _tokens(text):
        if kind in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif kind in "}]":
            depth -= 1
    return deepest


def _top_level_id(text: str) -> tuple[bool, int | str | None]:
    """Whether the top-level object names an ``id``, and its value when it is a valid id.

    Read by scanning, not parsing, so an id is found in a line that is truncated or nested too
    deep to parse.
    """
    depth = 0
    decoder = json.JSONDecoder()
    for kind, start, end in _tokens(text):
        if kind == '"' and depth == 1 and text[start:end] == '"id"':
            rest = text[end:].lstrip()
            if rest.startswith(":"):
                return True, _scalar_id(decoder, rest[1:].lstrip())
        elif kind in "{[":
            depth += 1
        elif kind in "}]":
            depth -= 1
    return False, None


def _scalar_id(decoder: json.JSONDecoder, text: str) -> int | str | None:
    if not text or text[0] not in '"-0123456789':
        return None
    try:
        value, _ = decoder.raw_decode(text)
    except ValueError:
        return None
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def _valid_id(value: Any) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    return {
        list: "an array",
        dict: "an object",
        str: "a string",
        bool: "a boolean",
        float: "a number with a fraction or an exponent",
        type(None): "null",
    }.get(type(value), "a number")


def _has_lone_surrogate(message: dict[str, Any]) -> bool:
    # Only a \uD800-\uDFFF escape makes one (the line was decoded from UTF-8); a surrogate
    # pair decodes to one character and encodes again.
    try:
        json.dumps(message, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _shape_problem(message: dict[str, Any]) -> str | None:
    if "method" not in message and "result" not in message and "error" not in message:
        return "Invalid request: it has no method"
    if "method" in message and not isinstance(message["method"], str):
        return f"Invalid request: method must be a string, not {_kind(message['method'])}"
    params = message.get("params")
    if params is not None and not isinstance(params, dict):
        return f"Invalid request: params must be an object, not {_kind(params)}"
    try:
        jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError as exc:
        return f"Invalid request: {describe_validation_error('message', exc)}"
    return None


def check_line(line: str) -> Refusal | None:
    """Why ``line`` is not a sound JSON-RPC message, or ``None`` when it is one."""
    text = line.strip()
    has_id, ident = _top_level_id(text)
    depth = _nesting(text)
    if depth > MAX_NESTING:
        return Refusal(
            ident,
            has_id,
            PARSE_ERROR,
            f"Parse error: the message is nested {depth} levels deep; at most {MAX_NESTING} "
            "are read",
        )
    try:
        message = json.loads(text)
    except ValueError as exc:
        return Refusal(ident, has_id, PARSE_ERROR, f"Parse error: not complete JSON ({exc})")
    if not isinstance(message, dict):
        return Refusal(
            None,
            True,
            INVALID_REQUEST,
            f"Invalid request: a message is an object, not {_kind(message)}",
        )
    has_id = "id" in message
    raw = message.get("id")
    ident = raw if _valid_id(raw) else None
    if has_id and ident is None:
        # Else the SDK reads it as a notification and nobody answers.
        return Refusal(
            None,
            True,
            INVALID_REQUEST,
            f"Invalid request: id must be a string or an integer, not {_kind(raw)}",
        )
    problem = _shape_problem(message)
    if problem is None and _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(message):
        problem = (
            "Invalid request: a string holds a lone surrogate escape (\\ud800-\\udfff "
            "without its pair), which is not Unicode text"
        )
    if problem is None:
        return None
    return Refusal(ident, has_id, INVALID_REQUEST, problem)


class GuardedLines:
    """The lines of ``source``, with every malformed one answered on ``replies`` instead."""

    def __init__(self, source: Any, replies: ObjectSendStream[JSONRPCError]) -> None:
        self._source = source
        self._replies = replies

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async with self._replies:
            async for line in self._source:
                if not line.strip():
                    continue
                refusal = check_line(line)
                if refusal is None:
                    yield line
                    continue
                LOG.warning("refused request id %r: %s", refusal.id, refusal.message)
                if refusal.has_id:
                    await self._replies.send(refusal.reply())


@contextlib.contextmanager
def claimed_stdin() -> Iterator[Any]:
    """The process's stdin as async UTF-8 lines; fd 0 reads the null device meanwhile.

    Children started while serving (candidate checks) can then never read the protocol's bytes.
    """
    private = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    wrapper = TextIOWrapper(
        os.fdopen(private, "rb", closefd=False), encoding="utf-8", errors="replace"
    )
    try:
        yield anyio.wrap_file(wrapper)
    finally:
        with contextlib.suppress(ValueError):
            wrapper.detach()
        os.dup2(private, 0)
        os.close(private)


class Wire:
    """The protocol's stdout as the SDK's transport writes it, ending quietly when the client
    is gone: once a write meets a broken pipe (the client closed its end or died mid-call),
    that is logged in one line and every later message is dropped, so the server goes on to
    finish the call in hand (its store writes complete) and ends when stdin closes."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.gone = False

    async def write(self, text: str) -> None:
        if not self.gone:
            await anyio.to_thread.run_sync(self._send, text.encode("utf-8"))

    async def flush(self) -> None:
        """Nothing is buffered: each write goes to the descriptor whole."""

    def _send(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self.gone:
            try:
                view = view[os.write(self._fd, view) :]
            except BrokenPipeError:
                self.gone = True
                LOG.warning("the client closed the connection; no more replies are sent")


@contextlib.contextmanager
def claimed_stdout() -> Iterator[Wire]:
    """The process's stdout as a :class:`Wire`; fd 1 writes to stderr meanwhile.

    Stray output of handlers and children (candidate checks) then never reaches the protocol.
    """
    private = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        os.dup2(2, 1)
        yield Wire(private)
    finally:
        os.dup2(private, 1)
        os.close(private)


__all__ = [
    "MAX_NESTING",
    "GuardedLines",
    "Refusal",
    "Wire",
    "check_line",
    "claimed_stdin",
    "claimed_stdout",
]
