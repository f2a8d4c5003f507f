"""The role payloads and responses of ``lorelab.worker/1``, validated on both sides.

The shapes follow ``docs/protocol.md``; the role prompt an agent adapter sends, versioned by
``PROMPT_VERSION``, is built in :mod:`lorelab.workers.prompts`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal, TypeVar

from pydantic import BaseModel, Field, field_validator

from lorelab._model import TEST_PATH_SHAPES, TEST_PATHS, RunnerName, StrictRecordModel
from lorelab.errors import PathError, SchemaError, UsageError
from lorelab.io import validate_model
from lorelab.workspace import FileEntry, check_distinct

PROTOCOL: Final = "lorelab.worker/1"
PROMPT_VERSION: Final = "lorelab.role-prompt/1"
ROLES: Final = ("architect", "author", "reviewer", "host", "context", "dreamer")
MAX_TIMEOUT_MS: Final = 120_000

_T = TypeVar("_T")
Role = Literal["architect", "author", "reviewer", "host", "context", "dreamer"]
Runner = RunnerName

CONFTEST_PATH: Final = "tests/conftest.py"
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")

NonNegativeInt = Annotated[int, Field(ge=0)]


class Usage(StrictRecordModel):
    """What a worker reports it used. Each field is ``null`` when not reported, never 0."""

    input_tokens: NonNegativeInt | None = Field(
        default=None, description="Input (prompt) tokens the worker reports; null = unknown."
    )
    output_tokens: NonNegativeInt | None = Field(
        default=None, description="Output tokens the worker reports; null = unknown."
    )
    cost_usd: Annotated[float, Field(ge=0)] | None = Field(
        default=None,
        alias="costUSD",
        description="Cost in US dollars the worker reports; null = unknown.",
    )


class TransportBudget(StrictRecordModel):
    """The bounds the transport enforces on this call, appended to the payload."""

    max_output_bytes: int = Field(ge=1, description="Stdout bytes allowed before the call fails.")
    timeout_ms: int = Field(
        ge=1, le=MAX_TIMEOUT_MS, description="Milliseconds before the process group is killed."
    )


class Task(StrictRecordModel):
    """A TestLore task: the requirements, the runner and the source under test."""

    specification_id: str | None = Field(
        default=None, description="The specification this task comes from; null if none."
    )
    requirements: str = Field(description="The requirements text, with its examples.")
    runner: Runner = Field(description="The test runner the tests are written for.")
    source: list[FileEntry] = Field(description="The source files under test.")


class Lesson(StrictRecordModel):
    """A validated historical test suite recalled from memory."""

    id: str = Field(description="The lesson's id in the frozen store.")
    specification_id: str | None = Field(
        default=None, description="The past specification the lesson's tests were written for."
    )
    requirements: str = Field(description="That specification's requirements text.")
    tests: list[FileEntry] = Field(description="The lesson's validated test files.")
    score: float | None = Field(default=None, description="Retrieval score; null if unscored.")


class Case(StrictRecordModel):
    """One planned test case."""

    name: str = Field(min_length=1, max_length=120, description="A short, unique case name.")
    intent: str = Field(
        min_length=1, max_length=2000, description="What the case checks: input and expectation."
    )

    @field_validator("name")
    @classmethod
    def _single_line(cls, value: str) -> str:
        if _CONTROL.search(value):
            raise ValueError("a case name must not contain control characters or newlines")
        return value


class Plan(StrictRecordModel):
    """The architect's plan, handed to the author."""

    cases: list[Case] = Field(description="The planned cases.")


class ArchitectLimits(StrictRecordModel):
    """Limits on an architect's plan."""

    max_cases: int = Field(ge=1, description="The most cases the plan may hold.")


class AuthorLimits(StrictRecordModel):
    """Limits on an author's test files."""

    max_files: int = Field(ge=1, description="The most test files the author may return.")
    max_cases: int = Field(ge=1, description="The most test cases across all files.")
    allow_conftest: bool = Field(
        default=False,
        description="Whether tests/conftest.py may be written (pytest); refused otherwise.",
    )


