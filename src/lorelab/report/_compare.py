"""Whether two output directories of one kind may be compared, by each evaluation's own rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from lorelab.errors import LorelabError

if TYPE_CHECKING:
    from lorelab.report._conditions_load import ConditionsRun
    from lorelab.report._context import ContextRun, ScanRun
    from lorelab.report._learning import LearningRun

Loaded: TypeAlias = "LearningRun | ConditionsRun | ContextRun | ScanRun"


@dataclass(frozen=True, slots=True)
class Comparability:
    """The verdict on a pair: comparable or not, why not, and differences worth knowing."""

    comparable: bool
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _missing(sides: tuple[tuple[object, object], ...], outcome: str) -> list[str]:
    """A reason for each side (its manifest, its outcome) that lacks one or the other."""
    reasons: list[str] = []
    for (manifest, result), side in zip(sides, ("left", "right"), strict=True):
        if manifest is None:
            reasons.append(f"the {side} run has no readable manifest.json")
        if result is None:
            reasons.append(f"the {side} run has no {outcome}")
    return reasons


def _learning(a: LearningRun, b: LearningRun) -> Comparability:
    sides = ((a.manifest, a.summary), (b.manifest, b.summary))
    reasons = _missing(sides, "summary (it did not complete)")
    notes: list[str] = []
    if a.manifest is not None and b.manifest is not None:
        if a.manifest.manifest_sha256 != b.manifest.manifest_sha256:
            reasons.append(
                f"different manifests: {a.manifest.dataset} ({a.manifest.manifest_sha256[:12]}) "
                f"vs {b.manifest.dataset} ({b.manifest.manifest_sha256[:12]}): the "
                "specifications, defects or history differ"
            )
        if a.manifest.settings.repeat != b.manifest.settings.repeat:
            notes.append(
                f"repetitions differ: {a.manifest.settings.repeat} vs {b.manifest.settings.repeat}"
            )
        if a.manifest.settings.agent != b.manifest.settings.agent:
            notes.append("the workers differ (see each run's worker argv)")
    if (
        a.summary is not None
        and b.summary is not None
        and a.summary.evidence_kind != b.summary.evidence_kind
    ):
        notes.append(
            f"evidence kinds differ: {a.summary.evidence_kind} vs {b.summary.evidence_kind}"
        )
    return Comparability(not reasons, reasons, notes)


def _conditions(a: ConditionsRun, b: ConditionsRun) -> Comparability:
    sides = ((a.manifest, a.report), (b.manifest, b.report))
    reasons = _missing(sides, "evaluated runs file (no decision)")
    if a.manifest is not None and b.manifest is not None:
        if a.manifest.sha256 != b.manifest.sha256:
            reasons.append(
                f"different manifests ({a.manifest.sha256[:12]} vs {b.manifest.sha256[:12]}): "
                "tasks, holdouts or thresholds may differ"
            )
        tasks_a = [t.id for t in a.manifest.manifest.tasks]
        tasks_b = [t.id for t in b.manifest.manifest.tasks]
        if tasks_a != tasks_b:
            only = sorted(set(tasks_a) ^ set(tasks_b))
            reasons.append(f"different tasks: {', '.join(only) or 'same tasks, other order'}")
    notes = []
    if a.report is not None and b.report is not None and a.report.holdouts != b.report.holdouts:
        reasons.append("different holdout tasks")
    if (
        a.preflight is not None
        and b.preflight is not None
        and a.preflight.memory.profile != b.preflight.memory.profile
    ):
        notes.append(
            f"memory profiles differ: {a.preflight.memory.profile} vs {b.preflight.memory.profile}"
        )
    return Comparability(not reasons, reasons, notes)


def _context(a: ContextRun, b: ContextRun) -> Comparability:
    from lorelab.evaluation.context import compare, load_baseline

    if a.receipt is None or b.receipt is None:
        return Comparability(False, ["a context receipt is missing or unreadable"])
    try:
        baseline = load_baseline(a.path)
    except LorelabError as exc:
        return Comparability(False, [f"the left receipt cannot serve as a baseline: {exc}"])
    result = compare(b.receipt.mode, list(b.receipt.records), baseline)
    return Comparability(result.comparable, list(result.reasons))


def _scan(a: ScanRun, b: ScanRun) -> Comparability:
    if a.receipt is None or b.receipt is None:
        return Comparability(False, ["a scan receipt is missing or unreadable"])
    ids_a = {s.session_id for s in a.receipt.sessions}
    ids_b = {s.session_id for s in b.receipt.sessions}
    notes = (
        [] if ids_a == ids_b else ["the scans read different sessions; their counts are not paired"]
    )
    return Comparability(True, [], notes)


def comparability(a: Loaded, b: Loaded) -> Comparability:
    """Apply the rule of the pair's kind (both are of one kind)."""
    from lorelab.report._conditions_load import ConditionsRun
    from lorelab.report._context import ContextRun, ScanRun
    from lorelab.report._learning import LearningRun

    if isinstance(a, LearningRun) and isinstance(b, LearningRun):
        return _learning(a, b)
    if isinstance(a, ConditionsRun) and isinstance(b, ConditionsRun):
        return _conditions(a, b)
    if isinstance(a, ContextRun) and isinstance(b, ContextRun):
        return _context(a, b)
    if isinstance(a, ScanRun) and isinstance(b, ScanRun):
        return _scan(a, b)
    raise TypeError("comparability of two different kinds")
