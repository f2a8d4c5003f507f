"""Codex CLI adapter: ``codex exec --json`` answers one role payload, sandboxed to the trial dir.

The role prompt goes on stdin (prompt argument ``-``). Codex prints JSONL events: the answer is
the text of the last completed ``agent_message`` item, usage is summed over ``turn.completed``
events, and a ``turn.failed`` or ``error`` event fails the call. Codex runs with ``-C <trial
cwd>``: ``--sandbox workspace-write`` for the host role (it edits that directory), ``--sandbox
read-only`` for the test roles (they only answer). For a host, ``commands`` are the
``command_execution`` items Codex itself reported, not the model's account of them.
Executable: ``--bin``, else ``LORELAB_CODEX_BIN``, else ``codex`` on PATH.
"""

from __future__ import annotations

from typing import Any, Final

from lorelab.errors import JSONInputError
from lorelab.io import loads_strict
from lorelab.workers._tools import AGENT_TOOLS
from lorelab.workers.adapters._agent import (
    AdapterFailure,
    Answer,
    Request,
    agent_main,
    as_count,
    extract_json_answer,
    run_on_prompt,
    stderr_excerpt,
    sum_counts,
    tool_executable,
    usage_or_none,
)
from lorelab.workers.roles import Usage

TOOL: Final = AGENT_TOOLS["lorelab.workers.adapters.codex"]


def command(request: Request) -> list[str]:
    """The Codex argv for this request (prompt ``-``: read from stdin)."""
    sandbox = "workspace-write" if request.role == "host" else "read-only"
    argv = [
        tool_executable(request, TOOL),
        "exec",
        "--json",
        "--sandbox",
        sandbox,
        "-C",
        str(request.cwd),
        "--skip-git-repo-check",
        "--ephemeral",
    ]
    if request.options.model:
        argv += ["--model", request.options.model]
    return [*argv, "-"]


def events(stdout: bytes) -> list[dict[str, Any]]:
    """The JSONL events on Codex's stdout; lines that are not JSON objects are skipped."""
    parsed: list[dict[str, Any]] = []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        try:
            value = loads_strict(line, "codex event")
        except JSONInputError:
            continue
        if isinstance(value, dict) and isinstance(value.get("type"), str):
            parsed.append(value)
    return parsed


def summarise(
    stream: list[dict[str, Any]],
) -> tuple[str | None, Usage | None, list[dict[str, Any]], str | None]:
    """The last agent message, the summed usage, the executed commands and any error."""
    message: str | None = None
    inputs: list[int | None] = []
    outputs: list[int | None] = []
    commands: list[dict[str, Any]] = []
    error: str | None = None
    for event in stream:
        kind = event["type"]
        item = event.get("item")
        if kind == "item.completed" and isinstance(item, dict):
            if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                message = item["text"]
            elif item.get("type") == "command_execution" and isinstance(item.get("command"), str):
                exit_code = item.get("exit_code")
                commands.append(
                    {
                        "command": item["command"],
                        "exitCode": exit_code if isinstance(exit_code, int) else None,
                    }
                )
        elif kind == "turn.completed" and isinstance(event.get("usage"), dict):
            inputs.append(as_count(event["usage"].get("input_tokens")))
            outputs.append(as_count(event["usage"].get("output_tokens")))
        elif kind == "turn.failed":
            detail = event.get("error")
            error = str(detail.get("message")) if isinstance(detail, dict) else "turn failed"
        elif kind == "error":
            error = str(event.get("message", "error event"))
    usage = usage_or_none(sum_counts(inputs), sum_counts(outputs), None)
    return message, usage, commands, error


def handle(request: Request) -> Answer:
    """Run ``codex exec`` on the role prompt and return its JSON answer."""
    result = run_on_prompt(request, command(request), TOOL)
    message, usage, commands, error = summarise(events(result.stdout))
    if error is not None:
        raise AdapterFailure("agent-error", f"codex reported: {error[:300]}", usage=usage)
    if result.exit_code != 0:
        raise AdapterFailure(
            "tool-failed",
            f"codex exited {result.returncode}: {stderr_excerpt(result)}",
            usage=usage,
        )
    if message is None:
        raise AdapterFailure("tool-output-invalid", "codex reported no agent message", usage=usage)
    response = extract_json_answer(message, "codex", usage=usage)
    notes: list[str] = []
    if request.role == "host":
        response["commands"] = commands
        notes.append(f"host commands taken from {len(commands)} codex command_execution items")
    return Answer(response=response, usage=usage, model=None, notes=notes)


def main() -> None:
    """Entry point: ``python -m lorelab.workers.adapters.codex [--model M] [--bin PATH]``."""
    agent_main(TOOL, __doc__, handle)


if __name__ == "__main__":
    main()
