"""The lorelab MCP server: the memory's operations table served as tools over the official SDK.

Tools are registered through the SDK's public low-level server (``tools/list`` and
``tools/call`` handlers). Each tool publishes the JSON schema of one pydantic request model as
its input schema (unknown arguments refused) and returns one pydantic result model as
structured content (the same JSON as text), so ``list_tools`` shows real input and output
schemas. Each call is validated with the same strict model and the same one-line message as
``lorelab memory`` (``<source>: <field>: <problem>``, the source being ``arguments``). A
deliberate refusal (a locked holdout task, an unknown id, an unverified experience) is an MCP
error result with the CLI's message; the server keeps serving.
"""

from __future__ import annotations

import contextlib
import functools
import json
import types
from pathlib import Path
from typing import Annotated, Any, Final, Union, cast, get_args, get_origin

import anyio
import anyio.to_thread
import pydantic_core
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    JSONRPCError,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)
from pydantic import BaseModel, ValidationError

from lorelab import __version__
from lorelab.errors import LorelabError
from lorelab.io import describe_validation_error
from lorelab.mcp import _schemas
from lorelab.mcp._stdio import LOG, GuardedLines, claimed_stdin, claimed_stdout
from lorelab.memory import ALLOW_CHECKS_ENV, OPERATIONS, MemoryStore, Operation, Target

SERVER_NAME: Final = "lorelab"
INSTRUCTIONS: Final = (
    "lorelab memory: verified experience for coding work. At the start of a task call "
    "lore_prepare (or lore_start to get a plan from a Skill) and read the brief; it is empty "
    "when nothing relevant was verified before. After you verify your work (run the tests or "
    "checks), call lore_record with the task, a summary, the outcome, the verification command "
    "and its exit code, and the commands you ran. When you followed a plan, report it with "
    "lore_report_outcome. Secrets are redacted before anything is stored."
)
ARGUMENTS_SOURCE: Final = "arguments"

__all__ = ["ALLOW_CHECKS_ENV", "INSTRUCTIONS", "SERVER_NAME", "LorelabServer", "build_server"]


