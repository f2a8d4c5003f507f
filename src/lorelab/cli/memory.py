"""``lorelab memory``: the memory's operations on the command line, the same as over MCP.

Every command opens the store (``--home``, ``$LORELAB_HOME``, or ``<project>/.lorelab``),
calls one store operation and prints its result: ``--json`` prints exactly what the MCP tool
returns as structured content; otherwise a short table or text for people.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic import BaseModel
from rich.table import Table
from rich.text import Text

from lorelab.cli._common import LorelabGroup, echo_json, exit_with, stdout_console
from lorelab.errors import UsageError
from lorelab.io import MANIFEST_LIMIT, canonical_json, loads_strict, read_json, validate_model
from lorelab.memory import (
    HOME_ENV,
    Brief,
    CheckpointRequest,
    CheckRequest,
    CheckRun,
    DreamRequest,
    Item,
    ListRequest,
    ListResult,
    MemoryStore,
    OutcomeRequest,
    PrepareRequest,
    PromoteCandidateRequest,
    PromoteRequest,
    RecordRequest,
    RecoverRequest,
    ShowRequest,
    Skill,
    SkillHealthRequest,
    SkillHealthResult,
    StartRequest,
    WorkerDreamRequest,
    WorkerDreamResult,
    checkpoint,
    dream_with_worker,
    export_skills,
    memory_home,
    open_store,
    recover_context,
)
from lorelab.workers import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_MS, resolve_agent

M = TypeVar("M", bound=BaseModel)

_JSON = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
_PROJECT_NAME = click.option(
    "--project-name",
    default=None,
    help="Only use memories of this project (and memories with no project).",
)


@dataclass(frozen=True, slots=True)
class _Where:
    home: str | None
    project_dir: str | None


def _store(ctx: click.Context, *, create: bool = False) -> MemoryStore:
    """The store for this command; only commands that can start a memory create one.

    ``record``, ``prepare``, ``start`` and ``lock set`` create a missing store (the first
    record or brief of a project). Every other command reads, or acts on items that must
    already exist, so a missing store (a mistyped ``--project``) is refused naming its path,
    and nothing is created.
    """
    where: _Where = ctx.find_object(_Where)  # type: ignore[assignment]
    store = open_store(where.home, where.project_dir, create=create)
    ctx.call_on_close(store.close)
    return store


def _validate(model: type[M], data: Any, source: str) -> M:
    return validate_model(model, data, source)


def _add_row(table: Table, *cells: str) -> None:
    # Plain Text, never console markup: stored text such as "fix [/tmp] paths" or
    # "[REDACTED:api_key]" is shown as written (as markup the first would even crash rich).
    table.add_row(*(Text(cell, overflow="fold") for cell in cells))


def _emit(result: Any, as_json: bool, human: Callable[[], None]) -> None:
    if as_json:
        echo_json(result)
    else:
        human()


@click.group(name="memory", cls=LorelabGroup)
@click.option(
    "--home",
    type=click.Path(file_okay=False),
    default=None,
    help="Memory home: the store is HOME/memory.db (overrides $LORELAB_HOME).",
)
@click.option(
    "--project",
    "project_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Project directory: the store is PROJECT/.lorelab/memory.db when no home is set "
    "(default: the current directory).",
)
@click.pass_context
def memory_group(ctx: click.Context, home: str | None, project_dir: str | None) -> None:
    """Verified memory for coding agents: record, prepare, promote, start, outcome, dream.

    Only verified work reaches a brief or a plan. Nothing is ever deleted.
    """
    ctx.obj = _Where(home, project_dir)


# ------------------------------------------------------------------ record


def _read_input(source: str) -> Any:
    if source == "-":
        data = sys.stdin.buffer.read(MANIFEST_LIMIT + 1)
        if len(data) > MANIFEST_LIMIT:
            raise UsageError(f"stdin: more than {MANIFEST_LIMIT} bytes")
        return loads_strict(data, "stdin")
    return read_json(source, "manifest")


def _parse_ran(values: tuple[str, ...], option: str = "--ran") -> list[dict[str, Any]]:
    commands = []
    for value in values:
        code, sep, command = value.partition(":")
        try:
            exit_code = int(code)
        except ValueError:
            exit_code = None
        if not sep or exit_code is None or not command.strip():
            raise UsageError(f"{option} {value!r}: expected EXIT_CODE:COMMAND, like '0:pytest -q'")
        commands.append({"command": command, "exit_code": exit_code})
    return commands


@memory_group.command("record")
@click.option("--input", "input_path", default=None, help="JSON experience file, or - for stdin.")
@click.option("--task", default=None, help="The task as it was given.")
@click.option("--summary", default=None, help="What was done and what worked.")
@click.option("--outcome", type=click.Choice(["passed", "failed"]), default=None)
@click.option("--verify-command", default=None, help="The verification command.")
@click.option("--verify-exit-code", type=int, default=None, help="Its exit code.")
@click.option("--ran", multiple=True, help="A command run, as EXIT_CODE:COMMAND (repeatable).")
@click.option("--step", multiple=True, help="A step, in order (repeatable).")
@click.option("--file", "files", multiple=True, help="A file touched (repeatable).")
@click.option(
    "--project-name",
    default=None,
    help="The project this experience belongs to (a brief for another project leaves it out).",
)
@click.option(
    "--qa",
    type=click.Choice(["approved", "unreviewed"]),
    default=None,
    help="Review state: only approved, verified work can become a Skill.",
)
@click.option("--plan-id", default=None, help="The plan this work followed (from `start`).")
@click.option("--skill-id", default=None, help="The Skill this work used.")
@click.option("--host", default=None, help="Agent host (claude, codex, gemini, ...).")
@click.option("--model", default=None, help="Model the host says it used.")
@click.option("--task-id", default=None, help="Task id in an evaluation (checked against locks).")
@_JSON
@click.pass_context
def record_command(
    ctx: click.Context,
    input_path: str | None,
    task: str | None,
    summary: str | None,
    outcome: str | None,
    verify_command: str | None,
    verify_exit_code: int | None,
    ran: tuple[str, ...],
    step: tuple[str, ...],
    files: tuple[str, ...],
    project_name: str | None,
    qa: str | None,
    plan_id: str | None,
    skill_id: str | None,
    host: str | None,
    model: str | None,
    task_id: str | None,
    as_json: bool,
) -> None:
    """Record one experience (secrets are redacted before anything is stored).

    Give the experience as JSON with --input (the lore_record tool's arguments), or with
    flags. Verified means outcome 'passed' and a verification exit code of 0.
    """
    flags: dict[str, Any] = {
        "task": task,
        "summary": summary,
        "outcome": outcome,
        "project": project_name,
        "qa": qa,
        "plan_id": plan_id,
        "skill_id": skill_id,
        "host": host,
        "model": model,
        "task_id": task_id,
    }
    given = {key: value for key, value in flags.items() if value is not None}
    if verify_command is not None or verify_exit_code is not None:
        given["verification"] = {"command": verify_command, "exit_code": verify_exit_code}
    if ran:
        given["commands"] = _parse_ran(ran)
    if step:
        given["steps"] = list(step)
    if files:
        given["files"] = list(files)
    if input_path is not None:
        if given:
            raise UsageError("give the experience either with --input or with flags, not both")
        source = "stdin" if input_path == "-" else input_path
        request = _validate(RecordRequest, _read_input(input_path), source)
    else:
        request = _validate(RecordRequest, given, "record flags")
    result = _store(ctx, create=True).record(request)

    def human() -> None:
        state = "verified" if result.verified else "unverified (not used in briefs)"
        redactions = ", ".join(f"{k}: {v}" for k, v in result.redactions.items()) or "none"
        click.echo(f"recorded {result.id}: {state}; redactions: {redactions}")

    _emit(result, as_json, human)


# ------------------------------------------------------------------ prepare and start


def _print_brief(brief: Brief) -> None:
    if brief.empty:
        click.echo(f"(empty brief {brief.brief_id}: {brief.reason})")
        return
    click.echo(brief.text, nl=False)
    click.echo(
        f"({brief.brief_id}; about {brief.tokens_estimate} tokens, estimated; "
        f"{brief.omitted} omitted for the budget)"
    )


@memory_group.command("prepare")
@click.argument("task")
@_PROJECT_NAME
@click.option("--no-skills", is_flag=True, help="Leave Skills out of the brief.")
@click.option("--budget-tokens", type=int, default=1200, show_default=True)
@_JSON
@click.pass_context
def prepare_command(
    ctx: click.Context,
    task: str,
    project_name: str | None,
    no_skills: bool,
    budget_tokens: int,
    as_json: bool,
) -> None:
    """Brief TASK with relevant verified memory (empty when nothing clears the floor)."""
    request = _validate(
        PrepareRequest,
        {
            "task": task,
            "project": project_name,
            "include_skills": not no_skills,
            "budget_tokens": budget_tokens,
        },
        "prepare arguments",
    )
    brief = _store(ctx, create=True).prepare(request)
    _emit(brief, as_json, lambda: _print_brief(brief))


@memory_group.command("start")
@click.argument("task")
@_PROJECT_NAME
@click.option("--include-review-required", is_flag=True, help="Also consider Skills at health 0.")
@_JSON
@click.pass_context
def start_command(
    ctx: click.Context,
    task: str,
    project_name: str | None,
    include_review_required: bool,
    as_json: bool,
) -> None:
    """Plan TASK with the best healthy Skill, or say why there is no plan."""
    request = _validate(
        StartRequest,
        {
            "task": task,
            "project": project_name,
            "include_review_required": include_review_required,
        },
        "start arguments",
    )
    result = _store(ctx, create=True).start(request)

    def human() -> None:
        if result.plan_id is None:
            click.echo(f"no plan: {result.reason}")
        else:
            click.echo(f"{result.plan_id} with {result.skill_id} (score {result.score:.2f}):")
            for number, step in enumerate(result.steps, start=1):
                click.echo(f"  {number}. {step.command}  (expect exit {step.expected_exit_code})")
        _print_brief(result.brief)

    _emit(result, as_json, human)


# ------------------------------------------------------------------ skills, plans, health


def _print_skill(skill: Skill) -> None:
    click.echo(
        f"{skill.id} {skill.name} ({skill.state}, health {skill.health}) "
        f"from {', '.join(skill.source_experience_ids)}"
    )
    for number, step in enumerate(skill.steps, start=1):
        click.echo(f"  {number}. {step.command}")


@memory_group.command("promote")
@click.argument("experience_ids", nargs=-1, required=True)
@click.option("--name", required=True, help="Agent Skills name: lowercase, digits, hyphens.")
@click.option("--description", required=True, help="What the Skill does and when to use it.")
@_JSON
@click.pass_context
def promote_command(
    ctx: click.Context,
    experience_ids: tuple[str, ...],
    name: str,
    description: str,
    as_json: bool,
) -> None:
    """Promote two or more verified, QA-approved experiences sharing a procedure to a Skill."""
    request = _validate(
        PromoteRequest,
        {"experience_ids": list(experience_ids), "name": name, "description": description},
        "promote arguments",
    )
    skill = _store(ctx).promote_skill(request)
    _emit(skill, as_json, lambda: _print_skill(skill))


@memory_group.command("outcome")
@click.argument("plan_id")
@click.option("--passed/--failed", required=True, help="Whether following the plan worked.")
@click.option("--rework-count", type=int, required=True, help="Rework rounds it needed.")
@_JSON
@click.pass_context
def outcome_command(
    ctx: click.Context, plan_id: str, passed: bool, rework_count: int, as_json: bool
) -> None:
    """Report the outcome of PLAN_ID (once); updates its Skill's health."""
    request = _validate(
        OutcomeRequest,
        {"plan_id": plan_id, "passed": passed, "rework_count": rework_count},
        "outcome arguments",
    )
    result = _store(ctx).report_outcome(request)
    _emit(
        result,
        as_json,
        lambda: click.echo(
            f"{result.plan_id}: {'passed' if result.passed else 'failed'}; "
            f"{result.skill_id} health {result.health}/{result.health_cap} ({result.state})"
        ),
    )


def _health_table(result: SkillHealthResult) -> None:
    table = Table("skill", "name", "health", "state", "passed", "failed", "unreported")
    for item in result.skills:
        _add_row(
            table,
            item.skill_id,
            item.name,
            f"{item.health}/{item.health_cap}",
            item.state,
            str(item.successes),
            str(item.failures),
            str(item.plans_unreported),
        )
    stdout_console().print(table)


@memory_group.command("health")
@click.argument("skill_id", required=False)
@_JSON
@click.pass_context
def health_command(ctx: click.Context, skill_id: str | None, as_json: bool) -> None:
    """Skill health (start 2, -1 per failed plan, +1 per passed plan up to the cap)."""
    request = _validate(SkillHealthRequest, {"skill_id": skill_id}, "health arguments")
    result = _store(ctx).skill_health(request.skill_id)
    _emit(result, as_json, lambda: _health_table(result))


# ------------------------------------------------------------------ dreams


def _worker_cwd(where: _Where) -> Path | None:
    """The project directory a dreamer runs in, or ``None`` (a private temporary directory).

    ``--project`` names it; without one, the current directory is the project only when the
    store lives there (no ``--home``, no ``$LORELAB_HOME``).
    """
    if where.project_dir is not None:
        return Path(os.path.abspath(where.project_dir))
    if where.home is None and not os.environ.get(HOME_ENV):
        return Path.cwd()
    return None


def _print_worker_dream(result: WorkerDreamResult) -> None:
    receipt = result.receipt
    if not result.ok:
        click.echo(
            f"the dreamer call failed ({receipt.failure}: {receipt.failure_detail}); "
            "nothing was stored"
        )
    else:
        claimed = receipt.model.claimed or "not reported"
        evidence = f"; evidence: {receipt.evidence_kind}" if receipt.evidence_kind else ""
        click.echo(
            f"{result.stored} proposal(s) stored as unchecked candidate(s), {result.refused} "
            f"refused, from {result.considered_experiences} verified experience(s); "
            f"model (claimed): {claimed}{evidence}"
        )
    click.echo(
        f"receipt: role {receipt.role}, exit {receipt.exit_code}, {receipt.duration_ms} ms, "
        f"prompt {receipt.prompt_hash[:12]}"
    )
    if result.proposals:
        table = Table("#", "name", "status", "candidate / refusal", "reason")
        for outcome in result.proposals:
            _add_row(
                table,
                str(outcome.index),
                outcome.name,
                outcome.status,
                outcome.candidate_id or outcome.refusal or "",
                outcome.reason or "",
            )
        stdout_console().print(table)


@memory_group.command("dream")
@_PROJECT_NAME
@click.option("--limit", type=int, default=200, show_default=True, help="Experiences considered.")
@click.option(
    "--agent",
    default=None,
    help="Ask a worker (role dreamer) instead of mining: a shipped adapter (fixture, claude, "
    "codex, gemini) or the worker's argv as a JSON array. Never run through a shell.",
)
@click.option(
    "--timeout-ms",
    type=int,
    default=None,
    help=f"With --agent: kill the worker after this many ms (default {DEFAULT_TIMEOUT_MS}).",
)
@click.option(
    "--max-output-bytes",
    type=int,
    default=None,
    help=f"With --agent: fail the call past this many stdout bytes "
    f"(default {DEFAULT_MAX_OUTPUT_BYTES}).",
)
@click.option(
    "--max-candidates",
    type=int,
    default=None,
    help="With --agent: the most candidates the worker may propose (default 10).",
)
@click.option(
    "--identity", "operator_identity", default=None, help="With --agent: who operates it."
)
@_JSON
@click.pass_context
def dream_command(
    ctx: click.Context,
    project_name: str | None,
    limit: int,
    agent: str | None,
    timeout_ms: int | None,
    max_output_bytes: int | None,
    max_candidates: int | None,
    operator_identity: str | None,
    as_json: bool,
) -> None:
    """Mine candidate Skills from command sequences shared by verified experiences.

    With --agent, a worker proposes them instead (one call through the worker protocol, never
    retried); each proposal is stored as an unchecked candidate or refused with its reason.
    Exit 1 when the call failed (nothing stored; the receipt is printed), 3 when the worker's
    identity changed during it.
    """
    if agent is None:
        given = {
            "--timeout-ms": timeout_ms,
            "--max-output-bytes": max_output_bytes,
            "--max-candidates": max_candidates,
            "--identity": operator_identity,
        }
        stray = [flag for flag, value in given.items() if value is not None]
        if stray:
            raise UsageError(f"{stray[0]} is only used with --agent (a worker-based Dream)")
    else:
        _dream_with_agent(
            ctx,
            agent,
            {
                "project": project_name,
                "limit": limit,
                "max_candidates": 10 if max_candidates is None else max_candidates,
            },
            DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms,
            DEFAULT_MAX_OUTPUT_BYTES if max_output_bytes is None else max_output_bytes,
            operator_identity,
            as_json,
        )
        return
    request = _validate(DreamRequest, {"project": project_name, "limit": limit}, "dream arguments")
    result = _store(ctx).dream(request)

    def human() -> None:
        click.echo(
            f"{len(result.candidates)} new candidate(s) from {result.considered_experiences} "
            f"verified experience(s); {result.already_known} already known"
        )
        for candidate in result.candidates:
            click.echo(f"{candidate.id} {candidate.name}: {len(candidate.checks)} check(s)")

    _emit(result, as_json, human)


def _dream_with_agent(
    ctx: click.Context,
    agent: str,
    arguments: dict[str, Any],
    timeout_ms: int,
    max_output_bytes: int,
    operator_identity: str | None,
    as_json: bool,
) -> None:
    request = _validate(WorkerDreamRequest, arguments, "dream arguments")
    argv = resolve_agent(agent)
    where: _Where = ctx.find_object(_Where)  # type: ignore[assignment]
    result = dream_with_worker(
        _store(ctx),
        request,
        argv,
        cwd=_worker_cwd(where),
        timeout_ms=timeout_ms,
        max_output_bytes=max_output_bytes,
        operator_identity=operator_identity,
    )
    _emit(result, as_json, lambda: _print_worker_dream(result))
    if result.receipt.failure == "identity-changed":
        exit_with(3)
    if not result.ok:
        exit_with(1)


def _print_check(run: CheckRun) -> None:
    click.echo(f"{run.id} for {run.candidate_id}: {'passed' if run.passed else 'FAILED'}")
    for result in run.results:
        code = "-" if result.exit_code is None else str(result.exit_code)
        click.echo(f"  [{result.status}] {result.command} (exit {code})")


@memory_group.command("check")
@click.argument("candidate_id")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="Project to copy for the checks (default: --project, else the current directory).",
)
@click.option("--timeout", type=float, default=60.0, show_default=True, help="Seconds per check.")
@_JSON
@click.pass_context
def check_command(
    ctx: click.Context,
    candidate_id: str,
    directory: str | None,
    timeout: float,
    as_json: bool,
) -> None:
    """Run a candidate's checks in a disposable copy of the project; exit 1 if one fails."""
    where: _Where = ctx.find_object(_Where)  # type: ignore[assignment]
    project_dir = directory or where.project_dir or os.getcwd()
    request = _validate(
        CheckRequest,
        {"candidate_id": candidate_id, "timeout_seconds": timeout},
        "check arguments",
    )
    run = _store(ctx).check_candidate(request.candidate_id, project_dir, request.timeout_seconds)
    _emit(run, as_json, lambda: _print_check(run))
    if not run.passed:
        exit_with(1)


