"""What the agent CLIs print, as the adapters' stand-ins replay it.

``result_object``: the one JSON object of ``claude -p --output-format json`` (``type: result``,
``subtype``, ``is_error``, ``result``, ``total_cost_usd``, ``usage``, ``modelUsage``).
``jsonl``: the event stream of ``codex exec --json`` (``thread.started``, ``turn.started``,
``item.*`` with reasoning, command and agent-message items, ``turn.completed`` with usage, or
``turn.failed``).
"""

import json


def result_object(text: str, **overrides):
    obj = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 2140,
        "duration_api_ms": 1987,
        "num_turns": 1,
        "result": text,
        "session_id": "4f0b6a2e-8d1c-4a57-9a51-0c2f1f6d3b11",
        "total_cost_usd": 0.0123,
        "usage": {
            "input_tokens": 12,
            "cache_creation_input_tokens": 3000,
            "cache_read_input_tokens": 1200,
            "output_tokens": 150,
            "server_tool_use": {"web_search_requests": 0},
            "service_tier": "standard",
        },
        "modelUsage": {
            "claude-haiku-4-5-20251001": {
                "inputTokens": 300,
                "outputTokens": 20,
                "cacheReadInputTokens": 0,
                "cacheCreationInputTokens": 0,
                "webSearchRequests": 0,
                "costUSD": 0.0004,
                "contextWindow": 200000,
            },
            "claude-sonnet-4-5-20250929": {
                "inputTokens": 12,
                "outputTokens": 150,
                "cacheReadInputTokens": 1200,
                "cacheCreationInputTokens": 3000,
                "webSearchRequests": 0,
                "costUSD": 0.0119,
                "contextWindow": 200000,
            },
        },
        "permission_denials": [],
        "uuid": "d2a7c3f0-1b5e-4c8a-9f62-7e4d8b1a0c55",
    }
    obj.update(overrides)
    return json.dumps(obj)


def jsonl(answer_text: str, *, usage=True, failed=False) -> str:
    events = [
        {"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"},
        {"type": "turn.started"},
        {
            "type": "item.completed",
            "item": {"id": "item_0", "type": "reasoning", "text": "**Plan**"},
        },
        {
            "type": "item.started",
            "item": {
                "id": "item_1",
                "type": "command_execution",
                "command": "bash -lc 'pytest -q'",
                "aggregated_output": "",
                "exit_code": None,
                "status": "in_progress",
            },
        },
        {
            "type": "item.completed",
            "item": {
                "id": "item_1",
                "type": "command_execution",
                "command": "bash -lc 'pytest -q'",
                "aggregated_output": "1 passed\n",
                "exit_code": 0,
                "status": "completed",
            },
        },
        {
            "type": "item.completed",
            "item": {"id": "item_2", "type": "agent_message", "text": "draft"},
        },
        {
            "type": "item.completed",
            "item": {"id": "item_3", "type": "agent_message", "text": answer_text},
        },
    ]
    if failed:
        events.append({"type": "turn.failed", "error": {"message": "stream disconnected"}})
    elif usage:
        events.append(
            {
                "type": "turn.completed",
                "usage": {
                    "input_tokens": 24763,
                    "cached_input_tokens": 24448,
                    "output_tokens": 122,
                },
            }
        )
    return "".join(json.dumps(event) + "\n" for event in events)
