import pytest

from lorelab.errors import UsageError
from lorelab.evaluation.context import counting_window_start, normalise, score_trace
from tests.support.context_traces import (
    GOOD_ANSWER,
    ans,
    bnd,
    build,
    cmd,
    msg,
    passing_trace,
    score,
)

ZERO = {
    "missingFacts": 0,
    "wrongFacts": 0,
    "unsupportedClaims": 0,
    "forbiddenRetries": 0,
    "missingBoundaries": 0,
    "incompleteRecord": 0,
}


def only(**counts: int) -> dict[str, int]:
    return {**ZERO, **counts}


def test_a_clean_trace_passes_with_zero_failures_of_every_class():
    result = score(passing_trace())
    assert result.failures.as_dict() == ZERO
    assert result.verdict == "PASS"
    assert result.answer_index == 5
    assert result.observed_boundaries == ("compaction",)


# forbidden retries


def test_source_commands_before_the_first_required_boundary_are_excluded():
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        cmd(2, "make test", 2),
        cmd(3, "make test", 2),
        bnd(4, "compaction"),
        ans(5, GOOD_ANSWER),
    ]
    assert score(trace).failures.forbidden_retries == 0
    assert score(trace).verdict == "PASS"


def test_a_non_required_boundary_does_not_open_the_counting_window():
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        bnd(2, "compaction"),
        cmd(3, "make test", 2),
        bnd(4, "restart"),
        ans(5, GOOD_ANSWER),
    ]
    assert score(trace, required=["restart"]).failures.forbidden_retries == 0


def test_later_compaction_or_restart_cannot_erase_earlier_forbidden_retries():
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        cmd(2, "make test", 2),
        bnd(3, "compaction"),
        cmd(4, "make test", 2),
        bnd(5, "restart"),
        cmd(6, "make test", 2),
        bnd(7, "compaction"),
        ans(8, GOOD_ANSWER),
    ]
    result = score(trace, required=["compaction", "restart", "compaction"])
    assert result.failures.as_dict() == only(forbiddenRetries=2)
    assert result.verdict == "FAIL"


def test_a_between_boundary_retry_counts_even_when_an_answer_precedes_the_latest_boundary():
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        cmd(2, "make test", 2),
        bnd(3, "compaction"),
        cmd(4, "make test", 2),
        ans(5, GOOD_ANSWER),
        bnd(6, "restart"),
    ]
    result = score(trace, required=["compaction", "restart"])
    assert result.failures.forbidden_retries == 1
    assert result.failures.incomplete_record == 1
    assert result.verdict == "FAIL"


def test_child_calls_count_across_the_whole_child_trace_not_from_the_child_compaction():
    child = [
        cmd(4, "make test", 2),
        bnd(5, "compaction"),
        cmd(6, "make test", 2),
        msg(7, "child done", "agent"),
    ]
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        cmd(2, "make test", 2),
        bnd(3, "child_handoff", child),
        ans(8, GOOD_ANSWER),
    ]
    result = score(trace, required=["child_handoff"])
    assert result.failures.as_dict() == only(forbiddenRetries=2)


def test_a_compaction_inside_a_child_does_not_satisfy_a_required_top_level_compaction():
    child = [msg(4, "working", "agent"), bnd(5, "compaction"), msg(6, "done", "agent")]
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        cmd(2, "make test", 2),
        bnd(3, "child_handoff", child),
        ans(7, GOOD_ANSWER),
    ]
    result = score(trace, required=["child_handoff", "compaction"])
    assert result.failures.as_dict() == only(missingBoundaries=1)
    assert result.observed_boundaries == ("child_handoff",)


def test_a_child_compaction_does_not_open_the_parent_counting_window():
    child = [bnd(4, "compaction"), msg(5, "done", "agent")]
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        bnd(3, "child_handoff", child),
        cmd(6, "make test", 2),
        bnd(7, "compaction"),
        ans(8, GOOD_ANSWER),
    ]
    # child_handoff is not required, so the window opens at the top-level compaction only.
    assert score(trace, required=["compaction"]).failures.forbidden_retries == 0


def test_a_child_handed_off_after_the_window_opened_counts_in_full():
    child = [cmd(5, "make test", 2)]
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        cmd(2, "make test", 2),
        bnd(3, "compaction"),
        bnd(4, "child_handoff", child),
        ans(6, GOOD_ANSWER),
    ]
    assert score(trace, required=["compaction"]).failures.forbidden_retries == 1


def test_child_retries_count_even_when_child_handoff_is_not_required():
    child = [cmd(4, "make test", 2), msg(5, "child done", "agent")]
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        cmd(2, "make test", 2),
        bnd(3, "child_handoff", child),
        bnd(6, "compaction"),
        ans(7, GOOD_ANSWER),
    ]
    # The child reran the failed command after its handoff, before the parent's window opened.
    result = score(trace, required=["compaction"])
    assert result.failures.as_dict() == only(forbiddenRetries=1)
    assert result.forbidden_history == 1


