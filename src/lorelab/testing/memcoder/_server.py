"""Serving the stand-in over stdio with the MCP SDK: ``python -m lorelab.testing.memcoder``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from lorelab.testing.memcoder._schema import SERVER_NAME, ToolError
from lorelab.testing.memcoder._standin import MemCoderStandIn
from mcp import types


def build_server(stand_in: MemCoderStandIn) -> Server[Any]:
    """An MCP server (official SDK, low level) serving the captured tools over ``stand_in``."""
    listed = [types.Tool.model_validate(tool) for tool in stand_in.tools.values()]

    async def list_tools(
        _ctx: Any, _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            text = stand_in.call(params.name, params.arguments or {})
        except ToolError as exc:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=str(exc))], is_error=True
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content={"result": text},
        )

    return Server(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)


async def _serve(state: Path | None, only: list[str] | None) -> None:
    server = build_server(MemCoderStandIn(state, only))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m lorelab.testing.memcoder [--state FILE] [--only TOOL,...]``: serve over
    stdio."""
    parser = argparse.ArgumentParser(
        prog="python -m lorelab.testing.memcoder",
        description="A stand-in for MemCoder 0.3.3b1's MCP server, for tests.",
    )
    parser.add_argument("--state", type=Path, help="JSON file that keeps the records.")
    parser.add_argument(
        "--only",
        metavar="TOOL,...",
        help="Serve only these of the captured tools (a server lacking the others).",
    )
    options = parser.parse_args(argv)
    only = [name.strip() for name in options.only.split(",")] if options.only else None
    anyio.run(_serve, options.state, only)