class _Payload(StrictRecordModel):
    protocol: Literal["lorelab.worker/1"] = Field(description="Always 'lorelab.worker/1'.")
    transport_budget: TransportBudget | None = Field(
        default=None, description="Appended by the transport; absent in the payload it is given."
    )


class ArchitectPayload(_Payload):
    """What an architect receives: the task, the lessons (empty without memory), limits."""

    role: Literal["architect"]
    task: Task
    lessons: list[Lesson] = Field(description="Recalled lessons; empty in the no-memory arm.")
    limits: ArchitectLimits


class AuthorPayload(_Payload):
    """What an author receives: the task, the lessons, the plan and limits."""

    role: Literal["author"]
    task: Task
    lessons: list[Lesson] = Field(description="Recalled lessons; empty in the no-memory arm.")
    plan: Plan
    limits: AuthorLimits


class ReviewerPayload(_Payload):
    """What a reviewer receives: the task and the tests. Never lessons."""

    role: Literal["reviewer"]
    task: Task
    tests: list[FileEntry] = Field(description="The candidate test files under review.")


class HostTask(StrictRecordModel):
    """A conditions-protocol task for a host agent."""

    id: str = Field(description="The task id.")
    prompt: str = Field(description="What the host must do.")
    verify: str | None = Field(
        default=None,
        description=(
            "The task's verification command (the conditions runner always sends it): the "
            "host runs it after each edit and reports each edit-then-verify cycle."
        ),
    )


class Guidance(StrictRecordModel):
    """Memory guidance handed to a host: a brief or an instantiated plan."""

    kind: Literal["brief", "plan"]
    text: str
    plan_id: str | None = None
    skill_id: str | None = None


class Verification(StrictRecordModel):
    """The outcome of the previous attempt's verification command."""

    command: str
    exit_code: int | None
    output_tail: str


class HostPayload(_Payload):
    """What a host receives: the task, optional guidance, the attempt, the last verification."""

    role: Literal["host"]
    task: HostTask
    guidance: Guidance | None
    attempt: int = Field(ge=1, description="1-based attempt number.")
    last_verification: Verification | None


class _Response(StrictRecordModel):
    usage: Usage | None = Field(default=None, description="Reported usage; absent = unknown.")
    model: str | None = Field(
        default=None, description="The model the worker says it used: a claim, never verified."
    )
    evidence_kind: Literal["protocol-fixture"] | None = Field(
        default=None, description="'protocol-fixture' for the shipped fixture workers."
    )


def _unique_by(value: list[_T], keys: list[str], what: str) -> list[_T]:
    """``value`` when its ``keys`` are distinct; a validation error naming ``what`` otherwise."""
    if len(set(keys)) != len(keys):
        raise ValueError(f"{what} must be unique")
    return value


class ArchitectResponse(_Response):
    """An architect's plan."""

    cases: list[Case] = Field(min_length=1, description="The planned cases, names unique.")

    @field_validator("cases")
    @classmethod
    def _unique(cls, value: list[Case]) -> list[Case]:
        return _unique_by(value, [case.name for case in value], "case names")


class LessonSeed(StrictRecordModel):
    """What an author did with the recalled lessons, as it reports it (optional)."""

    kept: int = Field(ge=0, description="Lesson test statements the author used.")
    dropped: int = Field(ge=0, description="Lesson test statements the author left out.")
    reasons: list[str] = Field(description="Why statements were dropped, one line each.")


class AuthorResponse(_Response):
    """An author's test files: test files only, at canonical test paths."""

    files: list[FileEntry] = Field(min_length=1, description="The test files written.")
    lesson_seed: LessonSeed | None = Field(
        default=None,
        description="Optional: what the author did with the lessons (the Pynguin adapter "
        "reports the statements it kept in and dropped from its seed); absent = unknown.",
    )

    @field_validator("files")
    @classmethod
    def _test_paths(cls, value: list[FileEntry]) -> list[FileEntry]:
        for entry in value:
            if entry.path != CONFTEST_PATH and not any(
                pattern.fullmatch(entry.path) for pattern in TEST_PATHS.values()
            ):
                raise ValueError(
                    f"{entry.path!r} is not a test path (tests/test_<name>.py or "
                    "test/<name>.test.js)"
                )
        try:
            check_distinct(entry.path for entry in value)
        except PathError as exc:
            raise ValueError(str(exc)) from None
        return value


