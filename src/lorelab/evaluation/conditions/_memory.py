"""The memory under test, reached as an MCP client over stdio through a profile.

A profile (``_profiles``) adapts the protocol's operations (prepare, start, record, dream, ...)
to one memory server's tools: it maps each request to the server's arguments and decodes each
answer into lorelab's Brief, Plan and ids, so any server can be evaluated the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from lorelab.errors import IntegrityFailure, LorelabError, PreflightError
from lorelab.evaluation.conditions._profile_data import SHIPPED, shipped_profile
from lorelab.evaluation.conditions._profiles import (
    OPERATIONS,
    MemoryDecodeError,
    MemoryProfile,
    MemoryUnsupported,
)
from mcp import Client

__all__ = [
    "LORELAB_PROFILE",
    "MEMCODER_PROFILE",
    "OPERATIONS",
    "PROFILES",
    "MemoryProfile",
    "MemoryToolError",
    "MemoryUnderTest",
    "MemoryUnsupported",
    "open_memory",
]

REQUIRED_OPERATIONS: Final = ("prepare", "record")
# The shipped profiles, read from their files once.
PROFILES: Final[Mapping[str, MemoryProfile]] = {name: shipped_profile(name) for name in SHIPPED}
LORELAB_PROFILE: Final = PROFILES["lorelab"]
MEMCODER_PROFILE: Final = PROFILES["memcoder"]
TOOL_TIMEOUT_S: Final = 600.0
HANDSHAKE_TIMEOUT_S: Final = 60.0
CLI_TIMEOUT_S: Final = 120.0
# The most items one list call may return (lorelab's lore_list caps ``limit`` here).
LIST_LIMIT: Final = 10_000
_STDERR_TAIL: Final = 4000


class MemoryToolError(Exception):
    """A memory tool answered with an error (or could not be called); carries one line."""

    def __init__(
        self, operation: str, tool: str | None, message: str, *, transport: bool = False
    ) -> None:
        super().__init__(f"memory {operation} ({tool or 'no tool'}): {message}")
        self.operation = operation
        self.tool = tool
        self.message = message
        # True when the call itself failed (session gone, timeout), not a tool's refusal.
        self.transport = transport


class LockReceipt(BaseModel):
    """How the evaluation lock was written or cleared."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    evaluation_id: str
    method: str = Field(description="'mcp', 'lorelab-cli' or 'none' (the memory has no lock).")
    active: bool | None = Field(description="Whether the lock is active afterwards; null unknown.")
    holdout_tasks: list[str]
    detail: str | None = None


def lock_receipt(
    evaluation_id: str, tasks: list[str], method: str, active: bool, detail: str | None = None
) -> LockReceipt:
    """A lock receipt; without any lock (method ``none``) its state is unknown (null)."""
    return LockReceipt(
        evaluation_id=evaluation_id,
        method=method,
        active=None if method == "none" else active,
        holdout_tasks=tasks,
        detail=detail,
    )


def lorelab_server_argv(home: Path, project: Path) -> list[str]:
    """The default server argv of the lorelab profile: this Python running ``lorelab mcp``."""
    return [sys.executable, "-m", "lorelab", "mcp", "--home", str(home), "--project", str(project)]


