"""The context fixture: a labelled agent trace across boundaries, its models and JSON Schema.

Trace order is the order events appear in the file, with a child handoff's child trace placed
right after its boundary event (depth first). Event indices are unique across the whole
fixture, child traces included.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from lorelab.context import Author, BoundaryKind
from lorelab.errors import PathError, SchemaError
from lorelab.io import loads_strict, read_bounded, sha256_bytes

Verdict = Literal["PASS", "FAIL"]
SCHEMA_ID: Final = "https://lorelab.dev/schemas/context-fixture-1.json"


class _Model(BaseModel):
    # Strict: a fixture's "2" is not an exit code and its true is not an index.
    model_config = ConfigDict(
        frozen=True, extra="forbid", strict=True, alias_generator=to_camel, populate_by_name=True
    )


class Fact(_Model):
    """A fact with the indices of the events that support it."""

    id: str = Field(min_length=1, description="Fact id, named by the task.")
    value: str = Field(description="The fact's value; compared after whitespace normalisation.")
    evidence: list[int] = Field(description="Indices of the events that support the fact.")


class ExpectedFact(Fact):
    """A labelled fact the answer must state; its evidence must name events of the trace."""

    evidence: list[int] = Field(
        min_length=1, description="Indices of the events that support the fact (at least one)."
    )


class Claim(_Model):
    """A free-text claim in an answer; supported only by citing an existing earlier event."""

    text: str = Field(description="The claim.")
    evidence: list[int] = Field(description="Indices of the events the claim cites.")


class _Event(_Model):
    index: NonNegativeInt = Field(
        description="Event index, unique across the fixture (child traces included)."
    )
    author: Author = Field(description="Who produced the event.")
    model: str | None = Field(
        default=None, description="The model that produced the event, when recorded (imports)."
    )


class MessageEvent(_Event):
    """A message turn."""

    kind: Literal["message"] = Field(description="Event kind.")
    text: str = Field(description="The message text.")


class CommandEvent(_Event):
    """A command that was run, with its exit code (null when the source recorded none)."""

    kind: Literal["command"] = Field(description="Event kind.")
    command: str = Field(min_length=1, description="The exact command string.")
    exit_code: int | None = Field(
        description="The command's exit code; null when the source recorded no exit code."
    )
    error: bool | None = Field(
        default=None,
        description="The error flag the source recorded for the call (imports), else null.",
    )

    @property
    def failed(self) -> bool | None:
        """Whether the command failed: a nonzero exit code, else the error flag, else unknown."""
        if self.exit_code is not None:
            return self.exit_code != 0
        return self.error


class ChildTrace(_Model):
    """The trace of a child agent that took over at a handoff."""

    trace: list[Event] = Field(description="The child's events, in order.")
    complete: bool = Field(description="Whether the child's trace was recorded completely.")


class BoundaryEvent(_Event):
    """A context boundary: compaction, restart, or a handoff to a child agent."""

    kind: Literal["boundary"] = Field(description="Event kind.")
    boundary: BoundaryKind = Field(description="Which boundary was crossed.")
    child: ChildTrace | None = Field(
        default=None, description="The child's trace; present exactly for child_handoff."
    )

    @model_validator(mode="after")
    def _child_matches_kind(self) -> BoundaryEvent:
        if self.boundary == "child_handoff" and self.child is None:
            raise ValueError("a child_handoff boundary needs a child trace")
        if self.boundary != "child_handoff" and self.child is not None:
            raise ValueError(f"a {self.boundary} boundary cannot carry a child trace")
        return self


class AnswerEvent(_Event):
    """The agent's answer: facts with evidence, and claims with evidence."""

    kind: Literal["answer"] = Field(description="Event kind.")
    facts: list[Fact] = Field(default_factory=list, description="The facts the answer states.")
    claims: list[Claim] = Field(default_factory=list, description="The answer's claims.")

    @model_validator(mode="after")
    def _agent_answers_each_fact_once(self) -> AnswerEvent:
        if self.author != "agent":
            raise ValueError(f"an answer is written by the agent, not by {self.author!r}")
        seen: set[str] = set()
        for fact in self.facts:
            if fact.id in seen:
                raise ValueError(f"the answer states fact {fact.id!r} twice")
            seen.add(fact.id)
        return self


Event = Annotated[
    MessageEvent | CommandEvent | BoundaryEvent | AnswerEvent, Field(discriminator="kind")
]
ChildTrace.model_rebuild()
BoundaryEvent.model_rebuild()