class ReviewerResponse(_Response):
    """A reviewer's verdict; a rejection gives at least one reason."""

    verdict: Literal["approve", "reject"]
    reasons: list[str]

    @field_validator("reasons")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        if any(not reason.strip() for reason in value):
            raise ValueError("reasons must not be empty strings")
        return value


class HostCommand(StrictRecordModel):
    """A command a host ran and its exit code (null when unknown)."""

    command: str
    exit_code: int | None


class HostCycle(StrictRecordModel):
    """One edit-then-verify cycle a host ran: the files it edited, then the verify run."""

    edited: list[str] = Field(description="Files edited since the previous verify run.")
    verification: HostCommand = Field(description="The verify run that closed the cycle.")


class HostResponse(_Response):
    """What a host reports after editing files in its working directory."""

    summary: str
    commands: list[HostCommand]
    cycles: list[HostCycle] | None = Field(
        default=None,
        description=(
            "Optional: the edit-then-verify cycles of this call, in order; absent means the "
            "host did not report them (its rework is then unknown, never 0)."
        ),
    )


# The context role belongs to the context evaluation's simulated trials (docs/context.md).


class ContextTrial(StrictRecordModel):
    """Which simulated trial and turn a context payload belongs to."""

    id: str = Field(description="Trial id: <fixture id>#<managed boundary>.")
    boundary: Literal["compaction", "restart"] = Field(description="The managed boundary.")
    boundary_index: int = Field(ge=0, description="Index of the managed boundary event.")
    turn: int = Field(ge=1, description="1-based turn number.")
    max_turns: int = Field(ge=1, description="The turn cap.")


class SourceOwner(StrictRecordModel):
    """Marks the requesting turn as synthetic, owned by the evaluator, at an exact index."""

    kind: Literal["synthetic"]
    owner: str
    request_index: int = Field(ge=0)


class ContextRequest(StrictRecordModel):
    """The isolated requesting turn the evaluator appended after the evidence."""

    index: int = Field(ge=0, description="The request event's index.")
    text: str
    source_owner: SourceOwner


class ContextPayload(_Payload):
    """What a context worker receives: the recovered checkpoint, never labels or expected facts."""

    role: Literal["context"]
    trial: ContextTrial
    task: str = Field(description="The original task; it names the fact ids to report.")
    request: ContextRequest
    recovered: dict[str, Any] = Field(description="The checkpoint written at the boundary.")
    brief: str = Field(description="The checkpoint's handoff brief (Markdown).")
    transcript: list[dict[str, Any]] = Field(
        description="Events this trial's earlier turns added (commands), in order."
    )
    next_index: int = Field(ge=0, description="Index the next event of this turn will get.")


class ContextFact(StrictRecordModel):
    """A fact the worker states, with the event indices that support it."""

    id: str = Field(min_length=1)
    value: str
    evidence: list[int]


class ContextClaim(StrictRecordModel):
    """A claim the worker makes, with the event indices it cites."""

    text: str
    evidence: list[int]


class ContextAnswer(StrictRecordModel):
    """The worker's answer to the request."""

    facts: list[ContextFact] = Field(default_factory=list)
    claims: list[ContextClaim] = Field(default_factory=list)

    @field_validator("facts")
    @classmethod
    def _distinct_ids(cls, value: list[ContextFact]) -> list[ContextFact]:
        return _unique_by(value, [fact.id for fact in value], "fact ids")


class ContextCommand(StrictRecordModel):
    """A command the worker ran this turn and its exit code."""

    command: str = Field(min_length=1)
    exit_code: int


