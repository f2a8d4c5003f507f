"""The pages in a real browser: headless Chromium from the OS packages renders each kind of
report without a console error, and every figure has a non-zero size on the page."""

import pytest

from tests.support.browser import render
from tests.support.report_page import lorelab

pytestmark = pytest.mark.slow

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("fixture", "figures"),
    [
        ("learning_dir", {"paired", "spec-differences", "recall", "detection", "time", "bytes"}),
        ("conditions_dir", {"pass-rate", "paired", "rework", "guidance", "transfer"}),
        ("context_dir", {"failures", "boundaries"}),
        ("scan_dir", {"sessions"}),
        ("aborted_dir", set()),
    ],
)
def test_chromium_renders_the_page_without_console_errors_and_every_figure_has_a_size(
    fixture, figures, request, tmp_path
):
    directory = request.getfixturevalue(fixture)
    page = tmp_path / "page.html"
    assert lorelab("report", str(directory), "--output", str(page)).returncode in (0, 1)
    rendered = render(page, tmp_path / "profile")
    assert rendered.errors == []
    assert {f["name"] for f in rendered.figures} == figures
    for figure in rendered.figures:
        assert figure["width"] > 100, figure
        assert figure["height"] > 20, figure
        assert figure["marks"] > 0, figure
    assert rendered.screenshot.startswith(PNG)
    assert len(rendered.screenshot) > 10_000


def test_the_browser_reports_a_console_error_when_there_is_one(tmp_path):
    """The check above can fail: a page that breaks its own policy is caught."""
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'\"></head><body><script>console.error('x')</script>"
        '<figure data-figure="empty"></figure></body></html>'
    )
    rendered = render(page, tmp_path / "profile")
    assert rendered.errors
    assert rendered.figures == [{"name": "empty", "width": 0, "height": 0, "marks": 0}]
