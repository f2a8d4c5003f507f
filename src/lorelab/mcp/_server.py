"""The lorelab MCP server: the memory's operations as tools, built on the official ``mcp`` SDK.

Each tool takes the fields of one pydantic request model as its arguments (unknown arguments
are refused) and returns one pydantic result model as structured content, so ``list_tools``
shows real input and output schemas. A deliberate refusal (a locked holdout task, an unknown
id, an unverified experience) is an MCP error result with a one-line message; the server
keeps serving.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError

from lorelab import __version__
from lorelab.errors import LorelabError
from lorelab.io import describe_validation_error
from lorelab.mcp._context import (
    CheckpointRequest,
    CheckpointResult,
    RecoverRequest,
    RecoverResult,
    checkpoint,
    recover_context,
)
from lorelab.memory import (
    Brief,
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
    ShowRequest,
    ShowResult,
    Skill,
    SkillHealthRequest,
    SkillHealthResult,
    StartRequest,
    StartResult,
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


def _arguments_model(request: type[BaseModel]) -> type[ArgModelBase]:
    # The SDK validates tool arguments with an ArgModelBase; deriving it from the request
    # model keeps its fields, descriptions and validators, and forbids unknown arguments.
    return type(
        f"{request.__name__}Arguments",
        (request, ArgModelBase),
        {
            "__module__": __name__,
            "model_config": ConfigDict(extra="forbid", arbitrary_types_allowed=True),
        },
    )


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
            parsed = request.model_validate(arguments)
        except ValidationError as exc:
            raise ToolError(describe_validation_error(name, exc)) from None
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
        fn_metadata=FuncMetadata(arg_model=_arguments_model(request), output_model=result),
        is_async=False,
        context_kwarg=None,
        annotations=ToolAnnotations(read_only_hint=read_only),
    )


def build_server(store: MemoryStore, home: Path, project_dir: Path) -> MCPServer:
    """An MCP server for ``store``; checkpoints under ``home``; checks copy ``project_dir``."""

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
            "experiences. Candidates are untrusted until lore_check_candidate passes.",
            DreamRequest,
            DreamResult,
            store.dream,
        ),
        _tool(
            "lore_check_candidate",
            "Run a candidate's checks (commands and expected exit codes) in a disposable copy "
            "of the project and record the results.",
            CheckRequest,
            CheckRun,
            check,
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
    return MCPServer(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        tools=tools,
        log_level="WARNING",
    )
