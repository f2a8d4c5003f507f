"""The commands of ``lorelab memory``: how each operation of the memory's table looks on the
command line (options, the request they make, how its result is printed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lorelab.cli import _memory_views as views
from lorelab.cli._common import deprecation, echo_json, flag_namer, flags_usage_error
from lorelab.errors import UsageError
from lorelab.io import read_json, validate_model
from lorelab.memory import (
    CheckRun,
    LocksResult,
    MemoryStore,
    Operation,
    SkillsExportResult,
    open_store,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

Options = dict[str, Any]
M = TypeVar("M", bound="BaseModel")


@dataclass(frozen=True, slots=True)
class Where:
    home: str | None
    project_dir: str | None


@dataclass(frozen=True, slots=True)
class Call:
    """What a command's options ask for: the request data, where it came from, and the project."""

    data: Any
    source: str
    project_dir: str | None = None
    fields: dict[str, tuple[str, ...]] | None = None
    """Made from flags: the parameters that give each request field (a dotted path), so that
    an error names the user's flags; ``None`` when the request was read from JSON."""


@dataclass(frozen=True, slots=True)
class Command:
    """How one operation of the table looks on the command line."""

    help: str
    params: list[click.Parameter]
    call: Callable[[Options], Call]
    human: Callable[[Any, Any], None]
    json_view: Callable[[Any], Any] | None = None
    exit_code: Callable[[Any], int] = field(default=lambda result: 0)
    divert: Callable[[click.Context, Options, bool], bool] | None = None
    """Runs instead of the operation when it returns True (``dream --agent``)."""


def where_of(ctx: click.Context) -> Where:
    where = ctx.find_object(Where)
    assert where is not None  # the memory group always sets it
    return where


def store_for(ctx: click.Context, *, create: bool) -> MemoryStore:
    """The store for this command; only operations that can start a memory create one.

    ``record``, ``prepare``, ``start`` and ``lock set`` create a missing store (the first
    record or brief of a project). Every other command reads, or acts on items that must
    already exist, so a missing store (a mistyped ``--project``) is refused naming its path,
    and nothing is created.
    """
    where = where_of(ctx)
    store = open_store(where.home, where.project_dir, create=create)
    ctx.call_on_close(store.close)
    return store


def _json_input(
    source: str | None,
    given: Options,
    what: str,
    flags_source: str,
    fields: dict[str, tuple[str, ...]] | None = None,
) -> Call:
    """The request from ``--input`` (a JSON file or ``-``) or from flags, never both."""
    if source is None:
        return Call(given, flags_source, fields=fields or {})
    if given:
        raise UsageError(f"give the {what} either with --input or with flags, not both")
    return Call(views.read_input(source), "stdin" if source == "-" else source)


def request_of(model: type[M], call: Call, params: list[click.Parameter]) -> M:
    """``call``'s data validated as ``model``; when it was made from flags, an error names the
    flags (all the missing ones at once), not the request's fields."""
    if call.fields is None:
        return validate_model(model, call.data, call.source)
    from pydantic import ValidationError

    try:
        return model.model_validate(call.data)
    except ValidationError as exc:
        raise flags_usage_error(exc, flag_namer(call.fields, params)) from None


def _given(options: Options, names: dict[str, str]) -> Options:
    """The options that were given, under their request field names."""
    return {field: options[name] for name, field in names.items() if options[name] is not None}


def from_options(what: str, **fields: str | Callable[[Options], Any]) -> Callable[[Options], Call]:
    """A call whose request fields are options: ``field="option name"`` takes the option as it
    is, ``field=function`` what the function makes of the options."""

    def call(options: Options) -> Call:
        return Call(
            {
                field: source(options) if callable(source) else options[source]
                for field, source in fields.items()
            },
            f"{what} arguments",
            fields={
                field: (source,) for field, source in fields.items() if isinstance(source, str)
            },
        )

    return call


