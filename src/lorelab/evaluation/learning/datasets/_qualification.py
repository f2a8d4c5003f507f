"""The ``qualification`` dataset: six evaluation contracts with eighteen planted defects, and two
historical contracts (list chunking, running totals) whose test names carry the case patterns
empty, single, last, invalid, zero, negative and order.

How the protocol fixture meets it: the plain examples catch one defect per contract (six); with
the lessons it also writes the edge cases tagged with those patterns, which catch eight more;
the edge cases tagged escape, large, missing and padding are patterns of no lesson, so four
defects stay undetected with memory too.
"""

from __future__ import annotations

from lorelab.evaluation.learning.datasets._authoring import cases, source, tests, text
from lorelab.evaluation.learning.manifest import Defect, Fixture, HistoryEntry, LearningManifest

# --- CSV fields ----------------------------------------------------------------------------

_CSV_REFERENCE = r'''
"""Split one line of comma-separated values into its fields."""


def split_csv_line(line: str) -> list[str]:
    """The fields of ``line``; quoted fields may hold commas and doubled quotes."""
    fields = []
    index = 0
    while True:
        field = []
        if index < len(line) and line[index] == '"':
            index += 1
            while True:
                if index >= len(line):
                    raise ValueError("unterminated quoted field")
                char = line[index]
                if char == '"':
                    if line[index + 1 : index + 2] == '"':
                        field.append('"')
                        index += 2
                        continue
                    index += 1
                    break
                field.append(char)
                index += 1
            if index < len(line) and line[index] != ",":
                raise ValueError("text after a closing quote")
        else:
            while index < len(line) and line[index] != ",":
                field.append(line[index])
                index += 1
        fields.append("".join(field))
        if index >= len(line):
            return fields
        index += 1
'''


def _csv_variant(docstring: str, old: str, new: str) -> str:
    """The reference splitter with one exact fragment replaced: a planted defect."""
    if _CSV_REFERENCE.count(old) != 1:
        raise RuntimeError(f"dataset authoring: CSV defect fragment not unique: {old!r}")
    body = _CSV_REFERENCE.replace(old, new).replace(
        '"""Split one line of comma-separated values into its fields."""', f'"""{docstring}"""'
    )
    return body


