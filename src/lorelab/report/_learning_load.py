"""Reading a learning output directory: its typed receipts, as far as they exist; what is
missing or unreadable becomes a problem named on the page."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lorelab.evaluation.learning.records import (
    ControllerReceipt,
    LabelsReceipt,
    ManifestReceipt,
    Summary,
    TrialRecord,
)
from lorelab.report._load import Receipts


@dataclass(slots=True)
class LearningRun:
    """A learning output directory's receipts, as far as they exist."""

    receipts: Receipts
    manifest: ManifestReceipt | None = None
    controller: ControllerReceipt | None = None
    summary: Summary | None = None
    trials: list[tuple[Path, TrialRecord]] = field(default_factory=list)
    labels: list[tuple[Path, LabelsReceipt]] = field(default_factory=list)

    @property
    def directory(self) -> Path:
        """The output directory."""
        return self.receipts.directory

    def trial(self, spec: str, repetition: int, arm: str) -> tuple[Path, TrialRecord] | None:
        """The receipt of one trial, if it was written."""
        for path, record in self.trials:
            if (record.specification, record.repetition, record.arm) == (spec, repetition, arm):
                return path, record
        return None

    def specifications(self) -> list[str]:
        """Specifications in the summary's order, else the schedule's, else the trials'."""
        if self.summary is not None:
            return [pair.specification for pair in self.summary.paired.specs]
        source = self.manifest.schedule if self.manifest is not None else []
        names = [entry.specification for entry in source] or [
            t.specification for _, t in self.trials
        ]
        return list(dict.fromkeys(names))

    def repetitions(self) -> int:
        """Repetitions per specification and arm, as set (else as seen)."""
        if self.manifest is not None:
            return self.manifest.settings.repeat
        return max((t.repetition for _, t in self.trials), default=0)


def load_learning(receipts: Receipts) -> LearningRun:
    """Read every receipt a learning run writes; what is missing becomes a problem."""
    run = LearningRun(receipts)
    run.manifest = receipts.read(
        "manifest.json", ManifestReceipt, missing="the run stopped before its manifest"
    )
    run.controller = receipts.read(
        "controller.json", ControllerReceipt, missing="the run did not end normally"
    )
    outcome = run.controller.outcome if run.controller is not None else "unknown"
    run.summary = receipts.read(
        "summary.json", Summary, missing=f"no summary was written (controller outcome: {outcome})"
    )
    for path in receipts.listing("trials"):
        record = receipts.read_path(path, TrialRecord)
        if record is not None:
            run.trials.append((path, record))
    run.trials.sort(key=lambda item: item[1].position)
    for path in sorted(receipts.directory.glob("labels-*.json")):
        labels = receipts.read_path(path, LabelsReceipt)
        if labels is not None:
            run.labels.append((path, labels))
    if run.manifest is not None:
        written = {(t.specification, t.repetition, t.arm) for _, t in run.trials}
        absent = [
            f"{e.position}"
            for e in run.manifest.schedule
            if (e.specification, e.repetition, e.arm) not in written
        ]
        if absent:
            receipts.note(
                f"trials/: {len(absent)} of {len(run.manifest.schedule)} scheduled trials have "
                f"no receipt (positions {', '.join(absent)})"
            )
    return run
