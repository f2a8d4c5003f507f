"""Finding executables as a child process would, and the agent CLI each shipped adapter runs.

One lookup serves the identity binder (the launcher, and the tool an adapter will launch) and
the adapters themselves, so what is bound is what runs: an absolute path as is, a path with a
``/`` relative to the cwd, a bare name along PATH with relative entries against the cwd.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

Via = Literal["absolute", "cwd", "path-lookup"]
ToolSource = Literal["option", "variable", "default"]


@dataclass(frozen=True, slots=True)
class Found:
    """An executable found for a declared name."""

    path: Path
    via: Via
    cwd_relative: bool


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """How a shipped adapter names its tool: an option, else a variable, else a name on PATH."""

    tool: str
    option: str
    variable: str
    default: str
    consent: str | None = None
    """A variable the tool refuses to run without (Pynguin's own safety switch), if any."""

    @property
    def dest(self) -> str:
        """The argparse destination of :attr:`option`."""
        return self.option.lstrip("-").replace("-", "_")


AGENT_TOOLS: Final[dict[str, ToolSpec]] = {
    "lorelab.workers.adapters.claude": ToolSpec("claude", "--bin", "LORELAB_CLAUDE_BIN", "claude"),
    "lorelab.workers.adapters.codex": ToolSpec("codex", "--bin", "LORELAB_CODEX_BIN", "codex"),
    "lorelab.workers.adapters.gemini": ToolSpec("gemini", "--bin", "LORELAB_GEMINI_BIN", "gemini"),
    "lorelab.workers.adapters.pynguin": ToolSpec(
        "pynguin", "--pynguin", "LORELAB_PYNGUIN", "pynguin", consent="PYNGUIN_DANGER_AWARE"
    ),
}


def is_executable_file(path: Path) -> bool:
    """Whether ``path`` is a regular file this process may execute (symlinks followed)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and os.access(path, os.X_OK)


def split_path(value: str | None) -> list[str]:
    """PATH entries; an empty entry means the current directory, as in ``execvp``."""
    return value.split(os.pathsep) if value else []


def find_executable(declared: str, cwd: Path, search_path: Sequence[str]) -> Found | None:
    """Find ``declared`` as ``execvp`` in a child already in ``cwd`` would; ``None`` if absent."""
    if os.path.isabs(declared):
        path = Path(declared)
        return Found(path, "absolute", False) if is_executable_file(path) else None
    if "/" in declared:
        path = cwd / declared
        if not is_executable_file(path):
            return None
        return Found(Path(os.path.abspath(path)), "cwd", True)
    for entry in search_path:
        base = Path(entry) if os.path.isabs(entry) else cwd / entry
        path = base / declared
        if is_executable_file(path):
            return Found(Path(os.path.abspath(path)), "path-lookup", not os.path.isabs(entry))
    return None


def option_value(args: Sequence[str], option: str) -> str | None:
    """The value of ``option`` in ``args`` as argparse reads it (the last one wins).

    The adapters' parsers take no abbreviations, so only the exact option counts; ``--`` ends
    the options.
    """
    value: str | None = None
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            break
        if arg == option and index + 1 < len(args):
            value = args[index + 1]
            index += 2
            continue
        if arg.startswith(option + "="):
            value = arg[len(option) + 1 :]
        index += 1
    return value


def choose_tool(
    spec: ToolSpec, option: str | None, env: Mapping[str, str]
) -> tuple[str, ToolSource]:
    """The tool as named: the option's value, else the variable's, else the default name."""
    if option:
        return option, "option"
    variable = env.get(spec.variable)
    if variable:
        return variable, "variable"
    return spec.default, "default"


def describe_choice(spec: ToolSpec, declared: str, source: ToolSource) -> str:
    """How the tool was named, for messages."""
    if source == "option":
        return f"{spec.option} {declared}"
    if source == "variable":
        return f"{spec.variable}={declared}"
    return f"{declared!r} on PATH ({spec.option} and {spec.variable} unset)"
