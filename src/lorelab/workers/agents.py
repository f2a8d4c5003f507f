"""Naming a worker: a shipped adapter's name, or a JSON array argv."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Final

from lorelab.errors import JSONInputError, UsageError
from lorelab.io import loads_strict

ADAPTER_PACKAGE: Final = "lorelab.workers.adapters"
TESTING_PACKAGE: Final = "lorelab.testing"
SHIPPED_ADAPTERS: Final[dict[str, str]] = {
    "fixture": f"{TESTING_PACKAGE}.fixture",
    "fixture-host": f"{TESTING_PACKAGE}.fixture_host",
    "fixture-context": f"{TESTING_PACKAGE}.fixture_context",
    "claude": f"{ADAPTER_PACKAGE}.claude",
    "codex": f"{ADAPTER_PACKAGE}.codex",
    "gemini": f"{ADAPTER_PACKAGE}.gemini",
    "pynguin": f"{ADAPTER_PACKAGE}.pynguin",
    "static": f"{ADAPTER_PACKAGE}.static",
}
"""Each shipped adapter's name and the module ``python -m`` runs: the protocol fixtures are test
doubles in :mod:`lorelab.testing`, the agent adapters live in :mod:`lorelab.workers.adapters`."""
_FIXTURE_MODULES: Final = frozenset(
    SHIPPED_ADAPTERS[name] for name in ("fixture", "fixture-host", "fixture-context")
)


def adapter_argv(name: str) -> list[str]:
    """The argv that runs shipped adapter ``name`` with this interpreter."""
    if name not in SHIPPED_ADAPTERS:
        raise UsageError(
            f"unknown adapter {name!r}; shipped adapters: {', '.join(SHIPPED_ADAPTERS)}"
        )
    return [sys.executable, "-m", SHIPPED_ADAPTERS[name]]


def resolve_agent(name_or_json_argv: str, flag: str = "--agent") -> list[str]:
    """Turn ``--agent`` text into an argv: a shipped adapter's name or a JSON array of strings.

    Anything else (a shell command line, an empty array, a non-string element) is refused with
    a :class:`UsageError` naming ``flag`` (the option the caller read it from); lorelab never
    runs a worker through a shell.
    """
    text = name_or_json_argv.strip()
    if text in SHIPPED_ADAPTERS:
        return adapter_argv(text)
    if not text.startswith("["):
        raise UsageError(
            f"{flag} {name_or_json_argv!r} is neither a shipped adapter "
            f"({', '.join(SHIPPED_ADAPTERS)}) nor a JSON array of strings such as "
            '["python3", "worker.py"]'
        )
    try:
        value = loads_strict(text.encode("utf-8"), flag)
    except JSONInputError as exc:
        raise UsageError(str(exc)) from None
    if not isinstance(value, list) or not value:
        raise UsageError(f"{flag} must be a non-empty JSON array of strings")
    for item in value:
        if not isinstance(item, str) or not item or "\x00" in item:
            raise UsageError(f"{flag} element {item!r} must be a non-empty string without NUL")
    return list(value)


def is_fixture_agent(argv: Sequence[str]) -> bool:
    """Whether ``argv`` runs a shipped protocol fixture (``python -m lorelab.testing.<name>``)."""
    items = list(argv)
    for index, arg in enumerate(items[1:], start=1):
        if arg == "-m" and index + 1 < len(items):
            return items[index + 1] in _FIXTURE_MODULES
        if arg.startswith("-m") and len(arg) > 2:
            return arg[2:] in _FIXTURE_MODULES
        if not arg.startswith("-"):
            return False
    return False
