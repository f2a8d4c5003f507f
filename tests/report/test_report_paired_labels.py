"""The conditions page's paired-changes chart names every dot (issue 43): each holdout's two dots
in each condition's panel carry its task id beside them, as markup and as laid out in a real
browser (headless Chromium), at 1,400 and 900 px and side by side, with no two labels meeting
and none leaving the chart."""

import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support.browser import render
from tests.support.report_page import lorelab, parse

SVG = "{http://www.w3.org/2000/svg}"
GAP_PX = 16.0
"""Most room between a dot's edge and its label's near edge, in page pixels."""
TOL = 0.5


def _page(directory: Path, tmp_path: Path, *more: Path) -> Path:
    page = tmp_path / f"{directory.name}-page.html"
    done = lorelab("report", str(directory), *map(str, more), "--output", str(page))
    assert done.returncode in (0, 1), done.stderr
    return page


def _expected(page: Path) -> list[tuple[str, str]]:
    """(condition, task) of every row of the page's per-holdout table: two dots each."""
    table = parse(page).table("paired")
    return [(row[0].text, row[1].text) for row in table.rows]


def _paired_svg(page: Path) -> ET.Element:
    html = page.read_text(encoding="utf-8")
    figure = re.search(r'<figure[^>]*data-figure="paired".*?(<svg.*?</svg>)', html, re.S)
    assert figure, "the page has no paired figure"
    return ET.fromstring(figure.group(1))


@pytest.mark.parametrize("fixture", ["conditions_dir", "conditions_failed_dir"])
def test_every_dot_of_the_paired_chart_has_its_task_id_written_in_the_svg(
    fixture, request, tmp_path
):
    page = _page(request.getfixturevalue(fixture), tmp_path)
    expected = _expected(page)
    assert expected
    svg = _paired_svg(page)
    dots = [c.findtext(f"{SVG}title") or "" for c in svg.iter(f"{SVG}circle")]
    assert len(dots) == 2 * len(expected)
    labels = [t.text or "" for t in svg.iter(f"{SVG}text")]
    for condition, task in expected:
        # Two labels per holdout and panel: beside its baseline dot and beside its condition's.
        assert sum(1 for d in dots if d.startswith(f"{task}: ")) == 2 * len(
            {c for c, _ in expected}
        )
        assert labels.count(task) == 2 * len({c for c, _ in expected}), (condition, task)


def _overlap(a: dict, b: dict) -> bool:
    w = min(a["right"], b["right"]) - max(a["left"], b["left"])
    h = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
    return w > TOL and h > TOL


def _beside(label: dict, dot: dict) -> bool:
    """``label`` is level with ``dot`` and just left or just right of it."""
    centre = (label["top"] + label["bottom"]) / 2
    if abs(centre - dot["cy"]) > (label["bottom"] - label["top"]) / 2:
        return False
    left_gap = dot["left"] - label["right"]
    right_gap = label["left"] - dot["right"]
    return -TOL <= left_gap <= GAP_PX or -TOL <= right_gap <= GAP_PX


def _check(figure: dict, expected: list[tuple[str, str]]) -> list[str]:
    problems: list[str] = []
    texts, dots, box = figure["texts"], figure["circles"], figure["svg"]
    if len(dots) != 2 * len(expected):
        problems.append(f"{len(dots)} dots for {len(expected)} holdout pairs")
    used: set[int] = set()
    for dot in dots:
        task = (dot["title"] or "").split(": ", 1)[0]
        near = [
            i
            for i, t in enumerate(texts)
            if t["text"] == task and i not in used and _beside(t, dot)
        ]
        if not near:
            problems.append(f"no label beside the dot of {dot['title']}")
            continue
        used.add(near[0])
    for i, a in enumerate(texts):
        if (
            a["left"] < box["left"] - TOL
            or a["right"] > box["right"] + TOL
            or a["top"] < box["top"] - TOL
            or a["bottom"] > box["bottom"] + TOL
        ):
            problems.append(f"outside the chart: {a['text']}")
        problems += [
            f"overlap: {a['text']} / {b['text']}" for b in texts[i + 1 :] if _overlap(a, b)
        ]
    return problems


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 900])
@pytest.mark.parametrize("fixture", ["conditions_dir", "conditions_failed_dir"])
def test_in_chromium_each_dot_has_its_own_label_beside_it_and_no_labels_overlap(
    fixture, width, request, tmp_path
):
    page = _page(request.getfixturevalue(fixture), tmp_path)
    rendered = render(page, tmp_path / "profile", width=width)
    [figure] = [f for f in rendered.boxes if f["name"] == "paired"]
    assert _check(figure, _expected(page)) == []


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 900])
def test_side_by_side_each_dot_has_its_own_label_beside_it_and_no_labels_overlap(
    conditions_dir, width, tmp_path
):
    other = tmp_path / "other"
    shutil.copytree(conditions_dir, other)
    page = _page(conditions_dir, tmp_path, other)
    rendered = render(page, tmp_path / "profile", width=width)
    figures = [f for f in rendered.boxes if f["name"] == "paired"]
    assert len(figures) == 2
    expected = _expected(page)  # the first column's table; the second's is the same
    assert [_check(f, expected) for f in figures] == [[], []]
