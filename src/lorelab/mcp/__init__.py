"""The lorelab MCP server (official ``mcp`` SDK, stdio): memory operations as tools."""

from __future__ import annotations

import os
from pathlib import Path

from lorelab.errors import InputFileError
from lorelab.mcp._server import INSTRUCTIONS, SERVER_NAME, build_server
from lorelab.memory import open_store

__all__ = ["INSTRUCTIONS", "SERVER_NAME", "build_server", "serve"]


def serve(
    home: str | os.PathLike[str] | None = None,
    project: str | os.PathLike[str] | None = None,
) -> None:
    """Serve the store at the documented location over stdio until the client disconnects."""
    project_dir = Path(project) if project is not None else Path.cwd()
    if not project_dir.is_dir():
        # Checked at start, not at the first candidate check: it is the tree checks copy.
        raise InputFileError(
            f"project directory {project_dir}: does not exist or is not a directory"
        )
    store = open_store(home, project_dir)
    try:
        build_server(store, store.location.parent, project_dir).run("stdio")
    finally:
        store.close()
