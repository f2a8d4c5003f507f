"""Inputs are strict and bounded: only real integers are exit codes, and only sane ones."""

import pytest
from pydantic import ValidationError

from lorelab.errors import InputFileError
from lorelab.memory import (
    CheckRequest,
    ListRequest,
    OutcomeRequest,
    PrepareRequest,
    RecordRequest,
    ShowRequest,
    SqliteMemoryStore,
    open_store,
)
from lorelab.memory._models import EXIT_CODE_MAX, EXIT_CODE_MIN
from tests.support.memory import experience


def _record(**verification: object) -> dict[str, object]:
    data = experience().model_dump()
    data["verification"] = {"command": "pytest -q", **verification}
    return data


@pytest.mark.parametrize("exit_code", ["0", True, 0.0, "zero", None])
def test_an_exit_code_that_is_not_a_json_integer_is_refused(exit_code):
    with pytest.raises(ValidationError, match=r"verification\.exit_code"):
        RecordRequest.model_validate(_record(exit_code=exit_code))


@pytest.mark.parametrize("exit_code", ["0", False, 1.0])
def test_a_command_exit_code_that_is_not_a_json_integer_is_refused(exit_code):
    data = _record(exit_code=0)
    data["commands"] = [{"command": "make", "exit_code": exit_code}]
    with pytest.raises(ValidationError, match=r"commands\.0\.exit_code"):
        RecordRequest.model_validate(data)


@pytest.mark.parametrize("exit_code", [EXIT_CODE_MAX + 1, EXIT_CODE_MIN - 1, 10**23, -(10**23)])
def test_an_exit_code_outside_what_a_process_can_return_is_refused(exit_code):
    with pytest.raises(ValidationError, match=r"verification\.exit_code"):
        RecordRequest.model_validate(_record(exit_code=exit_code))


def test_the_extreme_exit_codes_a_process_can_return_are_stored(store):
    for code in (EXIT_CODE_MIN, -9, EXIT_CODE_MAX):
        shown = store.show(
            ShowRequest(id=store.record(RecordRequest.model_validate(_record(exit_code=code))).id)
        ).item
        assert shown.provenance.verification.exit_code == code  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("model", "data", "field"),
    [
        (OutcomeRequest, {"plan_id": "plan-1", "passed": "true", "rework_count": 0}, "passed"),
        (OutcomeRequest, {"plan_id": "plan-1", "passed": 1, "rework_count": 0}, "passed"),
        (OutcomeRequest, {"plan_id": "plan-1", "passed": True, "rework_count": "0"}, "rework"),
        (PrepareRequest, {"task": "t", "budget_tokens": "600"}, "budget_tokens"),
        (PrepareRequest, {"task": "t", "include_skills": "no"}, "include_skills"),
        (ListRequest, {"kind": "skill", "limit": 10**20}, "limit"),
        (ListRequest, {"kind": "skill", "limit": "5"}, "limit"),
        (CheckRequest, {"candidate_id": "cand-1", "timeout_seconds": "5"}, "timeout_seconds"),
    ],
)
def test_every_request_refuses_strings_and_booleans_for_other_types(model, data, field):
    with pytest.raises(ValidationError, match=field):
        model.model_validate(data)


def test_an_integer_is_accepted_where_a_number_is_expected():
    assert (
        CheckRequest.model_validate({"candidate_id": "c", "timeout_seconds": 5}).timeout_seconds
        == 5
    )


def test_a_stored_exit_code_from_before_the_bounds_still_reads(store):
    # Older versions stored any integer SQLite could hold; reading one back must not fail.
    result = store.record(experience())
    store.connection.execute("UPDATE experiences SET verification_exit_code = ?", (2**40,))
    shown = store.show(ShowRequest(id=result.id)).item
    assert shown.provenance.verification.exit_code == 2**40  # type: ignore[union-attr]


def test_opening_without_create_refuses_a_missing_store_and_creates_nothing(tmp_path):
    with pytest.raises(InputFileError, match=r"home/memory\.db: no memory store here"):
        open_store(tmp_path / "home", create=False)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InputFileError, match="no memory store here"):
        SqliteMemoryStore(tmp_path / "memory.db", create=False)
    assert list(tmp_path.iterdir()) == []


def test_opening_without_create_opens_an_existing_store(tmp_path):
    with open_store(tmp_path / "home") as made:
        made.record(experience())
    with open_store(tmp_path / "home", create=False) as opened:
        assert opened.list_items(ListRequest(kind="experience")).total == 1


def test_a_home_that_cannot_be_created_is_an_input_error_naming_it(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputFileError, match=r"file/home: cannot create the memory home"):
        open_store(tmp_path / "file" / "home")


def test_a_store_in_a_missing_project_directory_is_refused_not_created(tmp_path, monkeypatch):
    monkeypatch.delenv("LORELAB_HOME", raising=False)
    with pytest.raises(InputFileError, match=r"typo: does not exist"):
        open_store(None, tmp_path / "typo")
    assert not (tmp_path / "typo").exists()
