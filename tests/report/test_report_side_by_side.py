"""Two output directories of one kind, side by side under that evaluation's comparability rule."""

import json
import shutil

from tests.support.report_page import lorelab, parse


def _pair(a, b, tmp_path, code):
    target = tmp_path / "pair.html"
    done = lorelab("report", str(a), str(b), "--output", str(target))
    assert done.returncode == code, done.stderr
    return done, parse(target)


def test_two_learning_runs_of_one_manifest_are_comparable_and_both_rendered(learning_dir, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(learning_dir, other)
    _, page = _pair(learning_dir, other, tmp_path, 0)
    assert "The two runs are comparable" in page.text
    assert page.sections.count("recall") == 2
    assert page.figures["paired"] == 1  # names repeat; each column draws its own
    assert len(page.tables["recall"]) == 2
    for href in page.receipt_links():
        assert page.resolve(href).is_file(), href
    targets = {page.resolve(h) for h in page.receipt_links()}
    assert any(t.is_relative_to(learning_dir.resolve()) for t in targets)
    assert any(t.is_relative_to(other.resolve()) for t in targets)


def test_learning_runs_of_different_manifests_are_not_comparable_and_the_page_says_why(
    learning_dir, tmp_path
):
    other = tmp_path / "other"
    shutil.copytree(learning_dir, other)
    for name, key in (("manifest.json", "manifestSha256"), ("summary.json", "manifestSha256")):
        data = json.loads((other / name).read_text())
        data[key] = "f" * 64
        (other / name).write_text(json.dumps(data))
    done, page = _pair(learning_dir, other, tmp_path, 1)
    assert "The two runs are NOT comparable" in page.text
    assert "different manifests" in page.text
    assert "not comparable: different manifests" in done.stderr


def test_a_learning_run_without_a_summary_cannot_be_compared(learning_dir, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(learning_dir, other)
    (other / "summary.json").unlink()
    _, page = _pair(learning_dir, other, tmp_path, 1)
    assert "the right run has no summary (it did not complete)" in page.text
    assert "summary.json: missing" in page.text


def test_two_conditions_runs_of_one_manifest_are_comparable(conditions_dir, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(conditions_dir, other)
    _, page = _pair(conditions_dir, other, tmp_path, 0)
    assert "The two runs are comparable" in page.text
    assert len(page.tables["pass-rate"]) == 2


def test_a_complete_and_an_aborted_conditions_run_are_not_comparable(
    conditions_dir, aborted_dir, tmp_path
):
    _, page = _pair(conditions_dir, aborted_dir, tmp_path, 1)
    assert "the right run has no evaluated runs file (no decision)" in page.text
    assert "pass-rate: not in this run" in page.text


def test_a_fixture_run_and_a_trial_run_of_context_are_refused_by_the_context_rule(
    context_dir, trials_dir, tmp_path
):
    _, page = _pair(context_dir, trials_dir, tmp_path, 1)
    assert "The two runs are NOT comparable" in page.text


def test_the_same_context_run_twice_is_comparable(context_dir, tmp_path):
    _, page = _pair(context_dir, context_dir, tmp_path, 0)
    assert "The two runs are comparable" in page.text


def test_two_scans_are_shown_side_by_side(scan_dir, tmp_path):
    _, page = _pair(scan_dir, scan_dir, tmp_path, 0)
    assert len(page.tables["sessions"]) == 2


def test_the_default_output_of_two_goes_in_the_first_directory(learning_dir, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(learning_dir, other)
    done = lorelab("report", str(learning_dir), str(other))
    assert done.returncode == 0, done.stderr
    assert (learning_dir / "report-side-by-side.html").is_file()
