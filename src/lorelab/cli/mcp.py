"""``lorelab mcp``: serve the memory over MCP (stdio) for Claude Code, Codex, Gemini CLI."""

from __future__ import annotations

import click


@click.command(name="mcp")
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
    help="Project directory: store at PROJECT/.lorelab/memory.db when no home is set, and the "
    "tree candidate checks copy (default: the current directory).",
)
def mcp_command(home: str | None, project_dir: str | None) -> None:
    """Run the lorelab MCP server over stdio.

    Register it with Claude Code: claude mcp add lorelab -- lorelab mcp
    """
    # Imported here: the MCP SDK is heavy, and only this command needs it.
    from lorelab.mcp import serve

    serve(home, project_dir)
