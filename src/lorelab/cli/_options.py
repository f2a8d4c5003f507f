"""Options shared by several commands, each family declared once and spelled the same everywhere.

Every decorator adds its options under one parameter name, so command functions receive them
typed and identically named:

=============================  =====================================  ============================
decorator                      flags                                  parameter
=============================  =====================================  ============================
``agent_option``               ``--agent``                            ``agent: str | None``
``identity_option``            ``--identity``                         ``operator_identity``
``worker_timeout_option``      ``--worker-timeout-s`` (hidden alias   ``timeout_ms: int``
                               ``--timeout-ms``)
``max_output_bytes_option``    ``--max-output-bytes``                 ``max_output_bytes: int``
``json_option``                ``--json``                             ``as_json: bool``
``quiet_option``               ``-q``, ``--quiet``                    (none: applied around it)
``output_option``              ``--output``                           ``output: Path | None``
``home_option``                ``--home``                             ``home: Path | None``
``project_option``             ``--project``                          ``project_dir`` (or given)
``file_option``                any file flag (``--manifest``...)      given, ``Path`` (``None``)
``allow_unsandboxed_option``   ``--allow-unsandboxed``                ``allow_unsandboxed: bool``
=============================  =====================================  ============================

Timeouts are given in seconds everywhere (``--timeout-s`` for test runs,
``--worker-timeout-s`` for worker calls, ``--verify-timeout-s`` for verify commands). The
worker's old ``--timeout-ms`` keeps working as a hidden alias. This module imports nothing
heavy: the adapter list in ``--agent``'s help is read from the registry only when help is
shown.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


class AgentOption(click.Option):
    """``--agent``: its help lists the shipped adapters from the registry when it is shown."""

    def __init__(
        self, *args: Any, prefix: str, adapters: tuple[str, ...] | None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.prefix = prefix
        self.adapters = adapters

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        from lorelab.workers.agents import SHIPPED_ADAPTERS

        names = [
            name for name in SHIPPED_ADAPTERS if self.adapters is None or name in self.adapters
        ]
        self.help = (
            f"{self.prefix} a shipped adapter ({', '.join(names)}) or the worker's argv as a "
            'JSON array, e.g. \'["python3", "worker.py"]\'. Never run through a shell.'
        )
        return super().get_help_record(ctx)


def agent_option(
    *,
    required: bool = False,
    prefix: str = "Worker:",
    adapters: tuple[str, ...] | None = None,
    flag: str = "--agent",
    name: str = "agent",
) -> Callable[[F], F]:
    """``--agent NAME_OR_ARGV``; ``adapters`` limits the names listed in help (default: all)."""
    return click.option(
        flag,
        name,
        cls=AgentOption,
        required=required,
        prefix=prefix,
        adapters=adapters,
    )


def identity_option(
    help_text: str = "Who operates the worker (free text, bound into receipts).",
) -> Callable[[F], F]:
    """``--identity TEXT``, always passed on as ``operator_identity``."""
    return click.option("--identity", "operator_identity", help=help_text)


def json_option(help_text: str = "Print the result as JSON.") -> Callable[[F], F]:
    """``--json``, passed on as ``as_json``."""
    return click.option("--json", "as_json", is_flag=True, help=help_text)


def quiet_option(
    help_text: str = "No progress on stderr (by default a bar at a terminal, else one line per "
    "finished unit).",
) -> Callable[[F], F]:
    """``-q/--quiet``: the command runs inside :func:`lorelab.io.quiet_progress`; it receives no
    parameter."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, quiet: bool, **kwargs: Any) -> Any:
            from lorelab.io import quiet_progress

            with quiet_progress(quiet):
                return function(*args, **kwargs)

        return click.option("-q", "--quiet", "quiet", is_flag=True, help=help_text)(wrapper)  # type: ignore[return-value]

    return decorate


def output_option(
    *, required: bool = False, help_text: str = "A new directory for the receipts (must not exist)."
) -> Callable[[F], F]:
    """``--output DIR``: a receipt directory that must not exist yet, passed on as ``output``."""
    return click.option(
        "--output",
        "output",
        required=required,
        type=click.Path(path_type=Path),
        help=help_text,
    )


def home_option(
    help_text: str = "Memory home: the store is HOME/memory.db (overrides $LORELAB_HOME).",
) -> Callable[[F], F]:
    """``--home DIR``, passed on as ``home``."""
    return click.option(
        "--home",
        "home",
        type=click.Path(path_type=Path, file_okay=False),
        help=help_text,
    )


def project_option(
    help_text: str | None = None, *, name: str = "project_dir", path_type: type[Path] | None = None
) -> Callable[[F], F]:
    """``--project DIR`` (default: none, which commands read as the current directory)."""
    return click.option(
        "--project",
        name,
        type=click.Path(file_okay=False, path_type=path_type),
        default=None,
        help=help_text,
    )


def file_option(
    flag: str, name: str | None = None, *, help_text: str, required: bool = False
) -> Callable[[F], F]:
    """A file the command reads or writes, passed on as a ``Path`` (``None`` when not given)."""
    return click.option(
        flag,
        *([name] if name else []),
        required=required,
        type=click.Path(path_type=Path, dir_okay=False),
        help=help_text,
    )


def allow_unsandboxed_option() -> Callable[[F], F]:
    """``--allow-unsandboxed``, for commands that run generated or reference code; passed on as
    ``allow_unsandboxed``. Without it such a command refuses (exit 2) where no sandbox works."""
    return click.option(
        "--allow-unsandboxed",
        "allow_unsandboxed",
        is_flag=True,
        help="Where no sandbox works (bubblewrap missing, or unable to create its namespaces), "
        "run generated and reference code unconfined instead of refusing; the receipts record "
        "that it was given. Install bubblewrap instead: apt-get install bubblewrap.",
    )


