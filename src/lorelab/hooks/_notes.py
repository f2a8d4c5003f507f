"""What ``hooks install`` and ``hooks status`` tell the user about each agent's own switches.

Each note states what the agent's documentation or source says, with a link, and what lorelab
can see of it on this machine (it never edits an agent's other settings):

- Codex CLI: hooks are a stable feature, on by default, under the key ``hooks``; ``codex_hooks``
  is its deprecated alias (openai/codex ``codex-rs/features/src/lib.rs`` and
  ``codex-rs/features/src/legacy.rs``). A hook runs only once trusted in ``/hooks``, recorded
  as ``[hooks.state."FILE:EVENT:GROUP:HANDLER"] trusted_hash`` in ``$CODEX_HOME/config.toml``;
  project ``.codex/`` hooks also need a trusted project (``codex-rs/hooks/src/engine/
  discovery.rs``). A Bash ``tool_response`` is the output text alone, so Codex hooks cannot
  verify a test run.
- Gemini CLI: hooks are on by default (``hooksConfig.enabled``, default true, in
  ``packages/cli/src/config/settingsSchema.ts``) and skipped in a folder it does not trust
  (``packages/core/src/hooks/hookRegistry.ts``).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Final

from lorelab.hooks._agents import AgentSpec

CODEX_DOCS: Final = "https://developers.openai.com/codex/hooks"
GEMINI_DOCS: Final = "https://github.com/google-gemini/gemini-cli/blob/main/docs/hooks/index.md"
CLAUDE_DOCS: Final = "https://code.claude.com/docs/en/hooks"
_CONFIG_LIMIT: Final = 4 * 1024 * 1024
CODEX_CANNOT_VERIFY: Final = (
    "Codex hooks cannot verify: its Bash tool_response is the command's output text with no "
    "exit status (openai/codex codex-rs/core/src/tools/context.rs), so lorelab records no "
    f"experience from a Codex session as verified; see {CODEX_DOCS}"
)


def install_notes(agent: AgentSpec) -> tuple[str, ...]:
    """What to tell the user right after installing ``agent``'s hooks."""
    if agent.name == "codex":
        return (
            "Codex runs hooks by default (`[features] hooks`); each lorelab entry runs only "
            "after you trust it in `/hooks`, and project hooks only in a trusted project "
            f"({CODEX_DOCS}).",
            CODEX_CANNOT_VERIFY,
        )
    if agent.name == "gemini":
        return (
            "Gemini CLI runs hooks by default (`hooksConfig.enabled`) but skips them in a folder "
            f"it does not trust; see `/hooks panel` ({GEMINI_DOCS}).",
        )
    return ()


Position = tuple[str, int, int]
"""Where one lorelab entry sits in a hooks file: event, group index, handler index."""


def status_notes(
    agent: AgentSpec, scope: str, path: Path, data: dict[str, Any], ours: list[Position]
) -> tuple[str, ...]:
    """What ``hooks status`` says about ``agent``'s own switches for an installed ``path``.

    ``ours`` is where lorelab's entries sit in ``path``; ``path`` is ``PROJECT/.codex/...`` for
    the project scope.
    """
    if agent.name == "codex":
        return _codex_notes(scope, path, ours)
    if agent.name == "gemini":
        return _gemini_notes(agent, path, data)
    return ()


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        if path.stat().st_size > _CONFIG_LIMIT:
            return {}
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _read_json(path: Path) -> dict[str, Any]:
    try:
        if path.stat().st_size > _CONFIG_LIMIT:
            return {}
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _codex_home() -> Path:
    configured = os.environ.get("CODEX_HOME")
    return Path(configured) if configured else Path.home() / ".codex"


def _feature(config: dict[str, Any]) -> tuple[bool | None, str | None]:
    features = config.get("features")
    if not isinstance(features, dict):
        return None, None
    for key in ("hooks", "codex_hooks"):
        value = features.get(key)
        if isinstance(value, bool):
            return value, key
    return None, None


def _codex_notes(scope: str, path: Path, ours: list[Position]) -> tuple[str, ...]:
    user_config = _codex_home() / "config.toml"
    user = _read_toml(user_config)
    layers = [(user_config, user)]
    if scope == "project":
        project_config = path.parent / "config.toml"
        layers.append((project_config, _read_toml(project_config)))
    state, where, key = None, None, None
    for config_path, config in layers:  # the project layer overrides the user's
        value, name = _feature(config)
        if value is not None:
            state, where, key = value, config_path, name
    if state is False:
        feature = f"{where}: hooks are off (`{key} = false` under [features]); Codex runs none"
    elif key == "codex_hooks":
        feature = (
            f"{where}: hooks are on; `codex_hooks` is a deprecated alias of `hooks` "
            "(codex-rs/features/src/legacy.rs)"
        )
    else:
        feature = "Codex hooks are on (the default; `[features] hooks = false` turns them off)"
    notes = [feature, _codex_trust(path, ours, user, user_config)]
    project = path.parent.parent
    if scope == "project" and not _project_trusted(user, project):
        notes.append(
            f"{project} is not a trusted project in {user_config}: Codex skips project "
            "`.codex/` hooks until you trust it"
        )
    notes.append(CODEX_CANNOT_VERIFY)
    return tuple(notes)


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def _codex_trust(path: Path, ours: list[Position], user: dict[str, Any], where: Path) -> str:
    hooks = user.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    state = state if isinstance(state, dict) else {}
    source = str(path.resolve())
    trusted = 0
    for event, group_index, handler_index in ours:
        record = state.get(f"{source}:{_snake(event)}:{group_index}:{handler_index}")
        if isinstance(record, dict) and isinstance(record.get("trusted_hash"), str):
            trusted += 1
    return (
        f"{trusted} of {len(ours)} lorelab hooks have a trust record in {where}; Codex runs a "
        "hook only after you trust it in `/hooks` (and again after it changes)"
    )


def _project_trusted(user: dict[str, Any], project: Path) -> bool:
    projects = user.get("projects")
    if not isinstance(projects, dict):
        return False
    resolved = project.resolve()
    for candidate in (resolved, *resolved.parents):
        entry = projects.get(str(candidate))
        if isinstance(entry, dict) and entry.get("trust_level") == "trusted":
            return True
    return False


def _gemini_notes(agent: AgentSpec, path: Path, data: dict[str, Any]) -> tuple[str, ...]:
    for source, settings in ((path, data), (agent.user_file(), _read_json(agent.user_file()))):
        config = settings.get("hooksConfig")
        if isinstance(config, dict) and config.get("enabled") is False:
            return (f"{source}: hooks are off (`hooksConfig.enabled` is false); Gemini runs none",)
    return (
        "Gemini CLI runs hooks by default (`hooksConfig.enabled`) and skips them in a folder it "
        f"does not trust ({GEMINI_DOCS})",
    )
