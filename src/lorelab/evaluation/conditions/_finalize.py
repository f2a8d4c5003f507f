"""``lorelab eval conditions finalize``: end an evaluation. Clear its lock, then record the
memory-condition outcomes (with their plan and Skill ids) so audits and Skill health update.

Finalize reads only the run's own receipts and writes ``finalize.json`` next to them, once:
a second finalize is refused. A run that aborted gets its lock cleared and nothing recorded.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from lorelab.errors import IntegrityFailure, InvalidInput, OutputExistsError, PreflightError
from lorelab.evaluation.conditions._manifest import ConditionsManifest
from lorelab.evaluation.conditions._memory import (
    PROFILES,
    LockReceipt,
    MemoryToolError,
    MemoryUnderTest,
    lorelab_server_argv,
    open_memory,
)
from lorelab.evaluation.conditions._runner import (
    ABORTED_FILE,
    PREFLIGHT_FILE,
    RUN_FILE,
    RUNS_FILE,
    _now,
    lock_tasks,
    run_async,
)
from lorelab.evaluation.conditions._runs import read_runs
from lorelab.io import ReceiptDir, read_json, validate_model

FINALIZE_FILE: Final = "finalize.json"


@dataclass(frozen=True, slots=True)
class FinalizeSummary:
    """What finalize did."""

    output: Path
    status: str
    recorded: int
    outcomes: int
    skipped: int
    errors: int
    exit_code: int


def _receipt(path: Path, name: str) -> Any:
    return read_json(path / name, "fixture")


def _memory_argv(preflight: dict[str, Any], scratch: Path) -> tuple[list[str], Path | None]:
    memory = preflight["memory"]
    home = Path(memory["home"]) if memory.get("home") else None
    if memory.get("argvKind") == "default" and home is not None:
        # The run's pristine project copy is gone; finalize runs no checks, so any directory
        # serves as the server's project.
        return lorelab_server_argv(home, scratch), home
    return list(memory["argv"]), home


async def _record_outcomes(
    memory: MemoryUnderTest,
    manifest: ConditionsManifest,
    output: Path,
    state: dict[str, Any],
) -> None:
    runs = read_runs(output / RUNS_FILE, expected_tasks=[task.id for task in manifest.tasks])
    for run in runs.runs:
        if run.condition == "baseline":
            continue
        extra = run.model_extra or {}
        key = {"taskId": run.task_id, "condition": run.condition}
        after = extra.get("verification_after") or {}
        if extra.get("host_failure") or not isinstance(after.get("exit_code"), int):
            state["skipped"].append(
                {**key, "reason": "no verified outcome (the host call failed or verify timed out)"}
            )
            continue
        receipt = _receipt(output, str(extra["receipt"]))
        task = manifest.task(run.task_id)
        commands = [
            {"command": c["command"], "exit_code": c["exitCode"]}
            for c in receipt.get("hostCommands", [])
            if isinstance(c.get("command"), str)
            and c["command"].strip()
            and isinstance(c.get("exitCode"), int)
        ]
        summary = receipt.get("hostSummary") or run.notes or "no summary"
        arguments: dict[str, Any] = {
            "task": task.prompt,
            "task_id": task.id,
            "summary": f"[{run.condition}] {summary}",
            "outcome": "passed" if run.passed else "failed",
            "verification": {
                "command": task.verify,
                "exit_code": after["exit_code"],
                "output_digest": f"sha256:{after.get('output_sha256')}",
            },
            "commands": commands,
            "files": list(extra.get("changed_files") or []),
            "plan_id": run.plan_id,
            "skill_id": run.skill_id,
            "model": receipt.get("hostModelClaimed"),
        }
        try:
            result = await memory.call("record", arguments)
            state["recorded"].append(
                {**key, "experienceId": result.get("id"), "verified": result.get("verified")}
            )
        except MemoryToolError as exc:
            state["errors"].append({**key, "operation": "record", "error": str(exc)})
        if run.plan_id:
            if not memory.supports("report_outcome"):
                state["skipped"].append({**key, "reason": "the memory has no outcome operation"})
                continue
            try:
                outcome = await memory.call(
                    "report_outcome",
                    {
                        "plan_id": run.plan_id,
                        "passed": run.passed,
                        "rework_count": run.rework_count,
                    },
                )
                state["outcomes"].append(
                    {
                        **key,
                        "planId": run.plan_id,
                        "skillId": outcome.get("skill_id"),
                        "health": outcome.get("health"),
                        "state": outcome.get("state"),
                    }
                )
            except MemoryToolError as exc:
                state["errors"].append({**key, "operation": "report_outcome", "error": str(exc)})


async def _finalize(
    preflight: dict[str, Any],
    manifest: ConditionsManifest,
    output: Path,
    complete: bool,
    state: dict[str, Any],
    scratch: Path,
) -> None:
    profile = PROFILES[preflight["memory"]["profile"]]
    argv, home = _memory_argv(preflight, scratch)
    async with open_memory(
        profile, argv, home=home, cwd=scratch, stderr_path=scratch / "memory-server.stderr"
    ) as memory:
        if "lock" in preflight:
            try:
                lock: LockReceipt = await memory.clear_lock(manifest.id, lock_tasks(manifest))
                state["lock"] = lock.model_dump(mode="json", by_alias=True)
            except MemoryToolError as exc:
                # Nothing is written, so finalize can be run again once the memory is fixed.
                raise IntegrityFailure(
                    f"finalize: the evaluation lock could not be cleared, nothing recorded: {exc}"
                ) from None
        if complete:
            await _record_outcomes(memory, manifest, output, state)


def finalize_conditions(output: str | os.PathLike[str]) -> FinalizeSummary:
    """Finalize the evaluation whose receipts are in ``output`` (see the module doc)."""
    path = Path(os.path.abspath(output))
    if not path.is_dir():
        raise InvalidInput(f"{output}: not a conditions run directory")
    receipts = ReceiptDir(path)
    if receipts.contains(FINALIZE_FILE):
        raise OutputExistsError(f"{output}: already finalized ({FINALIZE_FILE} exists)")
    if not receipts.contains(PREFLIGHT_FILE):
        raise InvalidInput(f"{output}: no {PREFLIGHT_FILE}; not a conditions run directory")
    complete = receipts.contains(RUN_FILE) and receipts.contains(RUNS_FILE)
    if not complete and not receipts.contains(ABORTED_FILE):
        raise InvalidInput(
            f"{output}: the run is neither complete nor aborted (is it still running?)"
        )
    preflight = _receipt(path, PREFLIGHT_FILE)
    saved = _receipt(path, "manifest.json")
    manifest = validate_model(ConditionsManifest, saved["manifest"], f"{output}/manifest.json")
    state: dict[str, Any] = {
        "lock": None,
        "recorded": [],
        "outcomes": [],
        "skipped": [],
        "errors": [],
    }
    if "lock" not in preflight:
        # The run stopped before the lock was written: there is nothing to clear or record.
        status = "nothing-to-finalize"
    else:
        with tempfile.TemporaryDirectory(prefix="lorelab-finalize-") as scratch:
            try:
                run_async(_finalize, preflight, manifest, path, complete, state, Path(scratch))
            except PreflightError as exc:
                raise PreflightError(f"finalize could not reach the memory: {exc}") from None
        status = "finalized" if complete else "abandoned"
    errors = len(state["errors"])
    summary = FinalizeSummary(
        output=path,
        status=status,
        recorded=len(state["recorded"]),
        outcomes=len(state["outcomes"]),
        skipped=len(state["skipped"]),
        errors=errors,
        exit_code=1 if errors else 0,
    )
    receipts.write_json(
        FINALIZE_FILE,
        {
            "schemaVersion": 1,
            "evaluationId": manifest.id,
            "finalizedAt": _now(),
            "status": status,
            "statement": (
                "memory-condition outcomes recorded with their plan and Skill ids; baseline "
                "runs are never recorded"
                if complete
                else "the run did not complete: the lock is cleared and nothing is recorded"
            ),
            **state,
        },
    )
    return summary
