"""Agent hooks: lorelab's memory wired into Claude Code, Codex CLI and Gemini CLI.

``install``/``uninstall``/``status`` edit each agent's own hook configuration; ``run_hook`` is
the ``lorelab hooks run EVENT`` handler every installed hook calls.

Every public name is loaded on first use: a hook call (``run_hook``) does not load the
configuration editing that ``install`` needs.
"""

from __future__ import annotations

import typing

from lorelab._lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from lorelab.hooks._agents import AGENT_NAMES, AGENTS, AgentSpec, EventSpec
    from lorelab.hooks._git_exclude import EXCLUDED, ExcludeState, add_excludes, exclude_state
    from lorelab.hooks._handle import is_verification, run_hook
    from lorelab.hooks._install import (
        AgentStatus,
        InstallResult,
        hook_command,
        install,
        status,
        uninstall,
    )
    from lorelab.hooks._journal import LOG_NAME, Journal, session_file

_WHERE: typing.Final = {
    "AGENTS": "lorelab.hooks._agents",
    "AGENT_NAMES": "lorelab.hooks._agents",
    "AgentSpec": "lorelab.hooks._agents",
    "EventSpec": "lorelab.hooks._agents",
    "EXCLUDED": "lorelab.hooks._git_exclude",
    "ExcludeState": "lorelab.hooks._git_exclude",
    "add_excludes": "lorelab.hooks._git_exclude",
    "exclude_state": "lorelab.hooks._git_exclude",
    "is_verification": "lorelab.hooks._handle",
    "run_hook": "lorelab.hooks._handle",
    "AgentStatus": "lorelab.hooks._install",
    "InstallResult": "lorelab.hooks._install",
    "hook_command": "lorelab.hooks._install",
    "install": "lorelab.hooks._install",
    "status": "lorelab.hooks._install",
    "uninstall": "lorelab.hooks._install",
    "LOG_NAME": "lorelab.hooks._journal",
    "Journal": "lorelab.hooks._journal",
    "session_file": "lorelab.hooks._journal",
}

__all__ = [
    "AGENTS",
    "AGENT_NAMES",
    "EXCLUDED",
    "LOG_NAME",
    "AgentSpec",
    "AgentStatus",
    "EventSpec",
    "ExcludeState",
    "InstallResult",
    "Journal",
    "add_excludes",
    "exclude_state",
    "hook_command",
    "install",
    "is_verification",
    "run_hook",
    "session_file",
    "status",
    "uninstall",
]

__getattr__, __dir__ = _lazy_exports(__name__, globals(), _WHERE)
