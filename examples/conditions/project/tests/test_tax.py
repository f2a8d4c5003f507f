from decimal import Decimal

import pytest
from shop.tax import rate_for, tax_for


def test_rate_for_known_region():
    assert rate_for("FR") == Decimal("0.20")


def test_rate_for_unknown_region_is_refused():
    with pytest.raises(ValueError, match="unknown region"):
        rate_for("XX")


def test_tax_for_rounds_half_up():
    assert tax_for(Decimal("10.50"), "LU") == Decimal("1.79")


def test_rate_for_accepts_lower_case_regions():
    assert rate_for("de") == Decimal("0.19")
