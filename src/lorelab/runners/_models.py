"""The records a test run leaves: cases, processes, executions, stability and defect outcomes."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from lorelab._model import RecordModel, RunnerName
from lorelab.io import SandboxKind

CaseStatus = Literal["passed", "failed", "error", "skipped"]
Classification = Literal[
    "passed", "failed", "collection-error", "timeout", "crashed", "no-tests", "tampered"
]
StabilityClassification = Literal[
    "passed", "failed", "collection-error", "timeout", "crashed", "no-tests", "tampered", "unstable"
]
DefectStatus = Literal["detected", "survived", "broken"]
FailureKind = Literal["import", "other"]

OUTPUT_TAIL_CHARS: Final = 4000
MIN_STABILITY_RUNS: Final = 2
MAX_STABILITY_RUNS: Final = 5


class Case(RecordModel):
    """One test case of an execution, in the order it was reported."""

    id: str = Field(
        description=(
            "Stable case id '<file>::<name>': pytest's node id (classes joined with '::'); "
            "for node, nested describe/test names joined with ' > '. A report about a whole "
            "file (a pytest collection error or module skip) has the file path alone."
        )
    )
    status: CaseStatus = Field(
        description=(
            "passed, failed (the case's own check failed), error (a fixture, hook or the "
            "collection of its file failed) or skipped (skip, xfail, todo)."
        )
    )
    failure_kind: FailureKind | None = Field(
        default=None,
        description=(
            "For a failed or errored case: 'import' when it failed only because a module, or a "
            "name in one, could not be found (pytest: ImportError, ModuleNotFoundError, "
            "AttributeError 'module ... has no attribute'; node: MODULE_NOT_FOUND, a missing "
            "export, '<name> is not a function/constructor'), else 'other'. Null for passed "
            "and skipped cases, and when unknown."
        ),
    )


class ProcessRecord(RecordModel):
    """One process an execution started: pytest runs one, node one per test file."""

    argv: list[str] = Field(description="The exact argument vector; no shell was involved.")
    exit_code: int | None = Field(
        description="The exit status; null when the process was killed by a signal."
    )
    signal: str | None = Field(description="The signal that ended the process, or null.")
    timed_out: bool = Field(description="Whether lorelab killed the process group at the timeout.")
    duration_ms: int = Field(description="Wall-clock milliseconds from start to exit.")


class Execution(RecordModel):
    """One run of a test suite against one source tree, with case-level outcomes."""

    schema_version: Literal[1] = Field(
        default=1, description="Version of this record's JSON shape (receipts store it as a file)."
    )
    runner: RunnerName = Field(description="The runner that ran the suite.")
    argv: list[str] = Field(
        description=(
            "pytest: the command. node: the command each test file was appended to (one "
            "process per file, see processes)."
        )
    )
    exit_code: int | None = Field(
        description=(
            "pytest's exit status; for node, 0 when every file's process exited 0, else the "
            "first non-zero status. Null when a process was killed or nothing ran."
        )
    )
    duration_ms: int = Field(description="Wall-clock milliseconds for the whole execution.")
    cases: list[Case] = Field(description="Every case reported, in reporting order.")
    classification: Classification = Field(
        description=(
            "passed; failed (collection complete, at least one named case failed or errored); "
            "collection-error (import or syntax error, or a test file that yielded no cases); "
            "timeout; crashed (a process died, or left no usable report); no-tests; tampered "
            "(the reports contradict what lorelab saw itself: the exit status, the cases pytest "
            "ran, the project's files; a failure, never a pass or a detection)."
        )
    )
    reason: str = Field(description="One line saying why the execution got its classification.")
    reverse: bool = Field(description="Whether the cases (pytest) or files (node) ran reversed.")
    processes: list[ProcessRecord] = Field(description="Every process started, in order.")
    output_tail: str = Field(
        description=f"The last {OUTPUT_TAIL_CHARS} characters of combined stdout/stderr."
    )
    sandbox: SandboxKind | None = Field(
        default=None,
        description=(
            "The confinement the suite really ran in, as probed: 'bubblewrap' (PID namespace, no "
            "network, writes only to the project copy and a private /tmp), 'partial' (bubblewrap "
            "ran but some of those could not be had here), 'none' (no sandbox). Every run is "
            "contained either way: the launcher kills every process the tests started. Null in "
            "records written before lorelab recorded it."
        ),
    )


class Stability(RecordModel):
    """The same execution repeated N times, and whether every repetition agreed."""

    stable: bool = Field(
        description="True only if case ids, statuses and exit codes agree across every run."
    )
    classification: StabilityClassification = Field(
        description="The classification every run shared, or 'unstable'."
    )
    runs: list[Execution] = Field(description="Every run, in order, kept whether it agreed or not.")
    first_difference: str | None = Field(
        description="The first disagreement found, comparing each run with run 1; null if stable."
    )
    flaky_cases: list[str] = Field(
        description="Case ids whose status differed between runs or that some runs lacked."
    )


class DefectOutcome(RecordModel):
    """Whether a suite that passed on the reference source detected one defect."""

    status: DefectStatus = Field(
        description=(
            "detected: a case that passed on the reference failed on the defect in a "
            "complete, stable execution, for a reason other than a failed import; survived: "
            "no case that passed on the reference failed; broken: the defect run was a "
            "collection error, timeout, crash, empty or unstable, or every reference-passing "
            "case that failed on it failed only to import (never a detection)."
        )
    )
    detecting_cases: list[str] = Field(
        description=(
            "Case ids that passed on the reference and failed or errored on the defect, in "
            "every run, for a reason other than a failed import."
        )
    )
    import_failure_cases: list[str] = Field(
        default_factory=list,
        description=(
            "Case ids that passed on the reference and failed on the defect only because an "
            "import failed (failureKind 'import' in some run); never detections."
        ),
    )
    reason: str = Field(description="One line explaining the status.")