_CSV = Fixture(
    id="csv-fields",
    requirements=text(
        r'''
        Split one line of comma-separated values into its fields.

        split_csv_line(line: str) -> list[str], in module src/csv_fields.py.

        Fields are separated by commas and kept exactly as written (no trimming). A field that
        starts with a double quote is quoted: it ends at the next lone double quote, may contain
        commas, and a doubled quote ("") inside it stands for one double quote. A quoted field
        must be followed by a comma or the end of the line. An empty line is one empty field,
        and a comma at the end of the line gives a final empty field. An unterminated quoted
        field raises ValueError.

        Examples:
        - split_csv_line("a,b,c") == ["a", "b", "c"]
        - split_csv_line('x,"1,5",y') == ["x", "1,5", "y"]
        Edge cases:
        - [last] split_csv_line("a,b,") == ["a", "b", ""]
        - [escape] split_csv_line('"say ""hi""",z') == ['say "hi"', "z"]
        - [empty] split_csv_line("") == [""]
        - [invalid] split_csv_line('"abc') raises ValueError
        '''
    ),
    files=[source("csv_fields", _CSV_REFERENCE)],
    reference_tests=[
        tests(
            "csv_fields",
            r'''
            import pytest

            from src.csv_fields import split_csv_line


            def test_plain_fields_split_on_commas():
                assert split_csv_line("a,b,c") == ["a", "b", "c"]


            def test_fields_keep_their_spaces():
                assert split_csv_line(" a , b") == [" a ", " b"]


            def test_quoted_field_keeps_its_comma():
                assert split_csv_line('x,"1,5",y') == ["x", "1,5", "y"]


            def test_doubled_quote_in_quoted_field_is_one_quote():
                assert split_csv_line('"say ""hi""",z') == ['say "hi"', "z"]


            def test_trailing_comma_gives_final_empty_field():
                assert split_csv_line("a,b,") == ["a", "b", ""]


            def test_empty_line_is_one_empty_field():
                assert split_csv_line("") == [""]


            def test_unterminated_quote_raises_value_error():
                with pytest.raises(ValueError):
                    split_csv_line('"abc')
            ''',
        )
    ],
    defects=[
        Defect(
            id="csv-comma-ends-quoted-field",
            label="splits on a comma inside a quoted field",
            files=[
                source(
                    "csv_fields",
                    _csv_variant(
                        "CSV fields (planted defect: a comma ends a quoted field).",
                        "                char = line[index]\n",
                        "                char = line[index]\n"
                        '                if char == ",":\n'
                        "                    break\n",
                    ),
                )
            ],
            expected_failing_cases=cases("csv_fields", "test_quoted_field_keeps_its_comma"),
        ),
        Defect(
            id="csv-drops-trailing-field",
            label="drops the final empty field after a trailing comma",
            files=[
                source(
                    "csv_fields",
                    _csv_variant(
                        "CSV fields (planted defect: cuts a trailing comma first).",
                        "    fields = []\n",
                        '    if line.endswith(","):\n        line = line[:-1]\n    fields = []\n',
                    ),
                )
            ],
            expected_failing_cases=cases(
                "csv_fields", "test_trailing_comma_gives_final_empty_field"
            ),
        ),
        Defect(
            id="csv-keeps-doubled-quote",
            label="keeps a doubled quote doubled instead of reading it as one quote",
            files=[
                source(
                    "csv_fields",
                    _csv_variant(
                        "CSV fields (planted defect: doubled quotes stay doubled).",
                        "field.append('\"')",
                        "field.append('\"\"')",
                    ),
                )
            ],
            expected_failing_cases=cases(
                "csv_fields", "test_doubled_quote_in_quoted_field_is_one_quote"
            ),
        ),
    ],
)

# --- duration formatting -------------------------------------------------------------------

