"""Agent hooks: lorelab's memory wired into Claude Code, Codex CLI and Gemini CLI.

``install``/``uninstall``/``status`` edit each agent's own hook configuration; ``run_hook`` is
the ``lorelab hook EVENT`` handler every installed hook calls.
"""

from lorelab.hooks._agents import AGENT_NAMES, AGENTS, AgentSpec, EventSpec
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

__all__ = [
    "AGENTS",
    "AGENT_NAMES",
    "LOG_NAME",
    "AgentSpec",
    "AgentStatus",
    "EventSpec",
    "InstallResult",
    "Journal",
    "hook_command",
    "install",
    "is_verification",
    "run_hook",
    "session_file",
    "status",
    "uninstall",
]
