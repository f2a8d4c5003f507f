"""The boundary-aware scorer: counts each failure class of a trace separately.

The rules (docs/context.md states them for users):

- **missing facts**: an expected fact id the answer does not state;
- **wrong facts**: a stated expected fact whose value differs after whitespace normalisation;
- **unsupported claims**: an answer fact with an unknown id; an answer fact or claim citing an
  index that is not an event before the answer (every cited index must be one); an answer fact
  citing none of its expected evidence; a claim citing nothing, or only requesting turns (``user``
  messages: the task prompt or a trial's request is no evidence for its own answer);
- **forbidden retries**: every command event equal to a forbidden command from the first
  required compaction or restart boundary (top level) to the end of the trace, plus every such
  command anywhere in a child trace (a child always works across its handoff, required or
  not); earlier top-level commands are history, counted apart as ``forbidden_history``;
- **missing boundaries**: required kinds that cannot be matched, in order, to top-level
  boundary events;
- **incomplete record**: ``complete`` false, each incomplete child trace, no top-level answer,
  or the answer placed before the latest required boundary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt
from pydantic.alias_generators import to_camel

from lorelab.context import BoundaryKind
from lorelab.errors import UsageError
from lorelab.evaluation.context._fixture import (
    AnswerEvent,
    BoundaryEvent,
    CommandEvent,
    ContextFixture,
    ExpectedFact,
    MessageEvent,
    Verdict,
    iter_events,
)

SCORER_VERSION: Final = "lorelab.context-scorer/4"
"""Names the scoring rules; receipts scored under different rules are never compared.

Version 2: a trial's forbidden-retry window opens where the fixture's own window does (else at
the managed boundary), never at a source boundary the fixture did not require.
Version 3: a forbidden command in a child trace is always a retry, whether or not
``child_handoff`` is required (version 2 counted it only when it was required or the child came
after the window opened).
Version 4: every evidence index of an answer fact or claim must be an event before the answer
(version 3 accepted ``[2, 999]`` when 2 was valid), and a claim citing only ``user`` messages is
unsupported.
"""

FAILURE_CLASSES: Final = (
    "missingFacts",
    "wrongFacts",
    "unsupportedClaims",
    "forbiddenRetries",
    "missingBoundaries",
    "incompleteRecord",
)

_WINDOW_KINDS: Final = frozenset({"compaction", "restart"})


class FailureCounts(BaseModel):
    """How many failures of each class a record has; a record passes only with all zero."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True
    )

    missing_facts: NonNegativeInt = Field(description="Expected fact ids the answer omits.")
    wrong_facts: NonNegativeInt = Field(description="Stated expected facts with a wrong value.")
    unsupported_claims: NonNegativeInt = Field(
        description="Facts or claims without valid evidence, and facts with unknown ids."
    )
    forbidden_retries: NonNegativeInt = Field(
        description="Forbidden commands run inside the counting window."
    )
    missing_boundaries: NonNegativeInt = Field(
        description="Required boundaries not recorded, in order, as boundary events."
    )
    incomplete_record: NonNegativeInt = Field(
        description="Incompleteness findings (record, child traces, answer, answer placement)."
    )

    def total(self) -> int:
        """The sum of every class."""
        return sum(self.as_dict().values())

    def as_dict(self) -> dict[str, int]:
        """The counts keyed by their JSON names, in the documented order."""
        dumped = self.model_dump(by_alias=True)
        return {name: int(dumped[name]) for name in FAILURE_CLASSES}


@dataclass(frozen=True, slots=True)
class Score:
    """The scorer's result for one trace."""

    failures: FailureCounts
    verdict: Verdict
    answer_index: int | None
    observed_boundaries: tuple[BoundaryKind, ...]
    forbidden_history: int
    """Forbidden commands run before the counting window (source history): not failures."""


def normalise(value: str) -> str:
    """Whitespace normalisation for fact values: runs of whitespace become one space, trimmed."""
    return " ".join(value.split())


def _matched_in_order(required: Sequence[str], observed: Sequence[str]) -> int:
    # Longest common subsequence: how many required kinds can be matched, in order.
    previous = [0] * (len(observed) + 1)
    for kind in required:
        current = [0]
        for column, seen in enumerate(observed, start=1):
            if kind == seen:
                current.append(previous[column - 1] + 1)
            else:
                current.append(max(previous[column], current[column - 1]))
        previous = current
    return previous[-1]


def counting_window_start(
    trace: Sequence[Any], required_boundaries: Sequence[BoundaryKind]
) -> int | None:
    """The index of the event that opens the forbidden-retry window, or ``None`` if none does.

    It is the first top-level ``compaction`` or ``restart`` boundary event whose kind is
    required; boundaries that are not required never open the window.
    """
    required = set(required_boundaries) & _WINDOW_KINDS
    for event in trace:
        if isinstance(event, BoundaryEvent) and event.boundary in required:
            return event.index
    return None