_DURATIONS = Fixture(
    id="duration-format",
    requirements=text(
        r"""
        Format a number of seconds for people.

        format_duration(seconds: int) -> str, in module src/durations.py.

        The result lists hours, minutes and seconds as "<n>h", "<n>m" and "<n>s", largest
        first, separated by single spaces. A component that is zero is left out wherever it
        is, and hours are never rolled over into days (90000 seconds is "25h"). Zero seconds is
        "0s". A negative number of seconds raises ValueError.

        Examples:
        - format_duration(3661) == "1h 1m 1s"
        - format_duration(3605) == "1h 5s"
        - format_duration(120) == "2m"
        Edge cases:
        - [zero] format_duration(0) == "0s"
        - [large] format_duration(90061) == "25h 1m 1s"
        - [negative] format_duration(-1) raises ValueError
        """
    ),
    files=[
        source(
            "durations",
            r'''
            """Format a number of seconds as hours, minutes and seconds."""


            def format_duration(seconds: int) -> str:
                """``seconds`` as "1h 2m 3s", zero components left out, "0s" for zero."""
                if seconds < 0:
                    raise ValueError("seconds must not be negative")
                hours, rest = divmod(seconds, 3600)
                minutes, secs = divmod(rest, 60)
                units = ((hours, "h"), (minutes, "m"), (secs, "s"))
                parts = [f"{value}{unit}" for value, unit in units if value]
                return " ".join(parts) or "0s"
            ''',
        )
    ],
    reference_tests=[
        tests(
            "durations",
            r"""
            import pytest

            from src.durations import format_duration


            def test_hours_minutes_and_seconds():
                assert format_duration(3661) == "1h 1m 1s"


            def test_seconds_only():
                assert format_duration(45) == "45s"


            def test_zero_seconds_component_is_left_out():
                assert format_duration(120) == "2m"


            def test_zero_minutes_component_is_left_out():
                assert format_duration(3605) == "1h 5s"


            def test_zero_duration_is_0s():
                assert format_duration(0) == "0s"


            def test_hours_are_not_rolled_into_days():
                assert format_duration(90061) == "25h 1m 1s"


            def test_negative_seconds_raise_value_error():
                with pytest.raises(ValueError):
                    format_duration(-1)
            """,
        )
    ],
    defects=[
        Defect(
            id="durations-drops-days",
            label="drops whole days: hours roll over at 24 (90061 s gives 1h 1m 1s)",
            files=[
                source(
                    "durations",
                    r'''
                    """Durations (planted defect: seconds taken modulo one day)."""


                    def format_duration(seconds: int) -> str:
                        if seconds < 0:
                            raise ValueError("seconds must not be negative")
                        hours, rest = divmod(seconds % 86400, 3600)
                        minutes, secs = divmod(rest, 60)
                        units = ((hours, "h"), (minutes, "m"), (secs, "s"))
                        parts = [f"{value}{unit}" for value, unit in units if value]
                        return " ".join(parts) or "0s"
                    ''',
                )
            ],
            expected_failing_cases=cases("durations", "test_hours_are_not_rolled_into_days"),
        ),
        Defect(
            id="durations-zero-is-empty",
            label='returns "" for zero seconds instead of "0s"',
            files=[
                source(
                    "durations",
                    r'''
                    """Durations (planted defect: no "0s" for zero)."""


                    def format_duration(seconds: int) -> str:
                        if seconds < 0:
                            raise ValueError("seconds must not be negative")
                        hours, rest = divmod(seconds, 3600)
                        minutes, secs = divmod(rest, 60)
                        units = ((hours, "h"), (minutes, "m"), (secs, "s"))
                        return " ".join(f"{value}{unit}" for value, unit in units if value)
                    ''',
                )
            ],
            expected_failing_cases=cases("durations", "test_zero_duration_is_0s"),
        ),
        Defect(
            id="durations-keeps-zero-components",
            label='keeps zero components after the largest one ("1h 0m 5s", "2m 0s")',
            files=[
                source(
                    "durations",
                    r'''
                    """Durations (planted defect: only leading zero components are dropped)."""


                    def format_duration(seconds: int) -> str:
                        if seconds < 0:
                            raise ValueError("seconds must not be negative")
                        hours, rest = divmod(seconds, 3600)
                        minutes, secs = divmod(rest, 60)
                        units = [(hours, "h"), (minutes, "m"), (secs, "s")]
                        while len(units) > 1 and units[0][0] == 0:
                            units.pop(0)
                        return " ".join(f"{value}{unit}" for value, unit in units)
                    ''',
                )
            ],
            expected_failing_cases=cases(
                "durations",
                "test_zero_seconds_component_is_left_out",
                "test_zero_minutes_component_is_left_out",
            ),
        ),
    ],
)

# --- first-occurrence binary search --------------------------------------------------------

