"""The memory's boundary models: what ``lorelab memory`` and ``lorelab mcp`` take and return.

Field names are spelled as issue 5 spells them (``exit_code``, ``plan_id``,
``budget_tokens``), so a tool call and a ``--json`` CLI output carry the same keys.
"""

import re
from typing import Annotated, Final, Literal

from pydantic import Field, field_validator

from lorelab._model import InputModel, OutputModel
from lorelab.memory._retrieval_models import CONFIDENCE_DOC, TIER_DOC, Tier
from lorelab.memory._skill_names import SKILL_DESCRIPTION_MAX, check_skill_name

SCHEMA_VERSION: Final = "lorelab.memory/1"
HEALTH_START: Final = 2
HEALTH_CAP: Final = 5
TOKENS_ESTIMATE_METHOD: Final = "ceil(utf8_bytes(text) / 4): an estimate, not a tokenizer count"

Outcome = Literal["passed", "failed"]
QA = Literal["approved", "unreviewed"]
ExperienceTrust = Literal["verified", "unverified"]
SkillState = Literal["trusted", "review_required"]
CandidateState = Literal["candidate", "checked", "check_failed", "promoted"]
CandidateOrigin = Literal["mined", "worker"]
ProposalRefusal = Literal["sources", "steps", "checks", "name", "description", "duplicate"]
ItemKind = Literal["experience", "skill", "plan", "brief", "candidate", "lock", "lesson"]

_TEXT = 8000
_SHORT = 400

# An exit code as a process can report one: negative for a signal (as Python reports it),
# up to 2**32 - 1 (Windows reports unsigned 32-bit codes). A number outside that is a
# mistake, and bounding it keeps every stored integer inside SQLite's 64-bit range.
EXIT_CODE_MIN: Final = -(2**31)
EXIT_CODE_MAX: Final = 2**32 - 1
ExitCode = Annotated[int, Field(ge=EXIT_CODE_MIN, le=EXIT_CODE_MAX)]


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def _relative_file(value: str) -> str:
    if not value or len(value) > 1024:
        raise ValueError("file path must be 1 to 1024 characters")
    if "\x00" in value:
        raise ValueError("file path contains NUL")
    if value.startswith("/") or re.match(r"[A-Za-z]:[\\/]", value):
        raise ValueError(f"file path {value!r} must be relative to the project")
    if ".." in re.split(r"[\\/]", value):
        raise ValueError(f"file path {value!r} must not contain '..'")
    return value


# ---------------------------------------------------------------- record


class Verification(InputModel):
    """How the work was verified: the command run and what it returned."""

    command: str = Field(min_length=1, max_length=2000, description="The verification command.")
    exit_code: ExitCode = Field(
        description="Exit code of the verification command (an integer, not a string)."
    )
    output_digest: str | None = Field(
        default=None,
        max_length=200,
        description="Optional digest of the verification output (for example 'sha256:...').",
    )

    check_blank = field_validator("command")(_non_blank)


class CommandRun(InputModel):
    """A command the agent ran while working, with its exit code."""

    command: str = Field(min_length=1, max_length=2000, description="The command as run.")
    exit_code: ExitCode = Field(description="Its exit code (an integer).")


class RecordRequest(InputModel):
    """One experience: a task, what was done, and how it was verified."""

    task: str = Field(min_length=1, max_length=_TEXT, description="The task as it was given.")
    summary: str = Field(
        min_length=1, max_length=_TEXT, description="What was done and what worked."
    )
    outcome: Outcome = Field(description="'passed' or 'failed'.")
    verification: Verification = Field(description="The verification command and its result.")
    steps: list[Annotated[str, Field(min_length=1, max_length=2000)]] = Field(
        default=[], max_length=100, description="Optional steps, in order, as short sentences."
    )
    commands: list[CommandRun] = Field(
        default=[], max_length=200, description="Commands run, in order, with exit codes."
    )
    files: list[Annotated[str, Field(max_length=1024)]] = Field(
        default=[], max_length=500, description="Files touched, relative to the project."
    )
    project: str | None = Field(
        default=None, max_length=_SHORT, description="Project name the work belongs to."
    )
    qa: QA = Field(
        default="unreviewed", description="'approved' once a person or reviewer approved it."
    )
    plan_id: str | None = Field(default=None, description="The plan this work followed, if any.")
    skill_id: str | None = Field(default=None, description="The Skill this work used, if any.")
    host: str | None = Field(
        default=None, max_length=_SHORT, description="The agent host (claude, codex, ...)."
    )
    model: str | None = Field(
        default=None, max_length=_SHORT, description="The model the host says it used."
    )
    task_id: str | None = Field(
        default=None,
        max_length=_SHORT,
        description="The task's identifier in an evaluation, checked against holdout locks.",
    )

    check_blank = field_validator("task", "summary")(_non_blank)

    @field_validator("files")
    @classmethod
    def _files(cls, value: list[str]) -> list[str]:
        return [_relative_file(item) for item in value]


