"""A stand-in for MemCoder's MCP server (0.3.3b1), for exercising the memcoder profile.

It serves MemCoder's captured ``tools/list`` unchanged (``memcoder_tools.json`` beside this
module), refuses arguments the way MemCoder's server does (an unknown or a missing key is a tool
error naming it) and answers in MemCoder's shapes: ``{"result": "<JSON string>"}``, ids
``mem_<hex>``, ``plan_<hex>``, ``dream_<hex>``, records kept per ``agent_id``. What it does
not reproduce: retrieval is lexical (shared words), not MemCoder's embedding search, so which
items a brief holds says nothing about MemCoder; types are checked strictly where MemCoder
coerces some in lax mode; only the tools an evaluation uses are implemented, the other listed
tools answer with a tool error saying so.

Run it as ``python -m lorelab.testing.memcoder [--state FILE] [--only TOOL,...]``; with
``--state`` the records survive a restart (an evaluation's finalize opens a second session);
``--only`` serves only the named tools, to show a server lacking the others.
"""

from lorelab.testing.memcoder._schema import (
    ToolError,
    check_memcoder_row,
    load_tools,
    validate_arguments,
)
from lorelab.testing.memcoder._server import build_server, main
from lorelab.testing.memcoder._standin import MemCoderStandIn

__all__ = [
    "MemCoderStandIn",
    "ToolError",
    "build_server",
    "check_memcoder_row",
    "load_tools",
    "main",
    "validate_arguments",
]
