"""``lorelab report`` on a learning output directory: every section and figure, numbers equal to
the receipts, links that resolve, and nothing loaded from the network."""

import json
import re

import pytest

from lorelab.evaluation.learning.records import Summary, TrialRecord
from lorelab.io import read_model
from tests.support.report_page import lorelab, parse

SECTIONS = ["overview", "paired", "recall", "detection", "cost", "not-counted", "run"]
FIGURES = ["paired", "spec-differences", "recall", "detection", "time", "bytes"]


@pytest.fixture
def page(learning_dir):
    done = lorelab("report", str(learning_dir))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(learning_dir / "report.html")
    return parse(learning_dir / "report.html")


def _summary(directory) -> Summary:
    return read_model(directory / "summary.json", Summary, "fixture")


def _trials(directory) -> list[TrialRecord]:
    return [read_model(p, TrialRecord, "fixture") for p in sorted((directory / "trials").iterdir())]


def test_every_learning_section_and_figure_is_present_each_figure_with_an_svg(page):
    assert page.sections == SECTIONS
    assert set(page.figures) == set(FIGURES)
    assert all(count == 1 for count in page.figures.values())


def test_the_label_its_reason_the_power_note_and_the_effect_interval_are_shown(page, learning_dir):
    summary = _summary(learning_dir)
    effect = summary.paired.effect
    assert f"label: {summary.paired.label}" in page.text
    assert summary.paired.label_reason in page.text
    assert summary.power_note in page.text
    interval = f"[{effect.ci95_low:+.3f}, {effect.ci95_high:+.3f}]"
    assert f"{effect.mean_difference:+.3f}, 95% interval {interval}" in page.text


def test_recall_per_arm_equals_the_summary(page, learning_dir):
    summary = _summary(learning_dir)
    rows = page.table("recall").by("arm")
    assert set(rows) == set(summary.arms)
    for arm, data in summary.arms.items():
        assert rows[arm]["recall"].number() == data.defect_recall
        assert rows[arm]["detected"].number() == data.detected
        assert rows[arm]["defects"].number() == data.defects
        assert rows[arm]["qualified"].number() == data.qualified_trials


def test_each_repetition_pairs_the_trial_receipts_recall_and_signs_the_difference(
    page, learning_dir
):
    trials = {(t.specification, t.repetition, t.arm): t for t in _trials(learning_dir)}
    table = page.table("paired")
    assert len(table.rows) == len(trials) // 2
    for row in table.rows:
        cells = dict(zip(table.headers, row, strict=True))
        spec, rep = cells["specification"].text, int(cells["repetition"].text)
        memory, plain = trials[(spec, rep, "memory")], trials[(spec, rep, "no-memory")]
        assert cells["memory"].number() == memory.recall
        assert cells["no-memory"].number() == plain.recall
        assert cells["difference"].number() == memory.recall - plain.recall
        sign = {1: "+", -1: "\u2212", 0: "="}[
            (memory.recall > plain.recall) - (memory.recall < plain.recall)
        ]
        assert cells["sign"].text == sign


def test_the_per_specification_differences_are_the_summarys_sign_test_units(page, learning_dir):
    summary = _summary(learning_dir)
    rows = page.table("spec-differences").by("specification")
    assert list(rows) == [p.specification for p in summary.paired.specs]
    for pair in summary.paired.specs:
        assert rows[pair.specification]["difference"].number() == pair.difference
        assert rows[pair.specification]["memory"].number() == pair.memory_recall


def test_time_and_bytes_per_arm_equal_the_summary(page, learning_dir):
    summary = _summary(learning_dir)
    rows = page.table("cost").by("arm")
    for arm, data in summary.arms.items():
        assert rows[arm]["generation time"].number() == data.generation_ms
        assert rows[arm]["input bytes"].number() == data.input_bytes
        assert rows[arm]["output bytes"].number() == data.output_bytes
        assert rows[arm]["billing USD"].number() == data.billing_usd  # null: unknown, not 0


def test_the_detection_matrix_table_holds_every_defect_outcome_of_every_trial(page, learning_dir):
    table = page.table("detection")
    cells = {
        (row[0].text, row[1].text, header): cell
        for row in table.rows
        for header, cell in zip(table.headers[2:], row[2:], strict=True)
    }
    trials = _trials(learning_dir)
    assert len(cells) == sum(len(t.defects) for t in trials)
    for trial in trials:
        for result in trial.defects:
            cell = cells[(trial.specification, result.defect, f"r{trial.repetition} {trial.arm}")]
            assert result.outcome is not None
            assert cell.text == result.outcome.status
            assert page.resolve(cell.hrefs[0]).name.startswith(f"{trial.position:03d}-")