@memory_group.command("promote-candidate")
@click.argument("candidate_id")
@click.option("--name", default=None, help="Skill name (default: the candidate's).")
@click.option("--description", default=None, help="Skill description (default: the candidate's).")
@_JSON
@click.pass_context
def promote_candidate_command(
    ctx: click.Context,
    candidate_id: str,
    name: str | None,
    description: str | None,
    as_json: bool,
) -> None:
    """Promote a checked candidate into a trusted Skill."""
    request = _validate(
        PromoteCandidateRequest,
        {"candidate_id": candidate_id, "name": name, "description": description},
        "promote-candidate arguments",
    )
    skill = _store(ctx).promote_candidate(request)
    _emit(skill, as_json, lambda: _print_skill(skill))


# ------------------------------------------------------------------ list and show


def _list_table(result: ListResult) -> None:
    table = Table("id", "kind", "state", "summary", title=f"{result.kind}s ({result.total})")
    for item in result.items:
        data = item.model_dump()
        ident = str(data.get("id") or data.get("evaluation_id"))
        state = str(
            data.get("trust") or data.get("state") or ("active" if data.get("active") else "")
        )
        text = str(
            data.get("task")
            or data.get("name")
            or data.get("requirements")
            or data.get("holdout_tasks")
            or ""
        )
        _add_row(table, ident, item.kind, state, text[:80])
    stdout_console().print(table)