# ------------------------------------------------------------------ shared options


def json_option() -> click.Option:
    return click.Option(["--json", "as_json"], is_flag=True, help="Print the result as JSON.")


def project_name(
    help_text: str = "Only use memories of this project (and memories with no project).",
) -> click.Option:
    return click.Option(["--project-name"], default=None, help=help_text)


def _input(what: str) -> click.Option:
    return click.Option(
        ["--input", "input_path"], default=None, help=f"JSON {what}, or - for stdin."
    )


# ------------------------------------------------------------------ record


_RECORD_FIELDS = {
    "task": "task",
    "summary": "summary",
    "outcome": "outcome",
    "project_name": "project",
    "qa": "qa",
    "plan_id": "plan_id",
    "skill_id": "skill_id",
    "host": "host",
    "model": "model",
    "task_id": "task_id",
}
_RECORD_FLAGS: dict[str, tuple[str, ...]] = {
    **{field: (name,) for name, field in _RECORD_FIELDS.items()},
    "verification": ("verify_command", "verify_exit_code"),
    "verification.command": ("verify_command",),
    "verification.exit_code": ("verify_exit_code",),
    "commands": ("ran",),
    "steps": ("step",),
}


def _record_call(options: Options) -> Call:
    given = _given(options, _RECORD_FIELDS)
    if options["verify_command"] is not None or options["verify_exit_code"] is not None:
        given["verification"] = {
            "command": options["verify_command"],
            "exit_code": options["verify_exit_code"],
        }
    if options["ran"]:
        given["commands"] = views.parse_ran(options["ran"])
    if options["step"]:
        given["steps"] = list(options["step"])
    if options["files"]:
        given["files"] = list(options["files"])
    return _json_input(options["input_path"], given, "experience", "record flags", _RECORD_FLAGS)


_RECORD = Command(
    help="""Record one experience (secrets are redacted before anything is stored).

    Give the experience as JSON with --input (the lore_record tool's arguments), or with
    flags. Verified means outcome 'passed' and a verification exit code of 0.
    """,
    params=[
        _input("experience file"),
        click.Option(["--task"], default=None, help="The task as it was given."),
        click.Option(["--summary"], default=None, help="What was done and what worked."),
        click.Option(["--outcome"], type=click.Choice(["passed", "failed"]), default=None),
        click.Option(["--verify-command"], default=None, help="The verification command."),
        click.Option(["--verify-exit-code"], type=int, default=None, help="Its exit code."),
        click.Option(
            ["--ran"], multiple=True, help="A command run, as EXIT_CODE:COMMAND (repeatable)."
        ),
        click.Option(["--step"], multiple=True, help="A step, in order (repeatable)."),
        click.Option(["--file", "files"], multiple=True, help="A file touched (repeatable)."),
        project_name(
            "The project this experience belongs to (a brief for another project leaves it out)."
        ),
        click.Option(
            ["--qa"],
            type=click.Choice(["approved", "unreviewed"]),
            default=None,
            help="Review state: only approved, verified work can become a Skill.",
        ),
        click.Option(
            ["--plan-id"], default=None, help="The plan this work followed (from `start`)."
        ),
        click.Option(["--skill-id"], default=None, help="The Skill this work used."),
        click.Option(["--host"], default=None, help="Agent host (claude, codex, gemini, ...)."),
        click.Option(["--model"], default=None, help="Model the host says it used."),
        click.Option(
            ["--task-id"], default=None, help="Task id in an evaluation (checked against locks)."
        ),
    ],
    call=_record_call,
    human=views.print_record,
)

# ------------------------------------------------------------------ prepare and start

_PREPARE = Command(
    help="Brief TASK with relevant verified memory (empty when nothing clears the floor).",
    params=[
        click.Argument(["task"]),
        project_name(),
        click.Option(["--no-skills"], is_flag=True, help="Leave Skills out of the brief."),
        click.Option(["--budget-tokens"], type=int, default=1200, show_default=True),
    ],
    call=from_options(
        "prepare",
        task="task",
        project="project_name",
        include_skills=lambda o: not o["no_skills"],
        budget_tokens="budget_tokens",
    ),
    human=lambda request, brief: views.print_brief(brief),
)