def score_trace(
    *,
    expected_facts: Sequence[ExpectedFact],
    forbidden_commands: Sequence[str],
    required_boundaries: Sequence[BoundaryKind],
    trace: Sequence[Any],
    complete: bool,
    window_start: int | None,
    normalise_commands: bool = False,
) -> Score:
    """Score one trace; every failure class is counted on its own.

    ``window_start`` is the index of the top-level compaction or restart boundary event that
    opens the forbidden-retry window (``None``: no window). A fixture's own window is
    :func:`counting_window_start`; a trial passes the fixture's, so its managed boundary never
    moves the window of the source trace. ``normalise_commands`` matches forbidden commands
    after whitespace normalisation (proposed forbidden commands of an import, as a scan does).
    """
    view = _TraceView.of(trace)
    required = list(required_boundaries)
    observed = tuple(event.boundary for event in view.top_boundaries)
    retries, history = _forbidden_runs(
        view,
        forbidden_commands,
        _window_position(view, window_start),
        same=normalise if normalise_commands else str,
    )
    answers = [event for event in trace if isinstance(event, AnswerEvent)]
    answer = answers[-1] if answers else None
    expected = {fact.id: fact for fact in expected_facts}
    stated = {fact.id: fact for fact in answer.facts} if answer is not None else {}
    failures = FailureCounts(
        missing_facts=sum(1 for fact_id in expected if fact_id not in stated),
        wrong_facts=sum(
            1
            for fact_id, fact in stated.items()
            if fact_id in expected and normalise(fact.value) != normalise(expected[fact_id].value)
        ),
        unsupported_claims=_unsupported(view, answer, expected),
        forbidden_retries=retries,
        missing_boundaries=len(required) - _matched_in_order(required, observed),
        incomplete_record=_incomplete(view, answer, required, complete=complete),
    )
    return Score(
        failures=failures,
        verdict="PASS" if failures.total() == 0 else "FAIL",
        answer_index=answer.index if answer is not None else None,
        observed_boundaries=observed,
        forbidden_history=history,
    )


@dataclass(frozen=True, slots=True)
class _TraceView:
    """A trace flattened in order (child events after their handoff), with each index's place."""

    flat: list[tuple[Any, int]]
    position: dict[int, int]
    top_boundaries: list[BoundaryEvent]

    @classmethod
    def of(cls, trace: Sequence[Any]) -> _TraceView:
        flat = list(iter_events(list(trace)))
        return cls(
            flat=flat,
            position={event.index: pos for pos, (event, _) in enumerate(flat)},
            top_boundaries=[event for event in trace if isinstance(event, BoundaryEvent)],
        )


def _window_position(view: _TraceView, window_start: int | None) -> int | None:
    """Where the forbidden-retry window opens in the flat trace (``None``: no window)."""
    if window_start is None:
        return None
    opener = next((event for event in view.top_boundaries if event.index == window_start), None)
    if opener is None or opener.boundary not in _WINDOW_KINDS:
        raise UsageError(
            f"window start {window_start} is not a top-level compaction or restart boundary "
            "event of the trace"
        )
    return view.position[window_start]


def _forbidden_runs(
    view: _TraceView,
    forbidden_commands: Sequence[str],
    window_pos: int | None,
    *,
    same: Callable[[str], str],
) -> tuple[int, int]:
    """Forbidden commands run inside the window (retries) and before it (source history)."""
    forbidden = {same(command) for command in forbidden_commands}
    retries = 0
    history = 0
    for pos, (event, depth) in enumerate(view.flat):
        if not isinstance(event, CommandEvent) or same(event.command) not in forbidden:
            continue
        # A child works after its own handoff: its whole trace counts, whatever is required.
        if depth > 0 or (window_pos is not None and pos > window_pos):
            retries += 1
        else:
            history += 1
    return retries, history


def _unsupported(
    view: _TraceView, answer: AnswerEvent | None, expected: dict[str, ExpectedFact]
) -> int:
    """Facts and claims of the answer not backed by evidence that came before it."""
    if answer is None:
        return 0
    answer_pos = view.position[answer.index]

    def earlier(index: int) -> bool:
        return index in view.position and view.position[index] < answer_pos

    requests = {
        event.index
        for event, _ in view.flat
        if isinstance(event, MessageEvent) and event.author == "user"
    }
    unsupported = 0
    for fact in answer.facts:
        if fact.id not in expected or not all(earlier(i) for i in fact.evidence):
            unsupported += 1
            continue
        valid = {index for index in expected[fact.id].evidence if earlier(index)}
        if not valid.intersection(fact.evidence):
            unsupported += 1
    unsupported += sum(
        1
        for claim in answer.claims
        if not claim.evidence
        or not all(earlier(i) for i in claim.evidence)
        or set(claim.evidence) <= requests
    )
    return unsupported


def _incomplete(
    view: _TraceView, answer: AnswerEvent | None, required: list[BoundaryKind], *, complete: bool
) -> int:
    """A truncated record, each incomplete child trace, and no answer after the boundaries."""
    incomplete = 0 if complete else 1
    incomplete += sum(
        1
        for event, _ in view.flat
        if isinstance(event, BoundaryEvent) and event.child is not None and not event.child.complete
    )
    if answer is None:
        return incomplete + 1
    answer_pos = view.position[answer.index]
    required_positions = [
        view.position[event.index] for event in view.top_boundaries if event.boundary in required
    ]
    if required_positions and answer_pos < max(required_positions):
        incomplete += 1
    return incomplete


def score_fixture(fixture: ContextFixture) -> Score:
    """Score a fixture's trace against its expected facts, forbidden commands and boundaries."""
    return score_trace(
        expected_facts=fixture.expected_facts,
        forbidden_commands=fixture.forbidden_commands,
        required_boundaries=fixture.required_boundaries,
        trace=fixture.trace,
        complete=fixture.complete,
        window_start=counting_window_start(fixture.trace, fixture.required_boundaries),
        normalise_commands=fixture.labels.forbidden_commands == "proposed",
    )