@memory_group.command("list")
@click.option(
    "--kind",
    type=click.Choice(["experience", "skill", "plan", "brief", "candidate", "lock", "lesson"]),
    default="experience",
    show_default=True,
)
@click.option("--limit", type=int, default=50, show_default=True)
@_JSON
@click.pass_context
def list_command(ctx: click.Context, kind: Any, limit: int, as_json: bool) -> None:
    """The most recent items of one kind, newest first."""
    request = _validate(ListRequest, {"kind": kind, "limit": limit}, "list arguments")
    result = _store(ctx).list_items(request.kind, request.limit)
    _emit(result, as_json, lambda: _list_table(result))


def _cell(value: Any) -> str:
    """One table cell: text as it is, anything structured as compact JSON."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    return canonical_json(value)


def _field_rows(prefix: str, value: Any) -> list[tuple[str, str]]:
    # Nested objects (provenance, its verification, a plan's outcome, the last check) get one
    # row per inner field, and lists of objects one row per entry, so nothing hides in a blob.
    if isinstance(value, dict) and value:
        rows: list[tuple[str, str]] = []
        for key, inner in value.items():
            rows += _field_rows(f"{prefix}.{key}" if prefix else str(key), inner)
        return rows
    if isinstance(value, list) and value and all(isinstance(entry, dict) for entry in value):
        return [(f"{prefix}[{n}]", _cell(entry)) for n, entry in enumerate(value, start=1)]
    return [(prefix, _cell(value))]


def _item_table(item: Item) -> None:
    table = Table("field", "value", title=Text(f"{item.kind} {getattr(item, 'id', '')}".strip()))
    for field, value in _field_rows("", item.model_dump(mode="json")):
        _add_row(table, field, value)
    stdout_console().print(table)


@memory_group.command("show")
@click.argument("item_id")
@_JSON
@click.pass_context
def show_command(ctx: click.Context, item_id: str, as_json: bool) -> None:
    """One item by id (exp-N, skill-N, plan-N, brief-N, cand-N) with its provenance."""
    request = _validate(ShowRequest, {"id": item_id}, "show arguments")
    item = _store(ctx).show(request.id)
    _emit(item, as_json, lambda: _item_table(item))


# ------------------------------------------------------------------ skills export


@memory_group.group("skills", cls=LorelabGroup)
def skills_group() -> None:
    """Skills as Agent Skills folders."""


@skills_group.command("export")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--include-review-required", is_flag=True, help="Also export Skills at health 0.")
@_JSON
@click.pass_context
def export_command(
    ctx: click.Context, directory: str, include_review_required: bool, as_json: bool
) -> None:
    """Write each Skill as DIRECTORY/<name>/SKILL.md (never overwriting a folder)."""
    skills = _store(ctx).skills(include_review_required)
    written = export_skills(skills, directory)
    paths = [str(path) for path in written]

    def human() -> None:
        for path in paths:
            click.echo(path)
        if not paths:
            click.echo("no Skills to export")

    _emit(paths, as_json, human)


# ------------------------------------------------------------------ evaluation locks


@memory_group.group("lock", cls=LorelabGroup)
def lock_group() -> None:
    """Evaluation locks: record refuses holdout tasks while a lock is active."""


@lock_group.command("set")
@click.argument("evaluation_id")
@click.option("--task", "tasks", multiple=True, help="A holdout task id or text (repeatable).")
@click.option(
    "--tasks-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="JSON file holding a list of holdout task ids or texts.",
)
@_JSON
@click.pass_context
def lock_set_command(
    ctx: click.Context,
    evaluation_id: str,
    tasks: tuple[str, ...],
    tasks_file: str | None,
    as_json: bool,
) -> None:
    """Lock EVALUATION_ID's holdout tasks: matched after whitespace normalisation, any case."""
    holdout = list(tasks)
    if tasks_file is not None:
        data = read_json(tasks_file, "manifest")
        if not isinstance(data, list) or not all(isinstance(item, str) for item in data):
            raise UsageError(f"{tasks_file}: expected a JSON list of strings")
        holdout += data
    if not holdout:
        raise UsageError("give at least one holdout task with --task or --tasks-file")
    lock = _store(ctx, create=True).set_evaluation_lock(evaluation_id, holdout)
    _emit(
        lock,
        as_json,
        lambda: click.echo(f"lock {lock.evaluation_id}: {len(lock.holdout_tasks)} holdout task(s)"),
    )


