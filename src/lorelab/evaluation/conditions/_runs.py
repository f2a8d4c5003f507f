"""The protocol's runs file (``eval/beta2_runs.json``): one record per task x condition.

The format is the protocol's own, snake_case keys included, so a file written by hand for the
protocol is read as it is; fields lorelab does not know are kept and ignored.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from lorelab.errors import InputFileError, SchemaError
from lorelab.evaluation.conditions._manifest import CONDITIONS, MEMORY_CONDITIONS, Condition
from lorelab.io import loads_strict, read_bounded, sha256_bytes, validate_model

RUNS_FILE: Final = "beta2_runs.json"
"""The protocol's own name for its runs file."""
RUNS_LIMIT: Final = 8 * 1024 * 1024
MEMORY_FAILURES: Final = ("memory-failure", "memory-error")
EXECUTOR_FAILURE: Final = "executor-failure"
# Host failures that mean the run was refused, not judged: what answered was not what was bound.
REFUSED_FAILURES: Final = ("identity-changed",)
MAX_COUNT: Final = 10**9
_SHOWN: Final = 5
_SHA256: Final = re.compile(r"[0-9a-f]{64}")


def _count(description: str) -> Any:
    """An optional count, bounded so that means stay finite floats (no real run comes near)."""
    return Field(default=None, ge=0, le=MAX_COUNT, description=description)


def _optional(description: str) -> Any:
    """A field the protocol makes optional: absent or null when not known or not applicable."""
    return Field(default=None, description=f"Optional: {description}")


class RunRecord(BaseModel):
    """One task x condition outcome, in the protocol's own keys."""

    model_config = ConfigDict(extra="allow", frozen=True)

    task_id: str = Field(min_length=1, description="The task's id.")
    condition: Condition = Field(description="baseline, memory_guided, skill_planned or dreaming.")
    passed: StrictBool = Field(description="Whether the final verification passed.")
    rework_count: StrictInt | None = _count(
        "Meaningful retry/edit/test cycles after the first attempt; absent or null when "
        "unknown (lorelab's runner: the host did not report its cycles)."
    )
    retrieval_relevant: StrictBool | None = Field(
        default=None,
        description="Whether the guidance was relevant (required for memory conditions).",
    )
    guidance_tokens: StrictInt | None = _count("Estimated tokens of guidance handed to the host.")
    notes: str | None = Field(default=None, description="Free text.")
    holdout: StrictBool | None = _optional("whether the task is a holdout.")
    plan_id: str | None = _optional("the plan served.")
    skill_id: str | None = _optional(
        "the Skill the run used (a plan's source, or a brief's one Skill)."
    )
    skill_ids: list[str] | None = _optional(
        "every Skill the run was served (a plan's and a brief's)."
    )
    unchecked_items_served: StrictBool | None = _optional(
        "whether the guidance contained items not verified or checked."
    )
    evidence_kind: str | None = _optional("'protocol-fixture' for fixture-host runs.")
    own_solutions_served: list[str] | None = _optional(
        "served items that record this very holdout task (a leak)."
    )
    verify_files_edited: list[str] | None = _optional(
        "files deciding what the verify command checks that the host edited."
    )
    host_model_mismatch: StrictBool | None = _optional(
        "whether the host claimed a model other than the declared one."
    )
    host_failure: str | None = _optional(
        "why the run could not complete as declared (a failed host call such as 'timeout', or "
        "'memory-failure'); such a run counts as failed and is no clean measurement."
    )
    reprompt_count: StrictInt | None = _count(
        "Optional: how often lorelab's runner prompted the host again after a failed "
        "verification (not rework: rework is what the host did)."
    )
    memory_calls_failed: list[str] | None = _optional(
        "the memory operations that failed for this run (a memory-failure run: left out of "
        "every comparison, and it makes the decision invalid)."
    )

    def memory_failure(self) -> list[str] | None:
        """The memory calls that failed for this run; None when the memory answered.

        ``host_failure`` ``memory-failure`` (or ``memory-error``, as older runs files say)
        without named calls is a failure of an unnamed call."""
        if self.memory_calls_failed:
            return list(self.memory_calls_failed)
        if self.host_failure in MEMORY_FAILURES:
            return ["unnamed memory call"]
        return None

    def executor_failure(self) -> bool:
        """Whether the process or node running this run died (the run has no outcome)."""
        return self.host_failure == EXECUTOR_FAILURE

    def left_out(self) -> bool:
        """Whether this run is left out of every comparison (memory or executor failure)."""
        return self.memory_failure() is not None or self.executor_failure()

    def integrity_flags(self) -> list[str]:
        """What makes this run's outcome untrustworthy as a measurement, by name."""
        flags = []
        if self.memory_failure() is not None:
            flags.append("memory-failure")
        elif self.executor_failure():
            flags.append(EXECUTOR_FAILURE)
        elif self.host_failure:
            flags.append("host-failure")
        if self.verify_files_edited:
            flags.append("verify-files-edited")
        if self.host_model_mismatch:
            flags.append("host-model-mismatch")
        if self.own_solutions_served:
            flags.append("own-solution-served")
        if self.unchecked_items_served:
            flags.append("unchecked-items-served")
        return flags

    def used_skills(self) -> list[str]:
        """Every Skill this run used: its ``skill_id`` and its ``skill_ids``, once each."""
        return list(
            dict.fromkeys([*([self.skill_id] if self.skill_id else []), *(self.skill_ids or [])])
        )

    def memory_seen(self) -> list[str]:
        """What says this run received memory output (only allowed off baseline)."""
        seen = []
        if self.retrieval_relevant is True:
            seen.append("retrieval_relevant true")
        if self.guidance_tokens:
            seen.append(f"guidance_tokens {self.guidance_tokens}")
        if self.plan_id:
            seen.append(f"plan_id {self.plan_id}")
        if self.skill_id:
            seen.append(f"skill_id {self.skill_id}")
        if self.skill_ids:
            seen.append(f"skill_ids {', '.join(self.skill_ids)}")
        if self.unchecked_items_served or self.own_solutions_served:
            seen.append("served memory items")
        return seen


