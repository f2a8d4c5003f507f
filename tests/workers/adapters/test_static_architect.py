"""The static worker's architect (its plan from the specification) and the program as a real
worker process."""

from lorelab.workers import (
    RoleCall,
    WorkerBounds,
    adapter_argv,
    bind_identity,
    call_worker,
    is_fixture_agent,
)
from lorelab.workers.adapters.static import plan, spec_items, spec_signatures
from tests.support.static_worker import CLAMP, REQUIREMENTS, static_task
from tests.support.workers import architect_payload, author_payload, reviewer_payload

# --- architect -----------------------------------------------------------------------------


def test_the_architect_plans_the_signature_every_example_and_every_edge_case():
    cases, dropped = plan(static_task(), 20)
    assert dropped == 0
    assert [case.name for case in cases] == [
        "signature_clamp",
        "example_1",
        "example_2",
        "edge_boundary_1",
        "edge_invalid_2",
    ]
    assert cases[0].intent == (
        "Call clamp(x: int, lo: int, hi: int) -> int from src/clamp.py with arguments of the "
        "declared types and check the int it returns"
    )
    assert cases[1].intent == "clamp(5, 0, 3) == 3"
    assert cases[4].intent == "[invalid] clamp(1, 3, 0) raises ValueError"


def test_the_architect_cuts_the_plan_to_max_cases_and_counts_what_it_left_out():
    cases, dropped = plan(static_task(), 2)
    assert [case.name for case in cases] == ["signature_clamp", "example_1"]
    assert dropped == 3


def test_signatures_without_a_return_type_and_with_nested_types_are_read():
    text = (
        "overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool, in module src/iv.py.\n"
        "Also clamp(value, low, high), in module src/clamp.py, returns low.\n"
        "chunk(items: list, size: int) -> list[list], in module src/chunking.py. Every piece\n"
    )
    found = [(s.name, s.params, s.returns, s.path) for s in spec_signatures(text)]
    assert found == [
        ("overlaps", "a: tuple[int, int], b: tuple[int, int]", "bool", "src/iv.py"),
        ("clamp", "value, low, high", None, "src/clamp.py"),
        ("chunk", "items: list, size: int", "list[list]", "src/chunking.py"),
    ]


def test_without_a_stated_signature_the_architect_plans_the_public_functions_of_the_source():
    cases, _ = plan(static_task(requirements="Clamp things.\n"), 20)
    assert [case.name for case in cases] == ["signature_clamp"]
    assert "clamp(x: int, lo: int, hi: int) -> int" in cases[0].intent


def test_spec_items_stop_at_the_first_line_that_is_not_an_item():
    items = spec_items(REQUIREMENTS)
    assert [(i.section, i.tag) for i in items] == [
        ("example", None),
        ("example", None),
        ("edge", "boundary"),
        ("edge", "invalid"),
    ]


def test_an_empty_specification_with_no_public_function_cannot_be_planned():
    assert plan(static_task(source="def _private():\n    pass\n", requirements="Nothing."), 5) == (
        [],
        0,
    )


# --- the program ---------------------------------------------------------------------------


def _call_static(role: str, payload: dict, trial) -> RoleCall:
    """One call of the static program, in its role, with a minute to answer."""
    return call_worker(
        adapter_argv("static"), role, payload, cwd=trial, bounds=WorkerBounds(timeout_ms=60_000)
    )


def test_the_static_program_plans_and_says_it_is_rule_based(trial):
    payload = architect_payload()
    payload["task"]["requirements"] = REQUIREMENTS
    payload["task"]["source"] = [{"path": "src/clamp.py", "content": CLAMP}]
    call = _call_static("architect", payload, trial)
    assert call.ok, call.receipt.failure_detail
    assert call.response is not None
    assert [case["name"] for case in call.response["cases"]][:2] == ["signature_clamp", "example_1"]
    assert "rule-based worker" in call.receipt.stderr_tail
    assert call.receipt.evidence_kind is None
    assert call.receipt.usage is None
    assert call.receipt.model.claimed is None


def test_the_static_program_rejects_with_reasons_and_approves_clean_tests(trial):
    payload = reviewer_payload()
    call = _call_static("reviewer", payload, trial)
    assert call.ok, call.receipt.failure_detail
    assert call.response is not None
    assert call.response["verdict"] == "reject"
    assert call.response["reasons"] == [
        "tests/test_clamp.py: test_a asserts nothing (no assert statement or pytest.raises)"
    ]
    payload["tests"] = [
        {
            "path": "tests/test_clamp.py",
            "content": "from src.clamp import clamp\n\n\ndef test_a():\n"
            "    assert clamp(5, 0, 3) == 3\n",
        }
    ]
    call = _call_static("reviewer", payload, trial)
    assert call.response is not None
    assert call.response["verdict"] == "approve", call.response
    assert "rule-based worker" in call.receipt.stderr_tail


def test_the_static_program_refuses_to_author(trial):
    call = _call_static("author", author_payload(), trial)
    assert call.receipt.failure == "nonzero-exit"
    assert "unsupported-role" in (call.receipt.failure_detail or "")
    assert "writes no tests" in (call.receipt.failure_detail or "")


def test_the_static_program_fails_plainly_when_there_is_nothing_to_plan(trial):
    payload = architect_payload()
    payload["task"]["requirements"] = "Nothing stated."
    payload["task"]["source"] = [{"path": "src/clamp.py", "content": "X = 1\n"}]
    call = _call_static("architect", payload, trial)
    assert call.receipt.failure == "nonzero-exit"
    assert "nothing-to-plan" in (call.receipt.failure_detail or "")


def test_the_static_worker_is_no_protocol_fixture_and_binds_as_a_shipped_adapter(trial):
    argv = adapter_argv("static")
    assert not is_fixture_agent(argv)
    identity = bind_identity(argv, cwd=trial, operator_identity=None)
    assert identity.tool is None
    for module in ("static.py", "_static_rules.py", "_static_review.py"):
        assert f"lorelab/workers/adapters/{module}" in identity.implementation_hashes
    assert identity.declared_argv == argv
