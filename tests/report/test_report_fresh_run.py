"""The report of a learning run made now, by the code under test (the recorded runs in data/
could lag behind a receipt change): complete, exit 0, numbers equal to its summary."""

import pytest

from lorelab.evaluation.learning.records import Summary
from lorelab.io import read_model
from tests.support.report_page import lorelab, lorelab_process, parse

pytestmark = pytest.mark.slow


def test_a_fresh_learning_run_renders_completely_with_the_summarys_numbers(tmp_path):
    out = tmp_path / "learning"
    args = ["--dataset", "default", "--agent", "fixture", "--repeat", "1", "--seed", "7"]
    done = lorelab_process("eval", "learning", *args, "--output", str(out))
    assert done.returncode == 0, done.stderr
    assert "━" not in done.stderr  # no progress bar frames when output is not a terminal
    report = lorelab("report", str(out))
    assert report.returncode == 0, report.stderr
    page = parse(out / "report.html")
    assert "problems" not in page.sections
    summary = read_model(out / "summary.json", Summary, "fixture")
    rows = page.table("recall").by("arm")
    for arm, data in summary.arms.items():
        assert rows[arm]["recall"].number() == data.defect_recall
    assert len(page.table("paired").rows) == len(summary.paired.specs)
    for href in page.receipt_links():
        assert page.resolve(href).is_file(), href
