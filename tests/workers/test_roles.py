import pytest

from lorelab.errors import SchemaError, UsageError
from lorelab.workers import PROMPT_VERSION, ROLES, build_prompt, prompt_hash, role_prompt
from lorelab.workers.roles import (
    Usage,
    count_test_cases,
    validate_payload,
    validate_response,
)
from tests.support.workers import (
    architect_payload,
    author_payload,
    host_payload,
    lesson,
    reviewer_payload,
)

PAYLOADS = {
    "architect": architect_payload,
    "author": author_payload,
    "reviewer": reviewer_payload,
    "host": host_payload,
}


@pytest.mark.parametrize("role", sorted(PAYLOADS))
def test_every_role_payload_in_the_protocol_document_validates(role):
    model = validate_payload(role, PAYLOADS[role]())
    assert model.role == role


def test_a_reviewer_payload_never_carries_lessons():
    payload = {**reviewer_payload(), "lessons": [lesson()]}
    with pytest.raises(SchemaError, match="lessons"):
        validate_payload("reviewer", payload)


def test_an_unknown_role_is_a_usage_error():
    with pytest.raises(UsageError, match="not one of"):
        validate_payload("planner", architect_payload())


def test_payload_types_are_strict():
    payload = architect_payload()
    payload["limits"] = {"maxCases": "5"}
    with pytest.raises(SchemaError, match=r"limits\.maxCases"):
        validate_payload("architect", payload)


def test_a_response_with_an_unknown_key_is_invalid():
    with pytest.raises(SchemaError, match="notes"):
        validate_response("reviewer", {"verdict": "approve", "reasons": [], "notes": "x"})


def test_a_rejection_may_not_give_an_empty_reason():
    with pytest.raises(SchemaError, match="reasons"):
        validate_response("reviewer", {"verdict": "reject", "reasons": [" "]})


def test_architect_case_names_must_be_unique():
    cases = [{"name": "a", "intent": "x"}, {"name": "a", "intent": "y"}]
    with pytest.raises(SchemaError, match="unique"):
        validate_response("architect", {"cases": cases})


@pytest.mark.parametrize(
    "path",
    ["src/clamp.py", "tests/test_a.js", "../tests/test_a.py", "test_a.py"],
)
def test_an_author_may_return_only_test_files(path):
    with pytest.raises(SchemaError):
        validate_response("author", {"files": [{"path": path, "content": "x"}]})


def test_conftest_is_refused_unless_the_payload_allows_it():
    files = [{"path": "tests/conftest.py", "content": "x = 1\n"}]
    payload = author_payload()
    with pytest.raises(SchemaError, match="allowConftest"):
        validate_response("author", {"files": files}, payload=payload)
    allowed = {**payload, "limits": {**payload["limits"], "allowConftest": True}}
    validate_response("author", {"files": files}, payload=allowed)


def test_author_paths_that_collide_by_case_are_invalid():
    files = [
        {"path": "tests/test_a.py", "content": "def test_a(): pass\n"},
        {"path": "tests/test_A.py", "content": "def test_b(): pass\n"},
    ]
    with pytest.raises(SchemaError, match="collide"):
        validate_response("author", {"files": files})


def test_author_limits_come_from_the_payload():
    payload = author_payload()
    payload["limits"] = {"maxFiles": 1, "maxCases": 2}
    two_files = {
        "files": [
            {"path": "tests/test_a.py", "content": "def test_a(): pass\n"},
            {"path": "tests/test_b.py", "content": "def test_b(): pass\n"},
        ]
    }
    with pytest.raises(SchemaError, match="maxFiles 1"):
        validate_response("author", two_files, payload=payload)
    three_cases = {"files": [{"path": "tests/test_a.py", "content": "def test_a(): pass\n" * 3}]}
    with pytest.raises(SchemaError, match="3 test cases exceed"):
        validate_response("author", three_cases, payload=payload)


def test_node_author_paths_and_cases_are_checked_for_node():
    payload = author_payload(runner="node")
    content = 'const test = require("node:test");\ntest("a", () => {});\nit("b", () => {});\n'
    response = validate_response(
        "author", {"files": [{"path": "test/clamp.test.js", "content": content}]}, payload=payload
    )
    assert response.files[0].path == "test/clamp.test.js"
    assert count_test_cases("node", content) == 2


def test_usage_fields_are_null_unless_reported_and_never_negative():
    usage = Usage.model_validate({"outputTokens": 3})
    assert usage.model_dump(by_alias=True) == {
        "inputTokens": None,
        "outputTokens": 3,
        "costUSD": None,
    }
    with pytest.raises(ValueError, match="greater than or equal"):
        Usage.model_validate({"costUSD": -1})
    with pytest.raises(ValueError, match="valid integer"):
        Usage.model_validate({"inputTokens": True})


def test_only_the_fixture_evidence_kind_is_accepted():
    answer = {"verdict": "approve", "reasons": [], "evidenceKind": "protocol-fixture"}
    assert validate_response("reviewer", answer).evidence_kind == "protocol-fixture"
    with pytest.raises(SchemaError, match="evidenceKind"):
        validate_response("reviewer", {**answer, "evidenceKind": "real-model"})


@pytest.mark.parametrize("role", ROLES)
def test_each_role_prompt_states_its_reply_shape_and_the_version(role):
    text = role_prompt(role)
    assert PROMPT_VERSION in text
    assert "Reply shape:" in text
    assert f'"{role}"' in text


def test_prompt_hashes_differ_by_role_and_are_stable():
    hashes = {role: prompt_hash(role) for role in ROLES}
    assert len(set(hashes.values())) == len(ROLES)
    assert hashes == {role: prompt_hash(role) for role in ROLES}


def test_the_built_prompt_carries_the_payload_and_the_output_bound_but_not_the_budget():
    payload = {**author_payload(), "transportBudget": {"maxOutputBytes": 4096, "timeoutMs": 9}}
    text = build_prompt("author", payload)
    assert text.startswith(role_prompt("author"))
    assert "shorter than 4096 bytes" in text
    assert '"transportBudget"' not in text
    assert '"maxFiles": 2' in text