@lock_group.command("clear")
@click.argument("evaluation_id")
@_JSON
@click.pass_context
def lock_clear_command(ctx: click.Context, evaluation_id: str, as_json: bool) -> None:
    """Clear EVALUATION_ID's active lock (it stays in the record as cleared)."""
    lock = _store(ctx).clear_evaluation_lock(evaluation_id)
    _emit(lock, as_json, lambda: click.echo(f"lock {lock.evaluation_id} cleared"))


@lock_group.command("show")
@_JSON
@click.pass_context
def lock_show_command(ctx: click.Context, as_json: bool) -> None:
    """Every evaluation lock, active and cleared."""
    locks = _store(ctx).evaluation_locks()

    def human() -> None:
        table = Table("evaluation", "active", "holdout tasks", "created", "cleared")
        for lock in locks:
            _add_row(
                table,
                lock.evaluation_id,
                "yes" if lock.active else "no",
                str(len(lock.holdout_tasks)),
                lock.created_at,
                lock.cleared_at or "",
            )
        stdout_console().print(table)

    _emit([lock.model_dump() for lock in locks], as_json, human)


# ------------------------------------------------------------------ durable context


def _home(ctx: click.Context, *, create: bool) -> Path:
    where: _Where = ctx.find_object(_Where)  # type: ignore[assignment]
    return memory_home(where.home, where.project_dir, create=create)


