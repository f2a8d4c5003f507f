"""The deterministic protocol-fixture worker for the ``context`` role (simulated context trials).

It answers from the payload alone, so trials run offline: for every ``- fact <id>: ...`` line
of the task it reports the latest ``<id> = <value>`` (or ``<id>: <value>``) line of the
recovered summary, citing that event. Flags make it misbehave on purpose, for tests:
``--retry-failed`` reruns the checkpoint's failed commands in turn 1, ``--never-answer`` never
answers, ``--usage IN,OUT,COST`` and ``--model NAME`` report usage and a model. Its responses
say ``evidenceKind: protocol-fixture``; they never support a conclusion about a real agent.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from typing import Any, Final

from lorelab._model import PROTOCOL_FIXTURE

_MAX_INPUT: Final = 32 * 1024 * 1024
_FACT_LINE: Final = re.compile(r"^\s*-\s*fact\s+([A-Za-z0-9_.-]+)\s*:", re.MULTILINE)
_SUMMARY_LINE: Final = re.compile(r"^\s*\[(\d+)\] \S+ message: (.*)$")


def _requested_facts(task: str) -> list[str]:
    seen: list[str] = []
    for match in _FACT_LINE.finditer(task):
        if match.group(1) not in seen:
            seen.append(match.group(1))
    return seen


def _latest_values(summary: str, fact_ids: list[str]) -> dict[str, tuple[str, int]]:
    found: dict[str, tuple[str, int]] = {}
    patterns = {
        fact_id: re.compile(rf"(?<![A-Za-z0-9_.-]){re.escape(fact_id)}\s*[=:]\s*(\S.*?)\s*$")
        for fact_id in fact_ids
    }
    for line in summary.splitlines():
        parsed = _SUMMARY_LINE.match(line)
        if parsed is None:
            continue
        index, content = int(parsed.group(1)), parsed.group(2)
        for fact_id, pattern in patterns.items():
            stated = pattern.search(content)
            if stated is not None:
                found[fact_id] = (stated.group(1), index)  # later lines supersede earlier ones
    return found


def _usage_flag(text: str) -> str:
    """Check ``--usage IN,OUT,COST`` when the flags are parsed, not in the middle of an answer."""
    parts = text.split(",")
    try:
        if len(parts) != 3 or int(parts[0]) < 0 or int(parts[1]) < 0:
            raise ValueError
        cost = float(parts[2])
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not IN,OUT,COST (two non-negative integers and a cost)"
        ) from None
    if not math.isfinite(cost) or cost < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the cost must be finite and non-negative")
    return text


def answer(payload: dict[str, Any], options: argparse.Namespace) -> dict[str, Any]:
    """The fixture's response to one ``context`` payload."""
    recovered = payload["recovered"]
    trial = payload["trial"]
    response: dict[str, Any] = {"commands": [], "answer": None}
    if options.retry_failed and trial["turn"] == 1:
        response["commands"] = [
            {"command": failed["command"], "exitCode": failed["exitCode"]}
            for failed in recovered["failedCommands"]
        ]
    elif not options.never_answer:
        values = _latest_values(recovered["summary"], _requested_facts(payload["task"]))
        response["answer"] = {
            "facts": [
                {"id": fact_id, "value": value, "evidence": [index]}
                for fact_id, (value, index) in values.items()
            ],
            "claims": [
                {
                    "text": f"resumed after a {trial['boundary']} from checkpoint "
                    f"{recovered['id']}",
                    # The managed boundary is the evidence of the resumption; the request is
                    # no evidence for its own answer.
                    "evidence": [trial["boundaryIndex"]],
                }
            ],
        }
    if options.usage is not None:
        tokens_in, tokens_out, cost = options.usage.split(",")
        response["usage"] = {
            "inputTokens": int(tokens_in),
            "outputTokens": int(tokens_out),
            "costUSD": float(cost),
        }
    if options.model is not None:
        response["model"] = options.model
    response["evidenceKind"] = PROTOCOL_FIXTURE
    return response


def main(argv: list[str] | None = None) -> int:
    """Read one payload on stdin, print one response on stdout."""
    parser = argparse.ArgumentParser(prog="python -m lorelab.testing.fixture_context")
    parser.add_argument("--retry-failed", action="store_true")
    parser.add_argument("--never-answer", action="store_true")
    parser.add_argument("--usage", type=_usage_flag, help="report usage as IN,OUT,COST")
    parser.add_argument("--model", help="report this model")
    options = parser.parse_args(argv)
    data = sys.stdin.buffer.read(_MAX_INPUT + 1)
    if len(data) > _MAX_INPUT:
        print("fixture_context: payload larger than 32 MiB", file=sys.stderr)
        return 2
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError) as exc:
        print(f"fixture_context: payload is not JSON: {exc}", file=sys.stderr)
        return 2
    if not isinstance(payload, dict) or payload.get("role") != "context":
        print("fixture_context: expected a payload for role 'context'", file=sys.stderr)
        return 2
    try:
        response = answer(payload, options)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        # A payload of the right role whose fields have the wrong shape (a non-string summary).
        print(f"fixture_context: malformed context payload: {exc!r}", file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps(response, separators=(",", ":"), ensure_ascii=False))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
