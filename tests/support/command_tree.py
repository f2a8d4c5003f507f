"""The visible command tree of ``lorelab``, walked through click as ``--help`` shows it."""

from __future__ import annotations

import click

from lorelab.cli.main import app


def visible_commands() -> list[tuple[str, str, bool]]:
    """``(path, short help, is a group)`` of every command ``--help`` lists, depth first."""
    found: list[tuple[str, str, bool]] = []

    def walk(group: click.Group, path: list[str], ctx: click.Context) -> None:
        for name in group.list_commands(ctx):
            lazy = getattr(group, "lazy_commands", {}).get(name)
            if lazy is not None and lazy.hidden:
                continue
            command = group.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            found.append((" ".join([*path, name]), command.get_short_help_str(10_000), False))
            if isinstance(command, click.Group):
                found[-1] = (found[-1][0], found[-1][1], True)
                walk(command, [*path, name], click.Context(command, info_name=name, parent=ctx))

    walk(app, [], click.Context(app, info_name="lorelab"))
    return found
