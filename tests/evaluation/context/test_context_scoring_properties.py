"""Properties of the scorer over generated traces (indices are positions; the answer is last)."""

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.context_traces import GOOD_ANSWER, ans, bnd, cmd, msg, score

KINDS = ["compaction", "restart", "child_handoff"]

body_event = st.one_of(
    st.tuples(st.just("msg"), st.sampled_from(["working", "port = 5432"])),
    st.tuples(st.just("cmd"), st.sampled_from(["make test", "make lint", "ls"])),
    st.tuples(st.just("bnd"), st.sampled_from(KINDS)),
)


def build(body: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Head (request, evidence at index 1), the body, then the answer; index = position."""
    trace = [msg(0, "go", "user"), msg(1, "port = 5432")]
    for kind, value in body:
        i = len(trace)
        if kind == "msg":
            trace.append(msg(i, value))
        elif kind == "cmd":
            trace.append(cmd(i, value, 2))
        elif value == "child_handoff":
            trace.append(bnd(i, value, []))
        else:
            trace.append(bnd(i, value))
    trace.append(ans(len(trace), GOOD_ANSWER))
    return trace


def window_start(body: list[tuple[str, str]], required: list[str]) -> int | None:
    for position, (kind, value) in enumerate(body):
        if kind == "bnd" and value in ("compaction", "restart") and value in required:
            return position
    return None


@st.composite
def windowed(draw: st.DrawFn, min_required: int = 0) -> tuple[list[tuple[str, str]], list[str]]:
    """A body and required kinds whose counting window opens (built in, never filtered for)."""
    body = draw(st.lists(body_event, max_size=12))
    required = draw(st.lists(st.sampled_from(KINDS), min_size=min_required, max_size=3))
    if window_start(body, required) is None:
        kind = draw(st.sampled_from(["compaction", "restart"]))
        if kind not in required:
            required = [*required, kind]
        at = draw(st.integers(min_value=0, max_value=len(body)))
        body = [*body[:at], ("bnd", kind), *body[at:]]
    return body, required


settings_ = settings(max_examples=100, deadline=None)


@settings_
@given(case=windowed(), data=st.data())
def test_a_forbidden_command_inserted_after_the_window_opens_adds_exactly_one_retry(case, data):
    body, required = case
    start = window_start(body, required)
    assert start is not None
    before = score(build(body), required=required).failures.as_dict()
    at = data.draw(st.integers(min_value=start + 1, max_value=len(body)))
    after = score(build([*body[:at], ("cmd", "make test"), *body[at:]]), required=required)
    expected = {**before, "forbiddenRetries": before["forbiddenRetries"] + 1}
    assert after.failures.as_dict() == expected


@settings_
@given(
    body=st.lists(body_event, max_size=12),
    required=st.lists(st.sampled_from(KINDS), max_size=3),
    data=st.data(),
)
def test_a_forbidden_command_inserted_before_the_window_opens_changes_nothing(body, required, data):
    start = window_start(body, required)
    last = start if start is not None else len(body)
    at = data.draw(st.integers(min_value=0, max_value=last))
    before = score(build(body), required=required).failures
    after = score(build([*body[:at], ("cmd", "make test"), *body[at:]]), required=required)
    assert after.failures == before


@settings_
@given(case=windowed(min_required=1), data=st.data(), extra=st.sampled_from(KINDS))
def test_a_later_boundary_never_erases_retries(case, data, extra):
    body, required = case
    start = window_start(body, required)
    assert start is not None
    at = data.draw(st.integers(min_value=start + 1, max_value=len(body)))
    before = score(build(body), required=required).failures.forbidden_retries
    after = score(build([*body[:at], ("bnd", extra), *body[at:]]), required=required)
    assert after.failures.forbidden_retries == before


@settings_
@given(
    body=st.lists(body_event, max_size=12), required=st.lists(st.sampled_from(KINDS), max_size=4)
)
def test_the_verdict_is_pass_exactly_when_every_class_is_zero(body, required):
    result = score(build(body), required=required)
    assert (result.verdict == "PASS") == (result.failures.total() == 0)
    observed = [value for kind, value in body if kind == "bnd"]
    assert list(result.observed_boundaries) == observed
    # Missing boundaries never exceed what was required, and are zero when required is a
    # subsequence of what was observed.
    assert 0 <= result.failures.missing_boundaries <= len(required)
    remaining = iter(observed)
    if all(kind in remaining for kind in required):
        assert result.failures.missing_boundaries == 0