class Labels(_Model):
    """The independent label of the fixture's outcome, or the mark of an unlabelled import."""

    expected: Verdict | None = Field(
        description="The outcome an independent labeller expects; null when unlabelled."
    )
    status: Literal["labelled", "unlabelled"] = Field(
        default="labelled",
        description="'unlabelled' for an imported session nobody labelled yet: only its "
        "mechanical parts are scored.",
    )
    forbidden_commands: Literal["labelled", "proposed"] = Field(
        default="labelled",
        description="'proposed' when forbiddenCommands were proposed mechanically (each command "
        "that failed before the first boundary), not chosen by a labeller.",
    )

    @model_validator(mode="after")
    def _status_matches_label(self) -> Labels:
        if self.status == "labelled" and self.expected is None:
            raise ValueError("a labelled fixture needs labels.expected (PASS or FAIL)")
        if self.status == "unlabelled" and self.expected is not None:
            raise ValueError("an unlabelled fixture has labels.expected null")
        return self


class Provenance(_Model):
    """Where the trace came from; unknown stays null."""

    source_revision: str | None = Field(
        default=None, description="Revision of the source tree the agent worked on."
    )
    run_id: str | None = Field(default=None, description="Identity of the recorded run.")
    model: str | None = Field(default=None, description="The model that produced the trace.")
    synthetic: bool = Field(description="Whether the trace was made up rather than recorded.")
    agent: Literal["claude-code", "codex"] | None = Field(
        default=None, description="The agent whose session was imported (imports only)."
    )
    agent_version: str | None = Field(
        default=None, description="The agent's version as the session recorded it."
    )
    session_id: str | None = Field(default=None, description="The imported session's id.")
    cwd: str | None = Field(default=None, description="The session's working directory.")
    source_digests: list[str] = Field(
        default_factory=list,
        description="SHA-256 of each imported session file, in import order (imports only).",
    )
    unknown_event_types: dict[str, int] = Field(
        default_factory=dict,
        description="Event types the importer does not know, with how often each occurred.",
    )


MAX_TOKENS: Final = 10**12
"""Largest token count one record may carry (a trillion tokens)."""
MAX_COST_USD: Final = 1e9
"""Largest cost in US dollars one record may carry (a billion dollars)."""
MAX_WALL_MS: Final = 10**12
"""Largest wall time in milliseconds one record may carry (about 31 years)."""


class Usage(_Model):
    """Resource use as recorded; null means unknown, never zero.

    Every field is bounded by a finite, generous maximum, so sums over any realistic number of
    records stay finite (a cost of 1e308 is not a recorded cost, and two of them overflow).
    """

    model_config = ConfigDict(allow_inf_nan=False)

    input_tokens: NonNegativeInt | None = Field(
        default=None, le=MAX_TOKENS, description="Input tokens (at most 10^12)."
    )
    output_tokens: NonNegativeInt | None = Field(
        default=None, le=MAX_TOKENS, description="Output tokens (at most 10^12)."
    )
    cost_usd: NonNegativeFloat | None = Field(
        default=None,
        alias="costUSD",
        le=MAX_COST_USD,
        description="Cost in US dollars (finite, at most 10^9).",
    )
    wall_ms: NonNegativeInt | None = Field(
        default=None, le=MAX_WALL_MS, description="Wall time in ms (at most 10^12)."
    )


def usage_out_of_bounds(usage: dict[str, int | float | None]) -> list[str]:
    """The camelCase names of the fields of ``usage`` that exceed a :class:`Usage` maximum."""
    limits: dict[str, float] = {
        "inputTokens": MAX_TOKENS,
        "outputTokens": MAX_TOKENS,
        "costUSD": MAX_COST_USD,
        "wallMs": MAX_WALL_MS,
    }
    return [
        name
        for name, value in usage.items()
        if value is not None and not (math.isfinite(value) and value <= limits[name])
    ]


def iter_events(trace: list[Any], depth: int = 0) -> Iterator[tuple[Any, int]]:
    """Every event of ``trace`` in trace order with its depth (0 = top level)."""
    for event in trace:
        yield event, depth
        if isinstance(event, BoundaryEvent) and event.child is not None:
            yield from iter_events(event.child.trace, depth + 1)


