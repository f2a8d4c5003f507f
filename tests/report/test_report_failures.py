"""What a page says about trials and runs that failed, and about counts of zero (issue 32, item
7): a run whose trials all failed says so at the top with the cause and does not draw their
scores as measurements; a count of 0 is a count, not "not recorded"; the recall axis has a
title; two equal values show two dots."""

import re

from lorelab.evaluation.learning.records import Summary
from lorelab.io import read_model
from lorelab.report._svg import PairRow, paired_chart
from tests.support.report_page import lorelab, parse

CAUSE = "architect call failed (invalid-json): worker stdout: invalid JSON at line 1 column 1"


def _page(directory, code: int = 0):
    done = lorelab("report", str(directory))
    assert done.returncode == code, done.stderr
    return parse(directory / "report.html")


def _svg(page, name: str) -> str:
    found = re.search(rf'<figure data-figure="{name}">(.*?)</figure>', page.html, re.S)
    assert found, name
    return found.group(1)


def test_a_run_whose_every_trial_failed_says_so_first_with_its_one_cause(failed_dir):
    page = _page(failed_dir)
    main = page.html.split("<main>", 1)[1]
    first = re.search(r'<div class="banner ([^"]+)"[^>]*><p class="banner-title">([^<]+)', main)
    assert first is not None
    assert first.groups() == ("banner-missing", "No trial qualified: 6 of 6 (6 failed)")
    assert main.index("No trial qualified") < main.index("label: ")
    assert f"one cause, in every one of them: {CAUSE}" in page.text


def test_trials_that_did_not_qualify_are_hollow_dots_and_get_no_recall_bars(failed_dir):
    page = _page(failed_dir)
    dots = re.findall(r"<circle [^>]*><title>", _svg(page, "paired"))
    assert len(dots) == 6
    assert all('fill="#ffffff"' in dot for dot in dots)
    for name in ("recall", "spec-differences"):
        svg = _svg(page, name)
        assert "<rect" not in svg, name
        assert "no trial qualified" in svg, name
    # The table keeps the receipts' numbers.
    assert [c.number() for c in page.table("recall").column("recall")] == [0.0, 0.0]


def test_a_run_whose_trials_all_qualified_has_no_failure_banner_and_no_hollow_dot(learning_dir):
    page = _page(learning_dir)
    assert "did not qualify (" not in page.text
    assert "No trial qualified" not in page.text
    assert 'fill="#ffffff"' not in _svg(page, "paired")


def test_an_empty_list_of_identity_checks_is_none_not_unrecorded(failed_dir):
    page = _page(failed_dir)
    cells = page.table("not-counted").column("identity checks")
    assert [c.text for c in cells] == ["none"] * 6


def test_the_recall_axes_have_a_title(learning_dir):
    page = _page(learning_dir)
    for name in ("paired", "recall"):
        assert "recall (detected / planted defects)</text>" in _svg(page, name), name


def test_two_equal_values_are_two_dots_one_above_the_other():
    svg = paired_chart(
        "t", [PairRow("spec r1", 0.5, 0.5, 0, "tip")], left="a", right="b", axis="recall"
    )
    dots = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)" r="5"[^>]*><title>tip', svg)
    assert len(dots) == 2
    (x1, y1), (x2, y2) = dots
    assert x1 == x2
    assert abs(float(y1) - float(y2)) >= 10  # a diameter: neither covers the other


def test_counts_of_zero_are_shown_as_none_never_as_not_recorded(conditions_dir):
    page = _page(conditions_dir)
    # Each count is followed by the tasks it counts.
    pairs = [(row[i], row[i + 1]) for row in page.table("transfer").rows for i in (1, 3)]
    zero = [tasks.text for count, tasks in pairs if count.number() == 0]
    assert zero
    assert zero == ["none"] * len(zero)
    flags = {c.text for c in page.table("runs").column("flags")}
    assert "none" in flags
    assert "not recorded" not in flags


def test_the_baselines_relevance_says_nothing_was_retrieved_and_stays_null(conditions_dir):
    page = _page(conditions_dir)
    baseline = page.table("pass-rate").by("condition")["baseline"]["relevance rate"]
    assert (baseline.text, baseline.value) == ("no retrieval (baseline)", "null")
    runs = page.table("runs").by("run")
    cell = next(row for name, row in runs.items() if name.endswith("\u00d7 baseline"))
    assert (cell["retrieval relevant"].text, cell["retrieval relevant"].value) == (
        "no retrieval (baseline)",
        "null",
    )


HOST_CAUSE = "host call failed (invalid-json): worker stdout: invalid JSON at line 1 column 1"


def test_a_run_whose_every_host_call_failed_says_so_first_and_draws_no_bars(
    conditions_failed_dir,
):
    page = _page(conditions_failed_dir)
    main = page.html.split("<main>", 1)[1]
    first = re.search(r'<div class="banner ([^"]+)"[^>]*><p class="banner-title">([^<]+)', main)
    assert first is not None
    assert first.groups() == ("banner-missing", "No run completed: 52 of 52 runs failed")
    assert f"one cause, in every one of them: {HOST_CAUSE}" in page.text
    for name in ("pass-rate", "rework", "guidance"):
        svg = _svg(page, name)
        assert "<rect" not in svg, name
        assert svg.count("no run completed") == 4, name
    dots = re.findall(r"<circle [^>]*><title>", _svg(page, "paired"))
    assert len(dots) == 3 * 8 * 2  # three panels of eight holdouts, two ends each
    assert all('fill="#ffffff"' in dot for dot in dots)
    # The table keeps the evaluated numbers: every run failed, the pass rate is 0.
    assert [c.number() for c in page.table("pass-rate").column("pass rate")] == [0.0] * 4


def test_a_run_whose_runs_all_completed_has_no_failure_banner(conditions_dir):
    page = _page(conditions_dir)
    assert "runs failed</p>" not in page.html
    assert "no run completed" not in page.text
    assert 'fill="#ffffff"' not in _svg(page, "paired")


def test_lesson_use_no_author_reported_is_unknown_not_zero(failed_dir):
    # The recorded summary says 0 trials used a lesson, out of 0 that reported lesson use.
    page = _page(failed_dir)
    rows = page.table("recall").by("arm")
    for arm in ("memory", "no-memory"):
        cell = rows[arm]["trials with a lesson used"]
        assert cell.number() is None
        assert cell.text == "unknown: no author reported lesson use"


def test_lesson_use_is_counted_where_authors_reported_it(learning_dir):
    summary = read_model(learning_dir / "summary.json", Summary, "fixture")
    rows = _page(learning_dir).table("recall").by("arm")
    for arm, data in summary.arms.items():
        expected = data.trials_with_lesson_used if data.trials_reporting_lesson_use else None
        assert rows[arm]["trials with a lesson used"].number() == expected
