"""Gemini CLI adapter: ``gemini -p ... --output-format json`` answers one role payload.

Gemini CLI appends ``-p`` to what it reads on stdin, so the role prompt goes on stdin and ``-p``
only says to follow it (a long prompt never meets the argument-length limit). The single JSON
object it prints gives the answer (``response``), per-model token counts (``stats.models``) and
``error`` when the request failed; Gemini CLI reports no cost, so ``costUSD`` stays null. The
host role runs with ``--approval-mode auto_edit`` (edits in the trial directory are approved,
shell commands are not). Executable: ``--bin``, else ``LORELAB_GEMINI_BIN``, else ``gemini``.
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
    json_answer,
    run_on_prompt,
    stderr_excerpt,
    sum_counts,
    tool_executable,
    usage_or_none,
)
from lorelab.workers.roles import Usage

TOOL: Final = AGENT_TOOLS["lorelab.workers.adapters.gemini"]
INSTRUCTION: Final = "Follow the instructions given above on standard input exactly."


# No configured MCP server and no extension: a memory the operator registered for daily work
# must not reach a worker or a no-memory host. Gemini CLI connects only to the servers
# ``--allowed-mcp-server-names`` lists; this name is one no configuration uses.
NO_MCP_SERVERS: Final = ["--allowed-mcp-server-names", "lorelab-none", "--extensions", "none"]


def command(request: Request) -> list[str]:
    """The Gemini CLI argv for this request (the role prompt goes on stdin)."""
    argv = [
        tool_executable(request, TOOL),
        "-p",
        INSTRUCTION,
        "--output-format",
        "json",
        *NO_MCP_SERVERS,
    ]
    if request.options.model:
        argv += ["--model", request.options.model]
    if request.role == "host":
        argv += ["--approval-mode", "auto_edit"]
    return argv


def _output_object(stdout: bytes) -> dict[str, Any]:
    text = stdout.decode("utf-8", "replace")
    # Tolerate log lines printed before the JSON object.
    starts = [0] + [index + 1 for index, char in enumerate(text) if char == "\n"]
    for start in starts:
        if text[start:].lstrip().startswith("{"):
            try:
                value = loads_strict(text[start:].encode("utf-8"), "gemini output")
            except JSONInputError:
                continue
            if isinstance(value, dict):
                return value
    raise AdapterFailure("tool-output-invalid", "gemini printed no JSON object")


def parse_output(output: dict[str, Any]) -> tuple[str | None, Usage | None, str | None, str | None]:
    """The answer, the usage, the model and any error from Gemini CLI's JSON output."""
    usage: Usage | None = None
    model: str | None = None
    stats = output.get("stats")
    models = stats.get("models") if isinstance(stats, dict) else None
    if isinstance(models, dict) and models:
        inputs: list[int | None] = []
        outputs: list[int | None] = []
        totals: dict[str, int] = {}
        for name, entry in models.items():
            tokens = entry.get("tokens") if isinstance(entry, dict) else None
            if not isinstance(tokens, dict):
                continue
            inputs.append(as_count(tokens.get("prompt")))
            # Thinking tokens are generated (and billed) as output.
            outputs.append(
                sum_counts([as_count(tokens.get("candidates")), as_count(tokens.get("thoughts"))])
            )
            totals[name] = as_count(tokens.get("total")) or 0
        usage = usage_or_none(sum_counts(inputs), sum_counts(outputs), None)
        if totals:
            model = max(totals, key=lambda name: totals[name])
    error = output.get("error")
    message = None
    if error:
        message = str(error.get("message", error)) if isinstance(error, dict) else str(error)
    text = output.get("response")
    return (text if isinstance(text, str) else None), usage, model, message


def handle(request: Request) -> Answer:
    """Run Gemini CLI on the role prompt and return its JSON answer."""
    result = run_on_prompt(request, command(request), TOOL)
    if not result.stdout.strip():
        raise AdapterFailure(
            "tool-failed",
            f"gemini exited {result.returncode} without output: {stderr_excerpt(result)}",
        )
    text, usage, model, error = parse_output(_output_object(result.stdout))
    if error is not None:
        raise AdapterFailure(
            "agent-error", f"gemini reported: {error[:300]}", usage=usage, model=model
        )
    if result.exit_code != 0:
        raise AdapterFailure(
            "tool-failed", f"gemini exited {result.returncode}", usage=usage, model=model
        )
    if text is None:
        raise AdapterFailure("tool-output-invalid", "gemini's output has no response", usage=usage)
    return json_answer(text, "gemini", usage=usage, model=model)


def main() -> None:
    """Entry point: ``python -m lorelab.workers.adapters.gemini [--model M] [--bin PATH]``."""
    agent_main(TOOL, __doc__, handle)


if __name__ == "__main__":
    main()
