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
    assert data["cases"] == [
        {"id": "tests/test_a.py::test_a", "status": "passed", "failureKind": None}
    ]


def test_an_execution_record_carries_its_schema_version():
    data = loads_strict(canonical_json(_execution()).encode(), "execution")
    assert data["schemaVersion"] == 1
    with pytest.raises(ValidationError):
        Execution.model_validate({**data, "schemaVersion": 2})


def test_records_written_before_failure_kinds_existed_still_load():
    data = loads_strict(canonical_json(_execution()).encode(), "execution")
    del data["schemaVersion"]
    data["cases"] = [{"id": "t::a", "status": "failed"}]
    execution = Execution.model_validate(data)
    assert execution.cases[0].failure_kind is None


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
