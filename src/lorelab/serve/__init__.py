"""``lorelab serve``: one resident server for a store, MCP over streamable HTTP with tokens.

``run_server`` serves the operations table (the tools of ``lorelab mcp``) at ``/mcp`` with
bearer tokens, the project's hooks at ``/hooks`` and ``GET /healthz``; the token functions
manage the tokens it accepts. ``through_server`` is the hooks' fast path (standard library
only): ``lorelab hooks run EVENT`` calls it first.

Every public name is loaded on first use: the hooks' fast path does not load the server.
"""

from __future__ import annotations

import typing

from lorelab._lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from lorelab.serve._admission import Limits as Limits
    from lorelab.serve._fast import NotHandled as NotHandled
    from lorelab.serve._fast import through_server as through_server
    from lorelab.serve._run import ServeOptions as ServeOptions
    from lorelab.serve._run import is_loopback as is_loopback
    from lorelab.serve._run import run_server as run_server
    from lorelab.serve._tokens import LOCAL_TOKEN as LOCAL_TOKEN
    from lorelab.serve._tokens import SCOPES as SCOPES
    from lorelab.serve._tokens import Grant as Grant
    from lorelab.serve._tokens import TokenBook as TokenBook
    from lorelab.serve._tokens import TokenInfo as TokenInfo
    from lorelab.serve._tokens import create_token as create_token
    from lorelab.serve._tokens import list_tokens as list_tokens
    from lorelab.serve._tokens import revoke_token as revoke_token
    from lorelab.serve._tokens import token_hash as token_hash

_WHERE: typing.Final = {
    "Limits": "lorelab.serve._admission",
    "NotHandled": "lorelab.serve._fast",
    "through_server": "lorelab.serve._fast",
    "ServeOptions": "lorelab.serve._run",
    "is_loopback": "lorelab.serve._run",
    "run_server": "lorelab.serve._run",
    "LOCAL_TOKEN": "lorelab.serve._tokens",
    "SCOPES": "lorelab.serve._tokens",
    "Grant": "lorelab.serve._tokens",
    "TokenBook": "lorelab.serve._tokens",
    "TokenInfo": "lorelab.serve._tokens",
    "create_token": "lorelab.serve._tokens",
    "list_tokens": "lorelab.serve._tokens",
    "revoke_token": "lorelab.serve._tokens",
    "token_hash": "lorelab.serve._tokens",
}

__all__ = sorted(_WHERE)

__getattr__, __dir__ = _lazy_exports(__name__, globals(), _WHERE)
