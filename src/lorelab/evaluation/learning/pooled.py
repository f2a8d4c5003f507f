"""The pooled label of a campaign: several learning runs (one per manifest of a set), their
specification pairs labelled together by the summary's own rule.

Each run must first verify (:func:`~lorelab.evaluation.learning.verify.verify_run`); the runs
must agree on what makes their pairs comparable (evidence kind, repetitions, arms) and their
specification ids must not collide, so that every specification stays one unit.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field

from lorelab._model import RecordModel
from lorelab.errors import UsageError
from lorelab.evaluation.learning.records import (
    ManifestReceipt,
    Paired,
    Summary,
    TrialRecord,
)
from lorelab.evaluation.learning.summary import compare_arms
from lorelab.evaluation.learning.verify import verify_run
from lorelab.io import read_model


class PooledRun(RecordModel):
    """One run of the campaign, as it entered the pool."""

    directory: str = Field(description="The run's output directory, as given.")
    manifest_id: str
    manifest_sha256: str
    specifications: list[str]
    label: str = Field(description="The run's own paired label (memory against no-memory).")
    placebo_label: str | None = Field(description="The run's own pairedPlacebo label.")


class PooledSummary(RecordModel):
    """The campaign's pooled comparisons over every run's specifications."""

    runs: list[PooledRun]
    specifications: int
    paired: Paired
    paired_placebo: Paired | None


def _load(directory: Path) -> tuple[ManifestReceipt, Summary, list[TrialRecord]]:
    found = verify_run(directory)
    if not found.ok:
        raise UsageError(f"{directory}: does not verify ({found.problems[0]})")
    manifest = read_model(directory / "manifest.json", ManifestReceipt, "fixture")
    summary = read_model(directory / "summary.json", Summary, "fixture")
    trials = sorted((directory / "trials").iterdir())
    return manifest, summary, [read_model(path, TrialRecord, "fixture") for path in trials]


def pool_runs(directories: list[str | os.PathLike[str]]) -> PooledSummary:
    """Pool the runs in ``directories`` (at least two) into one comparison per control.

    Raises :class:`~lorelab.errors.UsageError` (exit 2) for a run that does not verify, runs
    that differ in evidence kind, repetitions or arms, or specification ids used twice."""
    if len(directories) < 2:
        raise UsageError("pooling needs at least two run directories")
    loaded = [(Path(d), *_load(Path(d))) for d in directories]
    first = loaded[0][1]
    seen: dict[str, Path] = {}
    for directory, manifest, _, _ in loaded:
        for name, mine, theirs in (
            ("evidence kind", manifest.evidence_kind, first.evidence_kind),
            ("repetitions", manifest.settings.repeat, first.settings.repeat),
            ("control", manifest.settings.control, first.settings.control),
        ):
            if mine != theirs:
                raise UsageError(f"{directory}: {name} {mine!r} differs from {theirs!r}")
        for fixture in manifest.manifest.fixtures if manifest.manifest else []:
            if fixture.id in seen:
                raise UsageError(
                    f"{directory}: specification {fixture.id!r} is also in {seen[fixture.id]}"
                )
            seen[fixture.id] = directory
    records = [record for *_, trials in loaded for record in trials]
    specifications = list(seen)

    def compare(control: str) -> Paired:
        return compare_arms(
            specifications,
            records,
            kind=first.evidence_kind,
            declared_fixture=first.evidence_kind == "protocol-fixture",
            frozen_lessons=min(summary.frozen_lessons for _, _, summary, _ in loaded),
            repetitions=first.settings.repeat,
            control="placebo" if control == "placebo" else "no-memory",
        )

    return PooledSummary(
        runs=[
            PooledRun(
                directory=str(directory),
                manifest_id=manifest.manifest_id,
                manifest_sha256=manifest.manifest_sha256,
                specifications=[f.id for f in manifest.manifest.fixtures]
                if manifest.manifest
                else [],
                label=summary.paired.label,
                placebo_label=summary.paired_placebo.label if summary.paired_placebo else None,
            )
            for directory, manifest, summary, _ in loaded
        ],
        specifications=len(specifications),
        paired=compare("no-memory"),
        paired_placebo=compare("placebo") if first.settings.control == "placebo" else None,
    )
