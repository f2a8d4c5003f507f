"""The four-condition manifest (``eval/conditions.json``): its models, its JSON Schema, and the
rules a manifest must satisfy before any run (holdouts, seeds, the Skill's provenance)."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import Field, StrictBool, StrictInt, field_validator

from lorelab._model import RecordModel
from lorelab.errors import PathError, SchemaError
from lorelab.io import read_json, validate_model
from lorelab.workers.roles import MAX_TIMEOUT_MS
from lorelab.workspace import canonical_path

MIN_TASKS: Final = 10
MAX_TASKS: Final = 20
MIN_HOLDOUTS: Final = 6
SEED_COUNT: Final = 2
# The worker protocol caps every host call; the time budget is spent in calls of at most this.
MAX_HOST_CALL_MS: Final = MAX_TIMEOUT_MS
MAX_REWORK_BUDGET: Final = 5
CONDITIONS: Final = ("baseline", "memory_guided", "skill_planned", "dreaming")
MEMORY_CONDITIONS: Final = ("memory_guided", "skill_planned", "dreaming")
_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# Verify commands run without a shell, so shell control operators would be passed to the
# program as plain arguments; refusing them keeps "one focused command" literal.
_SHELL_OPERATORS: Final = frozenset({"&&", "||", ";", "|", "&", ">", ">>", "<", "2>", "2>&1"})
# ``NAME=value cmd`` and shell builtins only mean something to a shell; without one the
# assignment would be run as a program name and the builtin would not be found.
_ENV_ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)
_SHELL_BUILTINS: Final = frozenset(
    {"cd", "export", "source", ".", "set", "unset", "alias", "eval", "exec", "ulimit", "umask"}
)
_REDIRECTION: Final = re.compile(r"(?:[0-9]*|&)(?:>>?|<)")
# Characters a shell acts on when they stand unquoted anywhere in a word (``tests;rm``,
# ``a|b``, ``tests/test_*.py``): operators, and glob characters it would expand; each with
# what is wrong when they are found ({} lists those found).
_UNQUOTED: Final = (
    (
        frozenset(";|&<>()"),
        "verify must be one command run without a shell; found shell operator(s) {} inside a "
        "word (quote the character when the program itself takes it)",
    ),
    (
        frozenset("*?"),
        "verify uses the unquoted glob character(s) {}, which only a shell expands; verify runs "
        "without one (name the files, or quote the character when the program itself takes it)",
    ),
)


def _unquoted(command: str) -> list[str]:
    """The characters of ``command`` a POSIX shell would see unquoted and unescaped."""
    found: list[str] = []
    quote: str | None = None
    escaped = False
    for char in command:
        if escaped:
            escaped = False
        elif quote == "'":
            if char == "'":
                quote = None
        elif quote == '"':
            if char == "\\":
                escaped = True
            elif char == '"':
                quote = None
        elif char == "\\":
            escaped = True
        elif char in "'\"":
            quote = char
        else:
            found.append(char)
    return found


Condition = Literal["baseline", "memory_guided", "skill_planned", "dreaming"]


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank (whitespace only)")
    return value


def _check_id(value: str, what: str) -> str:
    if not _ID.fullmatch(value):
        raise ValueError(
            f"{what} {value!r} must be 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return value


class ProjectSpec(RecordModel):
    """The project every condition starts from, copied fresh for each task x condition."""

    path: str = Field(
        min_length=1,
        description="Directory of the project, absolute or relative to the manifest's directory.",
    )


class HostSpec(RecordModel):
    """The host agent, identical for every condition."""

    argv: list[str] | None = Field(
        default=None,
        description=(
            "The host's argv or a shipped adapter name as a one-element list; null means the "
            "host is named with --host on the command line. When set, --host must resolve to "
            "the same argv."
        ),
    )
    model: str | None = Field(
        default=None,
        min_length=1,
        description=(
            "The model the host is asked to use. Passed as --model to the shipped agent "
            "adapters (claude, codex, gemini, fixture-host); the model each response claims is "
            "recorded per run and a mismatch is flagged."
        ),
    )
    settings: dict[str, Any] = Field(
        default_factory=dict,
        description="Host settings, recorded as declared (lorelab cannot apply or verify them).",
    )
    permissions: dict[str, Any] | list[str] | str | None = Field(
        default=None,
        description="Host permissions, recorded as declared (lorelab cannot apply or verify them).",
    )
    time_budget_s: StrictInt = Field(
        gt=0,
        le=(MAX_REWORK_BUDGET + 1) * MAX_HOST_CALL_MS // 1000,
        description=(
            "Budget in seconds of host-call time for all attempts of one task x condition "
            "(verify commands have their own timeout). Attempt k gets the budget left, at most "
            "120 s (the worker protocol's cap per call), so the budget may not exceed "
            "120 s x (reworkBudget + 1)."
        ),
    )


class TaskSpec(RecordModel):
    """One task, written (with its expected behaviour) before any run."""

    id: str = Field(description="Task id: 1-64 letters, digits, '.', '_' or '-'.")
    prompt: str = Field(min_length=1, description="What the host is asked to do.")
    verify: str = Field(
        description=(
            "One focused, deterministic verify command, split like a shell would (shlex) and "
            "run without a shell from the project root; exit 0 means the task is done."
        )
    )
    expected_behaviour: str = Field(
        min_length=1, description="The behaviour the verify command checks, in words."
    )
    holdout: StrictBool = Field(description="Whether the task is held out from memory.")
    files: list[str] = Field(
        min_length=1,
        description=(
            "Canonical relative paths the task needs changed; the mechanical relevance rule "
            "checks whether guidance names them."
        ),
    )

    commands: list[str] = Field(
        default_factory=list,
        description=(
            "Commands the task is expected to need besides verify (for example a search), "
            "declared before any run; the relevance rule checks whether guidance names them."
        ),
    )

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _check_id(value, "task id")

    @field_validator("prompt", "expected_behaviour")
    @classmethod
    def _text(cls, value: str) -> str:
        return _not_blank(value)

    @field_validator("files")
    @classmethod
    def _files(cls, value: list[str]) -> list[str]:
        for path in value:
            try:
                canonical_path(path)
            except PathError as exc:
                raise ValueError(str(exc)) from None
        return value

    def verify_argv(self) -> list[str]:
        """The verify command as an argv list."""
        return shlex.split(self.verify)


class SeedSpec(RecordModel):
    """A QA-approved seed task whose verified experience the Skill was promoted from."""

    task_id: str = Field(description="The seed task's id (a non-holdout task of this manifest).")
    experience_id: str = Field(min_length=1, description="The seed's experience id in memory.")
    qa: Literal["approved"] = Field(description="QA verdict; only 'approved' seeds are allowed.")


class SkillSource(RecordModel):
    """One experience a Skill was promoted from, with the task it records."""

    experience_id: str = Field(min_length=1, description="The source experience id.")
    task_id: str = Field(description="The task that experience records.")


class SkillSpec(RecordModel):
    """The single Skill promoted from the two seed experiences."""

    id: str = Field(min_length=1, description="The Skill's id in memory.")
    name: str | None = Field(default=None, description="The Skill's name, if known.")
    promoted_from: list[SkillSource] = Field(
        min_length=1, description="The experiences the Skill was promoted from."
    )


def _threshold(
    default: float,
    description: str,
    *,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
) -> Any:
    """A decision threshold, strict: "0.05" (a string) or true is a mistake in a threshold, not
    a value."""
    return Field(default=default, gt=gt, ge=ge, lt=lt, le=le, strict=True, description=description)


def _share(default: float, description: str) -> Any:
    """A threshold on a share of runs: a number from 0 to 1 (strict: "0.2" is a mistake)."""
    return _threshold(default, description, ge=0, le=1)


class Thresholds(RecordModel):
    """Decision thresholds for the dreaming condition, declared before any run."""

    alpha: float = _threshold(0.05, "Significance level of the exact sign test.", gt=0, lt=1)
    max_negative_transfer: StrictInt = _threshold(
        0, "Most holdout tasks baseline passed and the condition may fail.", ge=0
    )
    max_pollution_rate: float = _share(
        0.2, "Highest share of holdout runs that may serve irrelevant guidance or unchecked items."
    )
    max_irrelevance_rate: float = _share(
        0.5, "Highest share of holdout runs whose retrieval_relevant may be false."
    )
    max_mean_guidance_tokens: float = _threshold(
        1200, "Highest mean estimated guidance tokens per holdout run.", ge=0
    )
    review_required_failures: StrictInt = _threshold(
        2, "Failed runs under one Skill that mark it review_required.", ge=1
    )


class MemorySpec(RecordModel):
    """The memory under test, reached as an MCP client over stdio."""

    profile: Literal[
        "lorelab", "memcoder", "server-memory", "basic-memory", "memorix", "memory-keeper"
    ] = Field(
        default="lorelab",
        description="A shipped memory profile; `run --memory-profile FILE` names any other "
        "profile file without changing the manifest.",
    )
    argv: list[str] | None = Field(
        default=None,
        description=(
            "Command that starts the MCP server on stdio; null means the profile's default "
            "(lorelab: this Python running 'lorelab mcp')."
        ),
    )


class ConditionsManifest(RecordModel):
    """The four-condition evaluation manifest (``eval/conditions.json``)."""

    schema_version: Literal[1] = Field(description="Manifest format version.")
    id: str = Field(description="Evaluation id; names the evaluation lock in memory.")
    project: ProjectSpec
    host: HostSpec
    prompt_template: str = Field(
        description=(
            "Prompt handed to the host; '{prompt}' is replaced by the task prompt and "
            "'{task_id}' by its id. Nothing else is substituted."
        )
    )
    rework_budget: StrictInt = Field(
        default=2,
        ge=0,
        le=MAX_REWORK_BUDGET,
        description="Further host attempts allowed after a failed verification.",
    )
    tasks: list[TaskSpec] = Field(
        min_length=MIN_TASKS, max_length=MAX_TASKS, description="10 to 20 tasks."
    )
    seeds: list[SeedSpec] = Field(description="Exactly two QA-approved seed tasks.")
    shared_procedure: str = Field(
        min_length=1, description="The procedure both seeds share, in words."
    )
    skill: SkillSpec
    thresholds: Thresholds = Field(default_factory=Thresholds)
    memory: MemorySpec = Field(default_factory=MemorySpec)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _check_id(value, "evaluation id")

    @field_validator("prompt_template")
    @classmethod
    def _template(cls, value: str) -> str:
        if "{prompt}" not in value:
            raise ValueError("must contain '{prompt}'")
        return value

    @field_validator("shared_procedure")
    @classmethod
    def _procedure(cls, value: str) -> str:
        return _not_blank(value)

    def task(self, task_id: str) -> TaskSpec:
        """The task with ``task_id``."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)

    def holdout_ids(self) -> list[str]:
        """Ids of the holdout tasks, in manifest order."""
        return [task.id for task in self.tasks if task.holdout]

    def render_prompt(self, task: TaskSpec) -> str:
        """The prompt the host receives for ``task``."""
        return self.prompt_template.replace("{task_id}", task.id).replace("{prompt}", task.prompt)


