"""Reading a four-condition output directory: its receipts, and the report
``lorelab eval conditions decide`` gives on its runs file under the manifest recorded in
``manifest.json``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lorelab.errors import LorelabError
from lorelab.evaluation.conditions import (
    RUNS_FILE,
    ConditionsReport,
    DreamReceipt,
    ManifestReceipt,
    PreflightReceipt,
    RunAborted,
    RunFinished,
    RunReceipt,
    evaluate,
    read_runs,
)
from lorelab.report._load import Receipts


@dataclass(slots=True)
class ConditionsRun:
    """A conditions output directory's receipts, and the report evaluated from its runs file."""

    receipts: Receipts
    manifest: ManifestReceipt | None = None
    preflight: PreflightReceipt | None = None
    finished: RunFinished | None = None
    aborted: RunAborted | None = None
    dream: DreamReceipt | None = None
    runs: list[tuple[Path, RunReceipt]] = field(default_factory=list)
    report: ConditionsReport | None = None

    @property
    def directory(self) -> Path:
        """The output directory."""
        return self.receipts.directory

    def run_href(self, task: str, condition: str) -> str | None:
        """The link to one run's receipt, if it was written."""
        for path, run in self.runs:
            if run.task_id == task and run.condition == condition:
                return self.receipts.href(path)
        return None

    def failed(self, task: str, condition: str) -> bool:
        """Whether that run's receipt says its host or a memory call failed."""
        return any(
            run.task_id == task and run.condition == condition and failure(run) is not None
            for _, run in self.runs
        )

    def completed(self) -> dict[str, bool]:
        """Per condition: whether any of its runs has a real outcome (see :func:`failure`)."""
        done: dict[str, bool] = {}
        for _, run in self.runs:
            done[run.condition] = done.get(run.condition, False) or failure(run) is None
        return done

    def task_ids(self) -> list[str]:
        """Task ids in the manifest's order, else in the receipts'."""
        if self.manifest is not None:
            return [task.id for task in self.manifest.manifest.tasks]
        return list(dict.fromkeys(run.task_id for _, run in self.runs))


def failure(run: RunReceipt) -> str | None:
    """Why a run has no real outcome (its host or a memory call failed); None when it has one."""
    record = run.record
    if record.host_failure:
        # The notes join every note of the run with "; "; the runner writes the failure's as
        # "host call failed (KIND): DETAIL".
        said = [n for n in (record.notes or "").split("; ") if n.startswith("host call failed")]
        return said[-1] if said else f"host call failed ({record.host_failure})"
    if record.memory_calls_failed:
        return f"memory calls failed: {', '.join(record.memory_calls_failed)}"
    return None


def _evaluate(run: ConditionsRun) -> ConditionsReport | None:
    receipts = run.receipts
    path = run.directory / RUNS_FILE
    if not path.exists():
        receipts.note(f"{RUNS_FILE}: missing (no runs file: the run did not complete)")
        return None
    manifest = run.manifest
    try:
        expected = [t.id for t in manifest.manifest.tasks] if manifest is not None else None
        runs = read_runs(path, expected_tasks=expected)
        checked = manifest is not None and runs.manifest_sha256 == manifest.sha256
        if manifest is not None and not checked:
            receipts.note(
                f"{RUNS_FILE}: made under manifest {runs.manifest_sha256}, not the one in "
                f"manifest.json ({manifest.sha256}); evaluated with default thresholds"
            )
        return evaluate(
            runs, manifest.manifest if checked and manifest else None, manifest_checked=checked
        )
    except LorelabError as exc:
        receipts.note(f"{RUNS_FILE}: cannot be evaluated ({str(exc).replace(f'{path}: ', '')})")
        return None


def load_conditions(receipts: Receipts) -> ConditionsRun:
    """Read every receipt a conditions run writes, and evaluate its runs file."""
    run = ConditionsRun(receipts)
    run.manifest = receipts.read(
        "manifest.json", ManifestReceipt, missing="the run stopped before it started"
    )
    run.preflight = receipts.read("preflight.json", PreflightReceipt, missing="no preflight")
    run.aborted = receipts.read("aborted.json", RunAborted)
    run.finished = receipts.read(
        "run.json", RunFinished, missing=None if run.aborted else "the run did not end normally"
    )
    if run.aborted is not None:
        receipts.note(
            f"aborted.json: the run stopped after {run.aborted.runs_completed} runs "
            f"({run.aborted.error}); there is no runs file and no decision"
        )
    run.dream = receipts.read("dream.json", DreamReceipt)
    for path in receipts.listing("runs"):
        receipt = receipts.read_path(path, RunReceipt)
        if receipt is not None:
            run.runs.append((path, receipt))
    run.report = _evaluate(run) if run.aborted is None else None
    return run
