import pytest
from pydantic import ValidationError

from lorelab.io import canonical_json, loads_strict
from lorelab.runners import Case, Execution, assess


def _execution():
    return Execution(
        runner="pytest",
        argv=["python", "-m", "pytest"],
        exit_code=None,
        duration_ms=5,
        cases=[Case(id="tests/test_a.py::test_a", status="passed")],
        classification="timeout",
        reason="synthetic",
        reverse=False,
        processes=[],
        output_tail="",
    )


def test_execution_json_uses_camel_case_and_keeps_unknown_exit_codes_null():
    data = loads_strict(canonical_json(_execution()).encode(), "execution")
    assert data["exitCode"] is None
    assert data["durationMs"] == 5
    assert "outputTail" in data
    assert data["cases"] == [{"id": "tests/test_a.py::test_a", "status": "passed"}]


def test_stability_json_names_flaky_cases_and_the_first_difference():
    data = loads_strict(canonical_json(assess([_execution(), _execution()])).encode(), "s")
    assert data["flakyCases"] == []
    assert data["firstDifference"] is None
    assert data["stable"] is True
    assert data["classification"] == "timeout"


def test_an_execution_round_trips_through_its_json():
    execution = _execution()
    assert Execution.model_validate_json(canonical_json(execution)) == execution


@pytest.mark.parametrize("status", ["ok", "xfail", ""])
def test_unknown_case_statuses_are_refused(status):
    with pytest.raises(ValidationError):
        Case(id="a::b", status=status)