def manifest_schema() -> dict[str, Any]:
    """The JSON Schema of the manifest, generated from the models."""
    return ConditionsManifest.model_json_schema(by_alias=True)


def _precheck_verify(data: Any, source: str) -> None:
    # Named here rather than left to pydantic so the message names the task, not an index.
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list):
        return
    for index, task in enumerate(data["tasks"]):
        if not isinstance(task, dict):
            continue
        name = task.get("id") if isinstance(task.get("id"), str) else f"#{index + 1}"
        verify = task.get("verify")
        if verify is None or (isinstance(verify, str) and not verify.strip()):
            raise SchemaError(f"{source}: task {name} has no verify command")


def _check_verify(task: TaskSpec, source: str) -> None:
    try:
        argv = task.verify_argv()
    except ValueError as exc:
        raise SchemaError(
            f"{source}: task {task.id}: verify command cannot be split: {exc}"
        ) from None
    if not argv:
        raise SchemaError(f"{source}: task {task.id} has no verify command")
    operators = sorted({arg for arg in argv if arg in _SHELL_OPERATORS or _REDIRECTION.match(arg)})
    if operators:
        raise SchemaError(
            f"{source}: task {task.id}: verify must be one command run without a shell; "
            f"found shell operator(s) {', '.join(operators)}"
        )
    if _ENV_ASSIGNMENT.fullmatch(argv[0]):
        raise SchemaError(
            f"{source}: task {task.id}: verify starts with the environment assignment "
            f"{argv[0]!r}, which needs a shell; verify runs without one (set the variable in "
            "the project, e.g. in its test configuration)"
        )
    if argv[0] in _SHELL_BUILTINS:
        raise SchemaError(
            f"{source}: task {task.id}: verify starts with the shell builtin {argv[0]!r}, which "
            "needs a shell; verify runs without one from the project root"
        )
    expansions = [arg for arg in argv if arg.startswith("$") or "$(" in arg or "`" in arg]
    if expansions:
        raise SchemaError(
            f"{source}: task {task.id}: verify uses shell expansion {expansions[0]!r}, which "
            "needs a shell; verify runs without one"
        )
    bare = _unquoted(task.verify)
    # Attached to a word (``tests;rm -rf x``, ``a|b``) an operator is just as much a shell's.
    for characters, problem in _UNQUOTED:
        found = sorted({char for char in bare if char in characters})
        if found:
            raise SchemaError(f"{source}: task {task.id}: {problem.format(' '.join(found))}")