_SEARCH = Fixture(
    id="binary-search-first",
    requirements=text(
        r"""
        Find the first position of a value in a sorted list, by binary search.

        find_first(items: list[int], target: int) -> int, in module src/binary_search.py.

        items is sorted in ascending order and may repeat values. The result is the smallest
        index i with items[i] == target, or -1 when target is not in items (an empty list
        included). It takes O(log n) comparisons.

        Examples:
        - find_first([1, 3, 5, 7], 5) == 2
        - find_first([1, 2, 2, 2, 3], 2) == 1
        Edge cases:
        - [empty] find_first([], 3) == -1
        - [boundary] find_first([1, 3, 5], 5) == 2
        - [missing] find_first([1, 3, 5], 4) == -1
        """
    ),
    files=[
        source(
            "binary_search",
            r'''
            """First-occurrence binary search in a sorted list."""


            def find_first(items: list[int], target: int) -> int:
                """The smallest index of ``target`` in sorted ``items``, or -1."""
                low, high = 0, len(items)
                while low < high:
                    middle = (low + high) // 2
                    if items[middle] < target:
                        low = middle + 1
                    else:
                        high = middle
                if low < len(items) and items[low] == target:
                    return low
                return -1
            ''',
        )
    ],
    reference_tests=[
        tests(
            "binary_search",
            r"""
            from src.binary_search import find_first


            def test_finds_a_unique_value():
                assert find_first([1, 3, 5, 7], 5) == 2


            def test_returns_the_first_of_repeated_values():
                assert find_first([1, 2, 2, 2, 3], 2) == 1
                assert find_first([4, 4, 4], 4) == 0


            def test_finds_a_value_at_the_first_index():
                assert find_first([1, 3, 5], 1) == 0


            def test_finds_a_value_at_the_last_index():
                assert find_first([1, 3, 5], 5) == 2


            def test_value_between_items_is_missing():
                assert find_first([1, 3, 5], 4) == -1


            def test_value_outside_the_items_is_missing():
                assert find_first([1, 3, 5], 0) == -1
                assert find_first([1, 3, 5], 9) == -1


            def test_empty_list_has_no_position():
                assert find_first([], 3) == -1
            """,
        )
    ],
    defects=[
        Defect(
            id="search-returns-any-match",
            label="returns the first match the search meets, not the first occurrence",
            files=[
                source(
                    "binary_search",
                    r'''
                    """Binary search (planted defect: stops at any equal element)."""


                    def find_first(items: list[int], target: int) -> int:
                        low, high = 0, len(items) - 1
                        while low <= high:
                            middle = (low + high) // 2
                            if items[middle] == target:
                                return middle
                            if items[middle] < target:
                                low = middle + 1
                            else:
                                high = middle - 1
                        return -1
                    ''',
                )
            ],
            expected_failing_cases=cases(
                "binary_search", "test_returns_the_first_of_repeated_values"
            ),
        ),
        Defect(
            id="search-empty-crash",
            label="crashes on an empty list (reads items[0] in a range check)",
            files=[
                source(
                    "binary_search",
                    r'''
                    """Binary search (planted defect: range check before the empty check)."""


                    def find_first(items: list[int], target: int) -> int:
                        if target < items[0] or target > items[-1]:
                            return -1
                        low, high = 0, len(items)
                        while low < high:
                            middle = (low + high) // 2
                            if items[middle] < target:
                                low = middle + 1
                            else:
                                high = middle
                        if low < len(items) and items[low] == target:
                            return low
                        return -1
                    ''',
                )
            ],
            expected_failing_cases=cases("binary_search", "test_empty_list_has_no_position"),
        ),
        Defect(
            id="search-returns-insertion-point",
            label="returns the insertion point instead of -1 for a value between items",
            files=[
                source(
                    "binary_search",
                    r'''
                    """Binary search (planted defect: no equality check after the search)."""


                    def find_first(items: list[int], target: int) -> int:
                        if not items or target < items[0] or target > items[-1]:
                            return -1
                        low, high = 0, len(items)
                        while low < high:
                            middle = (low + high) // 2
                            if items[middle] < target:
                                low = middle + 1
                            else:
                                high = middle
                        return low
                    ''',
                )
            ],
            expected_failing_cases=cases("binary_search", "test_value_between_items_is_missing"),
        ),
    ],
)

# --- frequency maps ------------------------------------------------------------------------