class ContextResponse(_Response):
    """A context worker's turn: the commands it ran, and its answer (null asks for a turn)."""

    commands: list[ContextCommand] = Field(default_factory=list)
    answer: ContextAnswer | None = None


# The dreamer proposes candidate Skills from verified experiences (docs/memory.md, Dreams).


class DreamerCommand(StrictRecordModel):
    """A command an experience ran and the exit code it reported."""

    command: str = Field(description="The command as stored (secrets already redacted).")
    exit_code: int = Field(description="Its exit code.")


class DreamerVerification(StrictRecordModel):
    """The verification an experience passed (a dreamer sees verified experiences only)."""

    command: str = Field(description="The verification command as stored.")
    exit_code: Literal[0] = Field(description="Its exit code: always 0.")


class DreamerExperience(StrictRecordModel):
    """One verified experience of the memory store, as stored (already redacted)."""

    id: str = Field(description="The experience id in the store (exp-N).")
    task: str = Field(description="The task as it was given.")
    summary: str = Field(description="What was done and what worked.")
    commands: list[DreamerCommand] = Field(description="Commands run, in order.")
    verification: DreamerVerification


class DreamerLimits(StrictRecordModel):
    """Limits on a dreamer's proposals."""

    max_candidates: int = Field(ge=1, description="The most candidates the reply may hold.")


class DreamerPayload(_Payload):
    """What a dreamer receives: verified experiences only, and limits."""

    role: Literal["dreamer"]
    experiences: list[DreamerExperience] = Field(
        description="Verified experiences of the store, newest first."
    )
    limits: DreamerLimits


class ProposedCheck(StrictRecordModel):
    """A check of a proposed candidate: a command and the exit code it must return."""

    command: str = Field(description="A command run in a disposable copy of the project.")
    expected_exit_code: int = Field(description="The exit code it must return.")


class ProposedCandidate(StrictRecordModel):
    """A candidate Skill a dreamer proposes.

    Only the shape is checked here: the store judges each proposal on its own (names, checks,
    sources, duplicates) and refuses it alone, so one bad proposal never voids the others.
    """

    name: str = Field(description="An Agent Skills name: lowercase letters, digits, hyphens.")
    description: str = Field(description="What the Skill does and when to use it.")
    steps: list[str] = Field(description="The Skill's commands, in order.")
    checks: list[ProposedCheck] = Field(description="Checks that show the Skill works.")
    source_experience_ids: list[str] = Field(
        description="The payload experiences (two or more) the candidate comes from."
    )


class DreamerResponse(_Response):
    """A dreamer's proposals (possibly none)."""

    candidates: list[ProposedCandidate] = Field(description="The proposed candidates.")


RolePayload = (
    ArchitectPayload
    | AuthorPayload
    | ReviewerPayload
    | HostPayload
    | ContextPayload
    | DreamerPayload
)
RoleResponse = (
    ArchitectResponse
    | AuthorResponse
    | ReviewerResponse
    | HostResponse
    | ContextResponse
    | DreamerResponse
)

PAYLOAD_MODELS: Final[dict[str, type[BaseModel]]] = {
    "architect": ArchitectPayload,
    "author": AuthorPayload,
    "reviewer": ReviewerPayload,
    "host": HostPayload,
    "context": ContextPayload,
    "dreamer": DreamerPayload,
}
RESPONSE_MODELS: Final[dict[str, type[BaseModel]]] = {
    "architect": ArchitectResponse,
    "author": AuthorResponse,
    "reviewer": ReviewerResponse,
    "host": HostResponse,
    "context": ContextResponse,
    "dreamer": DreamerResponse,
}


def check_role(role: str) -> Role:
    """Return ``role`` if it is a protocol role, else raise :class:`UsageError`."""
    if role not in ROLES:
        raise UsageError(f"role {role!r} is not one of {', '.join(ROLES)}")
    return role  # type: ignore[return-value]