def _lorelab_cli(home: Path, arguments: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lorelab", "memory", "--home", str(home), *arguments],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _result_text(result: Any) -> str:
    return "\n".join(
        block.text for block in result.content if getattr(block, "type", None) == "text"
    )


def _result_value(result: Any) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    joined = _result_text(result)
    try:
        return json.loads(joined)
    except json.JSONDecodeError:
        return {"text": joined}


def _error_text(result: Any) -> str:
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    return " ".join(" ".join(texts).split()) or "the tool reported an error"


@dataclass(slots=True)
class MemoryUnderTest:
    """An open MCP session to the memory under test, with its profile."""

    profile: MemoryProfile
    client: Client
    listed: frozenset[str]
    argv: list[str]
    home: Path | None
    stderr_path: Path
    calls: list[dict[str, Any]] = field(default_factory=list)
    # The server's own serverInfo (name, version) from the MCP handshake; None: not sent.
    server_info: dict[str, str] | None = None

    def supports(self, operation: str) -> bool:
        """Whether the profile maps ``operation`` and the server lists that tool."""
        tool = self.profile.tool(operation)
        return tool is not None and tool in self.listed

    def stderr_tail(self) -> str:
        """The last characters the server wrote on stderr."""
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")[-_STDERR_TAIL:]
        except OSError:
            return ""

    async def call(
        self,
        operation: str,
        arguments: Mapping[str, Any],
        context: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Call the tool of ``operation`` with the profile's translation of lorelab's
        ``arguments`` and decode its answer into lorelab's shape.

        A tool error, or an answer the profile cannot decode, raises :class:`MemoryToolError`;
        a request the memory cannot express raises :class:`MemoryUnsupported` before any call.
        """
        tool = self.profile.tool(operation)
        if tool is None or tool not in self.listed:
            raise MemoryToolError(operation, tool, "the memory server does not offer it")
        try:
            request = self.profile.request(operation, arguments, context)
        except MemoryDecodeError as exc:
            raise MemoryToolError(operation, tool, f"arguments not built: {exc}") from None
        result = await self._call_tool(operation, tool, request)
        text = _result_text(result)
        refused = self.profile.refusal(operation, text)
        if refused is not None:
            raise MemoryToolError(operation, tool, refused)
        try:
            decoded = self.profile.decode_answer(operation, _result_value(result), text)
            follow = self.profile.follow_up(operation, decoded)
        except MemoryDecodeError as exc:
            raise MemoryToolError(operation, tool, f"unreadable answer: {exc}") from None
        if follow is None:
            return decoded
        second = await self._call_tool(operation, follow[0], follow[1])
        return self.profile.merge_follow_up(operation, decoded, _result_text(second))

    async def _call_tool(self, operation: str, tool: str, request: Mapping[str, Any]) -> Any:
        """One tool call, timed and logged; a transport failure or a tool error raises."""
        started = time.monotonic()
        try:
            result = await self.client.call_tool(
                tool, dict(request), read_timeout_seconds=TOOL_TIMEOUT_S
            )
        except (
            MCPError,
            TimeoutError,
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
        ) as exc:
            raise MemoryToolError(operation, tool, f"call failed: {exc}", transport=True) from None
        self.calls.append(
            {
                "operation": operation,
                "tool": tool,
                "isError": result.is_error,
                "seconds": round(time.monotonic() - started, 6),
            }
        )
        if result.is_error:
            raise MemoryToolError(operation, tool, _error_text(result))
        return result

    async def set_lock(self, evaluation_id: str, holdout_tasks: Sequence[str]) -> LockReceipt:
        """Lock the holdout tasks so the memory refuses to record them."""
        tasks = list(holdout_tasks)
        if self.supports("lock_set"):
            await self.call("lock_set", {"evaluation_id": evaluation_id, "holdout_tasks": tasks})
            return lock_receipt(evaluation_id, tasks, "mcp", True)
        if self.profile.lock_via_lorelab_cli and self.home is not None:
            with tempfile.NamedTemporaryFile(
                "w", suffix=".json", encoding="utf-8", delete=False
            ) as handle:
                json.dump(tasks, handle)
                tasks_file = handle.name
            try:
                done = await anyio.to_thread.run_sync(
                    _lorelab_cli,
                    self.home,
                    ["lock", "set", evaluation_id, "--tasks-file", tasks_file, "--json"],
                )
            finally:
                os.unlink(tasks_file)
            if done.returncode != 0:
                raise PreflightError(
                    f"evaluation lock {evaluation_id}: the memory refused it: "
                    f"{done.stderr.strip() or done.stdout.strip()}"
                )
            return lock_receipt(evaluation_id, tasks, "lorelab-cli", True)
        detail = (
            "the memory offers no evaluation lock; only the runner withholds holdout outcomes "
            "until finalize"
        )
        return lock_receipt(evaluation_id, tasks, "none", True, detail)

    async def lock_state(self, evaluation_id: str) -> bool | None:
        """Whether the memory holds an active lock ``evaluation_id`` (``True``), only cleared
        ones (``False``), or none it can tell of (``None``: never locked, or no way to ask)."""
        locks: list[Any] = []
        if self.profile.lock_via_lorelab_cli and self.home is not None:
            done = await anyio.to_thread.run_sync(
                _lorelab_cli, self.home, ["lock", "show", "--json"]
            )
            if done.returncode != 0:
                raise MemoryToolError("lock_show", None, done.stderr.strip() or done.stdout.strip())
            try:
                found = json.loads(done.stdout)
            except json.JSONDecodeError as exc:
                raise MemoryToolError("lock_show", None, f"unreadable output: {exc}") from None
            locks = found if isinstance(found, list) else []
        elif self.supports("list"):
            listing = await self.call("list", {"kind": "lock", "limit": LIST_LIMIT})
            locks = listing.get("items") or []
        else:
            return None
        states = [
            lock.get("active")
            for lock in locks
            if isinstance(lock, Mapping) and lock.get("evaluation_id") == evaluation_id
        ]
        if not states:
            return None
        return any(state is True for state in states)

    async def clear_lock(self, evaluation_id: str, holdout_tasks: Sequence[str]) -> LockReceipt:
        """Clear the evaluation lock written by :meth:`set_lock`."""
        tasks = list(holdout_tasks)
        if self.supports("lock_clear"):
            await self.call("lock_clear", {"evaluation_id": evaluation_id})
            return lock_receipt(evaluation_id, tasks, "mcp", False)
        if self.profile.lock_via_lorelab_cli and self.home is not None:
            done = await anyio.to_thread.run_sync(
                _lorelab_cli, self.home, ["lock", "clear", evaluation_id, "--json"]
            )
            if done.returncode != 0:
                raise MemoryToolError(
                    "lock_clear", None, done.stderr.strip() or done.stdout.strip()
                )
            return lock_receipt(evaluation_id, tasks, "lorelab-cli", False)
        return lock_receipt(
            evaluation_id, tasks, "none", False, "the memory offers no evaluation lock"
        )


@asynccontextmanager
async def open_memory(
    profile: MemoryProfile,
    argv: Sequence[str],
    *,
    home: Path | None,
    cwd: Path,
    stderr_path: Path,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[MemoryUnderTest]:
    """Start the memory server with ``argv`` and open an MCP session to it.

    The server's stderr goes to ``stderr_path``. A server that cannot be started, does not
    answer the MCP handshake within the timeout, or lacks a required tool of the profile, is a
    :class:`PreflightError`.
    """
    if not argv:
        raise PreflightError("memory server argv is empty")
    extra = dict(env or {})
    # The SDK starts servers with a minimal environment; a server run by this Python must
    # import the same lorelab as the runner (and as the lock CLI), so PYTHONPATH goes along.
    if os.environ.get("PYTHONPATH") and "PYTHONPATH" not in extra:
        extra["PYTHONPATH"] = os.environ["PYTHONPATH"]
    if home is not None:
        extra["LORELAB_HOME"] = str(home)
    params = StdioServerParameters(command=argv[0], args=list(argv[1:]), env=extra, cwd=cwd)
    started = False
    with open(stderr_path, "w", encoding="utf-8") as errlog:
        try:
            async with AsyncExitStack() as stack:
                client = Client(
                    stdio_client(params, errlog=errlog), read_timeout_seconds=HANDSHAKE_TIMEOUT_S
                )
                try:
                    await stack.enter_async_context(client)
                    listing = await client.list_tools()
                except (OSError, MCPError, TimeoutError) as exc:
                    raise _unreachable(argv, exc, stderr_path) from None
                listed = frozenset(tool.name for tool in listing.tools)
                conformance(profile, {tool.name: tool.input_schema for tool in listing.tools})
                started = True
                info = client.server_info
                yield MemoryUnderTest(
                    profile,
                    client,
                    listed,
                    list(argv),
                    home,
                    stderr_path,
                    server_info=(
                        {"name": info.name, "version": info.version} if info is not None else None
                    ),
                )
        except BaseExceptionGroup as group:
            # The SDK's task groups wrap whatever ends the session; surface the cause itself.
            leaf = _main_leaf(group)
            if leaf is None:
                raise
            if isinstance(leaf, OSError | MCPError | TimeoutError) and not isinstance(
                leaf, LorelabError
            ):
                if not started:
                    raise _unreachable(argv, leaf, stderr_path) from None
                raise IntegrityFailure(
                    f"the memory server's MCP session ended unexpectedly: {leaf}"
                ) from None
            raise leaf from None


def conformance(profile: MemoryProfile, schemas: Mapping[str, Mapping[str, Any]]) -> None:
    """Check the profile against the server's own ``tools/list``: every required operation's
    tool is listed, and every argument a profile template sends by name is one the tool's
    input schema declares (and none of its required arguments is left out)."""
    missing = [
        f"{op} ({profile.tool(op)})"
        for op in REQUIRED_OPERATIONS
        if profile.tool(op) not in schemas
    ]
    if missing:
        raise PreflightError(
            f"memory profile {profile.name}: the server's tools/list lacks required tools: "
            f"{', '.join(missing)}"
        )
    for operation, tool, keys in profile.argument_names():
        schema = schemas.get(tool)
        if schema is None:
            continue
        declared = schema.get("properties")
        if isinstance(declared, Mapping):
            unknown = sorted(set(keys) - set(declared))
            if unknown:
                raise PreflightError(
                    f"memory profile {profile.name}: {operation} sends {', '.join(unknown)} to "
                    f"{tool}, whose input schema in the server's tools/list does not declare it"
                )
        required = schema.get("required")
        if isinstance(required, list):
            left_out = sorted(set(map(str, required)) - set(keys))
            if left_out:
                raise PreflightError(
                    f"memory profile {profile.name}: {operation} leaves out {', '.join(left_out)}, "
                    f"which {tool} requires (its input schema in the server's tools/list)"
                )


def _unreachable(argv: Sequence[str], exc: BaseException, stderr_path: Path) -> PreflightError:
    try:
        tail = stderr_path.read_text(encoding="utf-8", errors="replace")[-400:].strip()
    except OSError:
        tail = ""
    detail = f"; its stderr: {' '.join(tail.split())}" if tail else ""
    return PreflightError(f"memory server {argv[0]} could not be reached over MCP: {exc}{detail}")


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            found += _leaves(exc)
        else:
            found.append(exc)
    return found


def _main_leaf(group: BaseExceptionGroup[BaseException]) -> Exception | None:
    """The exception that matters: a lorelab error first, else the first ordinary one."""
    leaves = [leaf for leaf in _leaves(group) if isinstance(leaf, Exception)]
    for leaf in leaves:
        if isinstance(leaf, LorelabError | MemoryToolError):
            return leaf
    return leaves[0] if leaves else None