_FREQUENCIES = Fixture(
    id="frequency-map",
    requirements=text(
        r"""
        Count how often each item occurs.

        count_frequencies(items: list) -> dict, in module src/frequencies.py.

        The result maps each distinct item to the number of times it occurs in items, with keys
        in the order their items first occur. Items are compared by equality: strings that
        differ only in letter case are different keys, and falsy items such as 0, "" and None
        are counted like any other. An empty list gives an empty dict.

        Examples:
        - count_frequencies(["a", "b", "a"]) == {"a": 2, "b": 1}
        - count_frequencies(["Go", "go", "GO"]) == {"Go": 1, "go": 1, "GO": 1}
        Edge cases:
        - [empty] count_frequencies([]) == {}
        - [zero] count_frequencies([0, 0, 1]) == {0: 2, 1: 1}
        - [order] list(count_frequencies(["a", "b", "b"])) == ["a", "b"]
        """
    ),
    files=[
        source(
            "frequencies",
            r'''
            """Frequency maps: how often each item occurs, in first-occurrence order."""


            def count_frequencies(items: list) -> dict:
                """Map each distinct item of ``items`` to its number of occurrences."""
                counts = {}
                for item in items:
                    counts[item] = counts.get(item, 0) + 1
                return counts
            ''',
        )
    ],
    reference_tests=[
        tests(
            "frequencies",
            r"""
            from src.frequencies import count_frequencies


            def test_counts_every_occurrence():
                assert count_frequencies(["a", "b", "a", "c", "a"]) == {"a": 3, "b": 1, "c": 1}


            def test_keys_follow_first_occurrence_order():
                assert list(count_frequencies(["x", "y", "y", "z", "z", "z"])) == ["x", "y", "z"]


            def test_letter_case_makes_different_keys():
                assert count_frequencies(["Go", "go", "GO"]) == {"Go": 1, "go": 1, "GO": 1}


            def test_falsy_items_are_counted():
                assert count_frequencies([0, 0, "", None]) == {0: 2, "": 1, None: 1}


            def test_empty_list_gives_empty_dict():
                assert count_frequencies([]) == {}
            """,
        )
    ],
    defects=[
        Defect(
            id="frequencies-merges-case",
            label="merges strings that differ only in letter case into one key",
            files=[
                source(
                    "frequencies",
                    r'''
                    """Frequency maps (planted defect: case-folds string keys)."""


                    def count_frequencies(items: list) -> dict:
                        counts = {}
                        for item in items:
                            key = item.casefold() if isinstance(item, str) else item
                            counts[key] = counts.get(key, 0) + 1
                        return counts
                    ''',
                )
            ],
            expected_failing_cases=cases("frequencies", "test_letter_case_makes_different_keys"),
        ),
        Defect(
            id="frequencies-skips-falsy",
            label="skips falsy items such as 0, '' and None",
            files=[
                source(
                    "frequencies",
                    r'''
                    """Frequency maps (planted defect: falsy items are skipped)."""


                    def count_frequencies(items: list) -> dict:
                        counts = {}
                        for item in items:
                            if not item:
                                continue
                            counts[item] = counts.get(item, 0) + 1
                        return counts
                    ''',
                )
            ],
            expected_failing_cases=cases("frequencies", "test_falsy_items_are_counted"),
        ),
        Defect(
            id="frequencies-orders-by-count",
            label="orders keys by descending count instead of first occurrence",
            files=[
                source(
                    "frequencies",
                    r'''
                    """Frequency maps (planted defect: keys sorted by count)."""


                    def count_frequencies(items: list) -> dict:
                        counts = {}
                        for item in items:
                            counts[item] = counts.get(item, 0) + 1
                        return dict(sorted(counts.items(), key=lambda pair: -pair[1]))
                    ''',
                )
            ],
            expected_failing_cases=cases("frequencies", "test_keys_follow_first_occurrence_order"),
        ),
    ],
)

# --- common prefixes -----------------------------------------------------------------------

