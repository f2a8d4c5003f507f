"""``lorelab eval conditions finalize``: end an evaluation. Clear its lock, then record the
memory-condition outcomes (with their plan and Skill ids) so audits and Skill health update.

Finalize reads only the run's own receipts. Every step it completes is written at once to a
journal of write-once receipts in ``DIR/finalize-journal/`` (an intent before each memory
write, the result after it), so an interrupted finalize can be run again: it skips what the
journal says is done, treats an already-cleared lock of this evaluation as cleared, and for a
write whose intent has no result asks the memory whether it happened before writing again.
``finalize.json`` is written once, at the end; a finalize after that is refused. A run that
aborted gets its lock cleared and nothing recorded.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic import Field

from lorelab._model import ReceiptModel, RecordModel, timestamp
from lorelab.errors import (
    IntegrityFailure,
    InvalidInput,
    LorelabError,
    OutputExistsError,
    PreflightError,
)
from lorelab.evaluation.conditions._async import run_async
from lorelab.evaluation.conditions._integrity import lock_tasks
from lorelab.evaluation.conditions._manifest import ConditionsManifest
from lorelab.evaluation.conditions._memory import (
    LIST_LIMIT,
    PROFILES,
    LockReceipt,
    MemoryToolError,
    MemoryUnderTest,
    MemoryUnsupported,
    lock_receipt,
    lorelab_server_argv,
    open_memory,
)
from lorelab.evaluation.conditions._profile_data import (
    load_profile,
    prepare_server_dirs,
    server_values,
)
from lorelab.evaluation.conditions._profiles import MemoryProfile, UnsupportedOperation
from lorelab.evaluation.conditions._runner import (
    ABORTED_FILE,
    MANIFEST_FILE,
    PREFLIGHT_FILE,
    RUN_FILE,
)
from lorelab.evaluation.conditions._runs import RUNS_FILE, RunRecord, read_runs
from lorelab.io import ReceiptDir, read_json, validate_model
from lorelab.workers import SHIPPED_ADAPTERS, adapter_argv

FINALIZE_FILE: Final = "finalize.json"
JOURNAL_DIR: Final = "finalize-journal"
LOCK_ENTRY: Final = "lock.json"
_HOST_MAX: Final = 400


class _LockEntry(RecordModel):
    lock: LockReceipt


class UnsupportedWrite(RecordModel):
    """A finalize write for one run that the memory cannot express, and why (its profile's
    reason): recorded as unsupported, never as an error of the memory."""

    task_id: str
    condition: str
    operation: str
    reason: str


class FinalizeReceipt(ReceiptModel):
    """``finalize.json``: how the evaluation was ended, and every record finalize wrote."""

    evaluation_id: str
    finalized_at: str
    status: str
    resumed: bool
    journal: str | None
    statement: str
    lock: dict[str, Any] | None
    recorded: list[dict[str, Any]]
    outcomes: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    unsupported: list[UnsupportedWrite] = Field(
        description="Writes the memory cannot express (its profile says why); not errors."
    )
    errors: list[dict[str, Any]]
    unsupported_operations: list[UnsupportedOperation] = Field(
        description="Every protocol operation the memory's profile cannot perform, and why."
    )


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
    resumed: bool = False


def _receipt(path: Path, name: str) -> Any:
    return read_json(path / name, "fixture")


class Journal:
    """The finalize journal: one write-once receipt per step, read back on a rerun."""

    def __init__(self, receipts: ReceiptDir) -> None:
        path = receipts.path / JOURNAL_DIR
        self.resumed = path.is_dir()
        self.dir = ReceiptDir(path) if self.resumed else receipts.subdir(JOURNAL_DIR)

    def get(self, name: str) -> Any:
        """The entry ``name``, or ``None`` when it was never written."""
        return read_json(self.dir.path / name, "fixture") if self.dir.contains(name) else None

    def put(self, name: str, value: Mapping[str, Any]) -> None:
        """Write entry ``name`` once, with the time it was written."""
        self.dir.write_json(name, {**value, "writtenAt": timestamp()})

    def entries(self) -> int:
        """How many entries the journal holds."""
        return sum(1 for entry in self.dir.path.iterdir() if entry.suffix == ".json")


def host_provenance(argv: list[str]) -> str:
    """How finalize names the host in recorded experiences: the shipped adapter's name, or the
    argv as one shell-quoted line (cut at the memory's 400 characters)."""
    for name in SHIPPED_ADAPTERS:
        if argv[:3] == adapter_argv(name):
            return f"lorelab adapter {name}" + (f" {shlex.join(argv[3:])}" if argv[3:] else "")
    line = shlex.join(argv)
    return line if len(line) <= _HOST_MAX else line[: _HOST_MAX - 3] + "..."


def _memory_argv(preflight: dict[str, Any], scratch: Path) -> tuple[list[str], Path | None]:
    memory = preflight["memory"]
    home = Path(memory["home"]) if memory.get("home") else None
    if memory.get("argvKind") == "default" and home is not None and memory["profile"] == "lorelab":
        # The run's pristine project copy is gone; finalize runs no checks, so any directory
        # serves as the server's project.
        return lorelab_server_argv(home, scratch), home
    return list(memory["argv"]), home


def _manual_recovery(preflight: Mapping[str, Any]) -> str:
    """The exact command that clears the run's lock by hand (lorelab profile), or what to do."""
    memory = preflight.get("memory")
    home = memory.get("home") if isinstance(memory, Mapping) else None
    evaluation = preflight.get("evaluationId")
    if isinstance(memory, Mapping) and memory.get("profile") == "lorelab" and home:
        return (
            f"clear its lock with `lorelab memory --home {shlex.quote(str(home))} lock clear "
            f"{shlex.quote(str(evaluation))}` (nothing is recorded)"
        )
    return "clear the evaluation lock in the memory under test by its own means"


def _record_arguments(
    run: RunRecord, manifest: ConditionsManifest, output: Path, host: str
) -> dict[str, Any]:
    extra = run.model_extra or {}
    after = extra.get("verification_after") or {}
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
    return {
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
        "host": host,
        "model": receipt.get("hostModelClaimed"),
    }


async def _already_recorded(memory: MemoryUnderTest, arguments: dict[str, Any]) -> str | None:
    """The id of an experience an interrupted finalize recorded with ``arguments``, if the
    memory can list its experiences and holds one (same task id, summary and digest)."""
    if not memory.supports("list"):
        return None
    listing = await memory.call("list", {"kind": "experience", "limit": LIST_LIMIT})
    digest = arguments["verification"]["output_digest"]
    for item in listing.get("items") or []:
        if not isinstance(item, Mapping):
            continue
        provenance = item.get("provenance")
        verification = provenance.get("verification") if isinstance(provenance, Mapping) else None
        if (
            item.get("task_id") == arguments["task_id"]
            and item.get("summary") == arguments["summary"]
            and isinstance(verification, Mapping)
            and verification.get("output_digest") == digest
        ):
            return str(item.get("id"))
    return None


async def _outcome_reported(memory: MemoryUnderTest, plan_id: str) -> bool:
    if not memory.supports("show"):
        return False
    shown = await memory.call("show", {"id": plan_id})
    item = shown.get("item", shown)
    return isinstance(item, Mapping) and item.get("outcome") is not None


def _unsupported(key: Mapping[str, Any], exc: MemoryUnsupported) -> UnsupportedWrite:
    return UnsupportedWrite(
        task_id=str(key["taskId"]),
        condition=str(key["condition"]),
        operation=exc.operation,
        reason=exc.reason,
    )


def _unless_interrupted(exc: MemoryToolError) -> None:
    """A refused write is an error in finalize.json; a lost memory stops finalize unfinished."""
    if exc.transport:
        raise IntegrityFailure(
            f"finalize stopped: {exc}; run finalize again: its journal keeps what is done"
        ) from None


@dataclass(frozen=True, slots=True)
class _RunWrite:
    """Where finalize's writes for one run go: the memory, the journal, the receipt's state,
    and the run (its index in the runs file and its key in the receipt)."""

    memory: MemoryUnderTest
    journal: Journal
    state: dict[str, Any]
    index: int
    key: dict[str, Any]

    async def journaled(
        self,
        name: str,
        operation: str,
        recover: Callable[[], Awaitable[dict[str, Any] | None]],
        write: Callable[[], Awaitable[dict[str, Any]]],
    ) -> None:
        """One write between its journal entries: ``name`` is the journal's name for it,
        ``operation`` the memory's. Done by an earlier finalize: taken from the journal. Begun
        by one (an intent without a result): ``recover`` looks for it in memory first."""
        journal, state, key = self.journal, self.state, self.key
        listed = "recorded" if operation == "record" else "outcomes"
        done_name = f"{name}-{self.index:03d}.json"
        intent_name = f"{name}-{self.index:03d}-intent.json"
        done = journal.get(done_name)
        if done is not None:
            state[listed].append({**key, **done["result"], "fromJournal": True})
            return
        try:
            result = None
            if journal.get(intent_name) is not None:
                result = await recover()
            else:
                journal.put(intent_name, {**key, "operation": operation})
            if result is None:
                result = await write()
        except MemoryUnsupported as exc:
            state["unsupported"].append(_unsupported(key, exc))
            return
        except MemoryToolError as exc:
            _unless_interrupted(exc)
            state["errors"].append({**key, "operation": operation, "error": str(exc)})
            return
        journal.put(done_name, {**key, "result": result})
        state[listed].append({**key, **result})


async def _record_one(run_write: _RunWrite, arguments: dict[str, Any]) -> None:
    memory = run_write.memory

    async def recover() -> dict[str, Any] | None:
        recovered = await _already_recorded(memory, arguments)
        if recovered is None:
            return None
        return {"experienceId": recovered, "verified": None, "recoveredFromMemory": True}

    async def write() -> dict[str, Any]:
        answer = await memory.call("record", arguments)
        result = {"experienceId": answer.get("id"), "verified": answer.get("verified")}
        if answer.get("rejected"):
            # The memory answered but stored no experience (MemCoder's QA, say).
            result["notStored"] = answer["rejected"]
        if answer.get("plan_outcome"):
            result["planOutcome"] = answer["plan_outcome"]
        return result

    await run_write.journaled("record", "record", recover, write)


async def _report_one(run_write: _RunWrite, run: RunRecord) -> None:
    memory = run_write.memory
    plan_id = run.plan_id
    assert plan_id is not None
    outcome_done = run_write.journal.get(f"outcome-{run_write.index:03d}.json")
    if not memory.supports("report_outcome") and outcome_done is None:
        reason = "the memory has no outcome operation"
        run_write.state["skipped"].append({**run_write.key, "reason": reason})
        return

    async def recover() -> dict[str, Any] | None:
        if not await _outcome_reported(memory, plan_id):
            return None
        return {
            "planId": plan_id,
            "skillId": run.skill_id,
            "health": None,
            "state": None,
            "recoveredFromMemory": True,
        }

    async def write() -> dict[str, Any]:
        outcome = await memory.call(
            "report_outcome",
            {"plan_id": plan_id, "passed": run.passed, "rework_count": run.rework_count},
            {"skill_id": run.skill_id},
        )
        result = {
            "planId": plan_id,
            "skillId": outcome.get("skill_id"),
            "health": outcome.get("health"),
            "state": outcome.get("state"),
        }
        if outcome.get("credit") is not None:
            result["credit"] = outcome["credit"]
        return result

    await run_write.journaled("outcome", "report_outcome", recover, write)


async def _record_outcomes(
    memory: MemoryUnderTest,
    manifest: ConditionsManifest,
    output: Path,
    journal: Journal,
    host: str,
    state: dict[str, Any],
) -> None:
    runs = read_runs(output / RUNS_FILE, expected_tasks=[task.id for task in manifest.tasks])
    for index, run in enumerate(runs.runs):
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
        run_write = _RunWrite(memory, journal, state, index, key)
        await _record_one(run_write, _record_arguments(run, manifest, output, host))
        if run.plan_id:
            await _report_one(run_write, run)


async def _clear_lock(
    memory: MemoryUnderTest,
    manifest: ConditionsManifest,
    journal: Journal,
    state: dict[str, Any],
    written: bool,
) -> None:
    entry = journal.get(LOCK_ENTRY)
    if entry is not None:
        state["lock"] = {**entry["lock"], "fromJournal": True}
        return
    try:
        active = await memory.lock_state(manifest.id)
        if active is None and not written:
            # The run stopped while the lock was being written, and the memory holds none.
            detail = "the run stopped before its lock was written; there is none to clear"
            lock = lock_receipt(manifest.id, lock_tasks(manifest), "never-written", False, detail)
        elif active is False:
            # Cleared by an interrupted finalize before it could write the journal entry.
            detail = "the memory holds this evaluation's lock only as cleared"
            lock = lock_receipt(manifest.id, lock_tasks(manifest), "already-cleared", False, detail)
        else:
            lock = await memory.clear_lock(manifest.id, lock_tasks(manifest))
    except MemoryToolError as exc:
        # Nothing is recorded while the lock may still be active; finalize can be run again
        # once the memory is fixed.
        raise IntegrityFailure(
            f"finalize: the evaluation lock could not be cleared, nothing recorded: {exc}"
        ) from None
    entry = _LockEntry(lock=lock).to_json()
    state["lock"] = entry["lock"]
    journal.put(LOCK_ENTRY, entry)


def run_profile(preflight: Mapping[str, Any]) -> MemoryProfile:
    """The profile the run used: its file again (refused when its bytes changed since the
    run: exit 3), or the shipped profile it names."""
    memory = preflight["memory"]
    path = memory.get("profileFile")
    if path is None:
        return PROFILES[memory["profile"]]
    try:
        profile = load_profile(path)
    except LorelabError as exc:
        raise IntegrityFailure(f"the run's memory profile cannot be read again: {exc}") from None
    if profile.sha256 != memory.get("profileSha256"):
        raise IntegrityFailure(
            f"the memory profile {path} changed since the run (SHA-256 {profile.sha256}, the run "
            f"recorded {memory.get('profileSha256')}); finalize speaks to the memory the way the "
            "run did, or not at all"
        )
    return profile


async def _finalize(
    preflight: dict[str, Any],
    manifest: ConditionsManifest,
    output: Path,
    complete: bool,
    journal: Journal,
    state: dict[str, Any],
    scratch: Path,
) -> None:
    profile = run_profile(preflight)
    argv, home = _memory_argv(preflight, scratch)
    prepare_server_dirs(profile, home, scratch)
    async with open_memory(
        profile,
        argv,
        home=home,
        cwd=scratch,
        stderr_path=scratch / "memory-server.stderr",
        env=server_values(profile, home, scratch)[1],
    ) as memory:
        # The lock goes first: while it is active the memory refuses to record holdouts.
        await _clear_lock(memory, manifest, journal, state, "lock" in preflight)
        if complete:
            host = host_provenance(list(preflight["host"]["argv"]))
            await _record_outcomes(memory, manifest, output, journal, host, state)


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
    preflight = _receipt(path, PREFLIGHT_FILE)
    if not complete and not receipts.contains(ABORTED_FILE):
        raise InvalidInput(
            f"{output}: the run is neither complete nor aborted (is it still running?); "
            f"if its process was killed outright, {_manual_recovery(preflight)}"
        )
    saved = _receipt(path, MANIFEST_FILE)
    manifest = validate_model(ConditionsManifest, saved["manifest"], f"{output}/{MANIFEST_FILE}")
    state: dict[str, Any] = {
        "lock": None,
        "recorded": [],
        "outcomes": [],
        "skipped": [],
        "unsupported": [],
        "errors": [],
        "unsupported_operations": run_profile(preflight).unsupported_operations(),
    }
    resumed = False
    if "lock" not in preflight and not preflight.get("lockRequested"):
        # The run stopped before the lock was written: there is nothing to clear or record.
        status = "nothing-to-finalize"
    else:
        journal = Journal(receipts)
        resumed = journal.resumed
        with tempfile.TemporaryDirectory(prefix="lorelab-finalize-") as scratch:
            try:
                run_async(
                    _finalize, preflight, manifest, path, complete, journal, state, Path(scratch)
                )
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
        resumed=resumed,
    )
    receipts.write_json(
        FINALIZE_FILE,
        FinalizeReceipt(
            evaluation_id=manifest.id,
            finalized_at=timestamp(),
            status=status,
            resumed=resumed,
            journal=f"{JOURNAL_DIR}/" if "lock" in preflight else None,
            statement=(
                "memory-condition outcomes recorded with their plan and Skill ids; baseline "
                "runs are never recorded"
                if complete
                else "the run did not complete: the lock is cleared and nothing is recorded"
            ),
            **state,
        ),
    )
    return summary
