"""Stand-ins for servers that hold a client: one that keeps generating after the client gives
up, and one that trickles its reply a byte at a time.

:class:`GeneratingServer` serves one request at a time (as a local llama.cpp server with one
slot does: the next request queues behind the one in progress). Its first completion
"generates" for :data:`GENERATION_S` seconds: streamed, it writes a chunk every
:data:`CHUNK_S` and stops at the first write that fails (it has seen the client leave, as
llama-cpp-python's server checks after every chunk); not streamed, it writes nothing until the
generation is over (as llama-cpp-python's server runs a non-streamed completion to its end).
Later completions get the recorded reviewer reply. ``disconnected`` is set when it sees the
client leave. ``GET /v1/models`` answers as llama-cpp-python's server does.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from typing import Any, Final

from lorelab.testing.openai_server import MODELS_REPLY
from tests.support.openai import exchange

GENERATION_S: Final = 30.0
CHUNK_S: Final = 0.05


class GeneratingServer:
    """The single-slot server of the module docstring."""

    def __init__(self) -> None:
        self.disconnected = threading.Event()
        self.completions = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _json(self, status: int, value: Any) -> None:
                data = json.dumps(value).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

            def do_GET(self) -> None:
                if self.path.endswith("/models"):
                    self._json(200, MODELS_REPLY)
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.completions += 1
                if server.completions > 1:
                    self._json(200, exchange("reviewer", "llama-cpp")["response"]["body"])
                elif body.get("stream"):
                    self._stream_forever()
                else:
                    time.sleep(GENERATION_S)  # generating: nothing to write until the end
                    self._json(200, exchange("reviewer", "llama-cpp")["response"]["body"])

            def _stream_forever(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                chunk = {"model": "smollm2-135m-instruct", "choices": [{"delta": {"content": "x"}}]}
                line = b"data: " + json.dumps(chunk).encode("utf-8") + b"\n\n"
                ends = time.monotonic() + GENERATION_S
                while time.monotonic() < ends:
                    try:
                        self.wfile.write(line)
                        self.wfile.flush()
                    except OSError:
                        server.disconnected.set()
                        return
                    time.sleep(CHUNK_S)
                self.close_connection = True

        self._server = HTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> GeneratingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=60)


class TricklingServer:
    """Answers every connection with headers, then one body byte every ``every_s`` seconds,
    until it is stopped."""

    def __init__(self, every_s: float = 0.3) -> None:
        self._every_s = every_s
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._trickle, args=(connection,), daemon=True).start()

    def _trickle(self, connection: socket.socket) -> None:
        with connection:
            connection.recv(65536)
            try:
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
                while not self._stop.wait(self._every_s):
                    connection.sendall(b"{")
            except OSError:
                return

    def __enter__(self) -> TricklingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._listener.close()


class CountingServer:
    """Answers every completion with the recorded reviewer reply after ``hold_s`` seconds, many
    at a time, and keeps the most completions it ever had in progress at once (``most``)."""

    def __init__(self, hold_s: float = 1.0) -> None:
        self.most = 0
        self._now = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _json(self, value: Any) -> None:
                data = json.dumps(value).encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._json(MODELS_REPLY)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                with server._lock:
                    server._now += 1
                    server.most = max(server.most, server._now)
                time.sleep(hold_s)
                with server._lock:
                    server._now -= 1
                self._json(exchange("reviewer", "llama-cpp")["response"]["body"])

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> CountingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=30)
