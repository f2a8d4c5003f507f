"""Capture the recorded exchanges the openai adapter's unit tests replay.

Run against a real llama-cpp-python server (see docs/workers.md):
``python tests/workers/data/openai/capture.py http://127.0.0.1:PORT/v1 MODEL OUT.json``.
Each exchange is the request the adapter builds (its own ``request_body``) and the server's
reply exactly as received (status and JSON body). Nothing here is edited by hand afterwards.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tests.support.workers import architect_payload, author_payload, reviewer_payload

from lorelab.workers.adapters.openai._chat import ChatSettings, request_body, role_schema
from lorelab.workers.adapters.openai._host import SourceFile, host_prompt
from lorelab.workers.adapters.openai._http import parse_base_url, request
from lorelab.workers.prompts import build_prompt

BUDGET = {"maxOutputBytes": 65536, "timeoutMs": 115000}
HOST_PAYLOAD = {
    "protocol": "lorelab.worker/1",
    "role": "host",
    "task": {
        "id": "clamp-upper",
        "prompt": "clamp in src/clamp.py returns x when x is above hi; it must return hi.",
        "verify": "python -m pytest -q tests/test_clamp.py",
    },
    "guidance": None,
    "attempt": 1,
    "lastVerification": None,
}
HOST_FILES = [
    SourceFile("src/clamp.py", "def clamp(x, lo, hi):\n    return max(lo, x)\n"),
    SourceFile(
        "tests/test_clamp.py",
        "from src.clamp import clamp\n\n\ndef test_upper():\n    assert clamp(5, 0, 3) == 3\n",
    ),
]


def main() -> None:
    base_url, model, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    endpoint = parse_base_url(base_url)
    cases = []
    for role, payload in (
        ("architect", architect_payload()),
        ("author", author_payload()),
        ("reviewer", reviewer_payload()),
    ):
        payload = {**payload, "transportBudget": BUDGET}
        cases.append((role, "llama-cpp", build_prompt(role, payload), payload))
    architect = {**architect_payload(), "transportBudget": BUDGET}
    cases.append(("architect", "none", build_prompt("architect", architect), architect))
    cases.append(("architect", "json_schema", build_prompt("architect", architect), architect))
    cases.append(("host", "llama-cpp", host_prompt(HOST_PAYLOAD, HOST_FILES, "", 1), HOST_PAYLOAD))
    exchanges = []
    for role, dialect, prompt, payload in cases:
        settings = ChatSettings(endpoint, model, None, dialect, 512, 0.0)  # type: ignore[arg-type]
        body = request_body(settings, role, prompt, role_schema(role, payload))
        started = time.monotonic()
        reply = request(endpoint, "POST", "/chat/completions", body=body, key=None, timeout_s=300)
        seconds = round(time.monotonic() - started, 1)
        exchanges.append(
            {
                "role": role,
                "dialect": dialect,
                "seconds": seconds,
                "request": body,
                "response": {"status": reply.status, "body": json.loads(reply.body)},
            }
        )
        print(role, dialect, reply.status, seconds, flush=True)
    models = request(endpoint, "GET", "/models", body=None, key=None, timeout_s=30)
    out.write_text(
        json.dumps({"models": json.loads(models.body), "exchanges": exchanges}, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