def test_every_link_resolves_to_a_receipt_in_the_output_directory(page, learning_dir):
    links = page.receipt_links()
    assert len(links) > 18
    for href in links:
        target = page.resolve(href)
        assert target.is_file(), href
        assert target.is_relative_to(learning_dir.resolve())


def test_links_stay_relative_to_the_report_when_it_is_written_elsewhere(learning_dir, tmp_path):
    elsewhere = tmp_path / "pages" / "deep"
    elsewhere.mkdir(parents=True)
    done = lorelab("report", str(learning_dir), "--output", str(elsewhere / "learning.html"))
    assert done.returncode == 0, done.stderr
    page = parse(elsewhere / "learning.html")
    assert all(not h.startswith("/") for h in page.receipt_links())
    assert all(page.resolve(h).is_file() for h in page.receipt_links())


def test_the_page_needs_nothing_from_the_network(page):
    assert not page.tags & {"script", "link", "iframe", "img", "object", "embed"}
    assert page.srcs == []
    assert all(not re.match(r"[a-z]+:", h) for h in page.hrefs)
    assert "default-src 'none'" in page.html
    # The only URL in the page is the SVG namespace, which is never fetched.
    assert set(re.findall(r"https?://[^\"' )]+", page.html)) == {"http://www.w3.org/2000/svg"}


def test_a_trial_that_did_not_qualify_is_listed_with_its_status_and_reason(learning_dir):
    path = sorted((learning_dir / "trials").iterdir())[3]
    data = json.loads(path.read_text())
    data.update(status="rejected", reason="the reviewer rejected the suite", detected=0, recall=0.0)
    path.write_text(json.dumps(data))
    done = lorelab("report", str(learning_dir))
    assert done.returncode == 0, done.stderr
    page = parse(learning_dir / "report.html")
    (row,) = page.table("not-counted").rows
    assert [c.text for c in row[1:7]] == [
        data["specification"],
        str(data["repetition"]),
        data["arm"],
        "rejected",
        "yes",
        "the reviewer rejected the suite",
    ]
    assert page.resolve(row[0].hrefs[0]) == path.resolve()
    matrix = page.table("detection")
    column = f"r{data['repetition']} {data['arm']}"
    texts = [
        r[matrix.headers.index(column)].text
        for r in matrix.rows
        if r[0].text == data["specification"]
    ]
    assert texts
    assert all("not counted (rejected)" in text for text in texts)


def test_the_same_receipts_always_give_the_same_page(learning_dir, tmp_path):
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    for target in (first, second):
        assert lorelab("report", str(learning_dir), "--output", str(target)).returncode == 0
    assert first.read_bytes() == second.read_bytes()


def test_text_from_a_receipt_is_escaped_never_markup(learning_dir):
    path = sorted((learning_dir / "trials").iterdir())[0]
    data = json.loads(path.read_text())
    hostile = '</td><script>alert(1)</script><a href="https://example.com">x</a>'
    data.update(status="failed", reason=hostile, detected=0, recall=0.0)
    path.write_text(json.dumps(data))
    assert lorelab("report", str(learning_dir)).returncode == 0
    page = parse(learning_dir / "report.html")
    assert "script" not in page.tags
    assert "https://example.com" not in page.hrefs
    (row,) = page.table("not-counted").rows
    assert row[6].text == hostile


def test_a_receipt_whose_name_needs_quoting_is_still_linked_exactly(learning_dir):
    path = sorted((learning_dir / "trials").iterdir())[0]
    odd = path.with_name('001 odd #?%"name.json')
    path.rename(odd)
    assert lorelab("report", str(learning_dir)).returncode == 0
    page = parse(learning_dir / "report.html")
    targets = {page.resolve(h) for h in page.receipt_links()}
    assert odd.resolve() in targets
    assert all(t.is_file() for t in targets)


def test_time_bars_and_cells_read_in_seconds_from_one_second_on(page, learning_dir):
    from lorelab.report._html import duration

    summary = _summary(learning_dir)
    rows = page.table("cost").by("arm")
    for arm, data in summary.arms.items():
        assert rows[arm]["generation time"].text == duration(data.generation_ms)
    assert not re.search(r"\d{4,} ms", page.text)
