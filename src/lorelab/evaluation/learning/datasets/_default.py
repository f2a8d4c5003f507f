"""The ``default`` dataset: three evaluation contracts with nine planted defects, and one
historical contract (numeric clamp) whose test names carry the case patterns empty, zero and
boundary.

How the protocol fixture meets it: the plain examples catch one defect per contract; with the
clamp lesson the fixture also writes the ``[empty]``, ``[zero]`` and ``[boundary]`` edge cases,
which catch four more; the ``[unicode]`` edge case is no pattern of the lesson and the reversed
interval has no example at all, so two defects stay undetected with memory too.
"""

from __future__ import annotations

from lorelab.evaluation.learning.datasets._authoring import cases, source, tests, text
from lorelab.evaluation.learning.manifest import Defect, Fixture, HistoryEntry, LearningManifest

# --- normalize -----------------------------------------------------------------------------

_NORMALIZE_REQUIREMENTS = text(
    r"""
    Normalize a piece of text so that texts that differ only in spacing or letter case compare
    equal.

    normalize(text: str) -> str, in module src/normalize.py.

    Leading and trailing whitespace is removed. Every run of whitespace inside the text (spaces,
    tabs, newlines or any other Unicode whitespace) becomes one space. The result is case-folded
    with str.casefold, so "Straße" and "STRASSE" normalize to the same text. Empty or
    whitespace-only text gives the empty string.

    Examples:
    - normalize("  Hello   World ") == "hello world"
    - normalize("Tabs\tand\nnewlines") == "tabs and newlines"
    Edge cases:
    - [empty] normalize("") == ""
    - [empty] normalize(" \t\n ") == ""
    - [unicode] normalize("Straße") == "strasse"
    """
)

_NORMALIZE_SOURCE = source(
    "normalize",
    r'''
    """Normalize text for comparison: collapsed whitespace, Unicode case folding."""


    def normalize(text: str) -> str:
        """Return ``text`` stripped, with whitespace runs collapsed to one space, case-folded."""
        return " ".join(text.split()).casefold()
    ''',
)

_NORMALIZE_TESTS = tests(
    "normalize",
    r"""
    from src.normalize import normalize


    def test_folds_ascii_letter_case():
        assert normalize("Hello WORLD") == "hello world"


    def test_casefold_expands_sharp_s():
        assert normalize("STRASSE Straße") == "strasse strasse"


    def test_collapses_runs_of_mixed_whitespace():
        assert normalize("a  b\t\tc\n\n d") == "a b c d"


    def test_collapses_unicode_whitespace():
        assert normalize("a\u00a0\u2003b") == "a b"


    def test_strips_leading_and_trailing_whitespace():
        assert normalize("  padded  ") == "padded"


    def test_already_normal_text_is_unchanged():
        assert normalize("already normal") == "already normal"


    def test_empty_text_gives_empty_string():
        assert normalize("") == ""


    def test_whitespace_only_text_gives_empty_string():
        assert normalize(" \t\n ") == ""
    """,
)

_NORMALIZE_DEFECTS = [
    Defect(
        id="normalize-keeps-case",
        label="does not fold letter case",
        files=[
            source(
                "normalize",
                r'''
                """Normalize text for comparison (planted defect: no case folding)."""


                def normalize(text: str) -> str:
                    return " ".join(text.split())
                ''',
            )
        ],
        expected_failing_cases=cases(
            "normalize", "test_folds_ascii_letter_case", "test_casefold_expands_sharp_s"
        ),
    ),
    Defect(
        id="normalize-blank-crash",
        label="crashes on empty or whitespace-only text",
        files=[
            source(
                "normalize",
                r'''
                """Normalize text for comparison (planted defect: unpacks the first word)."""


                def normalize(text: str) -> str:
                    first, *rest = text.split()
                    return " ".join([first, *rest]).casefold()
                ''',
            )
        ],
        expected_failing_cases=cases(
            "normalize",
            "test_empty_text_gives_empty_string",
            "test_whitespace_only_text_gives_empty_string",
        ),
    ),
    Defect(
        id="normalize-lower-not-casefold",
        label="lowercases with str.lower instead of str.casefold (keeps the sharp s)",
        files=[
            source(
                "normalize",
                r'''
                """Normalize text for comparison (planted defect: lower, not casefold)."""


                def normalize(text: str) -> str:
                    return " ".join(text.split()).lower()
                ''',
            )
        ],
        expected_failing_cases=cases("normalize", "test_casefold_expands_sharp_s"),
    ),
]

