"""Reported bugs: each test fails until its task is done."""

import unittest
from decimal import Decimal  # noqa: F401

from lending import loans, fines, holds, catalogue, members, renewals, reading_lists, inter_library, donations


class ReportedLoans(unittest.TestCase):
    def test_round_loan_deposit(self) -> None:
        self.assertEqual(loans.round_loan_deposit("2.665"), Decimal("2.67"))
        self.assertEqual(loans.round_loan_deposit("1.005"), Decimal("1.01"))

    def test_format_loan_number(self) -> None:
        self.assertEqual(loans.format_loan_number(2026, 7), "LN-2026-0007")


class ReportedFines(unittest.TestCase):
    def test_round_fine_amount(self) -> None:
        self.assertEqual(fines.round_fine_amount("2.665"), Decimal("2.67"))
        self.assertEqual(fines.round_fine_amount("1.005"), Decimal("1.01"))

    def test_normalize_fine_reason(self) -> None:
        self.assertEqual(fines.normalize_fine_reason("  ab1 "), "AB1")


class ReportedHolds(unittest.TestCase):
    def test_hold_count_reached(self) -> None:
        self.assertTrue(holds.hold_count_reached(10, 10))
        self.assertFalse(holds.hold_count_reached(9, 10))

    def test_unique_hold_patrons(self) -> None:
        self.assertEqual(holds.unique_hold_patrons([3, 1, 3]), [3, 1])


class ReportedCatalogue(unittest.TestCase):
    def test_checked_catalogue_volume(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                catalogue.checked_catalogue_volume(bad)
        self.assertEqual(catalogue.checked_catalogue_volume(2), 2)

    def test_round_catalogue_fee(self) -> None:
        self.assertEqual(catalogue.round_catalogue_fee("2.665"), Decimal("2.67"))
        self.assertEqual(catalogue.round_catalogue_fee("1.005"), Decimal("1.01"))


class ReportedMembers(unittest.TestCase):
    def test_round_member_credit(self) -> None:
        self.assertEqual(members.round_member_credit("2.665"), Decimal("2.67"))
        self.assertEqual(members.round_member_credit("1.005"), Decimal("1.01"))


class ReportedRenewals(unittest.TestCase):
    def test_normalize_renewal_channel(self) -> None:
        self.assertEqual(renewals.normalize_renewal_channel("  ab1 "), "AB1")


class ReportedReadingLists(unittest.TestCase):
    def test_list_size_reached(self) -> None:
        self.assertTrue(reading_lists.list_size_reached(10, 10))
        self.assertFalse(reading_lists.list_size_reached(9, 10))

    def test_average_list_ratings(self) -> None:
        self.assertEqual(reading_lists.average_list_ratings([]), 0.0)
        self.assertEqual(reading_lists.average_list_ratings([2.0, 4.0]), 3.0)


class ReportedInterLibrary(unittest.TestCase):
    def test_format_ill_number(self) -> None:
        self.assertEqual(inter_library.format_ill_number(2026, 7), "IN-2026-0007")

    def test_normalize_ill_library(self) -> None:
        self.assertEqual(inter_library.normalize_ill_library("  ab1 "), "AB1")


class ReportedDonations(unittest.TestCase):
    def test_checked_donation_count(self) -> None:
        for bad in (0, -3):
            with self.assertRaises(ValueError):
                donations.checked_donation_count(bad)
        self.assertEqual(donations.checked_donation_count(2), 2)

    def test_parse_donation_setting(self) -> None:
        self.assertEqual(donations.parse_donation_setting("a = b=c"), ("a", "b=c"))
