"""What every phase of one learning run shares: the request, the resolved settings, the run
log, each role's bound worker identity, the frozen store, and the phase clock."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from lorelab._model import EvidenceKind
from lorelab.evaluation.learning.manifest import Fixture, LearningManifest
from lorelab.evaluation.learning.records import (
    Control,
    ControllerReceipt,
    ManifestReceipt,
    Settings,
)
from lorelab.evaluation.learning.roles import PerRole, RoleAssignment
from lorelab.evaluation.runlog import RunError, RunLog
from lorelab.runners import get_runner
from lorelab.workers import WorkerBounds, WorkerIdentity
from lorelab.workers.transport import DEFAULT_BOUNDS

if TYPE_CHECKING:
    from lorelab.runners import TestRunner

ROLE_CALLS_PER_TRIAL: Final = 3
DEFAULT_REPEAT: Final = 3
DEFAULT_STABILITY_RUNS: Final = 2
DEFAULT_TEST_TIMEOUT_S: Final = 60.0
POOL_WORKERS: Final = 2

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class LearningRequest:
    """What ``lorelab eval learning`` was asked to do, before any check."""

    manifest: LearningManifest
    dataset: str
    agent: tuple[str, ...]
    operator_identity: str | None = None
    repeat: int = DEFAULT_REPEAT
    seed: int | None = None
    max_calls: int | None = None
    bounds: WorkerBounds = DEFAULT_BOUNDS
    stability_runs: int = DEFAULT_STABILITY_RUNS
    evidence_kind: EvidenceKind | None = None
    test_timeout_s: float = DEFAULT_TEST_TIMEOUT_S
    started: float | None = None
    """``time.perf_counter()`` when the command began, before the manifest was read; the
    controller's ``elapsedMs`` counts from it (None: from the start of the run)."""
    architect_agent: tuple[str, ...] | None = None
    author_agent: tuple[str, ...] | None = None
    reviewer_agent: tuple[str, ...] | None = None
    control: Control | None = None
    """``placebo``: add the placebo arm (``--control placebo``)."""
    allow_unsandboxed: bool = False
    """``--allow-unsandboxed``: run without a working sandbox rather than refuse."""

    @property
    def roles(self) -> RoleAssignment:
        """The worker of each role: ``agent`` unless the role was given its own."""
        return RoleAssignment.of(
            self.agent,
            architect=self.architect_agent,
            author=self.author_agent,
            reviewer=self.reviewer_agent,
        )


@dataclass(slots=True)
class Phases:
    """The controller's clock: when the run started and how long each phase took."""

    started: float = field(default_factory=time.perf_counter)
    setup_ms: int | None = None
    shared_preparation_ms: int | None = None
    ground_truth_ms: int | None = None
    trials_ms: int | None = None
    outcome: str = "started"

    def stopped(self, error: RunError) -> ControllerReceipt:
        """The ``controller.json`` receipt of a run stopped by ``error``."""
        self.outcome = "interrupted" if error.outcome == "interrupted" else "crashed"
        return self.receipt()

    def receipt(self) -> ControllerReceipt:
        """The ``controller.json`` receipt as of now."""
        return ControllerReceipt(
            outcome=self.outcome,
            elapsed_ms=int((time.perf_counter() - self.started) * 1000),
            setup_ms=self.setup_ms,
            shared_preparation_ms=self.shared_preparation_ms,
            ground_truth_ms=self.ground_truth_ms,
            trials_ms=self.trials_ms,
        )


@dataclass(slots=True)
class LearningRun:
    """One run's shared state; each phase reads it and fills in what it prepared."""

    request: LearningRequest
    settings: Settings
    evidence_kind: EvidenceKind
    log: RunLog
    progress: Progress
    forbidden: list[str]
    phases: Phases = field(default_factory=Phases)
    calls_used: int = 0
    identities: PerRole[WorkerIdentity] | None = None
    """Each role's bound worker identity; None until preflight bound them all."""
    frozen_store: Path | None = None
    frozen_sha256: str | None = None
    frozen_lessons: int = 0
    manifest_receipt: ManifestReceipt | None = None
    """``manifest.json`` as written (None until preflight wrote it)."""
    # Worker projects live under ``scratch``; the frozen store lives apart, in ``private``,
    # so a no-memory worker finds no store next to its directory.
    scratch: Path = field(
        default_factory=lambda: Path(tempfile.mkdtemp(prefix="lorelab-learning-"))
    )
    private: Path = field(
        default_factory=lambda: Path(tempfile.mkdtemp(prefix="lorelab-learning-store-"))
    )
    runner: TestRunner = field(init=False)

    def __post_init__(self) -> None:
        # Installed pytest plugins must not change an evaluation's outcomes; generated and
        # reference suites run sandboxed (refused before the run without a working sandbox,
        # unless --allow-unsandboxed; each execution records what it got).
        self.runner = get_runner(self.manifest.runner, plugin_autoload=False, sandbox=True)

    @property
    def manifest(self) -> LearningManifest:
        """The manifest being run."""
        return self.request.manifest

    def fixture(self, specification: str) -> Fixture:
        """The fixture of ``specification``."""
        return next(f for f in self.manifest.fixtures if f.id == specification)