# --- dedupe --------------------------------------------------------------------------------

_DEDUPE_REQUIREMENTS = text(
    r"""
    Remove duplicates from a list while keeping its order.

    dedupe(items: list) -> list, in module src/dedupe.py.

    Returns a new list holding the first occurrence of each item, in the order the items first
    appear; later duplicates are dropped. Items are hashable and compared by equality, and every
    value counts, falsy ones such as 0, "" and None included. An empty list gives an empty
    list. The input list is not modified.

    Examples:
    - dedupe([3, 1, 3, 2, 1]) == [3, 1, 2]
    - dedupe(["b", "a", "b"]) == ["b", "a"]
    Edge cases:
    - [empty] dedupe([]) == []
    - [zero] dedupe([0, 0, 1]) == [0, 1]
    - [single] dedupe(["only"]) == ["only"]
    """
)

_DEDUPE_SOURCE = source(
    "dedupe",
    r'''
    """Stable deduplication: the first occurrence of each item, in order."""


    def dedupe(items: list) -> list:
        """Return a new list with the first occurrence of each item of ``items``, in order."""
        seen = set()
        result = []
        for item in items:
            if item not in seen:
                seen.add(item)
                result.append(item)
        return result
    ''',
)

_DEDUPE_TESTS = tests(
    "dedupe",
    r"""
    from src.dedupe import dedupe


    def test_keeps_first_occurrence_of_each_item():
        assert dedupe([3, 1, 3, 2, 1]) == [3, 1, 2]


    def test_list_without_duplicates_is_unchanged():
        assert dedupe([1, 2, 3]) == [1, 2, 3]


    def test_keeps_falsy_items():
        assert dedupe([0, 0, "", None, None]) == [0, "", None]


    def test_empty_list_gives_empty_list():
        assert dedupe([]) == []


    def test_does_not_modify_the_input():
        items = [2, 2, 1]
        dedupe(items)
        assert items == [2, 2, 1]


    def test_returns_a_new_list():
        items = [1, 2]
        assert dedupe(items) is not items
    """,
)

_DEDUPE_DEFECTS = [
    Defect(
        id="dedupe-keeps-last",
        label="returns the last duplicate: each item lands where it last occurs",
        files=[
            source(
                "dedupe",
                r'''
                """Deduplication (planted defect: moves an item to its last occurrence)."""


                def dedupe(items: list) -> list:
                    result = []
                    for item in items:
                        if item in result:
                            result.remove(item)
                        result.append(item)
                    return result
                ''',
            )
        ],
        expected_failing_cases=cases("dedupe", "test_keeps_first_occurrence_of_each_item"),
    ),
    Defect(
        id="dedupe-drops-falsy",
        label="drops falsy items such as 0, '' and None",
        files=[
            source(
                "dedupe",
                r'''
                """Deduplication (planted defect: truthiness test drops falsy items)."""


                def dedupe(items: list) -> list:
                    seen = set()
                    result = []
                    for item in items:
                        if item and item not in seen:
                            seen.add(item)
                            result.append(item)
                    return result
                ''',
            )
        ],
        expected_failing_cases=cases("dedupe", "test_keeps_falsy_items"),
    ),
    Defect(
        id="dedupe-empty-crash",
        label="crashes on an empty list (reads items[0])",
        files=[
            source(
                "dedupe",
                r'''
                """Deduplication (planted defect: seeds the result with items[0])."""


                def dedupe(items: list) -> list:
                    result = [items[0]]
                    seen = {items[0]}
                    for item in items[1:]:
                        if item not in seen:
                            seen.add(item)
                            result.append(item)
                    return result
                ''',
            )
        ],
        expected_failing_cases=cases("dedupe", "test_empty_list_gives_empty_list"),
    ),
]