@memory_group.command("checkpoint")
@click.option("--input", "input_path", default=None, help="JSON checkpoint, or - for stdin.")
@click.option("--scope", default=None, help="What the context belongs to (task or session id).")
@click.option(
    "--boundary", type=click.Choice(["compaction", "restart", "child_handoff"]), default=None
)
@click.option("--summary", default=None, help="Summary of the work so far.")
@click.option("--note", "notes", multiple=True, help="A note the next context keeps (repeatable).")
@click.option("--task", default=None, help="The task statement.")
@click.option(
    "--failed", multiple=True, help="A command that failed, as EXIT_CODE:COMMAND (repeatable)."
)
@_JSON
@click.pass_context
def checkpoint_command(
    ctx: click.Context,
    input_path: str | None,
    scope: str | None,
    boundary: str | None,
    summary: str | None,
    notes: tuple[str, ...],
    task: str | None,
    failed: tuple[str, ...],
    as_json: bool,
) -> None:
    """Write durable context at a compaction, restart or child-handoff boundary (lore_checkpoint).

    Give it as JSON with --input (the lore_checkpoint tool's arguments) or with flags.
    """
    flags: dict[str, Any] = {"scope": scope, "boundary": boundary, "summary": summary, "task": task}
    given = {key: value for key, value in flags.items() if value is not None}
    if notes:
        given["notes"] = list(notes)
    if failed:
        given["failed_commands"] = _parse_ran(failed, "--failed")
    if input_path is not None:
        if given:
            raise UsageError("give the checkpoint either with --input or with flags, not both")
        source = "stdin" if input_path == "-" else input_path
        request = _validate(CheckpointRequest, _read_input(input_path), source)
    else:
        request = _validate(CheckpointRequest, given, "checkpoint flags")
    result = checkpoint(_home(ctx, create=True), request)
    _emit(
        result,
        as_json,
        lambda: click.echo(
            f"checkpoint {result.checkpoint_id} for {result.scope} ({result.boundary}); "
            f"redactions: {', '.join(f'{k}: {v}' for k, v in result.redactions.items()) or 'none'}"
        ),
    )


