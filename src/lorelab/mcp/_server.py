"""The lorelab MCP server: the memory's operations as tools, built on the official ``mcp`` SDK.

Each tool publishes the JSON schema of one pydantic request model as its input schema
(unknown arguments refused) and returns one pydantic result model as structured content, so
``list_tools`` shows real input and output schemas. The SDK hands each tool its raw arguments
and the tool validates them itself, with the same strict model and the same one-line message
as ``lorelab memory`` (``<source>: <field>: <problem>``, the source being ``arguments``). A
deliberate refusal (a locked holdout task, an unknown id, an unverified experience) is an MCP
error result with the CLI's message; the server keeps serving.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Final, TypeVar, Union, get_args, get_origin

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError

from lorelab import __version__
from lorelab.errors import LorelabError
from lorelab.io import describe_validation_error
from lorelab.memory import (
    Brief,
    CheckpointRequest,
    CheckpointResult,
    CheckRequest,
    CheckRun,
    DreamRequest,
    DreamResult,
    ListRequest,
    ListResult,
    MemoryStore,
    OutcomeRequest,
    OutcomeResult,
    PrepareRequest,
    PromoteCandidateRequest,
    PromoteRequest,
    RecordRequest,
    RecordResult,
    RecoverRequest,
    RecoverResult,
    ShowRequest,
    ShowResult,
    Skill,
    SkillHealthRequest,
    SkillHealthResult,
    StartRequest,
    StartResult,
    checkpoint,
    recover_context,
)

Req = TypeVar("Req", bound=BaseModel)
Res = TypeVar("Res", bound=BaseModel)

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
# The operator's consent to candidate checks over MCP, set where the server is registered
# (the SDK starts stdio servers with a minimal environment, so an agent's own environment
# does not reach it).
ALLOW_CHECKS_ENV: Final = "LORELAB_MCP_ALLOW_CHECKS"


class _RawArguments(ArgModelBase):
    """Whatever arguments object the client sent, passed on untouched.

    The SDK validates tool arguments with an ``ArgModelBase`` before a tool runs, and
    reports a failure as pydantic's multi-line text. This one accepts any object, so the
    tool validates with its request model and reports the CLI's one-line message.
    """

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


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
    # Some hosts send an object or array argument as a JSON string; the SDK accepts that, so
    # we keep accepting it, but only for fields that take an object or array: a string is
    # never turned into a number or a boolean ("0" stays a string and is refused).
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


def _tool(
    name: str,
    description: str,
    request: type[Req],
    result: type[Res],
    handler: Callable[[Req], Res],
    *,
    read_only: bool = False,
) -> Tool:
    def run(**arguments: Any) -> Res:
        try:
            parsed = request.model_validate(_unwrap_json_strings(request, arguments))
        except ValidationError as exc:
            raise ToolError(describe_validation_error(ARGUMENTS_SOURCE, exc)) from None
        try:
            return handler(parsed)
        except LorelabError as exc:
            raise ToolError(str(exc)) from None

    run.__name__ = name
    return Tool(
        fn=run,
        name=name,
        title=None,
        description=description,
        parameters=request.model_json_schema(),
        fn_metadata=FuncMetadata(arg_model=_RawArguments, output_model=result),
        is_async=False,
        context_kwarg=None,
        annotations=ToolAnnotations(read_only_hint=read_only),
    )


def build_server(
    store: MemoryStore, home: Path, project_dir: Path, *, allow_checks: bool = False
) -> MCPServer:
    """An MCP server for ``store``; checkpoints under ``home``; checks copy ``project_dir``.

    ``lore_check_candidate`` runs commands that agents recorded (a Dream mines them from
    ``lore_record`` calls), so it is served only when the operator allowed it
    (``allow_checks``); otherwise the tool does not exist on this server and candidates are
    checked with ``lorelab memory check`` by the operator.
    """

    def check(request: CheckRequest) -> CheckRun:
        return store.check_candidate(request.candidate_id, project_dir, request.timeout_seconds)

    tools = [
        _tool(
            "lore_record",
            "Record one experience after verifying it: task, summary, outcome, verification "
            "{command, exit_code}, commands run. Returns {id, verified, redactions}. Refused for "
            "a holdout task of an active evaluation lock.",
            RecordRequest,
            RecordResult,
            store.record,
        ),
        _tool(
            "lore_prepare",
            "Brief a new task with relevant verified memory: experiences, commands to avoid, "
            "Skills, within budget_tokens. empty: true when nothing clears the relevance floor.",
            PrepareRequest,
            Brief,
            store.prepare,
        ),
        _tool(
            "lore_promote_skill",
            "Promote two or more verified, QA-approved experiences whose successful command "
            "sequences share at least two commands into a Skill.",
            PromoteRequest,
            Skill,
            store.promote_skill,
        ),
        _tool(
            "lore_start",
            "Plan a task with the best healthy Skill: {plan_id, skill_id, steps, brief}; "
            "plan_id null and the reason when no Skill clears the floor.",
            StartRequest,
            StartResult,
            store.start,
        ),
        _tool(
            "lore_report_outcome",
            "Report whether a plan worked (once per plan); updates the Skill's health.",
            OutcomeRequest,
            OutcomeResult,
            store.report_outcome,
        ),
        _tool(
            "lore_skill_health",
            "Health of one Skill (skill_id) or of every Skill.",
            SkillHealthRequest,
            SkillHealthResult,
            lambda request: store.skill_health(request.skill_id),
            read_only=True,
        ),
        _tool(
            "lore_dream",
            "Mine candidate Skills from command sequences shared by two or more verified "
            "experiences. Candidates are untrusted until their checks pass (run by the "
            "operator: lore_check_candidate exists only when the operator allowed it).",
            DreamRequest,
            DreamResult,
            store.dream,
        ),
        _tool(
            "lore_promote_candidate",
            "Promote a candidate whose checks passed into a trusted Skill.",
            PromoteCandidateRequest,
            Skill,
            store.promote_candidate,
        ),
        _tool(
            "lore_list",
            "The most recent items of one kind (experience, skill, plan, brief, candidate, "
            "lock, lesson), newest first.",
            ListRequest,
            ListResult,
            lambda request: store.list_items(request.kind, request.limit),
            read_only=True,
        ),
        _tool(
            "lore_show",
            "One item by id (exp-N, skill-N, plan-N, brief-N, cand-N) with its provenance.",
            ShowRequest,
            ShowResult,
            lambda request: ShowResult(item=store.show(request.id)),
            read_only=True,
        ),
        _tool(
            "lore_checkpoint",
            "Write durable context at a compaction, restart or child-handoff boundary.",
            CheckpointRequest,
            CheckpointResult,
            lambda request: checkpoint(home, request),
        ),
        _tool(
            "lore_recover",
            "The newest checkpoint of a scope and the handoff brief to resume from.",
            RecoverRequest,
            RecoverResult,
            lambda request: recover_context(home, request),
            read_only=True,
        ),
    ]
    if allow_checks:
        tools.insert(
            tools.index(next(tool for tool in tools if tool.name == "lore_promote_candidate")),
            _tool(
                "lore_check_candidate",
                "Run a candidate's checks (commands and expected exit codes) in a disposable "
                "copy of the project and record the results. Served because the operator "
                f"allowed it ({ALLOW_CHECKS_ENV}=1).",
                CheckRequest,
                CheckRun,
                check,
            ),
        )
    return MCPServer(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        tools=tools,
        log_level="WARNING",
    )