def max_output_bytes_option(
    *, default: int, help_text: str | None = None, bounds: tuple[int, int | None] | None = None
) -> Callable[[F], F]:
    """``--max-output-bytes N``: the stdout bound of each worker call.

    With ``bounds`` click range-checks it; without them the library checks it.
    """
    return click.option(
        "--max-output-bytes",
        "max_output_bytes",
        type=click.IntRange(*bounds) if bounds is not None else click.INT,
        default=default,
        show_default=True,
        help=help_text,
    )


def old_option(old: str, new: str, name: str, **option: Any) -> Callable[[F], F]:
    """The old spelling ``old`` of the option ``new`` (parameter ``name``, default None): hidden,
    it works as before after a deprecation line on stderr; giving both is a usage error."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            value = kwargs.pop(f"old_{name}")
            if value is not None:
                if kwargs.get(name) is not None:
                    raise click.UsageError(f"give {new} once (not also its old spelling {old})")
                from lorelab.cli._common import deprecation

                deprecation(old, new)
                kwargs[name] = value
            return function(*args, **kwargs)

        return click.option(old, f"old_{name}", hidden=True, default=None, **option)(wrapper)  # type: ignore[return-value]

    return decorate


def worker_timeout_option(
    *, default_ms: int, max_ms: int | None = None, prefix: str = ""
) -> Callable[[F], F]:
    """``--worker-timeout-s SECONDS`` (and the hidden old spelling ``--timeout-ms MS``).

    The command receives ``timeout_ms: int``, the unit of the worker protocol. With ``max_ms``
    both spellings are range-checked by click; without it the library checks the bound.
    Giving both spellings is a usage error.
    """
    seconds_type: click.ParamType[Any] = (
        click.FloatRange(0, max_ms / 1000, min_open=True)
        if max_ms is not None
        else click.FloatRange(min=0, min_open=True)
    )
    ms_type: click.ParamType[Any] = click.IntRange(1, max_ms) if max_ms is not None else click.INT

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, worker_timeout_s: float | None, **kwargs: Any) -> Any:
            old = kwargs.pop("timeout_ms")
            if worker_timeout_s is not None and old is not None:
                raise click.UsageError(
                    "give the worker timeout once: --worker-timeout-s (seconds) or the older "
                    "--timeout-ms (milliseconds), not both"
                )
            if worker_timeout_s is not None:
                kwargs["timeout_ms"] = max(1, round(worker_timeout_s * 1000))
            else:
                if old is not None:
                    from lorelab.cli._common import deprecation

                    deprecation("--timeout-ms", "--worker-timeout-s")
                kwargs["timeout_ms"] = default_ms if old is None else old
            return function(*args, **kwargs)

        with_alias = click.option("--timeout-ms", "timeout_ms", type=ms_type, hidden=True)(wrapper)
        decorated = click.option(
            "--worker-timeout-s",
            "worker_timeout_s",
            type=seconds_type,
            default=None,
            help=f"{prefix}Timeout of each worker call in seconds (default {default_ms / 1000:g}); "
            "the worker's process group is killed at it.",
        )(with_alias)
        return decorated  # type: ignore[return-value]

    return decorate


def endpoint_options(*, model: bool = True) -> Callable[[F], F]:
    """The openai adapter's options, passed on as one ``endpoint: EndpointOptions``.

    ``--model NAME``, ``--base-url URL``, ``--api-key-env VAR`` (the key itself never goes on
    the command line), ``--model-file PATH`` (bound by SHA-256), ``--schema-dialect`` and
    ``--max-tokens``; given
    for any worker other than ``openai`` they are refused. Without ``model`` (the conditions
    runner, whose manifest declares ``host.model``) ``--model`` is left out.
    """
    names = ["base_url", "api_key_env", "model_file", "schema_dialect", "max_tokens"]
    if model:
        names.insert(0, "model")

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            from lorelab.workers import EndpointOptions

            values = {name: kwargs.pop(f"endpoint_{name}") for name in names}
            kwargs["endpoint"] = EndpointOptions(**values)
            return function(*args, **kwargs)

        options = [
            click.option(
                "--max-tokens",
                "endpoint_max_tokens",
                type=click.IntRange(1, 1_000_000),
                default=None,
                help="openai: the most tokens one completion may generate (default 1024).",
            ),
            click.option(
                "--schema-dialect",
                "endpoint_schema_dialect",
                type=click.Choice(["json_schema", "llama-cpp", "none"]),
                default=None,
                help="openai: how the server constrains output (default json_schema; "
                "llama-cpp for llama-cpp-python's server; none: unconstrained).",
            ),
            click.option(
                "--model-file",
                "endpoint_model_file",
                type=click.Path(dir_okay=False),
                default=None,
                help="openai: the local model file; its SHA-256 is bound into the identity.",
            ),
            click.option(
                "--api-key-env",
                "endpoint_api_key_env",
                default=None,
                help="openai: the variable holding the API key (default OPENAI_API_KEY).",
            ),
            click.option(
                "--base-url",
                "endpoint_base_url",
                default=None,
                help="openai: the API base URL, e.g. http://127.0.0.1:8000/v1.",
            ),
        ]
        if model:
            options.append(
                click.option(
                    "--model", "endpoint_model", default=None, help="openai: the model name."
                )
            )
        decorated: Any = wrapper
        for option in options:
            decorated = option(decorated)
        return decorated  # type: ignore[no-any-return]

    return decorate
