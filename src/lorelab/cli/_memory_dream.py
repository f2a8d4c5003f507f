"""``lorelab memory dream``: mining, or with ``--agent`` a worker-based Dream instead."""

from __future__ import annotations

import os
from pathlib import Path

import click

from lorelab._model import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_MS
from lorelab.cli import _memory_views as views
from lorelab.cli._common import deprecation, echo_json, exit_with
from lorelab.cli._memory_commands import (
    Call,
    Command,
    Options,
    Where,
    from_options,
    project_name,
    request_of,
    store_for,
    where_of,
)
from lorelab.errors import UsageError
from lorelab.memory import HOME_ENV, WorkerDreamRequest, find_project


def _worker_cwd(where: Where) -> Path | None:
    """The project directory a dreamer runs in, or ``None`` (a private temporary directory).

    ``--project`` names it; without one, the project found from the current directory is the
    project only when the store lives there (no ``--home``, no ``$LORELAB_HOME``).
    """
    if where.project_dir is not None:
        return Path(os.path.abspath(where.project_dir))
    if where.home is None and not os.environ.get(HOME_ENV):
        return find_project()
    return None


def _dream_divert(ctx: click.Context, options: Options, as_json: bool) -> bool:
    """``dream --agent``: a worker proposes the candidates; without it, the transport options
    are refused and the operation (mining) runs."""
    if options["timeout_ms"] is not None:
        deprecation("--timeout-ms", "--worker-timeout-s")
    if options["worker_timeout_s"] is not None:
        if options["timeout_ms"] is not None:
            raise UsageError("give the worker timeout once: --worker-timeout-s")
        options["timeout_ms"] = max(1, round(options["worker_timeout_s"] * 1000))
    given = {
        "--worker-timeout-s": options["timeout_ms"],
        "--max-output-bytes": options["max_output_bytes"],
        "--max-candidates": options["max_candidates"],
        "--identity": options["operator_identity"],
    }
    if options["agent"] is None:
        stray = [flag for flag, value in given.items() if value is not None]
        if stray:
            raise UsageError(f"{stray[0]} is only used with --agent (a worker-based Dream)")
        return False
    max_candidates = options["max_candidates"]
    call = Call(
        {
            "project": options["project_name"],
            "limit": options["limit"],
            "max_candidates": 10 if max_candidates is None else max_candidates,
        },
        "dream arguments",
        fields={"project": ("project_name",)},
    )
    request = request_of(WorkerDreamRequest, call, DREAM.params)
    timeout_ms, max_output_bytes = options["timeout_ms"], options["max_output_bytes"]
    # Loaded here: a worker-based Dream is the only memory command that needs the workers.
    from lorelab.memory._dream_worker import dream_with_worker
    from lorelab.workers import WorkerBounds, resolve_agent

    result = dream_with_worker(
        store_for(ctx, create=False),
        request,
        resolve_agent(options["agent"]),
        cwd=_worker_cwd(where_of(ctx)),
        bounds=WorkerBounds(
            DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms,
            DEFAULT_MAX_OUTPUT_BYTES if max_output_bytes is None else max_output_bytes,
        ),
        operator_identity=options["operator_identity"],
    )
    if as_json:
        echo_json(result)
    else:
        views.print_worker_dream(result)
    if result.receipt is not None and result.receipt.failure == "identity-changed":
        exit_with(3)
    if not result.ok:
        exit_with(1)
    return True


DREAM = Command(
    help="""Mine candidate Skills from command sequences shared by verified experiences.

    With --agent, a worker proposes them instead (one call through the worker protocol, never
    retried); each proposal is stored as an unchecked candidate or refused with its reason.
    Exit 1 when the call failed (nothing stored; the receipt is printed), 3 when the worker's
    identity changed during it.
    """,
    params=[
        project_name(),
        click.Option(
            ["--limit"], type=int, default=200, show_default=True, help="Experiences considered."
        ),
        click.Option(
            ["--agent"],
            default=None,
            help="Ask a worker (role dreamer) instead of mining: a shipped adapter (fixture, "
            "claude, codex, gemini) or the worker's argv as a JSON array. Never run through a "
            "shell.",
        ),
        click.Option(
            ["--worker-timeout-s"],
            type=click.FloatRange(min=0, min_open=True),
            default=None,
            help="With --agent: kill the worker after this many seconds "
            f"(default {DEFAULT_TIMEOUT_MS / 1000:g}).",
        ),
        click.Option(["--timeout-ms"], type=int, default=None, hidden=True),
        click.Option(
            ["--max-output-bytes"],
            type=int,
            default=None,
            help=f"With --agent: fail the call past this many stdout bytes "
            f"(default {DEFAULT_MAX_OUTPUT_BYTES}).",
        ),
        click.Option(
            ["--max-candidates"],
            type=int,
            default=None,
            help="With --agent: the most candidates the worker may propose (default 10).",
        ),
        click.Option(
            ["--identity", "operator_identity"],
            default=None,
            help="With --agent: who operates it.",
        ),
    ],
    call=from_options("dream", project="project_name", limit="limit"),
    human=views.print_dream,
    divert=_dream_divert,
)
