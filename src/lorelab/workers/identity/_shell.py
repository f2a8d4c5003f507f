"""Binding what shells and other recognised interpreters run, from their argv plan."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from lorelab.errors import PreflightError
from lorelab.io import LAUNCHER_HASH_CAP, SCRIPT_HASH_CAP
from lorelab.workers._tools import find_executable
from lorelab.workers.identity._credentials import refuse_credentials
from lorelab.workers.identity._files import Binding, Parsed, bind_file_operands, is_file
from lorelab.workers.identity._grammar import Plan, shell_words

_ASSIGNMENT_WORD: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _bind_shell_text(binding: Binding, text: str) -> None:
    """Bind what shell command text names: the commands it starts and the files it names."""
    for word, is_command in shell_words(text):
        if is_command and not _ASSIGNMENT_WORD.match(word):
            found = find_executable(word, binding.cwd, binding.search_path)
            if found is not None:
                binding.bind("command", word, found.path, found.cwd_relative, LAUNCHER_HASH_CAP)
                continue
            # A builtin, a function, or a file that is not executable: bound only as a file.
        bind_file_operands(binding, [os.path.expanduser(word)], relative=True)


def shell_screen_words(text: str) -> list[str]:
    """Shell words as the credential screen sees them: ``~`` and ``$VAR`` expanded."""
    return [os.path.expandvars(os.path.expanduser(word)) for word, _ in shell_words(text)]


def bind_plan(binding: Binding, items: Sequence[str], plan: Plan) -> Parsed:
    """Screen, then bind, what a recognised interpreter's argv runs (see ``_interpreters``)."""
    label = items[0].rsplit("/", 1)[-1]
    inline_indices = frozenset(entry.index for entry in plan.inline)
    # Screen everything before anything is read: operands, and the words of shell text.
    refuse_credentials(
        [arg for index, arg in enumerate(items) if index > 0 and index not in inline_indices],
        binding.cwd,
    )
    for entry in plan.inline:
        if entry.shell:
            refuse_credentials(shell_screen_words(entry.text), binding.cwd)
    for entry in plan.inline:
        binding.inline_source(entry.flag, entry.text)
        if entry.shell:
            _bind_shell_text(binding, entry.text)
    if plan.script is not None:
        _bind_plan_script(binding, label, plan)
    return Parsed(list(items[plan.program_start :]), inline_indices, relative_operands=True)


def _bind_plan_script(binding: Binding, label: str, plan: Plan) -> None:
    script = plan.script
    assert script is not None
    kind = f"{label} script"
    if plan.script_on_path and "/" not in script:
        # ruby -S / perl -S look the script up on PATH, relative entries against the cwd.
        for entry in binding.search_path:
            base = Path(entry) if os.path.isabs(entry) else binding.cwd / entry
            if is_file(base / script):
                binding.bind(
                    "script", script, base / script, not os.path.isabs(entry), SCRIPT_HASH_CAP
                )
                return
        raise PreflightError(f"{kind} {script!r} was not found on PATH")
    if plan.script_optional:
        candidate = Path(script) if os.path.isabs(script) else binding.cwd / script
        if not os.path.lexists(candidate):
            # A package.json script or installed binary name (bun dev), not a file.
            return
    path, cwd_relative = binding.relative(script, kind)
    binding.bind("script", script, path, cwd_relative, SCRIPT_HASH_CAP)