# --- interval overlap ------------------------------------------------------------------------

_INTERVALS_REQUIREMENTS = text(
    r"""
    Decide whether two half-open intervals overlap.

    overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool, in module src/intervals.py.

    An interval (start, end) holds the numbers x with start <= x < end. Two intervals overlap
    when some number lies in both, so one interval containing the other overlaps it. Intervals
    that only touch, such as (0, 5) and (5, 10), do not overlap, and an empty interval
    (start == end) overlaps nothing. overlaps is symmetric and returns a bool. An interval whose
    start is greater than its end raises ValueError.

    Examples:
    - overlaps((0, 5), (3, 8)) == True
    - overlaps((0, 2), (5, 8)) == False
    - overlaps((0, 10), (2, 3)) == True
    Edge cases:
    - [boundary] overlaps((0, 5), (5, 10)) == False
    - [empty] overlaps((3, 3), (0, 10)) == False
    """
)

_INTERVALS_SOURCE = source(
    "intervals",
    r'''
    """Overlap of half-open intervals [start, end)."""


    def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
        """Whether some number lies in both half-open intervals ``a`` and ``b``."""
        (a_start, a_end), (b_start, b_end) = a, b
        if a_start > a_end or b_start > b_end:
            raise ValueError("an interval's start must not be greater than its end")
        return max(a_start, b_start) < min(a_end, b_end)
    ''',
)

_INTERVALS_TESTS = tests(
    "intervals",
    r"""
    import pytest

    from src.intervals import overlaps


    def test_partial_overlap_in_both_orders():
        assert overlaps((0, 5), (3, 8)) is True
        assert overlaps((3, 8), (0, 5)) is True


    def test_disjoint_intervals_do_not_overlap():
        assert overlaps((0, 2), (5, 8)) is False
        assert overlaps((5, 8), (0, 2)) is False


    def test_containing_interval_overlaps_in_both_orders():
        assert overlaps((0, 10), (2, 3)) is True
        assert overlaps((2, 3), (0, 10)) is True


    def test_identical_intervals_overlap():
        assert overlaps((1, 4), (1, 4)) is True


    def test_touching_intervals_do_not_overlap():
        assert overlaps((0, 5), (5, 10)) is False
        assert overlaps((5, 10), (0, 5)) is False


    def test_empty_interval_overlaps_nothing():
        assert overlaps((3, 3), (0, 10)) is False
        assert overlaps((0, 10), (3, 3)) is False


    def test_reversed_interval_raises_value_error():
        with pytest.raises(ValueError):
            overlaps((5, 1), (0, 3))
        with pytest.raises(ValueError):
            overlaps((0, 3), (5, 1))
    """,
)

_INTERVALS_DEFECTS = [
    Defect(
        id="intervals-misses-containment",
        label="misses an interval that contains the other (only checks a's endpoints)",
        files=[
            source(
                "intervals",
                r'''
                """Interval overlap (planted defect: endpoint test misses containment)."""


                def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
                    (a_start, a_end), (b_start, b_end) = a, b
                    if a_start > a_end or b_start > b_end:
                        raise ValueError("an interval's start must not be greater than its end")
                    if a_start == a_end or b_start == b_end:
                        return False
                    return b_start <= a_start < b_end or b_start < a_end <= b_end
                ''',
            )
        ],
        expected_failing_cases=cases(
            "intervals", "test_containing_interval_overlaps_in_both_orders"
        ),
    ),
    Defect(
        id="intervals-touching-overlap",
        label="treats intervals that only touch as overlapping (closed, not half-open)",
        files=[
            source(
                "intervals",
                r'''
                """Interval overlap (planted defect: <= makes touching intervals overlap)."""


                def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
                    (a_start, a_end), (b_start, b_end) = a, b
                    if a_start > a_end or b_start > b_end:
                        raise ValueError("an interval's start must not be greater than its end")
                    if a_start == a_end or b_start == b_end:
                        return False
                    return max(a_start, b_start) <= min(a_end, b_end)
                ''',
            )
        ],
        expected_failing_cases=cases("intervals", "test_touching_intervals_do_not_overlap"),
    ),
    Defect(
        id="intervals-accepts-reversed",
        label="accepts a reversed interval instead of raising ValueError",
        files=[
            source(
                "intervals",
                r'''
                """Interval overlap (planted defect: no check of start <= end)."""


                def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
                    (a_start, a_end), (b_start, b_end) = a, b
                    return max(a_start, b_start) < min(a_end, b_end)
                ''',
            )
        ],
        expected_failing_cases=cases("intervals", "test_reversed_interval_raises_value_error"),
    ),
]

