"""``lorelab mcp``: serve the memory over MCP (stdio) for Claude Code, Codex, Gemini CLI."""

from __future__ import annotations

import click

from lorelab.cli._options import project_option


@click.command(name="mcp")
@click.option(
    "--home",
    type=click.Path(file_okay=False),
    default=None,
    help="Memory home: the store is HOME/memory.db (overrides $LORELAB_HOME).",
)
@project_option(
    "Project directory: store at PROJECT/.lorelab/memory.db when no home is set, and the "
    "tree candidate checks copy (default: the current directory)."
)
@click.option(
    "--allow-checks",
    is_flag=True,
    default=False,
    help="Serve lore_check_candidate, which runs the verification commands of recorded "
    "experiences in a sandbox copy of the project. Off by default: without it (or "
    "LORELAB_MCP_ALLOW_CHECKS=1) an agent cannot get a command it recorded run; the operator "
    "checks candidates with `lorelab memory candidates check`.",
)
def mcp_command(home: str | None, project_dir: str | None, allow_checks: bool) -> None:
    """Run the lorelab MCP server over stdio.

    Register it with Claude Code: claude mcp add lorelab -- lorelab mcp
    """
    # Imported here: the MCP SDK is heavy, and only this command needs it; and only its
    # server modules (lorelab/cli/_mcp_sdk.py).
    from lorelab.cli._mcp_sdk import load_server_modules

    load_server_modules()
    from lorelab.mcp import serve

    serve(home, project_dir, allow_checks=True if allow_checks else None)