class RecordResult(OutputModel):
    """What ``record`` stored."""

    id: str = Field(description="The experience id.")
    verified: bool = Field(
        description="True when the verification command exited 0 and the outcome is 'passed'."
    )
    redactions: dict[str, int] = Field(description="Secrets redacted before storing, by kind.")


# ---------------------------------------------------------------- prepare


class PrepareRequest(InputModel):
    """A new task to brief."""

    task: str = Field(min_length=1, max_length=_TEXT, description="The new task.")
    project: str | None = Field(
        default=None,
        max_length=_SHORT,
        description="Only use memories of this project (and memories with no project).",
    )
    include_skills: bool = Field(default=True, description="Include relevant Skills.")
    budget_tokens: int = Field(
        default=1200, ge=50, le=32000, description="Largest brief, in estimated tokens."
    )

    check_blank = field_validator("task")(_non_blank)


class RelevanceFloor(OutputModel):
    """The documented floor an item must clear to reach a brief or a plan."""

    min_coverage: float = Field(
        description="Least IDF-weighted share of the task's informative terms the item contains."
    )
    min_matched_terms: int = Field(description="Least number of informative task terms matched.")


class BriefExperience(OutputModel):
    """A relevant verified experience in a brief."""

    id: str
    tier: Tier = Field(description=TIER_DOC)
    confidence: float | None = Field(description=CONFIDENCE_DOC)
    score: float = Field(description="The confidence (no vectors: keyword coverage), in [0, 1].")
    task: str
    summary: str
    verification_command: str


class AvoidCommand(OutputModel):
    """A command that failed before on similar work and never succeeded in that experience."""

    command: str
    exit_code: int
    experience_id: str


class SkillStep(OutputModel):
    """One step of a Skill: a command and the exit code it is expected to return."""

    command: str
    expected_exit_code: int = 0


class BriefSkill(OutputModel):
    """A relevant healthy Skill in a brief."""

    id: str
    name: str
    description: str
    score: float
    health: int
    steps: list[SkillStep]


class Brief(OutputModel):
    """What ``prepare`` returns: only verified, relevant memory, within the token budget."""

    schema_version: str = SCHEMA_VERSION
    brief_id: str | None = Field(description="Its audit id; null: a read-only store kept none.")
    task: str
    project: str | None
    empty: bool = Field(description="True when the brief says nothing.")
    reason: str | None = Field(description="Why the brief is empty; null when it is not.")
    experiences: list[BriefExperience]
    avoid_commands: list[AvoidCommand]
    skills: list[BriefSkill]
    omitted: int = Field(description="Relevant items left out to stay within the budget.")
    text: str = Field(description="The brief as the agent should read it.")
    tokens_estimate: int = Field(description="Estimated tokens of 'text'.")
    tokens_estimate_method: str = TOKENS_ESTIMATE_METHOD
    budget_tokens: int
    relevance_floor: RelevanceFloor


# ---------------------------------------------------------------- skills and plans


class PromoteRequest(InputModel):
    """Two or more verified, QA-approved experiences that share a procedure."""

    experience_ids: list[str] = Field(min_length=2, max_length=50)
    name: str = Field(description="Agent Skills name: lowercase letters, digits, hyphens.")
    description: str = Field(max_length=SKILL_DESCRIPTION_MAX)

    check_name = field_validator("name")(check_skill_name)
    check_blank = field_validator("description")(_non_blank)


class Skill(OutputModel):
    """A procedure promoted from verified work."""

    kind: Literal["skill"] = "skill"
    id: str
    name: str
    description: str
    steps: list[SkillStep]
    source_experience_ids: list[str]
    origin: Literal["promoted", "dream"]
    candidate_id: str | None
    project: str | None
    health: int
    state: SkillState
    created_at: str
    validity: str = "trusted"
    validity_reason: str | None = None


class StartRequest(InputModel):
    """A new task to plan with the best healthy Skill."""

    task: str = Field(min_length=1, max_length=_TEXT)
    project: str | None = Field(default=None, max_length=_SHORT)
    include_review_required: bool = Field(
        default=False, description="Also consider Skills whose health reached 0."
    )

    check_blank = field_validator("task")(_non_blank)


class StartResult(OutputModel):
    """A plan, or ``plan_id: null`` and the reason there is none."""

    plan_id: str | None
    skill_id: str | None
    score: float | None
    steps: list[SkillStep]
    reason: str | None
    brief: Brief


class OutcomeRequest(InputModel):
    """The outcome of following a plan."""

    plan_id: str
    passed: bool
    rework_count: int = Field(ge=0, le=1000)


class OutcomeResult(OutputModel):
    """The plan's audit and the Skill's health after it."""

    plan_id: str
    skill_id: str
    passed: bool
    rework_count: int
    health: int
    health_cap: int = HEALTH_CAP
    state: SkillState


class SkillHealthRequest(InputModel):
    """Which Skill's health to read; all Skills when omitted."""

    skill_id: str | None = None


class SkillHealth(OutputModel):
    """Health of one Skill and the plan outcomes behind it."""

    skill_id: str
    name: str
    health: int
    health_cap: int = HEALTH_CAP
    state: SkillState
    successes: int
    failures: int
    plans_started: int
    plans_unreported: int


