"""The protocol fixture as a ``dreamer``: one candidate per shared verification command."""

import json
import subprocess
import sys
from pathlib import Path

from lorelab.testing.fixture import answer
from lorelab.workers import adapter_argv, call_worker, validate_response
from tests.support.workers import dreamer_experience, dreamer_payload


def test_a_verification_shared_by_two_experiences_becomes_one_candidate():
    response = answer(
        dreamer_payload(
            [
                dreamer_experience("exp-3", verify="pytest -q"),
                dreamer_experience("exp-2", verify="npm test"),
                dreamer_experience("exp-1", verify="pytest   -q"),
            ]
        )
    )
    assert response["evidenceKind"] == "protocol-fixture"
    assert response["candidates"] == [
        {
            "name": "verify-pytest-q",
            "description": response["candidates"][0]["description"],
            "steps": ["pytest -q"],
            "checks": [{"command": "pytest -q", "expectedExitCode": 0}],
            "sourceExperienceIds": ["exp-3", "exp-1"],
        }
    ]
    assert "exp-3, exp-1" in response["candidates"][0]["description"]


def test_no_shared_verification_means_no_candidates():
    response = answer(
        dreamer_payload(
            [dreamer_experience("exp-1", verify="pytest -q"), dreamer_experience("exp-2", "make")]
        )
    )
    assert response == {"candidates": [], "evidenceKind": "protocol-fixture"}


def test_the_same_experience_listed_twice_is_not_two_sources():
    response = answer(dreamer_payload([dreamer_experience("exp-1"), dreamer_experience("exp-1")]))
    assert response["candidates"] == []


def test_candidates_come_by_support_then_command_up_to_max_candidates():
    experiences = [
        dreamer_experience("exp-1", verify="make check"),
        dreamer_experience("exp-2", verify="make check"),
        dreamer_experience("exp-3", verify="cargo test"),
        dreamer_experience("exp-4", verify="cargo test"),
        dreamer_experience("exp-5", verify="go test ./..."),
        dreamer_experience("exp-6", verify="go test ./..."),
        dreamer_experience("exp-7", verify="go test ./..."),
    ]
    response = answer(dreamer_payload(experiences, max_candidates=2))
    assert [c["steps"] for c in response["candidates"]] == [["go test ./..."], ["cargo test"]]
    validate_response("dreamer", response, payload=dreamer_payload(experiences, max_candidates=2))


def test_names_are_valid_and_distinct_even_when_commands_slug_alike():
    experiences = [
        dreamer_experience("exp-1", verify="make CHECK"),
        dreamer_experience("exp-2", verify="make CHECK"),
        dreamer_experience("exp-3", verify="make check"),
        dreamer_experience("exp-4", verify="make check"),
        dreamer_experience("exp-5", verify="x" * 200),
        dreamer_experience("exp-6", verify="x" * 200),
        dreamer_experience("exp-7", verify="!!!"),
        dreamer_experience("exp-8", verify="!!!"),
    ]
    names = [c["name"] for c in answer(dreamer_payload(experiences))["candidates"]]
    assert names == ["verify-shared-command", "verify-make-check", "verify-make-check-2", names[3]]
    assert len(names[3]) == 64
    assert names[3].startswith("verify-xxx")


def test_the_dreamer_answers_through_the_real_transport(tmp_path: Path):
    payload = dreamer_payload()
    call = call_worker(adapter_argv("fixture"), "dreamer", payload, cwd=tmp_path)
    assert call.ok, call.receipt.failure_detail
    assert call.receipt.role == "dreamer"
    assert call.receipt.evidence_kind == "protocol-fixture"
    assert call.receipt.model.claimed is None
    assert call.response == answer(payload)


def test_the_program_answers_a_dreamer_payload_with_one_json_object():
    completed = subprocess.run(
        [sys.executable, "-m", "lorelab.testing.fixture"],
        input=json.dumps(dreamer_payload()).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr.decode()
    assert json.loads(completed.stdout)["candidates"][0]["sourceExperienceIds"] == [
        "exp-2",
        "exp-1",
    ]
