"""Naming a worker: a shipped adapter's name, or a JSON array argv."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lorelab.errors import JSONInputError, UsageError
from lorelab.io import loads_strict
from lorelab.workers._tools import option_value

ADAPTER_PACKAGE: Final = "lorelab.workers.adapters"
TESTING_PACKAGE: Final = "lorelab.testing"
SHIPPED_ADAPTERS: Final[dict[str, str]] = {
    "fixture": f"{TESTING_PACKAGE}.fixture",
    "fixture-host": f"{TESTING_PACKAGE}.fixture_host",
    "fixture-context": f"{TESTING_PACKAGE}.fixture_context",
    "claude": f"{ADAPTER_PACKAGE}.claude",
    "codex": f"{ADAPTER_PACKAGE}.codex",
    "gemini": f"{ADAPTER_PACKAGE}.gemini",
    "openai": f"{ADAPTER_PACKAGE}.openai",
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


@dataclass(frozen=True, slots=True)
class EndpointOptions:
    """The options of ``--agent openai`` / ``--host openai`` given on lorelab's command line."""

    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    model_file: str | None = None
    schema_dialect: str | None = None
    max_tokens: int | None = None
    serialize_calls: bool = False
    no_stream: bool = False

    def given(self) -> bool:
        """Whether any endpoint option was given."""
        return (
            self.serialize_calls
            or self.no_stream
            or any(
                value is not None
                for value in (
                    self.model,
                    self.base_url,
                    self.api_key_env,
                    self.model_file,
                    self.schema_dialect,
                    self.max_tokens,
                )
            )
        )

    def adapter_args(self, *, with_model: bool) -> list[str]:
        """The adapter's own options (the model file made absolute against this directory)."""
        args: list[str] = []
        if with_model and self.model is not None:
            args += ["--model", self.model]
        if self.base_url is not None:
            args += ["--base-url", self.base_url]
        if self.api_key_env is not None:
            if not _VARIABLE.fullmatch(self.api_key_env):
                raise UsageError(f"--api-key-env {self.api_key_env!r}: not a variable name")
            args += ["--api-key-env", self.api_key_env]
        if self.model_file is not None:
            path = Path(os.path.abspath(self.model_file))
            if not path.is_file():
                raise UsageError(f"--model-file {self.model_file}: not a regular file")
            args += ["--model-file", str(path)]
        if self.schema_dialect is not None:
            args += ["--schema-dialect", self.schema_dialect]
        if self.max_tokens is not None:
            args += ["--max-tokens", str(self.max_tokens)]
        if self.serialize_calls:
            args.append("--serialize-calls")
        if self.no_stream:
            args.append("--no-stream")
        return args


_VARIABLE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def with_endpoint(
    argv: Sequence[str], endpoint: EndpointOptions, *, flag: str = "--agent"
) -> list[str]:
    """``argv`` with the endpoint options appended when it runs the openai adapter.

    Endpoint options given for another worker are refused (exit 2); a ``--model`` already in
    ``argv`` (from a manifest) must agree with the one given.
    """
    items = list(argv)
    if items[:3] != adapter_argv("openai"):
        return items
    present = option_value(items[3:], "--model")
    if present is not None and endpoint.model not in (None, present):
        raise UsageError(
            f"--model {endpoint.model!r} differs from the model already declared ({present!r})"
        )
    return [*items, *endpoint.adapter_args(with_model=present is None)]


def require_endpoint_use(argvs: Sequence[Sequence[str]], endpoint: EndpointOptions) -> None:
    """Refuse endpoint options when no worker is the openai adapter."""
    if endpoint.given() and not any(list(a)[:3] == adapter_argv("openai") for a in argvs):
        raise UsageError(
            "--model, --base-url, --api-key-env, --model-file, --schema-dialect, --max-tokens, "
            "--serialize-calls and --no-stream apply only to the openai adapter (--agent openai "
            "or --host openai)"
        )