class RunsFile(BaseModel):
    """The runs file: ``{"runs": [...]}``; other top-level keys are allowed and ignored."""

    model_config = ConfigDict(extra="allow", frozen=True)

    runs: list[RunRecord] = Field(description="One record per task x condition.")


@dataclass(frozen=True, slots=True)
class LoadedRuns:
    """A runs file that passed every check, with the SHA-256 of its bytes."""

    source: str
    sha256: str
    runs: tuple[RunRecord, ...]
    manifest_sha256: str | None = None
    # True when no run is a dreaming run (a runs file of the three conditions MemCoder's own
    # evaluate summarizes): read, reported, and decided as incomplete.
    dreaming_missing: bool = False
    # Conditions the runs file declares not applicable (``conditions_not_applicable``), with
    # the reason: they have no runs, and the report says so.
    not_applicable: Mapping[str, str] = field(default_factory=dict)

    def decided_condition(self) -> str:
        """The condition the decision rests on: dreaming, or memory_guided when the file
        declares dreaming not applicable (a memory without a Dream: its dreaming would only be
        a second memory_guided)."""
        return "memory_guided" if "dreaming" in self.not_applicable else "dreaming"

    def task_ids(self) -> list[str]:
        """Task ids in order of first appearance."""
        return list(dict.fromkeys(run.task_id for run in self.runs))

    def get(self, task_id: str, condition: str) -> RunRecord:
        """The single run of ``task_id`` under ``condition``."""
        for run in self.runs:
            if run.task_id == task_id and run.condition == condition:
                return run
        raise KeyError((task_id, condition))


