from hypothesis import given, settings
from hypothesis import strategies as st

from lorelab.memory._relevance import RelevancePolicy, idf, query_terms, score

VOCAB = [f"t{n}" for n in range(12)]


def _query(task_terms, docs, policy):
    freq = {t: sum(t in d for d in docs) for t in VOCAB}
    return query_terms(
        lambda terms: {t: freq[t] for t in terms if freq.get(t)},
        " ".join(task_terms),
        len(docs),
        policy,
    )


@settings(max_examples=300, deadline=None)
@given(
    task=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=8, unique=True),
    docs=st.lists(st.sets(st.sampled_from(VOCAB), max_size=8), min_size=1, max_size=30),
    coverage=st.sampled_from([0.1, 0.25, 0.5]),
    matched=st.integers(min_value=1, max_value=4),
)
def test_leaving_common_terms_out_of_the_match_loses_no_item_that_clears(
    task, docs, coverage, matched
):
    policy = RelevancePolicy(min_coverage=coverage, min_matched_terms=matched, idf_min_docs=1)
    query = _query(task, docs, policy)
    kept = set(query.match_terms(policy))
    for number, doc in enumerate(docs):
        scored = score(query, number, " ".join(sorted(doc)), 0.0)
        if scored.clears(policy):
            assert doc & kept, (doc, kept)


def test_a_common_term_is_not_informative_and_a_rare_term_weighs_more():
    policy = RelevancePolicy(common_min_docs=2, common_fraction=0.5, idf_min_docs=1)
    docs = [{"t0", "t1"}, {"t0", "t2"}, {"t0"}, {"t0", "t1"}]
    query = _query(["t0", "t1", "t2"], docs, policy)
    assert query.dropped_common == ("t0",)
    assert query.weights["t2"] > query.weights["t1"]
    assert idf(100, 1) > idf(100, 50) > 0


def test_the_score_is_the_idf_weighted_share_of_task_terms_present():
    policy = RelevancePolicy(idf_min_docs=1)
    docs = [{"t1"}, {"t2"}, {"t3"}]
    query = _query(["t1", "t2", "t3", "t4"], docs, policy)
    item = score(query, 1, "t1 t2", 0.0)
    assert item.matched == ("t1", "t2")
    expected = (query.weights["t1"] + query.weights["t2"]) / query.total
    assert abs(item.score - expected) < 1e-6