_PREFIXES = Fixture(
    id="common-prefix",
    requirements=text(
        r"""
        Find the longest common prefix of some words.

        common_prefix(words: list[str]) -> str, in module src/prefixes.py.

        Returns the longest string that every word in words starts with. Letter case matters
        ("Apple" and "apple" share no prefix). One word is its own prefix; an empty list gives
        the empty string.

        Examples:
        - common_prefix(["flower", "flow", "flight"]) == "fl"
        - common_prefix(["dog", "racecar", "car"]) == ""
        Edge cases:
        - [empty] common_prefix([]) == ""
        - [single] common_prefix(["alone"]) == "alone"
        - [case] common_prefix(["Apple", "apple"]) == ""
        """
    ),
    files=[
        source(
            "prefixes",
            r'''
            """The longest common prefix of a list of words."""


            def common_prefix(words: list[str]) -> str:
                """The longest string every word in ``words`` starts with."""
                if not words:
                    return ""
                prefix = words[0]
                for word in words[1:]:
                    while not word.startswith(prefix):
                        prefix = prefix[:-1]
                return prefix
            ''',
        )
    ],
    reference_tests=[
        tests(
            "prefixes",
            r"""
            from src.prefixes import common_prefix


            def test_prefix_shared_by_all_words():
                assert common_prefix(["flower", "flow", "flight"]) == "fl"


            def test_words_without_a_common_prefix():
                assert common_prefix(["dog", "racecar", "car"]) == ""


            def test_identical_words_are_their_own_prefix():
                assert common_prefix(["same", "same"]) == "same"


            def test_one_word_is_its_own_prefix():
                assert common_prefix(["alone"]) == "alone"


            def test_empty_list_gives_empty_string():
                assert common_prefix([]) == ""


            def test_letter_case_matters():
                assert common_prefix(["Apple", "apple"]) == ""
            """,
        )
    ],
    defects=[
        Defect(
            id="prefix-first-two-only",
            label="compares only the first two words",
            files=[
                source(
                    "prefixes",
                    r'''
                    """Common prefix (planted defect: ignores words after the second)."""


                    def common_prefix(words: list[str]) -> str:
                        if not words:
                            return ""
                        if len(words) == 1:
                            return words[0]
                        prefix = words[0]
                        while not words[1].startswith(prefix):
                            prefix = prefix[:-1]
                        return prefix
                    ''',
                )
            ],
            expected_failing_cases=cases("prefixes", "test_prefix_shared_by_all_words"),
        ),
        Defect(
            id="prefix-empty-crash",
            label="crashes on an empty list (reads words[0])",
            files=[
                source(
                    "prefixes",
                    r'''
                    """Common prefix (planted defect: no empty-list check)."""


                    def common_prefix(words: list[str]) -> str:
                        prefix = words[0]
                        for word in words[1:]:
                            while not word.startswith(prefix):
                                prefix = prefix[:-1]
                        return prefix
                    ''',
                )
            ],
            expected_failing_cases=cases("prefixes", "test_empty_list_gives_empty_string"),
        ),
        Defect(
            id="prefix-single-word-empty",
            label="returns the empty string for a single word",
            files=[
                source(
                    "prefixes",
                    r'''
                    """Common prefix (planted defect: needs two words to find a prefix)."""


                    def common_prefix(words: list[str]) -> str:
                        if len(words) < 2:
                            return ""
                        prefix = words[0]
                        for word in words[1:]:
                            while not word.startswith(prefix):
                                prefix = prefix[:-1]
                        return prefix
                    ''',
                )
            ],
            expected_failing_cases=cases("prefixes", "test_one_word_is_its_own_prefix"),
        ),
    ],
)

# --- numeric version comparison ------------------------------------------------------------

