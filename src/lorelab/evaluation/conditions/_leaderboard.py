"""``lorelab eval conditions leaderboard DIR...``: finished conditions runs of several memories,
judged side by side, refused unless they differ in the memory alone."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from pydantic import Field

from lorelab._model import PROTOCOL_FIXTURE, ReceiptModel, RecordModel, timestamp
from lorelab.errors import InvalidInput, UsageError
from lorelab.evaluation.conditions._evaluate import evaluate
from lorelab.evaluation.conditions._manifest import ConditionsManifest
from lorelab.evaluation.conditions._report import PairedComparison
from lorelab.evaluation.conditions._runs import RUNS_FILE, read_runs
from lorelab.evaluation.runlog import RunLog
from lorelab.io import read_json, validate_model

LEADERBOARD_FILE: Final = "leaderboard.json"
# What must be equal across the runs, by where it is read in preflight.json.
SAME: Final = (
    ("manifest_sha256", ("manifestSha256",)),
    ("project snapshot sha256", ("project", "sha256")),
    ("host argv", ("host", "argv")),
    ("host model", ("host", "model", "declared")),
    ("seed file sha256", ("seedFile", "sha256")),
    ("lorelab version", ("lorelabVersion",)),
)
BOARD_CONDITION: Final = "memory_guided"


class Latency(RecordModel):
    """Wall-clock seconds of one operation's memory calls (null: not recorded)."""

    calls: int
    p50_s: float | None
    p95_s: float | None


class BoardRow(RecordModel):
    """One memory on the board (figures over the holdouts, memory_guided vs baseline)."""

    memory: str = Field(description="The profile name.")
    directory: str
    profile_sha256: str | None
    server_info: dict[str, str] | None
    holdouts: int
    pass_rate_delta: float | None
    sign_test: dict[str, Any]
    irrelevance_rate: float | None
    pollution_rate: float | None
    guidance_tokens_per_task: float | None
    items_served_per_task: float | None
    prepare_latency: Latency
    record_latency: Latency
    conditions_not_applicable: dict[str, str]
    decision: dict[str, Any] = Field(description="The run's own decision (condition, verdict).")
    memory_failures: int


class Leaderboard(ReceiptModel):
    """``leaderboard.json``."""

    created_at: str
    label: str | None = Field(description="protocol-fixture when a fixture host ran the tasks.")
    condition: str = BOARD_CONDITION
    shared: dict[str, Any] = Field(description="What every run had in common.")
    rows: list[BoardRow]
    reading: str = (
        "pass_rate_delta: memory_guided minus baseline pass rate over the holdouts, with the "
        "exact two-sided sign test over the paired holdouts; irrelevance and pollution rates, "
        "guidance tokens and items served are per memory_guided holdout run; latencies are "
        "the memory's own tool calls (seeding records, every prepare) as the runner timed them"
    )


def _at(data: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile; ``None`` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return round(ordered[rank - 1], 6)


def _latency(calls: list[dict[str, Any]] | None, operation: str) -> Latency:
    if calls is None:
        return Latency(calls=0, p50_s=None, p95_s=None)
    seconds = [
        float(call["seconds"])
        for call in calls
        if call.get("operation") == operation and isinstance(call.get("seconds"), int | float)
    ]
    return Latency(calls=len(seconds), p50_s=percentile(seconds, 50), p95_s=percentile(seconds, 95))


def _served(directory: Path, holdouts: Sequence[str]) -> float | None:
    counts = []
    for task in holdouts:
        path = directory / "runs" / f"{task}--{BOARD_CONDITION}.json"
        if not path.is_file():
            return None
        served = _at(read_json(path, "fixture"), ("guidance", "servedIds"))
        counts.append(len(served) if isinstance(served, list) else 0)
    return sum(counts) / len(counts) if counts else None


def _row(directory: Path, preflight: Mapping[str, Any]) -> BoardRow:
    saved = read_json(directory / "manifest.json", "manifest")
    manifest = validate_model(ConditionsManifest, saved.get("manifest"), str(directory))
    report = evaluate(read_runs(directory / RUNS_FILE), manifest, manifest_checked=True)
    paired: PairedComparison | None = next(
        (p for p in report.paired if p.condition == BOARD_CONDITION), None
    )
    calls_path = directory / "memory-calls.json"
    calls = read_json(calls_path, "fixture").get("calls") if calls_path.is_file() else None
    memory = preflight.get("memory") or {}
    return BoardRow(
        memory=str(memory.get("profile")),
        directory=str(directory),
        profile_sha256=memory.get("profileSha256"),
        server_info=memory.get("serverInfo"),
        holdouts=paired.holdouts if paired else 0,
        pass_rate_delta=paired.pass_rate_delta if paired else None,
        sign_test=paired.sign_test.to_json() if paired else {},
        irrelevance_rate=paired.irrelevance_rate if paired else None,
        pollution_rate=paired.pollution_rate if paired else None,
        guidance_tokens_per_task=paired.token_cost.mean_guidance_tokens if paired else None,
        items_served_per_task=_served(directory, report.holdouts),
        prepare_latency=_latency(calls, "prepare"),
        record_latency=_latency(calls, "record"),
        conditions_not_applicable=dict(report.conditions_not_applicable or {}),
        decision={"condition": report.decision.condition, "verdict": report.decision.verdict},
        memory_failures=len(paired.memory_failures) if paired else 0,
    )


def build_leaderboard(directories: Sequence[Path]) -> Leaderboard:
    """The board over finished run directories; :class:`InvalidInput` (exit 2, naming the
    field) when they differ in anything but the memory."""
    if len(directories) < 2:
        raise UsageError("leaderboard needs at least two run directories")
    preflights = []
    for directory in directories:
        if not (directory / "run.json").is_file() or not (directory / RUNS_FILE).is_file():
            raise InvalidInput(f"{directory}: not a finished conditions run (no run.json)")
        preflights.append(read_json(directory / "preflight.json", "manifest"))
    shared: dict[str, Any] = {}
    for field, path in SAME:
        values = [_at(preflight, path) for preflight in preflights]
        first = values[0]
        for directory, value in zip(directories[1:], values[1:], strict=True):
            if json.dumps(value, sort_keys=True) != json.dumps(first, sort_keys=True):
                raise InvalidInput(
                    f"{directory}: its {field} is {value!r}, {directories[0]} has {first!r}; a "
                    "leaderboard compares runs that differ in the memory alone"
                )
        shared[field] = first
    rows = [_row(d, p) for d, p in zip(directories, preflights, strict=True)]
    rows.sort(
        key=lambda row: (
            -(row.pass_rate_delta if row.pass_rate_delta is not None else -math.inf),
            row.guidance_tokens_per_task if row.guidance_tokens_per_task is not None else 0.0,
        )
    )
    fixture = any(
        _at(preflight, ("host", "evidenceKind")) == PROTOCOL_FIXTURE for preflight in preflights
    )
    return Leaderboard(
        created_at=timestamp(),
        label=PROTOCOL_FIXTURE if fixture else None,
        shared=shared,
        rows=rows,
    )


def write_leaderboard(
    directories: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str]
) -> tuple[Leaderboard, Path]:
    """Build the board and write it as ``OUTPUT/leaderboard.json`` (a fresh directory)."""
    board = build_leaderboard([Path(os.path.abspath(d)) for d in directories])
    log = RunLog.start(output)
    path = log.finish(LEADERBOARD_FILE, board)
    return board, path
