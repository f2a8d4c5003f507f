"""The server's socket and the SDK's per-call work: what each request costs the server."""

from __future__ import annotations

import asyncio
import socket

from lorelab.mcp import build_server
from lorelab.memory import open_store
from lorelab.serve._run import _bind


def test_connections_accepted_on_the_bound_socket_have_nagle_off():
    # Nagle on holds each response's body until the client ACKs its head: ~40 ms a request.
    listener = _bind("127.0.0.1", 0)
    seen: list[int] = []

    async def main() -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(handle, sock=listener)
        async with server:
            port = listener.getsockname()[1]
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            for _ in range(200):
                if seen:
                    break
                await asyncio.sleep(0.05)
            writer.close()

    asyncio.run(main())
    assert seen
    assert seen[0] != 0


def test_the_sdk_finds_a_tools_input_schema_without_listing_every_tool(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    store = open_store(str(tmp_path / "home"), project)
    try:
        server = build_server(store, tmp_path / "home", project)
        lookup = server.lowlevel.get_tool_input_schema
        assert lookup is not None
        listed = {tool.name: tool.input_schema for tool in server.tools}
        assert lookup("lore_prepare") == listed["lore_prepare"]
        assert lookup("no_such_tool") is None
    finally:
        store.close()
