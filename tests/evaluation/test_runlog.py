"""The typed run log: receipts written at once, private, never replaced; one end per run."""

import json
import stat

import pytest

from lorelab._model import ReceiptModel
from lorelab.errors import IntegrityFailure, OutputExistsError
from lorelab.evaluation.runlog import RunError, RunLog


class _Unit(ReceiptModel):
    unit_id: str
    passed: bool


class _End(ReceiptModel):
    outcome: str
    error: str | None = None


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_a_run_log_refuses_an_output_directory_that_exists(tmp_path):
    with pytest.raises(OutputExistsError):
        RunLog.start(tmp_path)


def test_each_unit_is_on_disk_0600_the_moment_it_is_recorded(tmp_path):
    log = RunLog.start(tmp_path / "out")
    log.unit("trials", "001.json", _Unit(unit_id="a", passed=True))
    written = tmp_path / "out" / "trials" / "001.json"
    assert json.loads(written.read_text()) == {"schemaVersion": 1, "unitId": "a", "passed": True}
    assert _mode(written) == 0o600
    assert _mode(tmp_path / "out") == 0o700
    assert _mode(tmp_path / "out" / "trials") == 0o700


def test_a_receipt_is_never_replaced(tmp_path):
    log = RunLog.start(tmp_path / "out")
    log.unit("trials", "001.json", _Unit(unit_id="a", passed=True))
    with pytest.raises(OutputExistsError):
        log.unit("trials", "001.json", _Unit(unit_id="a", passed=False))
    saved = json.loads((tmp_path / "out" / "trials" / "001.json").read_text())
    assert saved["passed"] is True


def test_a_finished_log_writes_nothing_more(tmp_path):
    log = RunLog.start(tmp_path / "out")
    log.finish("run.json", _End(outcome="complete"))
    assert log.status == "finished"
    with pytest.raises(RuntimeError, match="already finished"):
        log.write("late.json", _End(outcome="late"))
    assert not (tmp_path / "out" / "late.json").exists()


def test_an_aborted_run_keeps_its_receipts_and_ends_with_its_error(tmp_path):
    log = RunLog.start(tmp_path / "out")
    log.unit("runs", "t1.json", _Unit(unit_id="t1", passed=True))
    error = log.abort(
        "aborted.json",
        IntegrityFailure("the memory went away"),
        lambda found: _End(outcome=found.outcome, error=found.message),
    )
    assert error == RunError("failed", "the memory went away")
    assert log.status == "aborted"
    assert json.loads((tmp_path / "out" / "aborted.json").read_text()) == {
        "schemaVersion": 1,
        "outcome": "failed",
        "error": "the memory went away",
    }
    assert json.loads((tmp_path / "out" / "runs" / "t1.json").read_text())["unitId"] == "t1"


@pytest.mark.parametrize(
    ("exc", "outcome"),
    [
        (KeyboardInterrupt(), "interrupted"),
        (IntegrityFailure("x"), "failed"),
        (OSError("disk full"), "failed"),
        (ValueError("a bug"), "crashed"),
    ],
)
def test_how_a_run_stopped_is_classified_from_its_exception(exc, outcome):
    found = RunError.of(exc)
    assert found.outcome == outcome
    assert found.message == (str(exc) or type(exc).__name__)


def test_an_abort_after_the_finish_writes_no_second_end(tmp_path):
    log = RunLog.start(tmp_path / "out")
    log.finish("run.json", _End(outcome="complete"))
    log.abort("aborted.json", ValueError("late"), lambda found: _End(outcome=found.outcome))
    assert not (tmp_path / "out" / "aborted.json").exists()
