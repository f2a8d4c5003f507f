"""The ``lorelab`` program's entry point.

An agent runs a hook on every prompt and every tool call, so the command line that
``lorelab hooks install`` writes, ``lorelab hooks run EVENT --agent NAME``, is handled here
without loading click and the command table: the same handler, the same input and output as the
``hooks run`` command, less start-up time. So is ``lorelab hook EVENT --agent NAME``, the
spelling earlier releases installed. Every other command line, ``lorelab hooks run --help``
included, goes to the click application in :mod:`lorelab.cli.main`.

A hook call also runs without the cyclic garbage collector: it is a short process whose work
is bounded (a payload of at most 1 MiB, a transcript tail, a journal of at most 2 MiB), and
the collector's passes over the objects its imports create cost it about 3% of its run.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from typing import Final

from lorelab.cli._signals import interrupted_exit_code, raise_terminated

PAYLOAD_READ_LIMIT: Final = 1024 * 1024 + 1
"""How much of stdin a hook reads: one byte past the payload limit, so an oversized payload is
seen as such."""
EXIT_INTERNAL_ERROR: Final = 70


VIA_SERVER: Final = "--via-server"


def hook_call(args: list[str]) -> tuple[str, str, bool] | None:
    """``(event, agent, via_server)`` when ``args`` are exactly
    ``hooks run EVENT [--agent NAME] [--via-server]`` (or the old ``hook EVENT ...``),
    else None."""
    if args[:2] == ["hooks", "run"]:
        args = args[2:]
    elif args[:1] == ["hook"]:
        args = args[1:]
    else:
        return None
    via_server = bool(args) and args[-1] == VIA_SERVER
    if via_server:
        args = args[:-1]
    if len(args) not in (1, 3) or args[0].startswith("-"):
        return None
    if len(args) == 1:
        return args[0], "claude-code", via_server
    from lorelab.hooks._agents import AGENT_NAMES

    if args[1] != "--agent" or args[2] not in AGENT_NAMES:
        return None
    return args[0], args[2], via_server


def served_answer(
    agent: str, event: str, raw: bytes, environ: dict[str, str], *, via_server: bool
) -> str | None:
    """The answer of the project's running ``lorelab serve``, or None to handle it here.

    Tried first by every hook (``lorelab.serve._fast``: standard library only). Why the server
    did not take a hook is logged only when the hook was installed ``--via-server``; a server
    proven to be the user's own that took it but did not answer by the deadline is logged
    always, and the hook answers nothing."""
    from lorelab.serve._fast import NoAnswer, NotHandled, through_server

    try:
        return through_server(agent, event, raw, environ)
    except NotHandled as exc:
        if via_server:
            _log(raw, environ, f"{agent} {event}: handled in-process: {exc}")
        return None
    except NoAnswer as exc:
        from lorelab.hooks._agents import AGENTS
        from lorelab.hooks._answer import answer

        _log(raw, environ, f"{agent} {event}: server did not answer: {exc}")
        return answer(AGENTS[agent], event, None)


def _log(raw: bytes, environ: dict[str, str], message: str) -> None:
    from lorelab.hooks._journal import log_line
    from lorelab.serve._fast import home_for

    try:
        home = home_for(raw, environ)
    except OSError:
        return  # the directory the hook was started in is gone: nowhere to log
    log_line(home, message)


def run_hook_call(event: str, agent: str, via_server: bool = False) -> None:
    """Read the payload, answer it (through the server when one runs), print the answer."""
    raw = sys.stdin.buffer.read(PAYLOAD_READ_LIMIT)
    environ = dict(os.environ)
    out = served_answer(agent, event, raw, environ, via_server=via_server)
    if out is None:
        from lorelab.hooks import run_hook

        out = run_hook(agent, event, raw, environ)
    if out:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()


def main() -> None:
    """Entry point of the installed ``lorelab`` program."""
    call = hook_call(sys.argv[1:])
    if call is None:
        from lorelab.cli.main import main as click_main

        click_main()
        return
    gc.disable()
    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        run_hook_call(*call)
    except KeyboardInterrupt as exc:
        name, code = interrupted_exit_code(exc)
        sys.stderr.write(f"lorelab: interrupted by {name}\n")
        sys.exit(code)
    except Exception:  # the top-level handler, as in lorelab.cli.main: a bug, exit 70
        import traceback

        traceback.print_exc()
        sys.exit(EXIT_INTERNAL_ERROR)