_VERSIONS = Fixture(
    id="version-compare",
    requirements=text(
        r"""
        Compare two numeric version strings.

        compare_versions(a: str, b: str) -> int, in module src/versions.py.

        A version is one or more non-negative integers separated by dots, such as "1.10.2".
        Versions compare component by component as numbers (so "1.10" is newer than "1.9"),
        and a missing component counts as 0 ("1.0" and "1.0.0" are equal). The result is -1
        when a is older than b, 0 when they are equal and 1 when a is newer. A component that
        is empty or not made of the digits 0-9 raises ValueError.

        Examples:
        - compare_versions("1.10", "1.9") == 1
        - compare_versions("2.0.1", "2.0.1") == 0
        - compare_versions("1.99", "2.0") == -1
        Edge cases:
        - [padding] compare_versions("1.0", "1.0.0") == 0
        - [invalid] compare_versions("1..2", "1.2") raises ValueError
        - [invalid] compare_versions("1.x", "1.0") raises ValueError
        """
    ),
    files=[
        source(
            "versions",
            r'''
            """Compare dotted numeric versions such as "1.10.2"."""

            import re

            _VERSION = re.compile(r"[0-9]+(\.[0-9]+)*")


            def _components(version: str) -> list[int]:
                if not _VERSION.fullmatch(version):
                    raise ValueError(f"not a numeric version: {version!r}")
                return [int(part) for part in version.split(".")]


            def compare_versions(a: str, b: str) -> int:
                """-1, 0 or 1 as ``a`` is older than, equal to or newer than ``b``."""
                left, right = _components(a), _components(b)
                width = max(len(left), len(right))
                left += [0] * (width - len(left))
                right += [0] * (width - len(right))
                return (left > right) - (left < right)
            ''',
        )
    ],
    reference_tests=[
        tests(
            "versions",
            r"""
            import pytest

            from src.versions import compare_versions


            def test_components_compare_as_numbers():
                assert compare_versions("1.10", "1.9") == 1
                assert compare_versions("1.9", "1.10") == -1


            def test_equal_versions_compare_equal():
                assert compare_versions("2.0.1", "2.0.1") == 0


            def test_older_major_version_is_older():
                assert compare_versions("1.99", "2.0") == -1


            def test_missing_components_count_as_zero():
                assert compare_versions("1.0", "1.0.0") == 0
                assert compare_versions("1.0.0", "1") == 0


            def test_extra_nonzero_component_is_newer():
                assert compare_versions("1.0.1", "1") == 1


            def test_non_numeric_component_raises_value_error():
                with pytest.raises(ValueError):
                    compare_versions("1.x", "1.0")


            def test_empty_component_raises_value_error():
                with pytest.raises(ValueError):
                    compare_versions("1..2", "1.2")
                with pytest.raises(ValueError):
                    compare_versions("1.", "1")
            """,
        )
    ],
    defects=[
        Defect(
            id="versions-compare-as-strings",
            label='compares components as strings ("1.10" older than "1.9")',
            files=[
                source(
                    "versions",
                    r'''
                    """Versions (planted defect: components compared as text)."""

                    import re

                    _VERSION = re.compile(r"[0-9]+(\.[0-9]+)*")


                    def compare_versions(a: str, b: str) -> int:
                        for version in (a, b):
                            if not _VERSION.fullmatch(version):
                                raise ValueError(f"not a numeric version: {version!r}")
                        left, right = a.split("."), b.split(".")
                        width = max(len(left), len(right))
                        left += ["0"] * (width - len(left))
                        right += ["0"] * (width - len(right))
                        return (left > right) - (left < right)
                    ''',
                )
            ],
            expected_failing_cases=cases("versions", "test_components_compare_as_numbers"),
        ),
        Defect(
            id="versions-missing-is-smaller",
            label="treats a missing component as smaller than 0 (no padding)",
            files=[
                source(
                    "versions",
                    r'''
                    """Versions (planted defect: shorter versions are not padded)."""

                    import re

                    _VERSION = re.compile(r"[0-9]+(\.[0-9]+)*")


                    def _components(version: str) -> list[int]:
                        if not _VERSION.fullmatch(version):
                            raise ValueError(f"not a numeric version: {version!r}")
                        return [int(part) for part in version.split(".")]


                    def compare_versions(a: str, b: str) -> int:
                        left, right = _components(a), _components(b)
                        return (left > right) - (left < right)
                    ''',
                )
            ],
            expected_failing_cases=cases("versions", "test_missing_components_count_as_zero"),
        ),
        Defect(
            id="versions-empty-component-is-zero",
            label="accepts an empty component as 0 instead of raising ValueError",
            files=[
                source(
                    "versions",
                    r'''
                    """Versions (planted defect: empty components read as 0)."""

                    import re

                    _VERSION = re.compile(r"[0-9]*(\.[0-9]*)*")


                    def _components(version: str) -> list[int]:
                        if not _VERSION.fullmatch(version):
                            raise ValueError(f"not a numeric version: {version!r}")
                        return [int(part) if part else 0 for part in version.split(".")]


                    def compare_versions(a: str, b: str) -> int:
                        left, right = _components(a), _components(b)
                        width = max(len(left), len(right))
                        left += [0] * (width - len(left))
                        right += [0] * (width - len(right))
                        return (left > right) - (left < right)
                    ''',
                )
            ],
            expected_failing_cases=cases("versions", "test_empty_component_raises_value_error"),
        ),
    ],
)

