"""``lorelab memory``: the memory's operations on the command line, the same as over MCP.

Every command is built from one entry of the memory's operations table: its options become a
dict, the dict is validated as the operation's request, the operation runs, and its result is
printed: ``--json`` prints exactly what the MCP tool returns as structured content; otherwise
a short table or text for people. The store is ``--home``, ``$LORELAB_HOME``, or
``<project>/.lorelab``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from lorelab.cli._common import LorelabGroup, deprecated_alias, echo_json, exit_with
from lorelab.cli._memory_commands import (
    COMMANDS,
    Command,
    Options,
    Where,
    default_command,
    json_option,
    request_of,
    store_for,
    where_of,
)
from lorelab.cli._memory_dream import DREAM
from lorelab.cli._memory_retrieval import RETRIEVAL_COMMANDS
from lorelab.cli._options import project_option
from lorelab.errors import UsageError
from lorelab.memory import OPERATIONS, Operation, Target, find_project, memory_home


def _target(ctx: click.Context, entry: Operation[Any, Any], project_dir: str | None) -> Target:
    where = where_of(ctx)
    return Target(
        store=lambda: store_for(ctx, create=entry.creates),
        # Reading never creates anything: a home that does not exist holds no checkpoint.
        home=lambda: memory_home(where.home, where.project_dir, create=entry.creates),
        project_dir=lambda: Path(project_dir or where.project_dir or find_project()),
    )


def _take_home(ctx: click.Context, home: str | None) -> None:
    """``--home`` after the command: the same as the group's ``--home``, which it may repeat."""
    if home is None:
        return
    where = where_of(ctx)
    if where.home is not None and where.home != home:
        raise UsageError(
            f"--home is given twice with different values ({where.home!r}, {home!r}); give it once"
        )
    ctx.obj = Where(home, where.project_dir)


def _run(entry: Operation[Any, Any], command: Command, options: Options) -> None:
    """The one path of every command: options -> request -> operation -> output -> exit code."""
    ctx = click.get_current_context()
    as_json = options.pop("as_json")
    _take_home(ctx, options.pop("home"))
    if command.divert is not None and command.divert(ctx, options, as_json):
        return
    call = command.call(options)
    request = request_of(entry.request, call, command.params)
    result = entry.handler(_target(ctx, entry, call.project_dir), request)
    if as_json:
        echo_json(command.json_view(result) if command.json_view is not None else result)
    else:
        command.human(request, result)
    code = command.exit_code(result)
    if code:
        exit_with(code)


_HOME_HELP = "Memory home: the store is HOME/memory.db (overrides $LORELAB_HOME)."


def _home_option() -> click.Option:
    return click.Option(
        ["--home"],
        type=click.Path(file_okay=False),
        default=None,
        help=_HOME_HELP + " Also accepted before the command.",
    )


@click.group(name="memory", cls=LorelabGroup)
@click.option(
    "--home",
    type=click.Path(file_okay=False),
    default=None,
    help=_HOME_HELP + " Also accepted after the command.",
)
@project_option(
    "Project directory: the store is PROJECT/.lorelab/memory.db when no home is set "
    "(default: the current directory)."
)
@click.pass_context
def memory_group(ctx: click.Context, home: str | None, project_dir: str | None) -> None:
    """Verified memory for coding agents: record, prepare, promote, start, outcome, dream.

    Only verified work reaches a brief or a plan. Nothing is ever deleted.
    """
    ctx.obj = Where(home, project_dir)


@memory_group.group("skills", cls=LorelabGroup)
def skills_group() -> None:
    """Skills: promote verified experiences to one, see their health, export them."""


@memory_group.group("lock", cls=LorelabGroup)
def lock_group() -> None:
    """Evaluation locks: record refuses holdout tasks while a lock is active."""


@memory_group.group("candidates", cls=LorelabGroup)
def candidates_group() -> None:
    """Candidate Skills from `dream`: check them in a disposable copy, promote the checked."""


MOVED: dict[str, str] = {
    "promote": "skills promote",
    "health": "skills health",
    "check": "candidates check",
    "promote-candidate": "candidates promote",
}
"""Operations whose command lives in a group: their old flat spelling stays, deprecated."""


def _command(entry: Operation[Any, Any], name: str) -> click.Command:
    command = {**COMMANDS, **RETRIEVAL_COMMANDS, "dream": DREAM}.get(entry.name) or default_command(
        entry
    )

    def callback(**options: Any) -> None:
        _run(entry, command, options)

    return click.Command(
        name,
        callback=callback,
        params=[*command.params, json_option(), _home_option()],
        help=command.help,
    )


def _build() -> None:
    groups: dict[str, click.Group] = {
        "skills": skills_group,
        "lock": lock_group,
        "candidates": candidates_group,
    }
    for entry in OPERATIONS:
        words = MOVED.get(entry.name, entry.name).split(" ")
        parent = groups[words[0]] if len(words) > 1 else memory_group
        command = _command(entry, words[-1])
        parent.add_command(command)
        if entry.name in MOVED:
            old, new = f"lorelab memory {entry.name}", f"lorelab memory {MOVED[entry.name]}"
            memory_group.add_command(deprecated_alias(command, old, new), entry.name)


_build()
