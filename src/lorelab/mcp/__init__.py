"""The lorelab MCP server (official ``mcp`` SDK, stdio): memory operations as tools."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from lorelab._state import refuse_untrusted_home
from lorelab.errors import InputFileError
from lorelab.mcp._server import ALLOW_CHECKS_ENV, INSTRUCTIONS, SERVER_NAME, build_server
from lorelab.mcp._stdio import LOG
from lorelab.memory import find_project, open_store, store_path

__all__ = ["ALLOW_CHECKS_ENV", "INSTRUCTIONS", "SERVER_NAME", "build_server", "serve"]


def _log_to_stderr() -> None:
    """One line per refused request or failed tool on stderr (stdout is the protocol's)."""
    if not LOG.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("lorelab mcp: %(message)s"))
        LOG.addHandler(handler)
        LOG.setLevel(logging.WARNING)
        LOG.propagate = False


def serve(
    home: str | os.PathLike[str] | None = None,
    project: str | os.PathLike[str] | None = None,
    *,
    allow_checks: bool | None = None,
) -> None:
    """Serve the store at the documented location over stdio until the client disconnects.

    ``lore_check_candidate`` is served only when ``allow_checks`` is true, or, when it is
    ``None``, when the environment sets ``LORELAB_MCP_ALLOW_CHECKS=1`` (the operator's
    consent, given where the server is registered)."""
    _log_to_stderr()
    if allow_checks is None:
        allow_checks = os.environ.get(ALLOW_CHECKS_ENV) == "1"
    # Run in a subdirectory, the server serves the project's store, as every command does.
    project_dir = Path(project) if project is not None else find_project()
    if not project_dir.is_dir():
        # Checked at start, not at the first candidate check: it is the tree checks copy.
        raise InputFileError(
            f"project directory {project_dir}: does not exist or is not a directory"
        )
    # A store a clone shipped must not brief the agent: the same rule as the hooks and serve.
    refuse_untrusted_home(store_path(home, project_dir).parent, named=home is not None)
    store = open_store(home, project_dir)
    try:
        build_server(store, store.location.parent, project_dir, allow_checks=allow_checks).run()
    finally:
        store.close()