_START = Command(
    help="Plan TASK with the best healthy Skill, or say why there is no plan.",
    params=[
        click.Argument(["task"]),
        project_name(),
        click.Option(
            ["--include-review-required"], is_flag=True, help="Also consider Skills at health 0."
        ),
    ],
    call=from_options(
        "start",
        task="task",
        project="project_name",
        include_review_required="include_review_required",
    ),
    human=views.print_start,
)

# ------------------------------------------------------------------ skills, plans, health

_PROMOTE = Command(
    help="Promote two or more verified, QA-approved experiences sharing a procedure to a Skill.",
    params=[
        click.Argument(["experience_ids"], nargs=-1, required=True),
        click.Option(
            ["--name"], required=True, help="Agent Skills name: lowercase, digits, hyphens."
        ),
        click.Option(
            ["--description"], required=True, help="What the Skill does and when to use it."
        ),
    ],
    call=from_options(
        "promote",
        experience_ids=lambda o: list(o["experience_ids"]),
        name="name",
        description="description",
    ),
    human=lambda request, skill: views.print_skill(skill),
)

_OUTCOME = Command(
    help="Report the outcome of PLAN_ID (once); updates its Skill's health.",
    params=[
        click.Argument(["plan_id"]),
        click.Option(
            ["--passed/--failed"], required=True, help="Whether following the plan worked."
        ),
        click.Option(["--rework-count"], type=int, required=True, help="Rework rounds it needed."),
    ],
    call=from_options("outcome", plan_id="plan_id", passed="passed", rework_count="rework_count"),
    human=views.print_outcome,
)

_HEALTH = Command(
    help="Skill health (start 2, -1 per failed plan, +1 per passed plan up to the cap).",
    params=[click.Argument(["skill_id"], required=False)],
    call=from_options("health", skill_id="skill_id"),
    human=lambda request, result: views.health_table(result),
)


def _seconds(options: Options) -> float:
    """``--timeout-s``, or the old spelling ``--timeout`` (the same seconds) with a warning."""
    if options["timeout"] is None:
        return float(options["timeout_s"])
    deprecation("--timeout", "--timeout-s")
    return float(options["timeout"])


def _check_failed(run: CheckRun) -> int:
    return 0 if run.passed else 1


_CHECK = Command(
    help="Run a candidate's checks in a disposable copy of the project; exit 1 if one fails.",
    params=[
        click.Argument(["candidate_id"]),
        click.Option(
            ["--dir", "directory"],
            type=click.Path(file_okay=False, exists=True),
            default=None,
            help="Project to copy for the checks (default: --project, else the current directory).",
        ),
        click.Option(
            ["--timeout-s"], type=float, default=60.0, show_default=True, help="Seconds per check."
        ),
        click.Option(["--timeout"], type=float, default=None, hidden=True),
    ],
    call=lambda o: Call(
        {"candidate_id": o["candidate_id"], "timeout_seconds": _seconds(o)},
        "check arguments",
        project_dir=o["directory"],
        fields={
            "candidate_id": ("candidate_id",),
            "timeout_seconds": ("timeout_s" if o["timeout"] is None else "timeout",),
        },
    ),
    human=lambda request, run: views.print_check(run),
    exit_code=_check_failed,
)

_PROMOTE_CANDIDATE = Command(
    help="Promote a checked candidate into a trusted Skill.",
    params=[
        click.Argument(["candidate_id"]),
        click.Option(["--name"], default=None, help="Skill name (default: the candidate's)."),
        click.Option(
            ["--description"], default=None, help="Skill description (default: the candidate's)."
        ),
    ],
    call=from_options(
        "promote-candidate", candidate_id="candidate_id", name="name", description="description"
    ),
    human=lambda request, skill: views.print_skill(skill),
)

