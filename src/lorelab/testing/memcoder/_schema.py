"""MemCoder's captured tool schemas, the argument checks its server applies, and its
``evaluate`` row checks (0.3.3b1)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any, Final

TOOLS_FILE: Final = "memcoder_tools.json"
SERVER_NAME: Final = "memcoder"
CHECK_KINDS: Final = frozenset(
    {"test", "build", "lint", "assertion", "diagnostic", "manual_review"}
)
CHECK_STATUSES: Final = frozenset({"passed", "failed", "skipped"})
INFLUENCES: Final = ("changed_behavior", "present_only", "ignored")
CONDITIONS: Final = ("baseline", "memory_guided", "skill_planned", "dreaming")
_STOP: Final = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "at",
        "be",
        "by",
        "does",
        "for",
        "from",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "the",
        "this",
        "that",
        "to",
        "was",
        "when",
        "with",
        "without",
        "must",
    ]
)
# A match needs this many shared words with the problem (MemCoder: cosine similarity).
MIN_SHARED_TERMS: Final = 3


class ToolError(Exception):
    """A refusal, answered as a tool error with this one line."""


def load_tools() -> list[dict[str, Any]]:
    """MemCoder's captured tool list, exactly as its server listed it."""
    text = (
        resources.files(__package__ or "lorelab.testing.memcoder")
        .joinpath(TOOLS_FILE)
        .read_text(encoding="utf-8")
    )
    tools: list[dict[str, Any]] = json.loads(text)["tools"]
    return tools


def _terms(text: Any) -> set[str]:
    return {
        term
        for term in re.findall(r"[a-z0-9_]+", str(text or "").lower())
        if len(term) > 2 and term not in _STOP
    }


def _words(value: Any, minimum: int) -> bool:
    return isinstance(value, str) and len(value.split()) >= minimum


def _type_ok(value: Any, schema: Mapping[str, Any]) -> bool:
    if "anyOf" in schema:
        return any(_type_ok(value, option) for option in schema["anyOf"])
    kind = schema.get("type")
    checks: dict[str, Callable[[Any], bool]] = {
        "string": lambda v: isinstance(v, str),
        "boolean": lambda v: isinstance(v, bool),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "null": lambda v: v is None,
    }
    if kind is None:
        return True
    if not checks[kind](value):
        return False
    if kind == "array" and "items" in schema:
        return all(_type_ok(item, schema["items"]) for item in value)
    return True


def validate_arguments(tool: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments with schema defaults filled in; an unknown, missing or mistyped key is a
    :class:`ToolError` in the style of MemCoder's validation errors."""
    schema = tool["inputSchema"]
    properties: Mapping[str, Any] = schema.get("properties", {})
    problems: list[str] = []
    for key in arguments:
        if key not in properties:
            problems.append(f"{key}\n  Unexpected keyword argument")
    for key in schema.get("required", []):
        if key not in arguments:
            problems.append(f"{key}\n  Missing required argument")
    for key, value in arguments.items():
        if key in properties and not _type_ok(value, properties[key]):
            problems.append(f"{key}\n  Input should match {json.dumps(properties[key])}")
    if problems:
        raise ToolError(
            f"{len(problems)} validation error{'s' if len(problems) > 1 else ''} for "
            f"call[{tool['name']}]\n" + "\n".join(problems)
        )
    filled = {key: spec.get("default") for key, spec in properties.items() if "default" in spec}
    filled.update(arguments)
    return filled


def _new_id(prefix: str, size: int = 32) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:size]}"


def check_memcoder_row(run: Any) -> dict[str, Any]:
    """One runs-file row checked by MemCoder's ``evaluate`` rules (0.3.3b1): a task id, a known
    condition, a boolean ``passed``; ``rework_count`` and ``guidance_tokens`` numbers >= 0 and
    ``retrieval_relevant`` a boolean whenever the key is present (``null`` is refused)."""
    if not isinstance(run, dict):
        raise ValueError("Each evaluation run must be an object.")
    task_id = run.get("task_id")
    if not isinstance(task_id, str) or not task_id.strip():
        raise ValueError("Run field 'task_id' must be a non-empty string.")
    if run.get("condition") not in CONDITIONS:
        raise ValueError(
            "Run field 'condition' must be baseline, memory_guided, skill_planned, or dreaming."
        )
    if not isinstance(run.get("passed"), bool):
        raise ValueError("Run field 'passed' must be boolean.")
    for key in ("rework_count", "guidance_tokens"):
        if key in run:
            value = run[key]
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Run field '{key}' must be a number greater than or equal to 0.")
    if "retrieval_relevant" in run and not isinstance(run["retrieval_relevant"], bool):
        raise ValueError("Run field 'retrieval_relevant' must be boolean when provided.")
    return {"task_id": task_id.strip(), "condition": run["condition"], "passed": run["passed"]}
