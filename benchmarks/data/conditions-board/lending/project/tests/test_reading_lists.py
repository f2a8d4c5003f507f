"""Tests of lending/reading_lists.py (all pass)."""

import unittest
from decimal import Decimal  # noqa: F401

from lending import reading_lists


class ReadingListsTests(unittest.TestCase):
    def test_unique_list_titles(self) -> None:
        self.assertEqual(reading_lists.unique_list_titles([3, 1, 3]), [3, 1])

    def test_parse_list_setting(self) -> None:
        self.assertEqual(reading_lists.parse_list_setting("a = b=c"), ("a", "b=c"))
