"""``lorelab report`` on context output directories: a fixture run, a trial run and a scan."""

import pytest

from lorelab.evaluation.context import FAILURE_CLASSES, ContextReceipt, ScanReceipt
from lorelab.io import read_model
from tests.support.report_page import EXAMPLES, lorelab, lorelab_process, parse


def _report(directory, tmp_path, name="page.html", code=0):
    target = tmp_path / name
    done = lorelab("report", str(directory), "--output", str(target))
    assert done.returncode == code, done.stderr
    return parse(target)


@pytest.fixture
def receipt(context_dir) -> ContextReceipt:
    return read_model(context_dir / "context-receipt.json", ContextReceipt, "fixture")


def test_a_context_report_has_its_sections_and_figures(context_dir, tmp_path):
    page = _report(context_dir, tmp_path)
    assert page.sections == ["overview", "failures", "boundaries", "baseline"]
    assert set(page.figures) == {"failures", "boundaries"}
    assert all(count == 1 for count in page.figures.values())
    assert "No baseline comparison was made" in page.text


def test_failure_classes_per_fixture_equal_the_receipt(context_dir, tmp_path, receipt):
    page = _report(context_dir, tmp_path)
    rows = page.table("failures").by("record")
    assert list(rows) == [r.record_id for r in receipt.records]
    for record in receipt.records:
        counts = record.failures.as_dict()
        for name in FAILURE_CLASSES:
            assert rows[record.record_id][name].number() == counts[name]
        assert rows[record.record_id]["verdict"].text == record.verdict
        assert rows[record.record_id]["label"].text == record.label


def test_boundaries_per_fixture_equal_the_receipt(context_dir, tmp_path, receipt):
    page = _report(context_dir, tmp_path)
    rows = page.table("boundaries").by("record")
    for record in receipt.records:
        row = rows[record.record_id]
        assert row["required"].text == ", ".join(record.boundary_kinds)
        assert row["recorded (in order)"].text == (
            ", ".join(record.observed_boundaries) or "not recorded"
        )
        assert row["missing boundaries"].number() == record.failures.missing_boundaries


def test_every_context_row_links_to_the_receipt(context_dir, tmp_path):
    page = _report(context_dir, tmp_path)
    links = page.receipt_links()
    assert links
    assert {page.resolve(h) for h in links} == {(context_dir / "context-receipt.json").resolve()}


def test_a_scan_report_shows_repeated_failed_commands_per_session(scan_dir, tmp_path):
    scan = read_model(scan_dir / "context-scan.json", ScanReceipt, "fixture")
    page = _report(scan_dir, tmp_path)
    assert page.sections == ["overview", "sessions", "refused"]
    assert set(page.figures) == {"sessions"}
    rows = page.table("sessions").by("session")
    assert list(rows) == [s.session_id for s in scan.sessions]
    for session in scan.sessions:
        row = rows[session.session_id]
        assert row["repeatedFailures"].number() == session.repeated_failures
        assert row["rerunsPassed"].number() == session.reruns_passed
        assert row["compactions"].number() == session.compactions
        assert row["handoffs"].number() == session.handoffs
    reruns = page.table("reruns").rows
    assert len(reruns) == sum(len(s.reruns) for s in scan.sessions)
    assert scan.totals.repeated_failures == 2
    assert "3 sessions: 2 failed commands run again after a boundary" in page.text


def test_a_trial_run_report_renders_its_records(trials_dir, tmp_path):
    trials = read_model(trials_dir / "context-receipt.json", ContextReceipt, "fixture")
    page = _report(trials_dir, tmp_path)
    assert [r[0].text for r in page.table("failures").rows] == [r.record_id for r in trials.records]
    assert "context evaluation (trial)" in page.text


def test_a_baseline_comparison_in_the_receipt_shows_its_deltas(context_dir, tmp_path):
    again = tmp_path / "again"
    done = lorelab_process(
        "eval", "context", "run", *sorted(str(p) for p in (EXAMPLES / "context").glob("*.json")),
        "--baseline", str(context_dir / "context-receipt.json"), "--output", str(again),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    current = read_model(again / "context-receipt.json", ContextReceipt, "fixture")
    assert current.comparison is not None
    assert current.comparison.deltas is not None
    page = _report(again, tmp_path)
    assert set(page.figures) == {"failures", "boundaries", "baseline"}
    rows = page.table("baseline").by("record")
    assert rows["total"]["passes"].number() == current.comparison.deltas.passes
    for delta in current.comparison.deltas.records:
        assert rows[delta.record_id]["passes"].number() == delta.passes
