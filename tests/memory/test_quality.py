from dataclasses import replace

from lorelab.io import read_json
from lorelab.memory import DEFAULT_POLICY, RelevancePolicy
from lorelab.testing.quality import evaluate_retrieval
from tests.support.memory import DATA

SET = DATA / "retrieval_set.json"


def test_the_labelled_set_is_large_enough_and_well_formed():
    data = read_json(SET, "fixture")
    keys = [item["key"] for item in data["experiences"]]
    assert len(keys) == len(set(keys)) >= 50
    assert len(data["queries"]) >= 50
    assert all(set(q["relevant"]) <= set(keys) for q in data["queries"])
    assert len(data["unrelated"]) >= 40
    assert len({item["project"] for item in data["experiences"]}) >= 5


KEYWORD_ONLY = replace(DEFAULT_POLICY, hybrid=False)


def test_the_keyword_floor_meets_its_in_sample_recall_and_empty_brief_targets():
    # In-sample: the keyword floor's knobs were tuned on this very set.
    quality = evaluate_retrieval(SET, KEYWORD_ONLY)
    assert quality.recall_at_3 >= 0.9, quality.misses
    assert quality.unrelated_empty_rate >= 0.95, quality.false_briefs


def test_a_floor_that_is_too_low_pads_briefs_for_unrelated_tasks():
    # The floor is what keeps unrelated briefs empty: without it they fill up.
    loose = evaluate_retrieval(
        SET, RelevancePolicy(min_coverage=0.0, min_matched_terms=1, hybrid=False)
    )
    assert loose.unrelated_empty_rate < 0.5
