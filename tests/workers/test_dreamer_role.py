"""The ``dreamer`` role: its payload and response shapes, its limit and its prompt."""

import pytest

from lorelab.errors import SchemaError
from lorelab.workers import ROLES, build_prompt, role_prompt, validate_payload, validate_response
from tests.support.workers import dreamer_experience, dreamer_payload

PROPOSAL = {
    "name": "verify-pytest-q",
    "description": "Run the test suite.",
    "steps": ["pytest -q"],
    "checks": [{"command": "pytest -q", "expectedExitCode": 0}],
    "sourceExperienceIds": ["exp-1", "exp-2"],
}


def test_dreamer_is_a_protocol_role_with_a_payload_model():
    assert "dreamer" in ROLES
    model = validate_payload("dreamer", dreamer_payload())
    assert model.role == "dreamer"


def test_a_dreamer_payload_carries_verified_experiences_only():
    unverified = dreamer_experience("exp-3")
    unverified["verification"]["exitCode"] = 1
    with pytest.raises(SchemaError, match=r"experiences\.0\.verification\.exitCode"):
        validate_payload("dreamer", dreamer_payload([unverified]))


def test_a_dreamer_payload_needs_limits_with_at_least_one_candidate():
    payload = dreamer_payload()
    payload["limits"] = {"maxCandidates": 0}
    with pytest.raises(SchemaError, match=r"limits\.maxCandidates"):
        validate_payload("dreamer", payload)


def test_a_dreamer_response_with_no_candidates_is_valid():
    response = validate_response("dreamer", {"candidates": []}, payload=dreamer_payload())
    assert response.candidates == []


def test_a_dreamer_response_keeps_proposals_the_store_will_judge():
    # No checks and a bad name are the store's refusals, per proposal: the call stays valid.
    odd = {**PROPOSAL, "name": "Not A Name", "checks": []}
    response = validate_response("dreamer", {"candidates": [PROPOSAL, odd]})
    assert [c.name for c in response.candidates] == ["verify-pytest-q", "Not A Name"]
    assert response.candidates[0].checks[0].expected_exit_code == 0


def test_a_dreamer_response_over_max_candidates_is_invalid():
    with pytest.raises(SchemaError, match=r"2 candidates exceed limits\.maxCandidates 1"):
        validate_response(
            "dreamer",
            {"candidates": [PROPOSAL, {**PROPOSAL, "name": "other"}]},
            payload=dreamer_payload(max_candidates=1),
        )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"checks": [{"command": "pytest -q", "expectedExitCode": "0"}]}, "expectedExitCode"),
        ({"steps": "pytest -q"}, "steps"),
        ({"sourceExperienceIds": "exp-1"}, "sourceExperienceIds"),
        ({"origin": "mined"}, "origin"),
    ],
)
def test_a_malformed_proposal_makes_the_response_invalid(change, field):
    with pytest.raises(SchemaError, match=field):
        validate_response("dreamer", {"candidates": [{**PROPOSAL, **change}]})


def test_the_dreamer_prompt_asks_for_checks_sources_and_no_edits():
    text = role_prompt("dreamer")
    for phrase in ("sourceExperienceIds", "expectedExitCode", "limits.maxCandidates"):
        assert phrase in text
    assert "do not edit files" in text
    built = build_prompt("dreamer", dreamer_payload())
    assert '"maxCandidates": 5' in built
    assert '"exp-2"' in built
