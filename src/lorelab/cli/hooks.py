"""``lorelab hooks install|uninstall|status|trust|run``: ``hooks run EVENT`` is what the agent runs.

``lorelab hook EVENT``, the spelling installed by earlier releases, is the same command,
hidden. Installed command lines are answered by :mod:`lorelab.cli._entry` without click;
these commands are what ``--help`` and a malformed command line reach.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal, NamedTuple

import click

from lorelab.cli._common import LorelabGroup, echo_json, hidden_alias, printable
from lorelab.cli._options import json_option

_AGENT_CHOICE = click.Choice(["claude-code", "codex", "gemini"])
_PROJECT = click.option(
    "--project-dir",
    "project_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=".",
    show_default=True,
    help="The project whose configuration --project edits.",
)


_scope_option = click.option(
    "--project/--user",
    "project_scope",
    default=True,
    help="Edit the project's configuration (default) or your user configuration.",
)


@click.group(name="hooks", cls=LorelabGroup, no_args_is_help=True)
def hooks_group() -> None:
    """Install lorelab's memory hooks into Claude Code, Codex CLI or Gemini CLI, and run them.

    The hooks inject a brief at session start, for each prompt that has relevant verified
    memory, and the newest checkpoint after a compaction or resume; they journal shell
    commands, write a checkpoint before a compaction, and propose an experience when the
    agent stops. Your own hooks are kept, a backup is written before a change, and installing
    twice changes nothing.
    """


class Excluded(NamedTuple):
    """What ``install --git-exclude`` did: the exclude file, what it added, what it lacks."""

    path: Path
    added: tuple[str, ...]
    missing: tuple[str, ...]


def _git_exclude(choice: bool | None, project_dir: Path, as_json: bool) -> Excluded | None:
    """Add lorelab's files to the project's ``.git/info/exclude`` when asked (or, at a
    terminal, when the user agrees); None outside a git repository."""
    from lorelab.hooks import add_excludes, exclude_state
    from lorelab.io import at_terminal

    state = exclude_state(project_dir)
    if state is None:
        return None
    if choice is None and state.missing and not as_json and at_terminal() and sys.stdin.isatty():
        choice = click.confirm(
            f"Add {', '.join(state.missing)} to {printable(str(state.path))} so that git "
            "status does not show lorelab's files?",
            default=True,
            err=True,
        )
    added = add_excludes(state) if choice else ()
    return Excluded(state.path, added, tuple(p for p in state.missing if p not in added))


def _print_excluded(excluded: Excluded | None) -> None:
    if excluded is None:
        return
    if excluded.added:
        click.echo(f"git: added {', '.join(excluded.added)} to {printable(str(excluded.path))}")
    if excluded.missing:
        click.echo(
            f"note: git status shows lorelab's files ({', '.join(excluded.missing)}); "
            "--git-exclude adds them to .git/info/exclude (README: What to commit)"
        )


def _print_result(
    verb: str, result: object, as_json: bool, excluded: Excluded | None = None
) -> None:
    from lorelab.hooks import InstallResult

    assert isinstance(result, InstallResult)
    if as_json:
        echo_json(
            {
                "agent": result.agent,
                "path": str(result.path),
                "changed": result.changed,
                "backup": None if result.backup is None else str(result.backup),
                "events": list(result.events),
                "notes": list(result.notes),
                **(
                    {}
                    if excluded is None
                    else {
                        "git_exclude": {
                            "path": str(excluded.path),
                            "added": list(excluded.added),
                            "missing": list(excluded.missing),
                        }
                    }
                ),
            }
        )
        return
    if not result.changed:
        click.echo(f"{result.agent}: {printable(str(result.path))} already {verb}; nothing changed")
    else:
        click.echo(
            f"{result.agent}: {verb} {', '.join(result.events) or 'nothing'} in "
            f"{printable(str(result.path))}"
        )
        if result.backup is not None:
            click.echo(f"backup: {printable(str(result.backup))}")
    for note in result.notes:
        click.echo(f"note: {note}")
    _print_excluded(excluded)


def _change_command(name: Literal["install", "uninstall"], verb: str, help_text: str) -> None:
    """``hooks install`` or ``hooks uninstall``: one change to AGENT's configuration."""

    @hooks_group.command(name=name, help=help_text)
    @click.argument("agent", type=_AGENT_CHOICE, metavar="AGENT")
    @_scope_option
    @_PROJECT
    @json_option()
    def command(
        agent: str, project_scope: bool, project_dir: Path, as_json: bool, **extra: Any
    ) -> None:
        from lorelab.hooks import install, uninstall

        scope: Literal["project", "user"] = "project" if project_scope else "user"
        if name == "install":
            result = install(agent, scope, project_dir.resolve(), via_server=extra["via_server"])
        else:
            result = uninstall(agent, scope, project_dir.resolve())
        excluded = (
            _git_exclude(extra["git_exclude"], project_dir, as_json)
            if name == "install" and scope == "project"
            else None
        )
        _print_result(verb, result, as_json, excluded)

    if name == "install":
        click.option(
            "--git-exclude/--no-git-exclude",
            "git_exclude",
            default=None,
            help="Add lorelab's files (.lorelab/, *.lorelab-backup-*) to the repository's "
            ".git/info/exclude, so git status does not show them (default: ask at a terminal, "
            "else leave it and say so).",
        )(command)
        click.option(
            "--via-server",
            is_flag=True,
            default=False,
            help="Hooks that go through the project's running `lorelab serve` "
            "(found in your private state directory) and say in hooks.log when they had to run "
            "in-process.",
        )(command)


