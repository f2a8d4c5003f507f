import argparse
import io
import json
import sys

import pytest

from lorelab.testing import fixture_context
from lorelab.workers.roles import validate_response


def options(**kwargs: object) -> argparse.Namespace:
    base = {"retry_failed": False, "never_answer": False, "usage": None, "model": None}
    return argparse.Namespace(**{**base, **kwargs})


def payload(summary: str, task: str = "- fact port: the port\n- fact db: the database\n") -> dict:
    return {
        "protocol": "lorelab.worker/1",
        "role": "context",
        "trial": {"id": "fx#restart", "boundary": "restart", "boundaryIndex": 9, "turn": 1,
                  "maxTurns": 4},
        "task": task,
        "request": {"index": 10, "text": "answer",
                    "sourceOwner": {"kind": "synthetic", "owner": "o", "requestIndex": 10}},
        "recovered": {"id": "ckpt-x", "summary": summary,
                      "failedCommands": [{"command": "make test", "exitCode": 2, "index": 2}]},
        "brief": "",
        "transcript": [],
        "nextIndex": 11,
    }  # fmt: skip


def test_the_latest_statement_of_each_named_fact_wins_and_is_cited():
    summary = "\n".join(
        [
            "[1] tool message: port = 5431",
            "[2] agent command: make test -> exit 2",
            "  [5] agent message: port: 5432",
            "[7] tool message: db=orders_test",
            "[8] tool message: airport = 1",
        ]
    )
    response = fixture_context.answer(payload(summary), options())
    assert response["answer"]["facts"] == [
        {"id": "port", "value": "5432", "evidence": [5]},
        {"id": "db", "value": "orders_test", "evidence": [7]},
    ]
    # It cites the managed boundary (index 9), never the request (10), which is no evidence.
    assert response["answer"]["claims"][0]["evidence"] == [9]
    assert response["evidenceKind"] == "protocol-fixture"
    assert "usage" not in response
    validate_response("context", response)


def test_a_fact_without_a_statement_is_left_out_and_commands_are_not_read_as_facts():
    summary = "[2] agent command: port = 1 -> exit 0"
    assert fixture_context.answer(payload(summary), options())["answer"]["facts"] == []


def test_retry_failed_reruns_the_failed_commands_in_turn_one_without_answering():
    response = fixture_context.answer(payload(""), options(retry_failed=True))
    assert response["commands"] == [{"command": "make test", "exitCode": 2}]
    assert response["answer"] is None


def test_reported_usage_and_model_come_only_from_the_flags():
    response = fixture_context.answer(payload(""), options(usage="5,6,0.5", model="m"))
    assert response["usage"] == {"inputTokens": 5, "outputTokens": 6, "costUSD": 0.5}
    assert response["model"] == "m"


def test_a_payload_for_another_role_is_refused_with_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"role": "host"}')))
    assert fixture_context.main([]) == 2
    assert "role 'context'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"[]",
        b'{"role": "context"}',
        b"[" * 100_000 + b"]" * 100_000,
        json.dumps(
            {**payload(""), "recovered": {**payload("")["recovered"], "summary": 5}}
        ).encode(),
    ],
    ids=["not-json", "not-object", "no-fields", "deeply-nested", "summary-not-a-string"],
)
def test_malformed_input_is_refused_with_exit_2(monkeypatch, capsys, data):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert fixture_context.main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("fixture_context: ")


@pytest.mark.parametrize("usage", ["5,6", "a,6,0.5", "-1,6,0.5", "5,6,nan", "5,6,-1", "5,6,0.5,7"])
def test_a_malformed_usage_flag_is_refused_before_any_payload_is_read(monkeypatch, capsys, usage):
    data = json.dumps(payload("")).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    with pytest.raises(SystemExit) as exited:
        fixture_context.main([f"--usage={usage}"])
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "--usage" in captured.err


def test_main_prints_one_json_object(monkeypatch, capsys):
    data = json.dumps(payload("[1] tool message: port = 1")).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert fixture_context.main([]) == 0
    assert json.loads(capsys.readouterr().out)["answer"]["facts"][0]["value"] == "1"