def _wants_structure(annotation: Any) -> bool:
    """Whether a field takes a JSON object or array (never a string, number or boolean)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _wants_structure(get_args(annotation)[0])
    if origin in (list, dict):
        return True
    if origin in (Union, types.UnionType):
        arms = [arm for arm in get_args(annotation) if arm is not type(None)]
        return bool(arms) and all(_wants_structure(arm) for arm in arms)
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _unwrap_json_strings(request: type[BaseModel], arguments: dict[str, Any]) -> dict[str, Any]:
    # Some hosts send an object or array argument as a JSON string; MCP servers commonly accept
    # that, so we do too, but only for fields that take an object or array: a string is never
    # turned into a number or a boolean ("0" stays a string and is refused).
    unwrapped = dict(arguments)
    for key, value in arguments.items():
        field = request.model_fields.get(key)
        if field is None or not isinstance(value, str) or not _wants_structure(field.annotation):
            continue
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            continue
        if isinstance(parsed, dict | list):
            unwrapped[key] = parsed
    return unwrapped


def _tool(entry: Operation[Any, Any], schema: dict[str, dict[str, Any]]) -> Tool:
    return Tool(
        name=entry.tool or entry.name,
        description=entry.description,
        input_schema=schema["input"],
        output_schema=schema["output"],
        annotations=ToolAnnotations(read_only_hint=entry.read_only),
    )


def _error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _success(result: BaseModel) -> CallToolResult:
    text = pydantic_core.to_json(result, fallback=str, indent=2).decode()
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=result.model_dump(mode="json", by_alias=True),
    )


class LorelabServer:
    """The memory's tools over MCP for one store, memory home and project directory."""

    def __init__(
        self, store: MemoryStore, home: Path, project_dir: Path, *, allow_checks: bool = False
    ) -> None:
        self.target = Target(
            store=lambda: store, home=lambda: home, project_dir=lambda: project_dir
        )
        self.operations = {
            entry.tool: entry
            for entry in OPERATIONS
            if entry.tool is not None and (allow_checks or not entry.needs_consent)
        }
        served = list(self.operations.values())
        found = _schemas.schemas(served)
        self.tools = [_tool(entry, found[str(entry.tool)]) for entry in served]
        self.input_schemas = {tool.name: tool.input_schema for tool in self.tools}
        self.lowlevel = Server(
            SERVER_NAME,
            version=__version__,
            instructions=INSTRUCTIONS,
            # Over streamable HTTP the SDK checks a call's Mcp-Param headers against the tool's
            # input schema; without this lookup it lists every tool again to find it, per call.
            get_tool_input_schema=self.input_schemas.get,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def _list_tools(
        self, ctx: object, params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=self.tools)

    async def _call_tool(self, ctx: object, params: CallToolRequestParams) -> CallToolResult:
        entry = self.operations.get(params.name)
        if entry is None:
            return _error(f"Unknown tool: {params.name}")
        return await anyio.to_thread.run_sync(
            functools.partial(self.call, entry, params.arguments or {})
        )

    def call(self, entry: Operation[Any, Any], arguments: dict[str, Any]) -> CallToolResult:
        """Validate ``arguments`` as the operation's request and run it (blocking)."""
        prefix = f"Error executing tool {entry.tool}"
        try:
            request = entry.request.model_validate(_unwrap_json_strings(entry.request, arguments))
        except ValidationError as exc:
            return _error(f"{prefix}: {describe_validation_error(ARGUMENTS_SOURCE, exc)}")
        try:
            return _success(entry.handler(self.target, request))
        except LorelabError as exc:
            return _error(f"{prefix}: {exc}")
        except Exception:  # one request's boundary: a bug is logged, the server keeps serving
            LOG.exception("tool %s failed unexpectedly", entry.tool)
            return _error(prefix)

    async def run_stdio_async(self) -> None:
        """Serve over stdin/stdout until the client disconnects.

        Every line is checked before the SDK reads it: a malformed request with an id is
        answered with a JSON-RPC error here; a client gone mid-call ends the server quietly
        when its stdin closes (see ``lorelab.mcp._stdio``).
        """
        replies, refused = anyio.create_memory_object_stream[JSONRPCError](64)
        with claimed_stdin() as source, claimed_stdout() as wire:
            lines = cast(Any, GuardedLines(source, replies))
            async with stdio_server(stdin=lines, stdout=cast(Any, wire)) as (
                read_stream,
                write_stream,
            ):

                async def answer_refused() -> None:
                    async with refused:
                        async for reply in refused:
                            with contextlib.suppress(anyio.ClosedResourceError):
                                await write_stream.send(SessionMessage(reply))

                async with anyio.create_task_group() as group:
                    group.start_soon(answer_refused)
                    await self.lowlevel.run(
                        read_stream, write_stream, self.lowlevel.create_initialization_options()
                    )
                    group.cancel_scope.cancel()

    async def list_tools(self) -> list[Tool]:
        """The tools this server lists."""
        return list(self.tools)

    def run(self) -> None:
        """Serve over stdio (blocking)."""
        anyio.run(self.run_stdio_async)


def build_server(
    store: MemoryStore, home: Path, project_dir: Path, *, allow_checks: bool = False
) -> LorelabServer:
    """An MCP server for ``store``; checkpoints under ``home``; checks copy ``project_dir``.

    ``lore_check_candidate`` runs commands that agents recorded (a Dream mines them from
    ``lore_record`` calls), so it is served only when the operator allowed it
    (``allow_checks``); otherwise the tool does not exist on this server and candidates are
    checked with ``lorelab memory candidates check`` by the operator.
    """
    return LorelabServer(store, home, project_dir, allow_checks=allow_checks)