_change_command(
    "install",
    "installed",
    "Add lorelab's hooks to AGENT's configuration (claude-code, codex or gemini).",
)
_change_command(
    "uninstall",
    "removed",
    "Remove exactly the hooks `install` added for AGENT; every other hook stays.",
)


@hooks_group.command(name="status")
@_PROJECT
@json_option()
def status_command(project_dir: Path, as_json: bool) -> None:
    """Show which lorelab hooks each agent's project and user configuration holds.

    For an installed agent, also what it needs before the hooks run (Codex: the `hooks` feature
    and trust in `/hooks`; Gemini: `hooksConfig.enabled` and a trusted folder) and whether its
    hooks can verify a test run (Codex's cannot).
    """
    from lorelab.hooks import status

    found = status(project_dir.resolve())
    if as_json:
        echo_json(
            [
                {
                    "agent": item.agent,
                    "scope": item.scope,
                    "path": str(item.path),
                    "exists": item.exists,
                    "installed": list(item.installed),
                    "missing": list(item.missing),
                    "notes": list(item.notes),
                }
                for item in found
            ]
        )
        return
    for item in found:
        state = (
            "not installed"
            if not item.installed
            else (
                "installed"
                if not item.missing
                else f"partly installed (missing {', '.join(item.missing)})"
            )
        )
        click.echo(f"{item.agent:<12} {item.scope:<8} {state}: {printable(str(item.path))}")
        for note in item.notes:
            click.echo(f"  note: {printable(note)}")


@hooks_group.command(name="trust")
@click.option(
    "--project-dir",
    "project_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=".",
    show_default=True,
    help="The project whose memory home (.lorelab) to trust.",
)
def trust_command(project_dir: Path) -> None:
    """Let the hooks use a project's .lorelab that lorelab did not make for you.

    The hooks brief only from a memory home lorelab made for you on this machine (or
    $LORELAB_HOME); one that came with a clone, or is another user's, is left alone until you
    trust it here, after looking at it (`lorelab memory --home DIR/.lorelab list`).
    """
    from lorelab._state import NotPrivate, trust_home
    from lorelab.errors import UsageError
    from lorelab.memory._project import DEFAULT_DIRNAME, find_project

    home = find_project(project_dir.resolve()) / DEFAULT_DIRNAME
    try:
        trust_home(home)
    except NotPrivate as exc:
        raise UsageError(f"cannot trust {home}: {exc}") from None
    click.echo(f"trusted {printable(str(home))}: the hooks now use its memory")


@hooks_group.command(name="run")
@click.argument("event")
@click.option("--agent", "agent", type=_AGENT_CHOICE, default="claude-code", show_default=True)
@click.option(
    "--via-server",
    is_flag=True,
    default=False,
    help="Installed by `hooks install --via-server`: log why, when the project's "
    "`lorelab serve` did not take the hook and it was handled in-process.",
)
def run_command(event: str, agent: str, via_server: bool) -> None:
    """Handle one agent hook EVENT: read its JSON on stdin, answer in the agent's format.

    What `lorelab hooks install` writes into the agent's configuration; never blocks the
    agent: it always exits 0, and a problem is one line in hooks.log under the memory home.
    """
    from lorelab.cli._entry import run_hook_call

    run_hook_call(event, agent, via_server)


hook_command = hidden_alias(run_command)
"""``lorelab hook EVENT``: the old spelling of ``lorelab hooks run EVENT``, which hooks
installed by earlier releases call."""
