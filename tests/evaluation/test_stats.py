import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from lorelab.evaluation.stats import (
    min_units_for_significance,
    power_note,
    sign_test,
    sign_test_p_value,
    unit_differences,
)


@settings(max_examples=300)
@given(st.integers(0, 60), st.integers(0, 60))
def test_sign_test_matches_scipy_binomtest(positive, negative):
    n = positive + negative
    expected = 1.0 if n == 0 else binomtest(positive, n, 0.5, alternative="two-sided").pvalue
    assert sign_test_p_value(positive, negative) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@given(st.lists(st.floats(-1, 1, allow_nan=False), max_size=40))
def test_ties_are_counted_and_excluded(differences):
    result = sign_test(differences)
    assert result.positive + result.negative + result.ties == len(differences)
    assert result.ties == sum(1 for d in differences if d == 0)
    assert result.p_value == sign_test_p_value(result.positive, result.negative)


def test_six_unanimous_units_are_the_minimum_for_five_percent():
    assert min_units_for_significance(0.05) == 6
    assert sign_test_p_value(5, 0) == pytest.approx(0.0625)
    assert sign_test_p_value(6, 0) == pytest.approx(0.03125)


def test_no_untied_units_give_p_one():
    assert sign_test([0, 0, 0]).p_value == 1.0


def test_negative_counts_are_refused():
    with pytest.raises(ValueError, match="non-negative"):
        sign_test_p_value(-1, 2)


def test_unit_differences_average_repetitions():
    diffs = unit_differences({"a": [(1.0, 0.0), (0.5, 0.5)], "b": [(0.0, 1.0)]})
    assert diffs == {"a": 0.5, "b": -1.0}


def test_power_note_says_when_significance_is_unreachable():
    assert "cannot be reached" in power_note(3)
    assert "cannot be reached" not in power_note(6)
    assert "at least 6" in power_note(3)


def test_the_mean_difference_interval_is_the_same_for_the_same_differences():
    from lorelab.evaluation.stats import mean_difference_interval

    first = mean_difference_interval([0.1, -0.2, 0.3, 0.0, 0.5, 1 / 3])
    again = mean_difference_interval([0.1, -0.2, 0.3, 0.0, 0.5, 1 / 3])
    assert first == again
    assert first.mean == pytest.approx((0.1 - 0.2 + 0.3 + 0.5 + 1 / 3) / 6)
    assert -0.2 <= first.low <= first.mean <= first.high <= 0.5


def test_without_units_the_mean_difference_and_its_interval_are_unknown():
    from lorelab.evaluation.stats import mean_difference_interval

    empty = mean_difference_interval([])
    assert (empty.mean, empty.low, empty.high) == (None, None, None)
