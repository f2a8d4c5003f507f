"""Times in a report read as people read them: milliseconds under a second, seconds above."""

import pytest

from lorelab.report._html import Value, duration


@pytest.mark.parametrize(
    ("ms", "shown"),
    [
        (None, "not recorded"),
        (0, "0 ms"),
        (850, "850 ms"),
        (999, "999 ms"),
        (1000, "1.0 s"),
        (27067, "27.1 s"),
        (234_000, "234.0 s"),
    ],
)
def test_a_duration_above_a_second_reads_in_seconds(ms, shown):
    assert duration(ms) == shown


def test_a_time_cell_shows_seconds_and_keeps_the_exact_milliseconds():
    cell = str(Value(27067, milliseconds=True).render())
    assert ">27.1 s<" in cell
    assert 'data-value="27067"' in cell
