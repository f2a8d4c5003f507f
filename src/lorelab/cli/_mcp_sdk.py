"""The MCP SDK's server modules, loaded for ``lorelab mcp`` without the SDK's package ``__init__``.

``import mcp.server.lowlevel`` first runs ``mcp/__init__.py`` and ``mcp/server/__init__.py``,
which import the SDK's client, its high-level ``MCPServer`` and their HTTP stacks: about an
eighth of the server's start-up, for code a stdio server never calls. The ``lorelab mcp``
process registers those two packages from their import specs (their ``__path__``, not their
``__init__``) before it imports the modules it uses: ``mcp.server.lowlevel``,
``mcp.server.stdio``, ``mcp.shared.message``, all from the installed SDK, unchanged.

This is done only in the ``lorelab mcp`` process, before ``lorelab.mcp`` is imported, and only
when nothing imported ``mcp`` before: a program that imports ``lorelab.mcp`` as a library gets
the SDK as it is. If the
server modules cannot be imported that way (another SDK layout), the partial imports are
dropped and the SDK is imported the ordinary way.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Final

SKIPPED_INITS: Final = ("mcp", "mcp.server")
SERVER_MODULES: Final = ("mcp.server.lowlevel", "mcp.server.stdio", "mcp.shared.message")


def load_server_modules() -> bool:
    """Import the SDK's server modules without its package ``__init__``; True when it did."""
    if any(name in sys.modules for name in SKIPPED_INITS):
        return False
    try:
        for name in SKIPPED_INITS:
            spec = importlib.util.find_spec(name)
            if spec is None or spec.submodule_search_locations is None:
                raise ImportError(f"{name} is not a package")
            sys.modules[name] = importlib.util.module_from_spec(spec)
        for name in SERVER_MODULES:
            importlib.import_module(name)
    except ImportError:
        for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")]:
            del sys.modules[name]
        return False
    return True