def validate_payload(role: str, obj: Any, source: str = "payload") -> RolePayload:
    """Validate ``obj`` as the payload of ``role``; a mismatch is a :class:`SchemaError`."""
    check_role(role)
    if isinstance(obj, Mapping) and obj.get("role") != role:
        raise SchemaError(f"{source}: role is {obj.get('role')!r}, expected {role!r}")
    model: RolePayload = validate_model(PAYLOAD_MODELS[role], obj, source)  # type: ignore[assignment]
    return model


def validate_response(
    role: str, obj: Any, *, payload: Mapping[str, Any] | None = None
) -> RoleResponse:
    """Validate a worker's response for ``role``; raise :class:`SchemaError` when it is invalid.

    With the ``payload`` it answered, the payload's limits are checked too: the architect's
    ``maxCases``; the author's ``maxFiles``, the runner's test-path pattern, and ``maxCases``
    counted as test functions (``def test_...`` for pytest, ``test(``/``it(`` calls for node);
    the dreamer's ``maxCandidates``.
    The transport records this error as failure class ``invalid-response``.
    """
    check_role(role)
    response: RoleResponse = validate_model(  # type: ignore[assignment]
        RESPONSE_MODELS[role], obj, f"{role} response"
    )
    if payload is None:
        return response
    if isinstance(response, ArchitectResponse):
        limit = payload.get("limits", {}).get("maxCases")
        if isinstance(limit, int) and len(response.cases) > limit:
            raise SchemaError(
                f"architect response: {len(response.cases)} cases exceed limits.maxCases {limit}"
            )
    if isinstance(response, AuthorResponse):
        _check_author_limits(response, payload)
    if isinstance(response, DreamerResponse):
        limits = payload.get("limits", {})
        limit = limits.get("maxCandidates") if isinstance(limits, Mapping) else None
        if isinstance(limit, int) and len(response.candidates) > limit:
            raise SchemaError(
                f"dreamer response: {len(response.candidates)} candidates exceed "
                f"limits.maxCandidates {limit}"
            )
    return response


_PY_TEST_DEF: Final = re.compile(r"^\s*(?:async\s+)?def\s+test_?\w*\s*\(", re.MULTILINE)
_NODE_TEST_CALL: Final = re.compile(r"(?<![\w.])(?:test|it)\s*\(")


def count_test_cases(runner: str, content: str) -> int:
    """Count the test cases in one test file: ``def test...`` or ``test(``/``it(`` calls."""
    pattern = _PY_TEST_DEF if runner == "pytest" else _NODE_TEST_CALL
    return len(pattern.findall(content))


def _check_author_limits(response: AuthorResponse, payload: Mapping[str, Any]) -> None:
    task = payload.get("task", {})
    runner = task.get("runner") if isinstance(task, Mapping) else None
    limits = payload.get("limits", {})
    max_files = limits.get("maxFiles") if isinstance(limits, Mapping) else None
    max_cases = limits.get("maxCases") if isinstance(limits, Mapping) else None
    if isinstance(max_files, int) and len(response.files) > max_files:
        raise SchemaError(
            f"author response: {len(response.files)} files exceed limits.maxFiles {max_files}"
        )
    allow_conftest = isinstance(limits, Mapping) and limits.get("allowConftest") is True
    if runner in TEST_PATHS:
        for entry in response.files:
            if entry.path == CONFTEST_PATH and runner == "pytest":
                if not allow_conftest:
                    raise SchemaError(
                        f"author response: {CONFTEST_PATH!r} is refused unless "
                        "limits.allowConftest is true"
                    )
                continue
            if not TEST_PATHS[runner].fullmatch(entry.path):
                raise SchemaError(
                    f"author response: {entry.path!r} is not a {runner} test path "
                    f"({TEST_PATH_SHAPES[runner]})"
                )
        if isinstance(max_cases, int):
            total = sum(count_test_cases(runner, entry.content) for entry in response.files)
            if total > max_cases:
                raise SchemaError(
                    f"author response: {total} test cases exceed limits.maxCases {max_cases}"
                )