# ------------------------------------------------------------------ list and show


def _list_call(options: Options) -> Call:
    if options["kind"] == "lesson":
        deprecation("lorelab memory list --kind lesson", "lorelab tests lessons list")
    return from_options("list", kind="kind", limit="limit")(options)


_LIST = Command(
    help="The most recent items of one kind, newest first.",
    params=[
        click.Option(
            ["--kind"],
            type=click.Choice(
                ["experience", "skill", "plan", "brief", "candidate", "lock", "lesson"]
            ),
            default="experience",
            show_default=True,
        ),
        click.Option(["--limit"], type=int, default=50, show_default=True),
    ],
    call=_list_call,
    human=lambda request, result: views.list_table(result),
)

_SHOW = Command(
    help="One item by id (exp-N, skill-N, plan-N, brief-N, cand-N) with its provenance.",
    params=[click.Argument(["item_id"])],
    call=from_options("show", id="item_id"),
    human=lambda request, result: views.item_table(result.item),
    json_view=lambda result: result.item,
)

# ------------------------------------------------------------------ skills export


def _print_paths(request: Any, result: SkillsExportResult) -> None:
    for path in result.paths:
        views.echo(path)
    if not result.paths:
        views.echo(
            "no Skills to export: a Skill is promoted from two or more verified experiences "
            "(`lorelab memory skills promote`), or from a mined candidate whose checks passed "
            "(`lorelab memory dream`, `memory candidates check CAND`, "
            "`memory candidates promote CAND`)"
        )


_EXPORT = Command(
    help="Write each Skill as DIRECTORY/<name>/SKILL.md (never overwriting a folder).",
    params=[
        click.Argument(["directory"], type=click.Path(file_okay=False)),
        click.Option(
            ["--include-review-required"], is_flag=True, help="Also export Skills at health 0."
        ),
    ],
    call=from_options(
        "export", directory="directory", include_review_required="include_review_required"
    ),
    human=_print_paths,
    json_view=lambda result: result.paths,
)

# ------------------------------------------------------------------ evaluation locks


def _lock_call(options: Options) -> Call:
    holdout = list(options["tasks"])
    tasks_file = options["tasks_file"]
    if tasks_file is not None:
        data = read_json(tasks_file, "manifest")
        if not isinstance(data, list) or not all(isinstance(item, str) for item in data):
            raise UsageError(f"{tasks_file}: expected a JSON list of strings")
        holdout += data
    if not holdout:
        raise UsageError("give at least one holdout task with --task or --tasks-file")
    return Call(
        {"evaluation_id": options["evaluation_id"], "holdout_tasks": holdout},
        "lock arguments",
        fields={"evaluation_id": ("evaluation_id",), "holdout_tasks": ("tasks", "tasks_file")},
    )


_LOCK_SET = Command(
    help="Lock EVALUATION_ID's holdout tasks: matched after whitespace normalisation, any case.",
    params=[
        click.Argument(["evaluation_id"]),
        click.Option(
            ["--task", "tasks"], multiple=True, help="A holdout task id or text (repeatable)."
        ),
        click.Option(
            ["--tasks-file"],
            type=click.Path(dir_okay=False),
            default=None,
            help="JSON file holding a list of holdout task ids or texts.",
        ),
    ],
    call=_lock_call,
    human=lambda request, lock: views.echo(
        f"lock {lock.evaluation_id}: {len(lock.holdout_tasks)} holdout task(s)"
    ),
)

_LOCK_CLEAR = Command(
    help="Clear EVALUATION_ID's active lock (it stays in the record as cleared).",
    params=[click.Argument(["evaluation_id"])],
    call=from_options("lock", evaluation_id="evaluation_id"),
    human=lambda request, lock: views.echo(f"lock {lock.evaluation_id} cleared"),
)


