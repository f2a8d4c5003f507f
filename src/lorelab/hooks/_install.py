"""Writing lorelab's hooks into an agent's own configuration, and taking them out again.

Every hook the user already has is kept; installing twice changes nothing; a changed file is
backed up first (``FILE.lorelab-backup-TIMESTAMP``); uninstall removes exactly the entries
install added (recognised by their ``lorelab hooks run EVENT --agent NAME`` command, or the
``lorelab hook EVENT --agent NAME`` that earlier releases installed: installing again rewrites
those in the new spelling).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lorelab._time import utc_now
from lorelab.errors import InputFileError
from lorelab.hooks._agents import AGENTS, AgentSpec
from lorelab.hooks._notes import Position, install_notes, status_notes

Scope = Literal["project", "user"]
_CONFIG_LIMIT = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class InstallResult:
    """What ``install`` or ``uninstall`` did to one configuration file."""

    agent: str
    path: Path
    changed: bool
    backup: Path | None
    events: tuple[str, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AgentStatus:
    """Which of lorelab's hooks one configuration file holds."""

    agent: str
    scope: Scope
    path: Path
    exists: bool
    installed: tuple[str, ...]
    missing: tuple[str, ...]
    notes: tuple[str, ...]


def lorelab_argv() -> list[str]:
    """How the agent should start lorelab: this installation's own program, by absolute path."""
    beside = Path(sys.executable).parent / "lorelab"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("lorelab")
    if found:
        return [str(Path(found).resolve())]
    return [sys.executable, "-m", "lorelab"]


def hook_command(agent: AgentSpec, event: str, *, via_server: bool = False) -> str:
    """The shell command installed for ``event`` (``--via-server``: see ``lorelab serve``)."""
    flag = ["--via-server"] if via_server else []
    return shlex.join([*lorelab_argv(), "hooks", "run", event, "--agent", agent.name, *flag])


def _launched_by_lorelab(argv: list[str], index: int) -> bool:
    """Whether ``argv[:index]`` ends in a lorelab program (``.../lorelab`` or ``-m lorelab``)."""
    return index > 0 and (
        Path(argv[index - 1]).name == "lorelab"
        or argv[max(0, index - 2) : index] == ["-m", "lorelab"]
    )


def _is_ours(command: object, agent: AgentSpec, event: str | None = None) -> bool:
    if not isinstance(command, str):
        return False
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    for index, token in enumerate(argv):
        if token == "hook" and _launched_by_lorelab(argv, index):
            rest = argv[index + 1 :]
        elif argv[index : index + 2] == ["hooks", "run"] and _launched_by_lorelab(argv, index):
            rest = argv[index + 2 :]
        else:
            continue
        if not rest or (event is not None and rest[0] != event):
            continue
        return "--agent" in rest and rest[
            rest.index("--agent") + 1 : rest.index("--agent") + 2
        ] == [agent.name]
    return False


def _read_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        if path.stat().st_size > _CONFIG_LIMIT:
            raise InputFileError(f"{path}: larger than {_CONFIG_LIMIT} bytes; left unchanged")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputFileError(f"{path}: not readable JSON ({exc}); left unchanged") from None
    if not isinstance(data, dict):
        raise InputFileError(f"{path}: not a JSON object; left unchanged")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InputFileError(f"{path}: 'hooks' is not an object; left unchanged")
    for event, groups in hooks.items():
        if isinstance(groups, list):
            continue
        # Gemini's HOOKS_CONFIG_FIELDS (packages/core/src/hooks/types.ts): switches, not events.
        if event in ("enabled", "disabled", "notifications"):
            continue
        raise InputFileError(f"{path}: hooks.{event} is not a list; left unchanged")
    return data


def _write_config(path: Path, data: dict[str, Any], before: bytes | None) -> Path | None:
    backup = None
    if before is not None:
        stamp = utc_now().strftime("%Y%m%dT%H%M%S%fZ")
        backup = path.with_name(f"{path.name}.lorelab-backup-{stamp}")
        backup.write_bytes(before)
        backup.chmod(0o600)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        if path.exists():
            os.chmod(temp, path.stat().st_mode & 0o777)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return backup