def _listing(items: list[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    more = f" (and {len(items) - _SHOWN} more)" if len(items) > _SHOWN else ""
    return shown + more


def check_runs(
    runs: RunsFile, source: str, *, expected_tasks: list[str] | None = None
) -> tuple[RunRecord, ...]:
    """Refuse repeated or missing task x condition pairs and memory runs without relevance.

    ``expected_tasks`` (from a manifest) must be exactly the tasks the runs name; without it
    the tasks are those the runs name. A file with no dreaming run at all is accepted (its
    report is incomplete); dreaming runs missing for some tasks only are refused.
    """
    if not runs.runs:
        raise SchemaError(f"{source}: runs is empty")
    counts = Counter((run.task_id, run.condition) for run in runs.runs)
    repeated = [f"{task} x {condition}" for (task, condition), n in counts.items() if n > 1]
    if repeated:
        raise SchemaError(f"{source}: repeated task x condition: {_listing(repeated)}")
    named = list(dict.fromkeys(run.task_id for run in runs.runs))
    if expected_tasks is not None:
        unknown = [task for task in named if task not in set(expected_tasks)]
        if unknown:
            raise SchemaError(f"{source}: runs name tasks not in the manifest: {_listing(unknown)}")
    tasks = expected_tasks if expected_tasks is not None else named
    absent = set(not_applicable(runs, source))
    declared_absent = [
        f"{run.task_id} x {run.condition}" for run in runs.runs if run.condition in absent
    ]
    if declared_absent:
        raise SchemaError(
            f"{source}: runs of conditions declared not applicable: {_listing(declared_absent)}"
        )
    if not any(run.condition == "dreaming" for run in runs.runs):
        absent.add("dreaming")
    missing = [
        f"{task} x {condition}"
        for task in tasks
        for condition in CONDITIONS
        if (task, condition) not in counts and condition not in absent
    ]
    if missing:
        raise SchemaError(f"{source}: missing task x condition: {_listing(missing)}")
    lacking = [
        f"{run.task_id} x {run.condition}"
        for run in runs.runs
        if run.condition in MEMORY_CONDITIONS and run.retrieval_relevant is None
    ]
    if lacking:
        raise SchemaError(
            f"{source}: memory-condition runs lack retrieval_relevant: {_listing(lacking)}"
        )
    saw_memory = [
        f"{run.task_id} ({', '.join(seen)})"
        for run in runs.runs
        if run.condition == "baseline" and (seen := run.memory_seen())
    ]
    if saw_memory:
        raise SchemaError(
            f"{source}: baseline runs must never see memory, but these did: {_listing(saw_memory)}"
        )
    return tuple(runs.runs)


def not_applicable(runs: RunsFile, source: str) -> dict[str, str]:
    """The runs file's ``conditions_not_applicable`` (condition -> reason); only
    skill_planned and dreaming can be."""
    value = (runs.model_extra or {}).get("conditions_not_applicable")
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        condition in ("skill_planned", "dreaming") and isinstance(reason, str)
        for condition, reason in value.items()
    ):
        raise SchemaError(
            f"{source}: conditions_not_applicable must map skill_planned or dreaming to a reason"
        )
    return dict(value)


def _manifest_sha(runs: RunsFile, source: str) -> str | None:
    value = (runs.model_extra or {}).get("manifest_sha256")
    if value is None:
        return None
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        raise SchemaError(f"{source}: manifest_sha256 must be 64 lowercase hex digits")
    return value


def parse_runs(data: bytes, source: str, *, expected_tasks: list[str] | None = None) -> LoadedRuns:
    """Parse and check runs-file bytes."""
    model = validate_model(RunsFile, loads_strict(data, source), source)
    checked = check_runs(model, source, expected_tasks=expected_tasks)
    return LoadedRuns(
        source,
        sha256_bytes(data),
        checked,
        _manifest_sha(model, source),
        dreaming_missing=not any(run.condition == "dreaming" for run in checked),
        not_applicable=not_applicable(model, source),
    )


def read_runs(
    path: str | os.PathLike[str], *, expected_tasks: list[str] | None = None
) -> LoadedRuns:
    """Read a runs file (bounded, strict JSON) and check it."""
    source = os.fspath(path)
    try:
        size = os.stat(path).st_size
    except OSError:
        size = 0  # read_bounded names what is wrong with the path
    if size > RUNS_LIMIT:
        raise InputFileError(
            f"{source}: {size} bytes exceeds the runs-file limit of {RUNS_LIMIT} bytes (8 MiB)"
        )
    return parse_runs(
        read_bounded(path, "fixture", RUNS_LIMIT), source, expected_tasks=expected_tasks
    )


def refused_reasons(runs: LoadedRuns) -> list[str]:
    """Why refused runs stop the decision (none refused: no reason)."""
    refused = [run for run in runs.runs if run.host_failure in REFUSED_FAILURES]
    if not refused:
        return []
    shown = ", ".join(f"{run.task_id} x {run.condition}" for run in refused[:_SHOWN])
    more = f" and {len(refused) - _SHOWN} more" if len(refused) > _SHOWN else ""
    return [
        f"{len(refused)} of {len(runs.runs)} runs refused: the host's bound identity changed "
        f"(identity-changed); runs: {shown}{more}",
        "a refused run was never judged: it is no evidence for or against the memory, and no "
        "decision is made",
    ]
