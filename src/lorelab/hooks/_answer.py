"""What a hook prints for its agent, by one set of rules whoever composed the context.

The in-process handler and ``lorelab serve`` (through the hooks' fast path) both end here: the
context is redacted and cut to :data:`CONTEXT_LIMIT` characters, and only an event the agent
takes context for carries it. Kept light: the fast path loads this module and no store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from lorelab.hooks._agents import AgentSpec

CONTEXT_LIMIT: Final = 10_000
"""The most characters of context a hook adds (Claude Code keeps no more of a hook's output)."""
TRANSCRIPT_TEXT_LIMIT: Final = 64 * 1024
"""The most characters of the transcript's last assistant message a hook sends a server (the
handler redacts that much and keeps 2,000)."""


@dataclass(frozen=True, slots=True)
class Served:
    """What a hook sent ``lorelab serve`` beside its payload: what it read itself."""

    last_reply: str | None
    """The transcript's last assistant message, read by the hook (the server opens no path)."""


def safe_context(context: str) -> str:
    """``context`` redacted, then cut to :data:`CONTEXT_LIMIT` characters (marked when cut)."""
    from lorelab.memory._redact import redact

    redacted, _counts = redact(context[: CONTEXT_LIMIT * 2])
    if len(redacted) <= CONTEXT_LIMIT:
        return redacted
    return redacted[: CONTEXT_LIMIT - 12] + " [truncated]"


def answer(agent: AgentSpec, event: str, context: str | None) -> str:
    """The agent's output for ``event``: additionalContext when there is some, else nothing."""
    if context and event in agent.injects:
        return json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": event,
                    "additionalContext": safe_context(context),
                }
            }
        )
    return "{}" if agent.always_json else ""


def served_context(event: str, printed: str) -> str | None:
    """The context in what a server printed for ``event``; ``None`` for anything else."""
    if not printed.strip():
        return None
    try:
        loaded = json.loads(printed)
    except (ValueError, RecursionError):
        return None
    output = loaded.get("hookSpecificOutput") if isinstance(loaded, dict) else None
    if not isinstance(output, dict) or output.get("hookEventName") != event:
        return None
    context = output.get("additionalContext")
    return context if isinstance(context, str) else None