def _without_ours(data: dict[str, Any], agent: AgentSpec) -> dict[str, Any]:
    """``data`` with every lorelab entry for ``agent`` removed (and groups left empty by it)."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return dict(data)
    cleaned: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            cleaned[event] = groups
            continue
        kept_groups = []
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept_groups.append(group)
                continue
            kept = [
                entry
                for entry in group["hooks"]
                if not (isinstance(entry, dict) and _is_ours(entry.get("command"), agent))
            ]
            if kept:
                kept_groups.append({**group, "hooks": kept})
            elif not group["hooks"]:
                kept_groups.append(group)  # an empty group the user wrote stays theirs
        if kept_groups:
            cleaned[event] = kept_groups
    result = dict(data)
    if cleaned:
        result["hooks"] = cleaned
    else:
        result.pop("hooks", None)
    return result


def _with_ours(data: dict[str, Any], agent: AgentSpec, *, via_server: bool) -> dict[str, Any]:
    result = _without_ours(data, agent)
    hooks = dict(result.get("hooks", {}))
    for spec in agent.events:
        command = hook_command(agent, spec.event, via_server=via_server)
        entry: dict[str, Any] = {"type": "command", "command": command}
        if agent.named_hooks:
            entry = {"name": f"lorelab-{spec.event}", **entry}
        group: dict[str, Any] = {"hooks": [entry]}
        if spec.matcher is not None:
            group = {"matcher": spec.matcher, **group}
        hooks[spec.event] = [*hooks.get(spec.event, []), group]
    result["hooks"] = hooks
    return result


def install(
    agent_name: str, scope: Scope, project: Path, *, via_server: bool = False
) -> InstallResult:
    """Add lorelab's hooks for ``agent_name`` to its ``scope`` configuration.

    ``via_server``: hooks installed with ``--via-server``, which log when the project's
    ``lorelab serve`` did not take them (installing again replaces the other kind)."""
    agent = AGENTS[agent_name]
    path = agent.config_file(scope, project)
    before = path.read_bytes() if path.exists() else None
    data = _read_config(path)
    updated = _with_ours(data, agent, via_server=via_server)
    changed = updated != data
    backup = _write_config(path, updated, before) if changed else None
    return InstallResult(
        agent.name,
        path,
        changed,
        backup,
        tuple(s.event for s in agent.events),
        install_notes(agent),
    )


def uninstall(agent_name: str, scope: Scope, project: Path) -> InstallResult:
    """Remove exactly the hooks ``install`` added for ``agent_name``."""
    agent = AGENTS[agent_name]
    path = agent.config_file(scope, project)
    if not path.exists():
        return InstallResult(agent.name, path, False, None, (), ())
    before = path.read_bytes()
    data = _read_config(path)
    updated = _without_ours(data, agent)
    removed = tuple(spec.event for spec in agent.events if _installed(data, agent, spec.event))
    changed = updated != data
    backup = _write_config(path, updated, before) if changed else None
    return InstallResult(agent.name, path, changed, backup, removed, ())


def _installed(data: dict[str, Any], agent: AgentSpec, event: str) -> bool:
    groups = data.get("hooks", {}).get(event, [])
    return isinstance(groups, list) and any(
        isinstance(group, dict)
        and isinstance(group.get("hooks"), list)
        and any(
            isinstance(entry, dict) and _is_ours(entry.get("command"), agent, event)
            for entry in group["hooks"]
        )
        for group in groups
    )


def _positions(data: dict[str, Any], agent: AgentSpec) -> list[Position]:
    """Where lorelab's entries for ``agent`` sit in a hooks file."""
    found: list[Position] = []
    for event, groups in data.get("hooks", {}).items():
        for group_index, group in enumerate(groups if isinstance(groups, list) else []):
            entries = group.get("hooks") if isinstance(group, dict) else None
            for handler_index, entry in enumerate(entries if isinstance(entries, list) else []):
                if isinstance(entry, dict) and _is_ours(entry.get("command"), agent, event):
                    found.append((event, group_index, handler_index))
    return found


def status(project: Path) -> list[AgentStatus]:
    """lorelab's hooks in every agent's project and user configuration."""
    found = []
    for agent in AGENTS.values():
        scopes: tuple[Scope, ...] = ("project", "user")
        for scope in scopes:
            path = agent.config_file(scope, project)
            try:
                data = _read_config(path)
            except InputFileError as exc:
                found.append(AgentStatus(agent.name, scope, path, True, (), (), (str(exc),)))
                continue
            installed = tuple(s.event for s in agent.events if _installed(data, agent, s.event))
            missing = tuple(s.event for s in agent.events if s.event not in installed)
            notes = (
                status_notes(agent, scope, path, data, _positions(data, agent)) if installed else ()
            )
            found.append(
                AgentStatus(agent.name, scope, path, path.exists(), installed, missing, notes)
            )
    return found