class ContextFixture(_Model):
    """One labelled trace of agent work across context boundaries (``schemaVersion`` 1)."""

    model_config = ConfigDict(json_schema_extra={"$id": SCHEMA_ID})

    schema_version: Literal[1] = Field(description="Version of this fixture format.")
    id: str = Field(min_length=1, max_length=200, description="Fixture id, unique in a run.")
    task: str = Field(description="The task given to the agent; names the fact ids to report.")
    expected_facts: list[ExpectedFact] = Field(description="The labelled facts.")
    forbidden_commands: list[str] = Field(
        description="Exact commands that already failed and must not be run again."
    )
    required_boundaries: list[BoundaryKind] = Field(
        description="Boundary kinds that must appear, in this order, as boundary events."
    )
    trace: list[Event] = Field(description="The recorded events, in order.")
    complete: bool = Field(description="Whether the trace was recorded completely.")
    labels: Labels = Field(description="The independent label.")
    provenance: Provenance = Field(description="Where the trace came from.")
    usage: Usage = Field(default_factory=Usage, description="Resource use as recorded.")

    @field_validator("forbidden_commands")
    @classmethod
    def _distinct_commands(cls, value: list[str]) -> list[str]:
        for command in value:
            if not command:
                raise ValueError("a forbidden command is an empty string")
        if len(set(value)) != len(value):
            raise ValueError("a forbidden command is listed twice")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ContextFixture:
        check_trace(self.trace)
        known = {event.index for event, _ in iter_events(self.trace)}
        seen: set[str] = set()
        for fact in self.expected_facts:
            if fact.id in seen:
                raise ValueError(f"expected fact {fact.id!r} is listed twice")
            seen.add(fact.id)
            for index in fact.evidence:
                if index not in known:
                    raise ValueError(
                        f"expected fact {fact.id!r} cites event {index}, which is not in the trace"
                    )
        return self


def check_trace(trace: list[Any]) -> None:
    """Refuse a trace whose event indices repeat anywhere, child traces included."""
    where: dict[int, int] = {}
    for event, depth in iter_events(trace):
        if event.index in where:
            scope = "a child trace" if depth else "the trace"
            raise ValueError(f"event {event.index} in {scope}: index {event.index} is not unique")
        where[event.index] = depth


def fixture_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a fixture, generated from :class:`ContextFixture`."""
    schema = ContextFixture.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def _event_at(data: Any, loc: tuple[int | str, ...]) -> Any:
    """The index of the innermost event on the path ``loc`` into ``data``, if any."""
    found: Any = None
    node = data
    parent_key: int | str | None = None
    for part in loc:
        if isinstance(node, dict) and node.get("kind") == part:
            continue  # the discriminator tag pydantic puts in the location
        by_key = isinstance(node, dict) and isinstance(part, str) and part in node
        by_position = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if not (by_key or by_position):
            continue
        node = node[part]
        if parent_key == "trace" and isinstance(node, dict) and "index" in node:
            found = node["index"]
        parent_key = part
    return found


def _describe(source: str, data: Any, exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    loc = tuple(first["loc"])
    location = ".".join(str(part) for part in loc)
    message = str(first["msg"]).removeprefix("Value error, ")
    event = _event_at(data, loc)
    if event is not None:
        message = f"event {event!r} ({location}): {message}"
    elif location:
        message = f"{location}: {message}"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{source}: {message}{more}"


@dataclass(frozen=True, slots=True)
class LoadedFixture:
    """A validated fixture with the path it was read from and the SHA-256 of its bytes."""

    path: str
    digest: str
    fixture: ContextFixture


def parse_fixture(data: bytes, source: str) -> ContextFixture:
    """Parse and validate fixture bytes; errors name ``source`` and the event at fault."""
    raw = loads_strict(data, source)
    try:
        return ContextFixture.model_validate(raw)
    except ValidationError as exc:
        raise SchemaError(_describe(source, raw, exc)) from None


def utf8_path(path: str | os.PathLike[str], what: str) -> str:
    """``path`` as text, refused with :class:`PathError` when it is not valid UTF-8.

    Receipts are UTF-8 JSON that record paths as given; a file name with undecodable bytes
    (which Python carries as lone surrogates) could not be written into them.
    """
    name = os.fspath(path)
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        shown = name.encode("utf-8", "backslashreplace").decode("ascii", "replace")
        raise PathError(
            f"{what} {shown}: the path is not valid UTF-8, and receipts record paths as UTF-8 "
            "text; rename it"
        ) from None
    return name


def load_fixture(path: str | os.PathLike[str]) -> LoadedFixture:
    """Read a fixture through the bounded reader (one descriptor, 32 MiB) and validate it."""
    name = utf8_path(path, "fixture")
    data = read_bounded(name, "fixture")
    return LoadedFixture(path=name, digest=sha256_bytes(data), fixture=parse_fixture(data, name))
