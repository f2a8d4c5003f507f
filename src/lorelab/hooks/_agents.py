"""What each agent's published hook configuration looks like, and which events lorelab uses.

Sources (each agent's own documentation, read for this module):

- Claude Code: the hooks reference, https://code.claude.com/docs/en/hooks. Settings in
  ``.claude/settings.json`` (project) or ``~/.claude/settings.json`` (user), shaped
  ``{"hooks": {EVENT: [{"matcher": REGEX, "hooks": [{"type": "command", "command": CMD}]}]}}``.
- Codex CLI: ``codex-rs/hooks`` in github.com/openai/codex (its generated JSON schemas) and
  https://developers.openai.com/codex/hooks. The same shape in ``.codex/hooks.json`` or
  ``$CODEX_HOME/hooks.json`` (``~/.codex``). Hooks are on by default (feature key ``hooks``;
  ``codex_hooks`` is its deprecated alias, ``codex-rs/features/src/legacy.rs``), and each entry
  runs only once it is trusted in ``/hooks``. Edits arrive as ``apply_patch``
  (``codex-rs/core/src/tools/hook_names.rs``).
- Gemini CLI: ``docs/hooks/index.md`` and ``docs/hooks/reference.md`` in
  github.com/google-gemini/gemini-cli. The same shape plus a ``name`` per hook in
  ``.gemini/settings.json`` or ``~/.gemini/settings.json``; event names differ (BeforeAgent,
  AfterTool, PreCompress, AfterAgent).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

AgentName = Literal["claude-code", "codex", "gemini"]
AGENT_NAMES: Final[tuple[AgentName, ...]] = ("claude-code", "codex", "gemini")

# What lorelab does at each agent event, whatever the agent calls it.
Action = Literal["session_start", "prompt", "tool", "tool_failed", "pre_compact", "stop", "end"]


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One agent event lorelab installs a handler for."""

    event: str
    action: Action
    matcher: str | None = None


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One agent: where its hook configuration lives and which events lorelab hooks."""

    name: AgentName
    project_file: str
    events: tuple[EventSpec, ...]
    shell_tools: frozenset[str]
    edit_tools: frozenset[str]
    # Events whose answer may carry hookSpecificOutput.additionalContext.
    injects: frozenset[str]
    # True when stdout must always be one JSON object (Gemini parses stdout on exit 0).
    always_json: bool = False
    # A "name" field on each hook entry (Gemini uses it to enable and disable hooks).
    named_hooks: bool = False

    def user_file(self) -> Path:
        """The user-level configuration file."""
        if self.name == "codex":
            codex_home = os.environ.get("CODEX_HOME")
            base = Path(codex_home) if codex_home else Path.home() / ".codex"
            return base / "hooks.json"
        return Path.home() / self.project_file

    def config_file(self, scope: Literal["project", "user"], project: Path) -> Path:
        """The configuration file for ``scope`` (project files live in ``project``)."""
        return project / self.project_file if scope == "project" else self.user_file()

    def event(self, name: str) -> EventSpec | None:
        """The installed event called ``name``, if lorelab handles it."""
        return next((spec for spec in self.events if spec.event == name), None)


CLAUDE_CODE: Final = AgentSpec(
    name="claude-code",
    project_file=".claude/settings.json",
    events=(
        EventSpec("SessionStart", "session_start"),
        EventSpec("UserPromptSubmit", "prompt"),
        EventSpec("PostToolUse", "tool", "Bash|Edit|Write|MultiEdit|NotebookEdit"),
        EventSpec("PostToolUseFailure", "tool_failed", "Bash"),
        EventSpec("PreCompact", "pre_compact"),
        EventSpec("Stop", "stop"),
        EventSpec("SessionEnd", "end"),
    ),
    shell_tools=frozenset({"Bash"}),
    edit_tools=frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"}),
    injects=frozenset({"SessionStart", "UserPromptSubmit"}),
)

CODEX: Final = AgentSpec(
    name="codex",
    project_file=".codex/hooks.json",
    events=(
        EventSpec("SessionStart", "session_start"),
        EventSpec("UserPromptSubmit", "prompt"),
        EventSpec("PostToolUse", "tool", "Bash|apply_patch"),
        EventSpec("PreCompact", "pre_compact"),
        EventSpec("Stop", "stop"),
    ),
    shell_tools=frozenset({"Bash", "shell", "exec_command"}),
    edit_tools=frozenset({"apply_patch"}),
    injects=frozenset({"SessionStart", "UserPromptSubmit"}),
)

GEMINI: Final = AgentSpec(
    name="gemini",
    project_file=".gemini/settings.json",
    events=(
        EventSpec("SessionStart", "session_start"),
        EventSpec("BeforeAgent", "prompt"),
        EventSpec("AfterTool", "tool", "run_shell_command|write_file|replace"),
        EventSpec("PreCompress", "pre_compact"),
        EventSpec("AfterAgent", "stop"),
        EventSpec("SessionEnd", "end"),
    ),
    shell_tools=frozenset({"run_shell_command"}),
    edit_tools=frozenset({"write_file", "replace"}),
    injects=frozenset({"SessionStart", "BeforeAgent"}),
    always_json=True,
    named_hooks=True,
)

AGENTS: Final[dict[str, AgentSpec]] = {spec.name: spec for spec in (CLAUDE_CODE, CODEX, GEMINI)}
