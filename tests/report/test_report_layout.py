"""The figures as laid out in a real browser (headless Chromium): every text box lies inside its
figure's SVG (an SVG clips what reaches outside it), no two labels of a figure overlap, no label
is shortened, every dot shows (two equal values do not hide one dot under the other), and the
charts use the width of a wide window."""

import shutil

import pytest

from tests.support.browser import render
from tests.support.report_page import lorelab

pytestmark = pytest.mark.slow

PAGES = [
    "learning_dir",
    "conditions_dir",
    "context_dir",
    "scan_dir",
    "aborted_dir",
    "failed_dir",
    "conditions_failed_dir",
]
# A matrix is as wide as its columns need; every other chart spans its figure.
MATRICES = {"detection", "failures", "boundaries"}


@pytest.fixture(params=PAGES)
def page(request, tmp_path):
    directory = request.getfixturevalue(request.param)
    page = tmp_path / "page.html"
    assert lorelab("report", str(directory), "--output", str(page)).returncode in (0, 1)
    return page


@pytest.mark.parametrize("width", [1400, 900])
def test_no_text_is_clipped_or_cut_no_labels_overlap_and_every_dot_shows(page, width, tmp_path):
    rendered = render(page, tmp_path / "profile", width=width)
    problems = {f["name"]: f["problems"] for f in rendered.layout if f["problems"]}
    assert problems == {}


def test_the_charts_use_the_width_of_a_1400_pixel_window(page, tmp_path):
    rendered = render(page, tmp_path / "profile", width=1400)
    narrow = {
        f["name"]: round(f["svgWidth"] / f["figureWidth"], 2)
        for f in rendered.layout
        if f["name"] not in MATRICES and f["svgWidth"] < 0.9 * f["figureWidth"]
    }
    assert narrow == {}
    assert all(f["svgWidth"] <= f["figureWidth"] + 0.5 for f in rendered.layout)


SMALLEST_TEXT_PX = 8.0
"""The smallest chart text a page may draw (the issue saw 7 px side by side)."""


@pytest.mark.parametrize("width", [1400, 900])
def test_chart_text_stays_legible_and_names_do_not_break(page, width, tmp_path):
    legibility = render(page, tmp_path / "profile", width=width).legibility
    assert legibility["smallestText"] >= SMALLEST_TEXT_PX, legibility["smallestWhere"]
    assert legibility["brokenNames"] == []


def test_side_by_side_charts_stay_legible(learning_dir, conditions_dir, tmp_path):
    for directory in (learning_dir, conditions_dir):
        other = tmp_path / f"{directory.name}-copy"
        shutil.copytree(directory, other)
        page = tmp_path / f"{directory.name}-pair.html"
        done = lorelab("report", str(directory), str(other), "--output", str(page))
        assert done.returncode in (0, 1), done.stderr
        legibility = render(page, tmp_path / "profile", width=1400).legibility
        assert legibility["smallestText"] >= SMALLEST_TEXT_PX, legibility["smallestWhere"]
        assert legibility["brokenNames"] == []
