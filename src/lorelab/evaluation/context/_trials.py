"""Simulated context trials over fixtures: bounds and inputs checked, every worker bound, one
trial per fixture and managed boundary (:mod:`._trial`), each record written as it is scored.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from lorelab.context import BoundaryKind, CheckpointStore
from lorelab.errors import UsageError
from lorelab.evaluation.context._compare import load_baseline
from lorelab.evaluation.context._fixture import LoadedFixture, utf8_path
from lorelab.evaluation.context._receipt import RecordResult
from lorelab.evaluation.context._run import (
    EvaluationResult,
    check_output_location,
    finish,
    load_fixtures,
    new_run_id,
)
from lorelab.evaluation.context._trial import TrialWorker, run_trial
from lorelab.evaluation.context._trial_checkpoint import check_checkpoint_fits
from lorelab.io import ReceiptDir, create_output_dir
from lorelab.workers.agents import resolve_agent
from lorelab.workers.identity import WorkerIdentity, bind_identity
from lorelab.workers.transport import DEFAULT_BOUNDS, WorkerBounds

MANAGED_BOUNDARIES: Final[tuple[BoundaryKind, ...]] = ("compaction", "restart")
FIXTURE_CONTEXT_AGENT: Final = "fixture-context"
FIXTURE_CONTEXT_MODULE: Final = "lorelab.testing.fixture_context"
MAX_TURNS_LIMIT: Final = 20


def resolve_context_agent(agent: str) -> list[str]:
    """A shipped adapter's name (``fixture-context`` for the offline fixture) or a JSON argv."""
    return resolve_agent(agent)


def _check_worker_cwd(
    cwd: str | os.PathLike[str],
    loaded: Sequence[LoadedFixture],
    output: str | os.PathLike[str],
) -> None:
    """Refuse a worker directory that holds a fixture (the worker must never see its labels)
    or the output directory (a worker must not read the scores of earlier trials, nor alter
    the records written while it runs)."""
    root = Path(os.path.realpath(cwd))
    for item in loaded:
        if Path(os.path.realpath(item.path)).is_relative_to(root):
            raise UsageError(
                f"--cwd {os.fspath(cwd)}: contains fixture {item.path}, whose labels and "
                "expected facts the worker must never see; choose another directory"
            )
    if Path(os.path.realpath(output)).is_relative_to(root):
        raise UsageError(
            f"--cwd {os.fspath(cwd)}: contains the output directory {os.fspath(output)}, whose "
            "trial records the worker must not read or alter; choose another directory"
        )


def _managed(boundaries: Sequence[str]) -> list[BoundaryKind]:
    unknown = [kind for kind in boundaries if kind not in MANAGED_BOUNDARIES]
    if unknown:
        raise UsageError(f"--boundary {unknown[0]!r}: trials manage only compaction and restart")
    kinds = [kind for kind in MANAGED_BOUNDARIES if kind in boundaries]
    if not kinds:
        raise UsageError("give at least one managed boundary")
    return kinds


def _check_request(
    *,
    agent: str,
    boundaries: Sequence[str],
    max_turns: int,
    bounds: WorkerBounds,
    cwd: str | os.PathLike[str] | None,
    checkpoint_home: str | os.PathLike[str] | None,
) -> list[BoundaryKind]:
    """The managed boundaries asked for, once the bounds and the paths' encodings are good."""
    if not 1 <= max_turns <= MAX_TURNS_LIMIT:
        raise UsageError(f"--max-turns {max_turns} must be between 1 and {MAX_TURNS_LIMIT}")
    bounds.check()
    kinds = _managed(boundaries)
    try:
        agent.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("--agent: not valid UTF-8 (the receipts record the worker argv)") from None
    if cwd is not None:
        utf8_path(cwd, "--cwd")
    if checkpoint_home is not None:
        utf8_path(checkpoint_home, "checkpoint home")
    return kinds


def _kept_home(
    checkpoint_home: str | os.PathLike[str] | None, output: str | os.PathLike[str]
) -> Path | None:
    """The caller's checkpoint home, refused inside the output (receipts hold metrics only)."""
    if checkpoint_home is None:
        return None
    home = Path(os.path.realpath(checkpoint_home))
    if home.is_relative_to(os.path.realpath(output)):
        raise UsageError(
            f"checkpoint home {os.fspath(checkpoint_home)}: inside the output directory, "
            "whose receipts hold metrics only"
        )
    return home