def test_child_retries_count_when_no_window_opens_at_all():
    child = [cmd(3, "make test", 2), bnd(4, "compaction"), cmd(5, "make test", 2)]
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        bnd(2, "child_handoff", child),
        ans(6, GOOD_ANSWER),
    ]
    result = score(trace, required=[])
    assert result.failures.as_dict() == only(forbiddenRetries=2)
    assert result.verdict == "FAIL"


def test_forbidden_commands_before_the_window_are_reported_as_history_not_failures():
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        cmd(2, "make test", 2),
        cmd(3, "make test", 2),
        bnd(4, "compaction"),
        cmd(5, "make test", 2),
        ans(6, GOOD_ANSWER),
    ]
    result = score(trace)
    assert result.failures.forbidden_retries == 1
    assert result.forbidden_history == 2


def test_command_matching_is_exact():
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        cmd(2, "make test", 2),
        bnd(3, "compaction"),
        cmd(4, "make  test", 2),
        cmd(5, "make test -k db", 2),
        ans(6, GOOD_ANSWER),
    ]
    assert score(trace).failures.forbidden_retries == 0


# boundaries


def test_a_missing_required_boundary_cannot_pass():
    trace = [msg(0, "go", "user"), msg(1, "port = 5432"), bnd(2, "compaction"), ans(3, GOOD_ANSWER)]
    result = score(trace, required=["compaction", "restart"])
    assert result.failures.as_dict() == only(missingBoundaries=1)
    assert result.verdict == "FAIL"


def test_boundaries_out_of_order_count_as_missing():
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        bnd(2, "restart"),
        bnd(3, "compaction"),
        ans(4, GOOD_ANSWER),
    ]
    assert score(trace, required=["compaction", "restart"]).failures.missing_boundaries == 1


def test_a_boundary_named_only_in_the_answer_prose_does_not_count():
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        msg(2, "the context was restarted", "system"),
        ans(3, GOOD_ANSWER, [("after the restart I re-read db.conf", [1])]),
    ]
    result = score(trace, required=["restart"])
    assert result.failures.as_dict() == only(missingBoundaries=1)


def test_a_partial_child_handoff_with_an_incomplete_child_trace_cannot_pass():
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        bnd(2, "child_handoff", [msg(3, "started", "agent")], complete=False),
        ans(4, GOOD_ANSWER),
    ]
    result = score(trace, required=["child_handoff"])
    assert result.failures.as_dict() == only(incompleteRecord=1)
    assert result.verdict == "FAIL"


# incomplete record


def test_an_incomplete_record_fails_on_its_own():
    result = score(passing_trace(), complete=False)
    assert result.failures.as_dict() == only(incompleteRecord=1)


def test_no_answer_is_incomplete_and_every_expected_fact_is_missing():
    result = score(passing_trace()[:-1])
    assert result.failures.as_dict() == only(incompleteRecord=1, missingFacts=1)
    assert result.answer_index is None


def test_an_answer_before_the_latest_required_boundary_is_incomplete():
    trace = [msg(0, "go", "user"), msg(1, "port = 5432"), ans(2, GOOD_ANSWER), bnd(3, "compaction")]
    assert score(trace).failures.as_dict() == only(incompleteRecord=1)


def test_the_last_top_level_answer_is_the_one_scored():
    trace = [*passing_trace()[:-1], ans(5, [("port", "1", [1])]), ans(6, GOOD_ANSWER)]
    assert score(trace).verdict == "PASS"


def test_an_answer_inside_a_child_trace_is_not_the_scored_answer():
    child = [ans(3, GOOD_ANSWER)]
    trace = [msg(0, "go", "user"), msg(1, "port = 5432"), bnd(2, "child_handoff", child)]
    result = score(trace, required=["child_handoff"])
    assert result.answer_index is None
    assert result.failures.incomplete_record == 1


# facts and claims


def test_a_wrong_correction_fails_on_its_own():
    trace = passing_trace()
    trace[-1] = ans(5, [("port", "5433", [1])], [("the fixed tests pass", [4])])
    result = score(trace)
    assert result.failures.as_dict() == only(wrongFacts=1)
    assert result.verdict == "FAIL"


def test_fact_values_are_compared_after_whitespace_normalisation_only():
    trace = passing_trace()
    trace[-1] = ans(5, [("port", "  5432\n", [1])])
    assert score(trace).verdict == "PASS"
    assert normalise(" a \t b\n") == "a b"
    trace[-1] = ans(5, [("port", "5432.0", [1])])
    assert score(trace).failures.wrong_facts == 1


def test_a_missing_fact_fails_on_its_own():
    trace = passing_trace()
    trace[-1] = ans(5, [], [("the fixed tests pass", [4])])
    assert score(trace).failures.as_dict() == only(missingFacts=1)


def test_a_fact_citing_none_of_its_expected_evidence_is_unsupported():
    trace = passing_trace()
    trace[-1] = ans(5, [("port", "5432", [0, 4])])
    assert score(trace).failures.as_dict() == only(unsupportedClaims=1)


