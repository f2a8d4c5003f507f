"""``lorelab serve``: the resident MCP server over streamable HTTP, and its tokens."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from lorelab.cli._common import DefaultRunGroup, LorelabGroup, echo_json
from lorelab.cli._options import json_option, project_option

F = TypeVar("F", bound=Callable[..., Any])

_home_option = click.option(
    "--home",
    type=click.Path(file_okay=False),
    default=None,
    help="Memory home: the store is HOME/memory.db (overrides $LORELAB_HOME).",
)
_project = project_option(
    "Project directory: store at PROJECT/.lorelab/memory.db when no home is set, and the tree "
    "candidate checks copy (default: the current directory)."
)


def _store_options(command: F) -> F:
    return _home_option(_project(command))


@click.group(name="serve", cls=DefaultRunGroup, default="start", warn=True)
def serve_group() -> None:
    """Serve the memory over MCP (streamable HTTP) at /mcp, and manage its bearer tokens.

    \b
    lorelab serve start [--host ADDRESS] [--port N] [...]
    lorelab serve token create|list|revoke ...
    """


@serve_group.command(name="start")
@_store_options
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port (0: any)."
)
@click.option(
    "--no-auth",
    is_flag=True,
    default=False,
    help="Accept requests without a token: refused unless --host is 127.0.0.1 or ::1.",
)
@click.option("--tls-cert", default=None, help="PEM certificate: serve HTTPS (with --tls-key).")
@click.option("--tls-key", default=None, help="PEM private key of --tls-cert.")
@click.option(
    "--allow-checks",
    is_flag=True,
    default=False,
    help="Serve lore_check_candidate (admin tokens only): it runs recorded verification "
    "commands in a sandbox copy of the project (also: LORELAB_MCP_ALLOW_CHECKS=1).",
)
@click.option(
    "--max-in-flight",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Requests (MCP or hook) run at once; the store runs one call at a time.",
)
@click.option(
    "--max-queue",
    type=click.IntRange(min=0),
    default=64,
    show_default=True,
    help="Requests that may wait for a slot; more are refused with 503 and Retry-After.",
)
@click.option(
    "--queue-timeout-s",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Seconds a request may wait for a slot before it is refused with 503.",
)
@click.option(
    "--body-timeout-s",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Seconds a request's body may take to arrive; a request takes a slot only once it has.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Processes that serve, all on the one socket and store, each with its own "
    "--max-in-flight and --max-queue (default: one per usable core).",
)
def start_command(
    home: str | None,
    project_dir: str | None,
    host: str,
    port: int,
    no_auth: bool,
    tls_cert: str | None,
    tls_key: str | None,
    allow_checks: bool,
    max_in_flight: int,
    max_queue: int,
    queue_timeout_s: float,
    body_timeout_s: float,
    workers: int | None,
) -> None:
    """Serve the memory over MCP (streamable HTTP) at /mcp, with bearer tokens.

    One server per store. Every request needs `Authorization: Bearer TOKEN` (create one with
    `lorelab serve token create NAME --scope read|write|admin`); --no-auth drops that, on
    127.0.0.1 or ::1 only. The project's hooks find it in your private state directory and
    send it nothing before it proves it holds its key. At most --max-in-flight requests run at
    once and --max-queue wait in each of --workers processes (one per core unless told);
    others get 503. A request takes a slot only once its body (at most 4 MiB) has arrived,
    within --body-timeout-s. SIGTERM refuses the queue, lets the requests in flight finish and
    exits. See docs/serve.md for
    the limits and for each agent's registration.
    """
    import os

    from lorelab.memory import ALLOW_CHECKS_ENV
    from lorelab.serve import Limits, ServeOptions, run_server

    run_server(
        ServeOptions(
            home=home,
            project=project_dir,
            host=host,
            port=port,
            no_auth=no_auth,
            tls_cert=tls_cert,
            tls_key=tls_key,
            allow_checks=allow_checks or os.environ.get(ALLOW_CHECKS_ENV) == "1",
            limits=Limits(
                in_flight=max_in_flight,
                queued=max_queue,
                queue_seconds=queue_timeout_s,
                body_seconds=body_timeout_s,
            ),
            workers=workers,
        )
    )


@serve_group.group(name="token", cls=LorelabGroup)
def token_group() -> None:
    """Create, list and revoke the bearer tokens `lorelab serve` accepts."""


def _store_file(home: str | None, project_dir: str | None, *, create: bool) -> Any:
    from lorelab.memory import open_store

    store = open_store(home, project_dir, create=create)
    store.close()
    return store.location


@token_group.command(name="create")
@click.argument("name")
@click.option(
    "--scope",
    type=click.Choice(["read", "write", "admin"]),
    required=True,
    help="read: prepare (its brief unrecorded), explain, list, show...; write: also record "
    "and every other change; admin: also lore_check_candidate.",
)
@_store_options
@json_option()
def token_create(
    name: str, scope: str, home: str | None, project_dir: str | None, as_json: bool
) -> None:
    """Create token NAME and print it once: only its hash is kept."""
    from lorelab.errors import UsageError
    from lorelab.serve import LOCAL_TOKEN, create_token

    if name == LOCAL_TOKEN:
        raise UsageError(f"token name {name!r}: reserved for the server's own token for the hooks")
    token = create_token(_store_file(home, project_dir, create=True), name, scope)  # type: ignore[arg-type]
    if as_json:
        echo_json({"name": name, "scope": scope, "token": token})
        return
    click.echo(token)
    click.echo(
        f"token {name} ({scope}) created; it is shown only now: keep it in a secret store",
        err=True,
    )


@token_group.command(name="list")
@_store_options
@json_option()
def token_list(home: str | None, project_dir: str | None, as_json: bool) -> None:
    """List every token issued (name, scope, when created and revoked); never the tokens."""
    from lorelab.serve import list_tokens

    found = list_tokens(_store_file(home, project_dir, create=False))
    if as_json:
        echo_json(
            [
                {
                    "name": t.name,
                    "scope": t.scope,
                    "created_at": t.created_at,
                    "revoked_at": t.revoked_at,
                }
                for t in found
            ]
        )
        return
    for t in found:
        state = f"revoked {t.revoked_at}" if t.revoked_at else "live"
        click.echo(f"{t.name:<24} {t.scope:<6} created {t.created_at}  {state}")


@token_group.command(name="revoke")
@click.argument("name")
@_store_options
@json_option()
def token_revoke(name: str, home: str | None, project_dir: str | None, as_json: bool) -> None:
    """Revoke token NAME: a running server refuses it from its next request."""
    from lorelab.serve import revoke_token

    revoked = revoke_token(_store_file(home, project_dir, create=False), name)
    if as_json:
        echo_json({"name": revoked.name, "scope": revoked.scope, "revoked_at": revoked.revoked_at})
        return
    click.echo(f"token {revoked.name} revoked at {revoked.revoked_at}")
