"""Claude Code adapter: ``claude -p --output-format json`` answers one role payload.

The role prompt goes to Claude Code on stdin; its single JSON result object gives the answer
(``result``), the token usage (``usage``), the cost (``total_cost_usd``) and the models used
(``modelUsage``). Executable: ``--bin``, else ``LORELAB_CLAUDE_BIN``, else ``claude`` on PATH.
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
    as_cost,
    as_count,
    json_answer,
    run_on_prompt,
    stderr_excerpt,
    sum_counts,
    tool_executable,
    usage_or_none,
)
from lorelab.workers.roles import Usage

TOOL: Final = AGENT_TOOLS["lorelab.workers.adapters.claude"]
# Hosts edit their working directory and run commands there; the test roles only answer.
HOST_TOOLS: Final = [
    "--permission-mode",
    "acceptEdits",
    "--allowedTools",
    "Bash,Read,Edit,Write,Glob,Grep",
]
ANSWER_ONLY_TOOLS: Final = [
    "--disallowedTools",
    "Bash,Edit,Write,NotebookEdit,WebFetch,WebSearch",
]


# No MCP server from the user's or the project's configuration: a memory the operator
# registered for daily work must not reach a worker or a no-memory host. ``--strict-mcp-config``
# with no ``--mcp-config`` loads none.
NO_MCP_SERVERS: Final = ["--strict-mcp-config"]


def command(request: Request) -> list[str]:
    """The Claude Code argv for this request (the prompt goes on stdin)."""
    argv = [tool_executable(request, TOOL), "-p", "--output-format", "json", *NO_MCP_SERVERS]
    if request.options.model:
        argv += ["--model", request.options.model]
    argv += HOST_TOOLS if request.role == "host" else ANSWER_ONLY_TOOLS
    return argv


def _result_object(stdout: bytes) -> dict[str, Any]:
    try:
        value = loads_strict(stdout, "claude output")
    except JSONInputError as exc:
        raise AdapterFailure("tool-output-invalid", str(exc)) from None
    if isinstance(value, list):
        # Some versions print every message as an array; the result object comes last.
        results = [
            item for item in value if isinstance(item, dict) and item.get("type") == "result"
        ]
        value = results[-1] if results else None
    if not isinstance(value, dict):
        raise AdapterFailure("tool-output-invalid", "claude printed no result object")
    return value


def parse_result(result: dict[str, Any]) -> tuple[str, Usage | None, str | None]:
    """The answer text, the usage and the model from a Claude Code result object."""
    raw_usage = result.get("usage")
    usage = None
    if isinstance(raw_usage, dict):
        input_parts = [
            as_count(raw_usage.get(key))
            for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        ]
        usage = usage_or_none(
            sum_counts(input_parts) if input_parts[0] is not None else None,
            as_count(raw_usage.get("output_tokens")),
            as_cost(result.get("total_cost_usd")),
        )
    else:
        usage = usage_or_none(None, None, as_cost(result.get("total_cost_usd")))
    model = None
    models = result.get("modelUsage")
    if isinstance(models, dict) and models:
        # The model that produced the most output tokens answered; others ran side tasks.
        model = max(
            models,
            key=lambda name: as_count((models[name] or {}).get("outputTokens")) or 0,
        )
    text = result.get("result")
    if result.get("is_error") or result.get("subtype") not in (None, "success"):
        detail = text if isinstance(text, str) else result.get("subtype")
        raise AdapterFailure(
            "agent-error",
            f"claude reported an error: {str(detail)[:300]}",
            usage=usage,
            model=model,
        )
    if not isinstance(text, str):
        raise AdapterFailure("tool-output-invalid", "claude's result has no text", usage=usage)
    return text, usage, model


def handle(request: Request) -> Answer:
    """Run Claude Code on the role prompt and return its JSON answer."""
    result = run_on_prompt(request, command(request), TOOL)
    if not result.stdout.strip():
        raise AdapterFailure(
            "tool-failed",
            f"claude exited {result.returncode} without output: {stderr_excerpt(result)}",
        )
    text, usage, model = parse_result(_result_object(result.stdout))
    if result.exit_code != 0:
        raise AdapterFailure(
            "tool-failed", f"claude exited {result.returncode}", usage=usage, model=model
        )
    return json_answer(text, "claude", usage=usage, model=model)


def main() -> None:
    """Entry point: ``python -m lorelab.workers.adapters.claude [--model M] [--bin PATH]``."""
    agent_main(TOOL, __doc__, handle)


if __name__ == "__main__":
    main()