def _locks_json(result: LocksResult) -> list[dict[str, Any]]:
    return [lock.model_dump() for lock in result.locks]


_LOCK_SHOW = Command(
    help="Every evaluation lock, active and cleared.",
    params=[],
    call=from_options("lock"),
    human=lambda request, result: views.locks_table(result),
    json_view=_locks_json,
)

# ------------------------------------------------------------------ durable context


def _checkpoint_call(options: Options) -> Call:
    names = {"scope": "scope", "boundary": "boundary", "summary": "summary", "task": "task"}
    given = _given(options, names)
    if options["notes"]:
        given["notes"] = list(options["notes"])
    if options["failed"]:
        given["failed_commands"] = views.parse_ran(options["failed"], "--failed")
    fields: dict[str, tuple[str, ...]] = {name: (name,) for name in names}
    fields |= {"notes": ("notes",), "failed_commands": ("failed",)}
    return _json_input(options["input_path"], given, "checkpoint", "checkpoint flags", fields)


_CHECKPOINT = Command(
    help="Write durable context at a compaction, restart or child-handoff boundary "
    "(lore_checkpoint).\n\nGive it as JSON with --input (the lore_checkpoint tool's arguments) "
    "or with flags.",
    params=[
        _input("checkpoint"),
        click.Option(
            ["--scope"], default=None, help="What the context belongs to (task or session id)."
        ),
        click.Option(
            ["--boundary"],
            type=click.Choice(["compaction", "restart", "child_handoff"]),
            default=None,
        ),
        click.Option(["--summary"], default=None, help="Summary of the work so far."),
        click.Option(
            ["--note", "notes"],
            multiple=True,
            help="A note the next context keeps (repeatable).",
        ),
        click.Option(["--task"], default=None, help="The task statement."),
        click.Option(
            ["--failed"],
            multiple=True,
            help="A command that failed, as EXIT_CODE:COMMAND (repeatable).",
        ),
    ],
    call=_checkpoint_call,
    human=views.print_checkpoint,
)

_RECOVER = Command(
    help="The newest checkpoint of SCOPE and the handoff brief to resume from (lore_recover).",
    params=[click.Argument(["scope"])],
    call=from_options("recover", scope="scope"),
    human=views.print_recover,
)

# ------------------------------------------------------------------ snapshot

_SNAPSHOT = Command(
    help="Write a consistent copy of the store to PATH (a new file) and print its SHA-256.",
    params=[click.Argument(["path"], type=click.Path(dir_okay=False))],
    call=from_options("snapshot", path="path"),
    human=lambda request, result: views.echo(f"{result.sha256}  {request.path}"),
)

COMMANDS: dict[str, Command] = {
    "record": _RECORD,
    "prepare": _PREPARE,
    "start": _START,
    "promote": _PROMOTE,
    "outcome": _OUTCOME,
    "health": _HEALTH,
    "check": _CHECK,
    "promote-candidate": _PROMOTE_CANDIDATE,
    "list": _LIST,
    "show": _SHOW,
    "skills export": _EXPORT,
    "lock set": _LOCK_SET,
    "lock clear": _LOCK_CLEAR,
    "lock show": _LOCK_SHOW,
    "checkpoint": _CHECKPOINT,
    "recover": _RECOVER,
    "snapshot": _SNAPSHOT,
}
"""How each operation of the table looks on the command line, by operation name."""


def default_command(entry: Operation[Any, Any]) -> Command:
    """An operation with no hand-made command: its request as JSON, its result as JSON."""
    return Command(
        help=f"{entry.description}\n\nGive the request as JSON with --input (a file, or -).",
        params=[_input(f"{entry.request.__name__}")],
        call=lambda o: _json_input(
            o["input_path"], {}, "request", f"{entry.name} arguments", {"": ("input_path",)}
        ),
        human=lambda request, result: echo_json(result),
    )
