from hypothesis import given
from hypothesis import strategies as st

from lorelab.memory._procedure import (
    CommandOutcome,
    is_subsequence,
    lcs,
    mine,
    procedure_of,
    shared_procedure,
)


def test_the_procedure_is_the_successful_commands_then_the_passing_verification():
    commands = [
        CommandOutcome("pytest  -x", 1),
        CommandOutcome("pip install 'a==1'", 0),
        CommandOutcome("pytest -x", 0),
    ]
    assert procedure_of(commands, "pytest -q", 0) == ("pip install a==1", "pytest -x", "pytest -q")
    assert procedure_of(commands, "pytest -q", 1) == ("pip install a==1", "pytest -x")
    assert procedure_of([CommandOutcome("make", 0)], "make", 0) == ("make",)


def test_lcs_finds_the_shared_commands_in_order():
    assert lcs(["a", "b", "c", "d"], ["b", "x", "d"]) == ("b", "d")
    assert lcs(["a"], ["b"]) == ()


def test_shared_procedure_of_three_sequences_is_common_to_all():
    shared = shared_procedure([("a", "b", "c", "d"), ("a", "c", "d"), ("x", "a", "d", "c", "d")])
    assert shared == ("a", "c", "d")


@given(st.lists(st.lists(st.sampled_from("abcde"), max_size=8), min_size=1, max_size=4))
def test_the_shared_procedure_is_a_subsequence_of_every_procedure(procedures):
    shared = shared_procedure(procedures)
    assert all(is_subsequence(shared, procedure) for procedure in procedures)


@given(st.lists(st.sampled_from("abcd"), max_size=7), st.lists(st.sampled_from("abcd"), max_size=7))
def test_lcs_is_a_common_subsequence_no_shorter_than_any_single_shared_item(a, b):
    common = lcs(a, b)
    assert is_subsequence(common, a)
    assert is_subsequence(common, b)
    assert len(common) >= (1 if set(a) & set(b) else 0)


def test_mining_keeps_maximal_sequences_with_their_support_deterministically():
    procedures = [
        (3, ("npm ci", "npm run build", "npx jest")),
        (1, ("npm ci", "npm run lint", "npm run build", "npx jest")),
        (2, ("pip install -e .", "pytest")),
        (4, ("pip install -e .", "ruff check .", "pytest")),
        (5, ("make",)),
    ]
    mined = mine(procedures)
    assert [(m.steps, m.source_ids) for m in mined] == [
        (("npm ci", "npm run build", "npx jest"), (1, 3)),
        (("pip install -e .", "pytest"), (2, 4)),
    ]
    assert mine(list(reversed(procedures))) == mined


def test_a_single_shared_command_is_not_a_procedure():
    assert mine([(1, ("a", "b")), (2, ("a", "c"))]) == []