# --- history: list chunking and running totals ---------------------------------------------

_CHUNKING = HistoryEntry(
    id="history-chunking",
    specification_id="chunking",
    requirements=text(
        r"""
        Split a list into consecutive pieces of a given size.

        chunk(items: list, size: int) -> list[list], in module src/chunking.py. Every piece
        holds size items except possibly the last, which holds what is left. An empty list
        gives no pieces. size must be a positive integer; anything else raises ValueError.

        Examples:
        - chunk([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]
        - chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]
        Edge cases:
        - [empty] chunk([], 3) == []
        - [invalid] chunk([1], 0) raises ValueError
        """
    ),
    files=[
        source(
            "chunking",
            r'''
            """Split a list into consecutive pieces of one size."""


            def chunk(items: list, size: int) -> list[list]:
                """Consecutive pieces of ``size`` items; the last may be shorter."""
                if size < 1:
                    raise ValueError("size must be a positive integer")
                return [items[start : start + size] for start in range(0, len(items), size)]
            ''',
        )
    ],
    tests=[
        tests(
            "chunking",
            r"""
            import pytest

            from src.chunking import chunk


            def test_chunk_even_split():
                assert chunk([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]


            def test_chunk_last_piece_is_shorter():
                assert chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]


            def test_chunk_empty_list():
                assert chunk([], 3) == []


            def test_chunk_single_item():
                assert chunk(["x"], 3) == [["x"]]


            def test_chunk_size_larger_than_list():
                assert chunk([1, 2], 5) == [[1, 2]]


            def test_chunk_invalid_size_raises():
                with pytest.raises(ValueError):
                    chunk([1], 0)
            """,
        )
    ],
)

_RUNNING_TOTALS = HistoryEntry(
    id="history-running-totals",
    specification_id="running-totals",
    requirements=text(
        r"""
        Compute the running totals of a list of numbers.

        running_total(values: list[int]) -> list[int], in module src/running_totals.py.
        Position i of the result is the sum of values[0] through values[i]. An empty list gives
        an empty list.

        Examples:
        - running_total([1, 2, 3]) == [1, 3, 6]
        Edge cases:
        - [negative] running_total([5, -2, -3]) == [5, 3, 0]
        - [empty] running_total([]) == []
        """
    ),
    files=[
        source(
            "running_totals",
            r'''
            """Running totals (prefix sums) of a list of numbers."""


            def running_total(values: list[int]) -> list[int]:
                """Position i holds the sum of ``values[0]`` through ``values[i]``."""
                totals = []
                total = 0
                for value in values:
                    total += value
                    totals.append(total)
                return totals
            ''',
        )
    ],
    tests=[
        tests(
            "running_totals",
            r"""
            from src.running_totals import running_total


            def test_running_total_of_positive_values():
                assert running_total([1, 2, 3]) == [1, 3, 6]


            def test_running_total_follows_input_order():
                assert running_total([3, 1, 2]) == [3, 4, 6]


            def test_running_total_zero_values():
                assert running_total([0, 0, 5]) == [0, 0, 5]


            def test_running_total_negative_values():
                assert running_total([5, -2, -3]) == [5, 3, 0]


            def test_running_total_empty_input():
                assert running_total([]) == []
            """,
        )
    ],
)


def build() -> LearningManifest:
    """The qualification dataset as a manifest (runner pytest)."""
    return LearningManifest(
        schema_version=1,
        id="lorelab-qualification-1",
        runner="pytest",
        history=[_CHUNKING, _RUNNING_TOTALS],
        fixtures=[_CSV, _DURATIONS, _SEARCH, _FREQUENCIES, _PREFIXES, _VERSIONS],
    )
