"""How ``lorelab memory`` prints results for people, and how it reads its inputs.

Stored text is printed as plain text, never as console markup.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from lorelab.cli._common import stdout_console
from lorelab.errors import UsageError
from lorelab.io import MANIFEST_LIMIT, canonical_json, escape_control, loads_strict, read_json
from lorelab.memory import (
    Brief,
    CheckpointResult,
    CheckRun,
    DreamResult,
    Item,
    ListResult,
    LocksResult,
    OutcomeResult,
    RecordResult,
    RecoverRequest,
    RecoverResult,
    Skill,
    SkillHealthResult,
    StartResult,
)

if TYPE_CHECKING:
    from rich.table import Table

    from lorelab.memory import WorkerDreamResult


def _table(*columns: str, **options: Any) -> Table:
    """A rich table; rich's table module is loaded only by the commands that print one."""
    from rich.table import Table

    return Table(*columns, **options)


def read_input(source: str) -> Any:
    """The JSON value of ``--input``: a file, or ``-`` for stdin (bounded)."""
    if source == "-":
        data = sys.stdin.buffer.read(MANIFEST_LIMIT + 1)
        if len(data) > MANIFEST_LIMIT:
            raise UsageError(f"stdin: more than {MANIFEST_LIMIT} bytes")
        return loads_strict(data, "stdin")
    return read_json(source, "manifest")


def parse_ran(values: tuple[str, ...], option: str = "--ran") -> list[dict[str, Any]]:
    """``EXIT_CODE:COMMAND`` options as command objects."""
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


def echo(text: str, *, nl: bool = True) -> None:
    """Print a line for people: control characters from stored text shown escaped."""
    click.echo(escape_control(text), nl=nl)


def add_row(table: Table, *cells: str) -> None:
    """One table row of plain text cells, control characters escaped."""
    # Plain Text, never console markup: stored text such as "fix [/tmp] paths" or
    # "[REDACTED:api_key]" is shown as written (as markup the first would even crash rich).
    from rich.text import Text

    table.add_row(*(Text(escape_control(cell), overflow="fold") for cell in cells))


def _redactions(counts: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in counts.items()) or "none"


def print_record(request: Any, result: RecordResult) -> None:
    state = "verified" if result.verified else "unverified (not used in briefs)"
    echo(f"recorded {result.id}: {state}; redactions: {_redactions(result.redactions)}")


def print_brief(brief: Brief) -> None:
    label = brief.brief_id or "not recorded: the store is read-only"
    if brief.empty:
        echo(f"(empty brief {label}: {brief.reason})")
        return
    echo(brief.text, nl=False)
    echo(
        f"({label}; about {brief.tokens_estimate} tokens, estimated; "
        f"{brief.omitted} omitted for the budget)"
    )


def print_start(request: Any, result: StartResult) -> None:
    if result.plan_id is None:
        echo(f"no plan: {result.reason}")
    else:
        echo(f"{result.plan_id} with {result.skill_id} (score {result.score:.2f}):")
        for number, step in enumerate(result.steps, start=1):
            echo(f"  {number}. {step.command}  (expect exit {step.expected_exit_code})")
    print_brief(result.brief)


def print_skill(skill: Skill) -> None:
    echo(
        f"{skill.id} {skill.name} ({skill.state}, health {skill.health}) "
        f"from {', '.join(skill.source_experience_ids)}"
    )
    for number, step in enumerate(skill.steps, start=1):
        echo(f"  {number}. {step.command}")


def print_outcome(request: Any, result: OutcomeResult) -> None:
    echo(
        f"{result.plan_id}: {'passed' if result.passed else 'failed'}; "
        f"{result.skill_id} health {result.health}/{result.health_cap} ({result.state})"
    )


def health_table(result: SkillHealthResult) -> None:
    table = _table("skill", "name", "health", "state", "passed", "failed", "unreported")
    for item in result.skills:
        add_row(
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


def print_dream(request: Any, result: DreamResult) -> None:
    echo(
        f"{len(result.candidates)} new candidate(s) from {result.considered_experiences} "
        f"verified experience(s); {result.already_known} already known"
    )
    if result.reason is not None:
        echo(f"why none: {result.reason}")
    for candidate in result.candidates:
        echo(f"{candidate.id} {candidate.name}: {len(candidate.checks)} check(s)")


def print_worker_dream(result: WorkerDreamResult) -> None:
    receipt = result.receipt
    if receipt is None:
        echo(f"0 new candidate(s): {result.skipped}")
        return
    if not result.ok:
        echo(
            f"the dreamer call failed ({receipt.failure}: {receipt.failure_detail}); "
            "nothing was stored"
        )
    else:
        claimed = receipt.model.claimed or "not reported"
        evidence = f"; evidence: {receipt.evidence_kind}" if receipt.evidence_kind else ""
        echo(
            f"{result.stored} proposal(s) stored as unchecked candidate(s), {result.refused} "
            f"refused, from {result.considered_experiences} verified experience(s); "
            f"model (claimed): {claimed}{evidence}"
        )
    echo(
        f"receipt: role {receipt.role}, exit {receipt.exit_code}, {receipt.duration_ms} ms, "
        f"prompt {receipt.prompt_hash[:12]}"
    )
    if result.proposals:
        table = _table("#", "name", "status", "candidate / refusal", "reason")
        for outcome in result.proposals:
            add_row(
                table,
                str(outcome.index),
                outcome.name,
                outcome.status,
                outcome.candidate_id or outcome.refusal or "",
                outcome.reason or "",
            )
        stdout_console().print(table)


def print_check(run: CheckRun) -> None:
    echo(f"{run.id} for {run.candidate_id}: {'passed' if run.passed else 'FAILED'}")
    for result in run.results:
        code = "-" if result.exit_code is None else str(result.exit_code)
        echo(f"  [{result.status}] {result.command} (exit {code})")


def list_table(result: ListResult) -> None:
    table = _table("id", "kind", "state", "summary", title=f"{result.kind}s ({result.total})")
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
        add_row(table, ident, item.kind, state, text[:80])
    stdout_console().print(table)


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


def item_table(item: Item) -> None:
    title = escape_control(f"{item.kind} {getattr(item, 'id', '')}".strip())
    from rich.text import Text

    table = _table("field", "value", title=Text(title))
    for field, value in _field_rows("", item.model_dump(mode="json")):
        add_row(table, field, value)
    stdout_console().print(table)


def locks_table(result: LocksResult) -> None:
    table = _table("evaluation", "active", "holdout tasks", "created", "cleared")
    for lock in result.locks:
        add_row(
            table,
            lock.evaluation_id,
            "yes" if lock.active else "no",
            str(len(lock.holdout_tasks)),
            lock.created_at,
            lock.cleared_at or "",
        )
    stdout_console().print(table)


def print_checkpoint(request: Any, result: CheckpointResult) -> None:
    echo(
        f"checkpoint {result.checkpoint_id} for {result.scope} ({result.boundary}); "
        f"redactions: {_redactions(result.redactions)}"
    )


def print_recover(request: RecoverRequest, result: RecoverResult) -> None:
    if result.handoff_brief is None:
        echo(f"(no checkpoint for scope {request.scope})")
    else:
        echo(result.handoff_brief, nl=not result.handoff_brief.endswith("\n"))
