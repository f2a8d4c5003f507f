"""issue 32 item 9: the memcoder profile's Skill ``when_to_use`` and ``unchecked_items_served``."""

from lorelab.evaluation.conditions._integrity import ServedCheck
from lorelab.evaluation.conditions._profiles import when_to_use

SEED = (
    "Round money amounts half up to the cent: find the rounding with `grep -rn quantize shop`, "
    "quantize to CENT with ROUND_HALF_UP, byte-compile the package, then run the focused test."
)


def test_when_to_use_is_the_skills_own_statement_of_when_it_applies_not_its_procedure():
    assert when_to_use({"description": SEED}) == "Round money amounts half up to the cent"
    assert when_to_use({"description": SEED, "when_to_use": "Cents rounding"}) == "Cents rounding"
    assert when_to_use({"description": "Rotate the keys."}) == "Rotate the keys"


def test_nothing_served_is_no_unchecked_item_served_not_unknown():
    assert ServedCheck(checked=False).unchecked_served is False
    assert ServedCheck(checked=False, items=[{"id": "mem_1"}]).unchecked_served is None
    assert ServedCheck(checked=False, unchecked=("x",), items=[{"id": "x"}]).unchecked_served