def test_a_fact_citing_one_of_several_expected_evidence_events_is_supported():
    trace = [
        *passing_trace()[:-1],
        msg(6, "confirmed: port = 5432"),
        ans(7, [("port", "5432", [6])]),
    ]
    expected = [{"id": "port", "value": "5432", "evidence": [1, 6]}]
    assert score(trace, expected=expected).verdict == "PASS"


def test_a_fact_with_an_unknown_id_is_unsupported():
    trace = passing_trace()
    trace[-1] = ans(5, [*GOOD_ANSWER, ("host", "db.local", [1])])
    assert score(trace).failures.as_dict() == only(unsupportedClaims=1)


def test_a_claim_citing_no_existing_earlier_event_is_unsupported():
    trace = passing_trace()
    trace[-1] = ans(5, GOOD_ANSWER, [("tests pass", [99]), ("nothing cited", [])])
    assert score(trace).failures.as_dict() == only(unsupportedClaims=2)


def test_a_claim_citing_a_later_event_is_unsupported():
    trace = [*passing_trace()[:-1], ans(5, GOOD_ANSWER, [("it will pass", [6])]), msg(6, "ok")]
    assert score(trace).failures.as_dict() == only(unsupportedClaims=1)


def test_a_fact_citing_expected_evidence_that_comes_after_the_answer_is_unsupported():
    trace = [*passing_trace()[:-1], ans(5, [("port", "5432", [6])]), msg(6, "port = 5432")]
    expected = [{"id": "port", "value": "5432", "evidence": [6]}]
    assert score(trace, expected=expected).failures.as_dict() == only(unsupportedClaims=1)


def test_a_claim_with_one_valid_and_one_nonexistent_citation_is_unsupported():
    trace = passing_trace()
    trace[-1] = ans(5, GOOD_ANSWER, [("tests pass", [99, 4])])
    assert score(trace).failures.unsupported_claims == 1
    trace[-1] = ans(5, GOOD_ANSWER, [("tests pass", [4])])
    assert score(trace).verdict == "PASS"


def test_a_fact_citing_a_nonexistent_event_besides_its_evidence_is_unsupported():
    trace = passing_trace()
    trace[-1] = ans(5, [("port", "5432", [1, 999])])
    assert score(trace).failures.as_dict() == only(unsupportedClaims=1)


def test_a_fact_citing_an_event_after_the_answer_is_unsupported():
    trace = [*passing_trace(), msg(6, "late")]
    trace[-2] = ans(5, [("port", "5432", [1, 6])])
    assert score(trace).failures.as_dict() == only(unsupportedClaims=1)


def test_a_claim_citing_only_the_task_prompt_is_unsupported():
    trace = passing_trace()
    assert trace[0]["author"] == "user"
    trace[-1] = ans(5, GOOD_ANSWER, [("the user asked for the port", [0])])
    assert score(trace).failures.as_dict() == only(unsupportedClaims=1)
    # The prompt next to real evidence is fine: the claim is supported by the evidence.
    trace[-1] = ans(5, GOOD_ANSWER, [("the port is in the tool output", [0, 1])])
    assert score(trace).verdict == "PASS"


def test_a_claim_citing_nothing_is_unsupported():
    trace = passing_trace()
    trace[-1] = ans(5, GOOD_ANSWER, [("trust me", [])])
    assert score(trace).failures.as_dict() == only(unsupportedClaims=1)


def test_wrong_facts_unsupported_claims_and_retries_are_counted_independently():
    trace = [
        msg(0, "go", "user"),
        msg(1, "port = 5432"),
        cmd(2, "make test", 2),
        bnd(3, "compaction"),
        cmd(4, "make test", 2),
        ans(5, [("port", "1234", [1])], [("done", [42])]),
    ]
    assert score(trace).failures.as_dict() == only(
        wrongFacts=1, unsupportedClaims=1, forbiddenRetries=1
    )


def _score_with_window(window_start):
    fixture = build(passing_trace())
    return score_trace(
        expected_facts=fixture.expected_facts,
        forbidden_commands=fixture.forbidden_commands,
        required_boundaries=fixture.required_boundaries,
        trace=fixture.trace,
        complete=fixture.complete,
        window_start=window_start,
    )


def test_the_counting_window_of_a_fixture_is_its_first_required_compaction_or_restart():
    trace = [msg(0, "q", "user"), bnd(1, "compaction"), bnd(2, "restart"), ans(3)]
    fixture = build(trace, required=["restart"], expected=[])
    assert counting_window_start(fixture.trace, ["restart"]) == 2
    assert counting_window_start(fixture.trace, ["compaction", "restart"]) == 1
    assert counting_window_start(fixture.trace, ["child_handoff"]) is None


def test_an_explicit_window_start_decides_which_retries_count():
    # passing_trace: make test fails at 2 (history), the compaction at 3 opens the window.
    assert _score_with_window(3).failures.forbidden_retries == 0
    assert _score_with_window(None).verdict == "PASS"


def test_a_window_start_that_is_no_compaction_or_restart_boundary_is_refused():
    for bad in (2, 99):  # a command event; no event at all
        with pytest.raises(UsageError, match="window start"):
            _score_with_window(bad)