# --- history: clamp ------------------------------------------------------------------------

_CLAMP = HistoryEntry(
    id="history-clamp",
    specification_id="clamp",
    requirements=text(
        r"""
        Clamp a number into a closed range.

        clamp(value, low, high), in module src/clamp.py, returns low when value < low, high when
        value > high, and value otherwise; ints and floats both work. low == high is allowed (a
        zero-width range) and gives low. low > high is an empty range and raises ValueError.

        Examples:
        - clamp(5, 0, 3) == 3
        - clamp(-2, 0, 3) == 0
        - clamp(2, 0, 3) == 2
        Edge cases:
        - [boundary] clamp(3, 0, 3) == 3
        - [zero-width] clamp(7, 4, 4) == 4
        - [empty] clamp(1, 3, 0) raises ValueError
        """
    ),
    files=[
        source(
            "clamp",
            r'''
            """Clamp a number into the closed range [low, high]."""


            def clamp(value, low, high):
                """``value`` limited to [low, high]; an empty range (low > high) is an error."""
                if low > high:
                    raise ValueError("empty range: low is greater than high")
                return min(max(value, low), high)
            ''',
        )
    ],
    tests=[
        tests(
            "clamp",
            r"""
            import pytest

            from src.clamp import clamp


            def test_clamp_inside_range_is_unchanged():
                assert clamp(2, 0, 3) == 2


            def test_clamp_below_lower_bound():
                assert clamp(-2, 0, 3) == 0


            def test_clamp_above_upper_bound():
                assert clamp(5, 0, 3) == 3


            def test_clamp_at_boundary():
                assert clamp(0, 0, 3) == 0
                assert clamp(3, 0, 3) == 3


            def test_clamp_negative_values():
                assert clamp(-5, -3, -1) == -3


            def test_clamp_zero_width_range():
                assert clamp(7, 4, 4) == 4


            def test_clamp_empty_range_raises():
                with pytest.raises(ValueError):
                    clamp(1, 3, 0)


            def test_clamp_float_values():
                assert clamp(0.5, 0.0, 0.25) == 0.25
            """,
        )
    ],
)


def build() -> LearningManifest:
    """The default dataset as a manifest (runner pytest)."""
    return LearningManifest(
        schema_version=1,
        id="lorelab-default-1",
        runner="pytest",
        history=[_CLAMP],
        fixtures=[
            Fixture(
                id="normalize",
                requirements=_NORMALIZE_REQUIREMENTS,
                files=[_NORMALIZE_SOURCE],
                reference_tests=[_NORMALIZE_TESTS],
                defects=_NORMALIZE_DEFECTS,
            ),
            Fixture(
                id="dedupe",
                requirements=_DEDUPE_REQUIREMENTS,
                files=[_DEDUPE_SOURCE],
                reference_tests=[_DEDUPE_TESTS],
                defects=_DEDUPE_DEFECTS,
            ),
            Fixture(
                id="interval-overlap",
                requirements=_INTERVALS_REQUIREMENTS,
                files=[_INTERVALS_SOURCE],
                reference_tests=[_INTERVALS_TESTS],
                defects=_INTERVALS_DEFECTS,
            ),
        ],
    )