def _bind_workers(
    argv: list[str], count: int, *, scratch: Path | None, cwd: str | os.PathLike[str] | None
) -> list[WorkerIdentity]:
    """The worker's identity in each trial's directory (a fresh one under ``scratch``)."""
    identities: list[WorkerIdentity] = []
    for number in range(count):
        if scratch is not None:
            trial_cwd = scratch / f"{number:04d}"
            trial_cwd.mkdir(mode=0o700)
        else:
            trial_cwd = Path(os.path.abspath(os.fspath(cwd)))  # type: ignore[arg-type]
        identities.append(bind_identity(argv, cwd=trial_cwd, operator_identity=None))
    return identities


def _run_plan(
    plan: list[tuple[LoadedFixture, BoundaryKind]],
    identities: list[WorkerIdentity],
    trials_dir: ReceiptDir,
    *,
    run_id: str,
    store: CheckpointStore,
    worker: TrialWorker,
) -> list[RecordResult]:
    """Each planned trial in order, its record written to ``trials/`` as soon as it is scored."""
    records: list[RecordResult] = []
    for (item, kind), identity in zip(plan, identities, strict=True):
        record = run_trial(item, kind, run_id=run_id, store=store, worker=worker, identity=identity)
        trials_dir.write_json(f"{len(records) + 1:04d}-{kind}.json", record)
        records.append(record)
    return records


def run_trials(
    fixtures: Sequence[str | os.PathLike[str]],
    *,
    agent: str,
    output: str | os.PathLike[str],
    baseline: str | os.PathLike[str] | None = None,
    boundaries: Sequence[str] = MANAGED_BOUNDARIES,
    max_turns: int = 4,
    bounds: WorkerBounds = DEFAULT_BOUNDS,
    cwd: str | os.PathLike[str] | None = None,
    payload_log: list[dict[str, Any]] | None = None,
    checkpoint_home: str | os.PathLike[str] | None = None,
) -> EvaluationResult:
    """Run managed compaction/restart trials from each fixture and write receipts.

    Everything is checked before the output directory is created: the fixtures, the baseline,
    the bounds, and the worker's identity in every trial's working directory (bad input exits
    2, an unbindable worker 3). Each trial's record is written to ``trials/`` the moment it is
    scored; the run's receipt follows. Without ``cwd`` every trial gets a fresh empty working
    directory, removed after the run. ``payload_log``, when given, receives every payload sent.

    Checkpoints hold trace text (messages, tool output), so they never go into the receipts,
    which hold metrics only (each trial records its checkpoint's id and SHA-256). They are
    written to a private temporary home removed after the run, or to ``checkpoint_home`` (a
    memory home the caller keeps; it must lie outside ``output``).
    """
    kinds = _check_request(
        agent=agent,
        boundaries=boundaries,
        max_turns=max_turns,
        bounds=bounds,
        cwd=cwd,
        checkpoint_home=checkpoint_home,
    )
    argv = resolve_context_agent(agent)
    loaded = load_fixtures(fixtures)
    checked = load_baseline(baseline) if baseline is not None else None
    check_output_location(output, [item.path for item in loaded])
    if cwd is not None:
        _check_worker_cwd(cwd, loaded, output)
    home = _kept_home(checkpoint_home, output)
    plan = [(item, kind) for item in loaded for kind in kinds]
    run_id = new_run_id()
    for item, kind in plan:
        check_checkpoint_fits(item, kind, run_id=run_id)
    scratch: Path | None = None
    private_home: Path | None = None
    try:
        if cwd is None:
            scratch = Path(tempfile.mkdtemp(prefix="lorelab-context-trials-"))
        if home is None:
            private_home = home = Path(tempfile.mkdtemp(prefix="lorelab-context-checkpoints-"))
        identities = _bind_workers(argv, len(plan), scratch=scratch, cwd=cwd)
        out = create_output_dir(output)
        worker = TrialWorker(
            argv=argv,
            max_turns=max_turns,
            bounds=bounds,
            fixture_agent=FIXTURE_CONTEXT_MODULE in argv,
            payload_log=payload_log,
        )
        store = CheckpointStore(home)
        records = _run_plan(
            plan, identities, out.subdir("trials"), run_id=run_id, store=store, worker=worker
        )
    finally:
        for temporary in (scratch, private_home):
            if temporary is not None:
                shutil.rmtree(temporary, ignore_errors=True)
    return finish(out, run_id=run_id, mode="trial", records=records, baseline=checked)
