"""A stand-in OpenAI-compatible server that replays recorded replies, for the openai adapter.

``ReplayServer(replies)`` listens on 127.0.0.1 (a free port) in a background thread. Each
``POST .../chat/completions`` gets the next :class:`Reply` in order (a recorded reply of a real
server, or a scripted fault: an HTTP 500, a body over a bound, malformed JSON, another model
name); ``GET .../models`` answers like llama.cpp's server (``models``), and ``GET /props``
(at the server's root, as llama.cpp's own server serves it) answers ``props`` when one is given,
else 404 (as llama-cpp-python's server does). ``serve(models=..., props=...)`` changes what is
served, as a server restarted with another model would; ``restart=(n, models, props)`` does it
right after the n-th completion is answered. A request with ``"stream": true`` gets a
200 reply as server-sent events (``data: {chunk}`` lines, then ``data: [DONE]``): one chunk with
the whole content, then one with the finish reason and, when ``stream_options.include_usage``
asks for it, the usage (as OpenAI and vLLM stream it). Every request is kept in ``requests``
(method, path, headers, body) so a test can check what the adapter sent, such as that no key
went with the preflight. ``echo_authorization`` makes every error reply repeat the
``Authorization`` header it received, and ``echo_in_model`` puts it in every reply's ``model``,
as a careless provider might: a planted key must still never reach a receipt.

Use it as a context manager::

    with ReplayServer([Reply.recorded(exchange)]) as server:
        ...  # --base-url server.base_url
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

MODELS_REPLY: Final = {
    "object": "list",
    "data": [{"id": "smollm2-135m-instruct", "object": "model", "owned_by": "me"}],
}


@dataclass(frozen=True, slots=True)
class Reply:
    """One reply to a completion request: status and raw body bytes."""

    status: int
    body: bytes

    @classmethod
    def json(cls, value: Any, status: int = 200) -> Reply:
        """A JSON reply."""
        return cls(status, json.dumps(value).encode("utf-8"))

    @classmethod
    def recorded(cls, exchange: dict[str, Any], *, model: str | None = None) -> Reply:
        """The reply of a recorded exchange (``{"request", "response": {"status", "body"}}``),
        optionally naming another ``model``."""
        response = exchange["response"]
        body = dict(response["body"])
        if model is not None:
            body["model"] = model
        return cls.json(body, status=int(response["status"]))


@dataclass(slots=True)
class Seen:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass(slots=True)
class _State:
    replies: list[Reply]
    echo_authorization: bool
    echo_in_model: bool = False
    models: dict[str, Any] | None = field(default_factory=lambda: dict(MODELS_REPLY))
    props: dict[str, Any] | None = None
    restart: tuple[int, dict[str, Any] | None, dict[str, Any] | None] | None = None
    completions: int = 0
    requests: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _events(reply: Reply, body: Any, model: str | None) -> list[bytes] | None:
    """A 200 completion reply as stream chunks, or ``None`` when it cannot be one."""
    try:
        value = json.loads(reply.body)
    except ValueError:
        return None
    choices = value.get("choices") if isinstance(value, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(first, dict) or not isinstance(message, dict):
        return None
    name = model if model is not None else value.get("model")
    base = {"id": value.get("id", "chatcmpl"), "object": "chat.completion.chunk", "model": name}
    content = {"role": "assistant", "content": message.get("content")}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": content, "finish_reason": None}]},
        {
            **base,
            "choices": [{"index": 0, "delta": {}, "finish_reason": first.get("finish_reason")}],
        },
    ]
    options = body.get("stream_options") if isinstance(body, dict) else None
    if isinstance(options, dict) and options.get("include_usage") and "usage" in value:
        chunks[-1]["usage"] = value["usage"]
    return [json.dumps(chunk).encode("utf-8") for chunk in chunks]


def _handler(state: _State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)

        def _record(self, body: Any) -> None:
            with state.lock:
                state.requests.append(Seen(self.command, self.path, dict(self.headers), body))

        def _stream(self, events: list[bytes]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for event in events:
                self.wfile.write(b"data: " + event + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True

        def do_GET(self) -> None:
            self._record(None)
            with state.lock:
                models, props = state.models, state.props
            missing = Reply.json({"error": {"message": "not found"}}, status=404)
            if self.path.endswith("/models"):
                self._send(Reply.json(models) if models is not None else missing)
            elif self.path == "/props":
                self._send(Reply.json(props) if props is not None else missing)
            else:
                self._send(missing)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            self._record(body)
            with state.lock:
                reply = state.replies.pop(0) if state.replies else None
                state.completions += 1
                if state.restart is not None and state.completions == state.restart[0]:
                    state.models, state.props = state.restart[1], state.restart[2]
            if reply is None:
                reply = Reply.json({"error": {"message": "no recorded reply left"}}, status=500)
            if reply.status != 200 and state.echo_authorization:
                header = self.headers.get("Authorization", "")
                reply = Reply.json(
                    {"error": {"message": f"rejected credentials {header}"}}, status=reply.status
                )
            echoed = self.headers.get("Authorization", "") if state.echo_in_model else None
            if reply.status == 200 and isinstance(body, dict) and body.get("stream") is True:
                events = _events(reply, body, echoed)
                if events is not None:
                    self._stream(events)
                    return
            if echoed is not None and reply.status == 200:
                value = json.loads(reply.body)
                value["model"] = echoed
                reply = Reply.json(value)
            self._send(reply)

    return Handler


class ReplayServer:
    """The stand-in server (see the module docstring)."""

    def __init__(
        self,
        replies: list[Reply],
        *,
        echo_authorization: bool = False,
        echo_in_model: bool = False,
        models: dict[str, Any] | None = MODELS_REPLY,
        props: dict[str, Any] | None = None,
        restart: tuple[int, dict[str, Any] | None, dict[str, Any] | None] | None = None,
    ) -> None:
        self._state = _State(
            list(replies), echo_authorization, echo_in_model, models, props, restart
        )
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self._state))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def serve(self, *, models: dict[str, Any] | None, props: dict[str, Any] | None) -> None:
        """Serve other ``/v1/models`` and ``/props`` answers from now on (a restart)."""
        with self._state.lock:
            self._state.models, self._state.props = models, props

    @property
    def requests(self) -> list[Seen]:
        """The requests received so far, in order."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def completions(self) -> list[Seen]:
        """The completion requests (POST) received so far, in order."""
        return [seen for seen in self.requests if seen.method == "POST"]

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