def _check_time_budget(manifest: ConditionsManifest, source: str) -> None:
    attempts = manifest.rework_budget + 1
    usable_s = attempts * MAX_HOST_CALL_MS // 1000
    if manifest.host.time_budget_s > usable_s:
        raise SchemaError(
            f"{source}: host.timeBudgetS {manifest.host.time_budget_s} can never be used: "
            f"reworkBudget {manifest.rework_budget} allows {attempts} host attempt(s) of at most "
            f"{MAX_HOST_CALL_MS // 1000} s each ({usable_s} s in all)"
        )


def check_manifest(manifest: ConditionsManifest, source: str) -> ConditionsManifest:
    """Enforce the protocol's rules; each violation is one :class:`SchemaError` naming it."""
    seen: set[str] = set()
    for task in manifest.tasks:
        if task.id in seen:
            raise SchemaError(f"{source}: task id {task.id} appears more than once")
        seen.add(task.id)
        _check_verify(task, source)
    _check_time_budget(manifest, source)
    holdouts = manifest.holdout_ids()
    if len(holdouts) < MIN_HOLDOUTS:
        raise SchemaError(
            f"{source}: {len(holdouts)} holdout task(s); the protocol needs at least {MIN_HOLDOUTS}"
        )
    if len(manifest.seeds) != SEED_COUNT:
        raise SchemaError(
            f"{source}: {len(manifest.seeds)} seed(s); the protocol needs exactly {SEED_COUNT}"
        )
    seed_tasks: dict[str, str] = {}
    for seed in manifest.seeds:
        if seed.task_id not in seen:
            raise SchemaError(f"{source}: seed task {seed.task_id} is not a task of the manifest")
        if seed.task_id in seed_tasks.values():
            raise SchemaError(f"{source}: seed task {seed.task_id} is named twice")
        if seed.experience_id in seed_tasks:
            raise SchemaError(f"{source}: seed experience {seed.experience_id} is named twice")
        if manifest.task(seed.task_id).holdout:
            raise SchemaError(
                f"{source}: seed task {seed.task_id} is also a holdout; a holdout must never "
                "be a seed"
            )
        seed_tasks[seed.experience_id] = seed.task_id
    holdout_set = set(holdouts)
    for origin in manifest.skill.promoted_from:
        if origin.task_id in holdout_set:
            raise SchemaError(
                f"{source}: Skill {manifest.skill.id} is promoted from experience "
                f"{origin.experience_id} of holdout task {origin.task_id}; a Skill must never "
                "come from a holdout"
            )
        if origin.task_id not in seen:
            raise SchemaError(
                f"{source}: Skill {manifest.skill.id} names experience {origin.experience_id} "
                f"of unknown task {origin.task_id}"
            )
    sources = {(o.experience_id, o.task_id) for o in manifest.skill.promoted_from}
    expected = set(seed_tasks.items())
    if sources != expected or len(manifest.skill.promoted_from) != len(expected):
        raise SchemaError(
            f"{source}: Skill {manifest.skill.id} must be promoted from exactly the two seed "
            f"experiences ({', '.join(sorted(seed_tasks))})"
        )
    return manifest


def load_manifest(path: str | os.PathLike[str]) -> ConditionsManifest:
    """Read (bounded, strict JSON), validate and check a conditions manifest."""
    source = os.fspath(path)
    data = read_json(path, "manifest")
    _precheck_verify(data, source)
    return check_manifest(validate_model(ConditionsManifest, data, source), source)


def project_dir(manifest: ConditionsManifest, manifest_path: str | os.PathLike[str]) -> Path:
    """The project directory, resolving a relative path against the manifest's directory."""
    base = Path(os.path.abspath(os.fspath(manifest_path))).parent
    candidate = Path(manifest.project.path)
    return candidate if candidate.is_absolute() else base / candidate
