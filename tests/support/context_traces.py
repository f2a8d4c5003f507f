"""Builders for context fixtures: small traces as plain dicts, as a fixture file holds them."""

import json
from typing import Any

from lorelab.evaluation.context import ContextFixture, Score, parse_fixture, score_fixture


def msg(index: int, text: str, author: str = "tool") -> dict[str, Any]:
    return {"index": index, "author": author, "kind": "message", "text": text}


def cmd(index: int, command: str, exit_code: int = 0, author: str = "agent") -> dict[str, Any]:
    return {
        "index": index,
        "author": author,
        "kind": "command",
        "command": command,
        "exitCode": exit_code,
    }


def bnd(
    index: int, kind: str, child: list[dict[str, Any]] | None = None, complete: bool = True
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "index": index,
        "author": "system",
        "kind": "boundary",
        "boundary": kind,
    }
    if child is not None:
        event["child"] = {"trace": child, "complete": complete}
    return event


def ans(
    index: int,
    facts: list[tuple[str, str, list[int]]] | None = None,
    claims: list[tuple[str, list[int]]] | None = None,
) -> dict[str, Any]:
    return {
        "index": index,
        "author": "agent",
        "kind": "answer",
        "facts": [{"id": i, "value": v, "evidence": e} for i, v, e in (facts or [])],
        "claims": [{"text": t, "evidence": e} for t, e in (claims or [])],
    }


TASK = "Find the database port.\n- fact port: the port the database listens on\n"
GOOD_ANSWER = [("port", "5432", [1])]


def fixture_dict(
    trace: list[dict[str, Any]],
    *,
    fixture_id: str = "fx",
    required: list[str] | None = None,
    forbidden: list[str] | None = None,
    expected: list[dict[str, Any]] | None = None,
    complete: bool = True,
    label: str = "PASS",
    model: str | None = "model-a",
    source_revision: str | None = "rev-1",
    synthetic: bool = False,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "id": fixture_id,
        "task": TASK,
        "expectedFacts": expected
        if expected is not None
        else [{"id": "port", "value": "5432", "evidence": [1]}],
        "forbiddenCommands": forbidden if forbidden is not None else ["make test"],
        "requiredBoundaries": required if required is not None else ["compaction"],
        "trace": trace,
        "complete": complete,
        "labels": {"expected": label},
        "provenance": {
            "sourceRevision": source_revision,
            "runId": "run-1",
            "model": model,
            "synthetic": synthetic,
        },
        "usage": usage
        if usage is not None
        else {"inputTokens": 1000, "outputTokens": 200, "costUSD": 0.01, "wallMs": 5000},
    }


def passing_trace() -> list[dict[str, Any]]:
    """Source history fails `make test`; after compaction the agent fixes and answers."""
    return [
        msg(0, "What port does the database use?", author="user"),
        msg(1, "db.conf: port = 5432"),
        cmd(2, "make test", 2),
        bnd(3, "compaction"),
        cmd(4, "make test-fixed", 0),
        ans(5, GOOD_ANSWER, [("the fixed tests pass", [4])]),
    ]


def build(trace: list[dict[str, Any]], **kwargs: Any) -> ContextFixture:
    return parse_fixture(json.dumps(fixture_dict(trace, **kwargs)).encode(), "test-fixture.json")


def score(trace: list[dict[str, Any]], **kwargs: Any) -> Score:
    return score_fixture(build(trace, **kwargs))