class SkillHealthResult(OutputModel):
    skills: list[SkillHealth]


# ---------------------------------------------------------------- dreams


class DreamRequest(InputModel):
    """Mine candidate Skills from verified experiences."""

    project: str | None = Field(default=None, max_length=_SHORT)
    limit: int = Field(
        default=200, ge=2, le=5000, description="Most recent verified experiences considered."
    )


class CheckResult(OutputModel):
    """One check of a candidate, as run."""

    command: str
    expected_exit_code: int
    status: Literal["passed", "failed", "timed_out", "error", "not_run"]
    exit_code: int | None
    duration_ms: int | None
    output_tail: str = Field(description="Last bytes of stdout+stderr, redacted.")
    error: str | None
    sandbox: Literal["bubblewrap", "partial", "none"] | None = Field(
        default=None,
        description=(
            "The confinement the check really ran in: 'bubblewrap' (no network, writes only to "
            "the disposable copy and a private /tmp, own PID namespace), 'partial', or 'none' "
            "(descendants still killed); null when it never started."
        ),
    )


class CheckRun(OutputModel):
    """One run of all checks of a candidate in a disposable copy of the project."""

    kind: Literal["check_run"] = "check_run"
    id: str
    candidate_id: str
    passed: bool
    results: list[CheckResult]
    timeout_seconds: float
    copy_method: str
    created_at: str


class ClaimedModel(OutputModel):
    """The model a worker says it used: a claim, never verified."""

    claimed: str | None = Field(description="The response's model; null when not reported.")
    verified: None = Field(default=None, description="Always null: lorelab cannot verify it.")


class WorkerProvenance(OutputModel):
    """Where a worker-proposed candidate came from: which worker, asked what, when."""

    worker_argv: list[str] = Field(description="The worker's argv as declared (redacted).")
    operator_identity: str | None = Field(description="The operator's --identity text.")
    launcher_sha256: str = Field(description="SHA-256 of the launcher the identity bound.")
    role: Literal["dreamer"] = Field(default="dreamer", description="The protocol role called.")
    prompt_version: str = Field(description="The role-prompt version of the call's receipt.")
    prompt_hash: str = Field(description="The role-prompt hash of the call's receipt.")
    model: ClaimedModel
    evidence_kind: str | None = Field(
        description="The response's evidenceKind: 'protocol-fixture' for the shipped fixture "
        "(synthetic: it exercises the protocol, nothing more); null otherwise."
    )
    called_at: str = Field(description="When the call was made (UTC, ISO 8601).")


class Candidate(OutputModel):
    """A candidate Skill from a Dream; trusted only once its checks pass and it is promoted."""

    kind: Literal["candidate"] = "candidate"
    id: str
    name: str
    description: str
    steps: list[SkillStep]
    checks: list[SkillStep]
    source_experience_ids: list[str]
    origin: CandidateOrigin = Field(
        description="'mined' (deterministic mining) or 'worker' (proposed by a dreamer worker)."
    )
    provenance: WorkerProvenance | None = Field(
        default=None, description="The worker call a 'worker' candidate came from; null if mined."
    )
    project: str | None
    state: CandidateState
    skill_id: str | None
    last_check: CheckRun | None
    created_at: str


class DreamResult(OutputModel):
    candidates: list[Candidate] = Field(description="New candidates from this Dream.")
    considered_experiences: int
    already_known: int = Field(description="Shared procedures already a Skill or a candidate.")
    reason: str | None = Field(
        default=None,
        description="Why no new candidate was proposed, with the mining rule; null when one was.",
    )


class CandidateProposal(InputModel):
    """A candidate Skill proposed by a worker, judged by the store before anything is stored."""

    name: str
    description: str
    steps: list[str]
    checks: list[SkillStep]
    source_experience_ids: list[str]


class ProposalOutcome(OutputModel):
    """What the store did with one proposal: stored as a candidate, or refused with a reason."""

    index: int = Field(description="1-based position of the proposal in the worker's response.")
    name: str = Field(description="The proposed name (redacted).")
    status: Literal["stored", "refused"]
    candidate_id: str | None = Field(description="The candidate stored; null when refused.")
    refusal: ProposalRefusal | None = Field(description="What was wrong; null when stored.")
    reason: str | None = Field(description="One line saying why it was refused.")


class WorkerDreamRequest(InputModel):
    """A Dream through a worker: the experiences it sees and how many candidates it may propose."""

    project: str | None = Field(default=None, max_length=_SHORT)
    limit: int = Field(
        default=200, ge=2, le=5000, description="Most recent verified experiences given."
    )
    max_candidates: int = Field(
        default=10, ge=1, le=100, description="The most candidates the worker may propose."
    )


class CheckRequest(InputModel):
    candidate_id: str
    timeout_seconds: float = Field(default=60.0, gt=0, le=1800)


class PromoteCandidateRequest(InputModel):
    candidate_id: str
    name: str | None = None
    description: str | None = Field(default=None, max_length=SKILL_DESCRIPTION_MAX)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return None if value is None else check_skill_name(value)