@memory_group.command("recover")
@click.argument("scope")
@_JSON
@click.pass_context
def recover_command(ctx: click.Context, scope: str, as_json: bool) -> None:
    """The newest checkpoint of SCOPE and the handoff brief to resume from (lore_recover)."""
    request = _validate(RecoverRequest, {"scope": scope}, "recover arguments")
    # Reading never creates anything: a home that does not exist holds no checkpoint.
    result = recover_context(_home(ctx, create=False), request)

    def human() -> None:
        if result.handoff_brief is None:
            click.echo(f"(no checkpoint for scope {request.scope})")
        else:
            click.echo(result.handoff_brief, nl=not result.handoff_brief.endswith("\n"))

    _emit(result, as_json, human)


# ------------------------------------------------------------------ snapshot


@memory_group.command("snapshot")
@click.argument("path", type=click.Path(dir_okay=False))
@_JSON
@click.pass_context
def snapshot_command(ctx: click.Context, path: str, as_json: bool) -> None:
    """Write a consistent copy of the store to PATH (a new file) and print its SHA-256."""
    store = _store(ctx)
    digest = store.snapshot(path)
    result = {"path": str(Path(path)), "sha256": digest, "source": str(store.location)}
    _emit(result, as_json, lambda: click.echo(f"{digest}  {path}"))
