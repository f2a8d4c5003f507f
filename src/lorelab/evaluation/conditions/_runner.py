"""The automated four-condition runner: ``lorelab eval conditions run``.

For every task x condition: a fresh copy of the project, the verify command before the host
edits, one host process per attempt through the worker transport (role ``host``), the verify
command after each attempt, rework up to the manifest's budget. Memory is reached as an MCP
client; the evaluation lock is written before any run. Order: baseline, memory_guided and
skill_planned for every task; then one Dream (candidates checked in a sandbox, promoted only
when their checks pass); then dreaming for every task. Receipts go through one run log into a
fresh 0700 directory, the runs file among them; nothing is retried and no run is dropped.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from lorelab._model import PROTOCOL_FIXTURE, timestamp
from lorelab.errors import (
    IntegrityFailure,
    LorelabError,
    PreflightError,
    UsageError,
    WorkerUnavailable,
)
from lorelab.evaluation.conditions._async import run_async
from lorelab.evaluation.conditions._distributed import run_phase
from lorelab.evaluation.conditions._dream import RUNNER_CHECKS, RunnerChecks, run_dream
from lorelab.evaluation.conditions._integrity import check_memory_clean, check_seeds, lock_tasks
from lorelab.evaluation.conditions._manifest import (
    MAX_HOST_CALL_MS,
    Condition,
    ConditionsManifest,
    load_manifest,
    project_dir,
)
from lorelab.evaluation.conditions._memory import (
    PROFILES,
    MemoryProfile,
    MemoryToolError,
    lorelab_server_argv,
    open_memory,
)
from lorelab.evaluation.conditions._one_run import RUNS_DIR, RunContext
from lorelab.evaluation.conditions._receipts import (
    HostModel,
    HostReceipt,
    ManifestReceipt,
    MemoryReceipt,
    PreflightReceipt,
    ProjectReceipt,
    RunAborted,
    RunFinished,
    RunsDocument,
    TimeBudget,
)
from lorelab.evaluation.conditions._runs import RUNS_FILE
from lorelab.evaluation.conditions._seed import SeedMemory, read_seed, seed_memory
from lorelab.evaluation.conditions._snapshot import Snapshot, take_snapshot
from lorelab.evaluation.conditions._verify import command_env
from lorelab.evaluation.executors import TrialExecutor
from lorelab.evaluation.runlog import RunError, RunLog
from lorelab.io import SCRIPT_HASH_CAP, progress_bar, require_sandbox, sha256_file
from lorelab.mcp import ALLOW_CHECKS_ENV
from lorelab.workers import (
    VERIFICATION_SCOPE,
    EndpointOptions,
    WorkerIdentity,
    adapter_argv,
    bind_identity,
    cannot_start,
    check_endpoints,
    is_fixture_agent,
    require_endpoint_use,
    resolve_agent,
    with_endpoint,
    worker_name,
)

FixtureKind = Literal["protocol-fixture"]
RUN_FILE: Final = "run.json"
PREFLIGHT_FILE: Final = "preflight.json"
DREAM_FILE: Final = "dream.json"
ABORTED_FILE: Final = "aborted.json"
MANIFEST_FILE: Final = "manifest.json"
VERIFY_TIMEOUT_S: Final = 300.0
FIRST_PHASE: Final[tuple[Condition, ...]] = ("baseline", "memory_guided", "skill_planned")
# Shipped adapters that take ``--model M`` and pass it to their tool (fixture-host echoes it).
MODEL_ADAPTERS: Final = ("claude", "codex", "gemini", "openai", "fixture-host")


@dataclass(frozen=True, slots=True)
class RunOptions:
    """Everything ``lorelab eval conditions run`` was asked to do."""

    manifest_path: Path
    host: str
    output: Path
    memory_home: Path | None = None
    memory_argv: list[str] | None = None
    seed_memory: Path | None = None
    identity: str | None = None
    verify_timeout_s: float = VERIFY_TIMEOUT_S
    # Where the runs execute (--jobs, --executor ray); None: one after another. The caller
    # made it and closes it.
    executor: TrialExecutor | None = None
    # --model/--base-url/... for --host openai (refused for any other host).
    endpoint: EndpointOptions = field(default_factory=EndpointOptions)
    # --allow-unsandboxed: run verify and check commands unconfined where no sandbox works.
    allow_unsandboxed: bool = False


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What the run wrote and how it ended."""

    output: Path
    runs: int
    passed: int
    host_failures: int
    identity_changes: int
    evidence_kind: str | None
    exit_code: int
    memory_failures: int = 0
    model_mismatches: int = 0
    flagged_runs: int = 0
    executor_failures: int = 0


def _manifest_host_argv(manifest: ConditionsManifest) -> list[str] | None:
    declared = manifest.host.argv
    if declared is None:
        return None
    if len(declared) == 1:
        # A one-element argv may name a shipped adapter, exactly as --host does.
        try:
            return resolve_agent(declared[0], flag="host.argv")
        except UsageError:
            return list(declared)
    return list(declared)


def resolve_host(manifest: ConditionsManifest, host: str) -> list[str]:
    """The host argv from ``--host``; it must match the manifest's ``host.argv`` when set."""
    argv = resolve_agent(host, flag="--host")
    declared = _manifest_host_argv(manifest)
    if declared is not None and declared != argv:
        raise UsageError(
            f"--host resolves to {argv} but the manifest declares host.argv {declared}; the "
            "host must be identical for every condition and declared before any run"
        )
    return argv


def with_model(argv: list[str], model: str | None) -> tuple[list[str], str | None]:
    """``argv`` with ``--model MODEL`` appended when it runs a shipped adapter that takes one,
    and how the model was passed (``None``: it could not be, and only the claim is checked)."""
    if model is None:
        return argv, None
    for name in MODEL_ADAPTERS:
        if argv == adapter_argv(name):
            return [*argv, "--model", model], "--model"
    return argv, None


def resolve_memory(
    manifest: ConditionsManifest, options: RunOptions, project: Path
) -> tuple[MemoryProfile, list[str], Path | None]:
    """The profile, server argv and memory home the run will use (checked before anything
    runs). The default lorelab server's ``--project`` is ``project`` here; the run replaces it
    with its pristine copy of the snapshot once that exists."""
    profile = PROFILES[manifest.memory.profile]
    home = Path(os.path.abspath(options.memory_home)) if options.memory_home else None
    if home is not None and home.exists() and not home.is_dir():
        raise UsageError(f"--home {options.memory_home}: exists and is not a directory")
    if home is not None:
        real_home, real_project = Path(os.path.realpath(home)), Path(os.path.realpath(project))
        if real_home == real_project or real_project in real_home.parents:
            # The snapshot leaves out only directories named .lorelab; any other memory home
            # inside the project would be copied into every condition's project, baseline too.
            raise UsageError(
                f"--home {options.memory_home}: is inside the project {project}; a "
                "baseline host would find the memory in its copy (put the home elsewhere)"
            )
    argv = options.memory_argv or manifest.memory.argv
    if argv:
        return profile, list(argv), home
    if profile.name != "lorelab":
        raise UsageError(
            f"memory profile {profile.name} has no default server; give --memory-argv or "
            "memory.argv in the manifest"
        )
    if home is None:
        raise UsageError("the lorelab memory profile needs --home DIR: the memory home under test")
    return profile, lorelab_server_argv(home, project), home


def _memory_env(profile: MemoryProfile) -> dict[str, str]:
    # Running the evaluation is the operator's consent to its Dream step: lorelab's server
    # serves lore_check_candidate only when told so (agents cannot reach this environment).
    return {ALLOW_CHECKS_ENV: "1"} if profile.name == "lorelab" else {}


@dataclass(slots=True)
class _Memory:
    """The memory the run talks to, and the preflight receipt as it grows."""

    profile: MemoryProfile
    argv: list[str]
    home: Path | None
    seed: SeedMemory | None
    clean: Path
    preflight: PreflightReceipt
    # Seed experiences by the ids the memory gave them (the runner checks Dreams with them).
    seeded: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


async def _execute(ctx: RunContext, mem: _Memory) -> None:
    async with open_memory(
        mem.profile,
        mem.argv,
        home=mem.home,
        cwd=mem.clean,
        stderr_path=ctx.root / "memory-server.stderr",
        env=_memory_env(mem.profile),
    ) as memory:
        ctx.memory = memory
        listed = mem.preflight.memory.model_copy(update={"tools": sorted(memory.listed)})
        mem.preflight = mem.preflight.model_copy(update={"memory": listed})
        if mem.seed is not None:
            seeding, mem.seeded = await seed_memory(memory, mem.seed, ctx.manifest)
            mem.preflight = mem.preflight.model_copy(update={"seeding": seeding})
        try:
            seeds = await check_seeds(memory, ctx.manifest)
            mem.preflight = mem.preflight.model_copy(update={"seeds_in_memory": seeds})
            holdouts = await check_memory_clean(memory, ctx.manifest)
            # Said before the lock is written: a run stopped while it is being written still
            # tells finalize there may be a lock to clear.
            mem.preflight = mem.preflight.model_copy(
                update={"holdouts_in_memory": holdouts, "lock_requested": True}
            )
            lock = await memory.set_lock(ctx.manifest.id, lock_tasks(ctx.manifest))
        except MemoryToolError as exc:
            raise PreflightError(str(exc)) from None
        mem.preflight = mem.preflight.model_copy(update={"lock": lock})
        ctx.log.write(PREFLIGHT_FILE, mem.preflight)
        await run_phase(ctx, [(task, c) for task in ctx.manifest.tasks for c in FIRST_PHASE])
        checks = RunnerChecks(ctx.snapshot, ctx.root, ctx.env, mem.seeded)
        ctx.dream = await run_dream(memory, checks)
        ctx.counts.memory_failures += ctx.dream.tool_errors
        ctx.log.write(DREAM_FILE, ctx.dream.receipt())
        await run_phase(ctx, [(task, "dreaming") for task in ctx.manifest.tasks])


def _aborted(ctx: RunContext, preflight: PreflightReceipt, error: RunError) -> RunAborted:
    if not ctx.log.contains(PREFLIGHT_FILE):
        ctx.log.write(PREFLIGHT_FILE, preflight)
    message = error.message
    return RunAborted(
        evaluation_id=ctx.manifest.id,
        aborted_at=timestamp(),
        outcome=error.outcome,
        error=message if error.outcome != "interrupted" else f"interrupted ({message})",
        runs_completed=len(ctx.records),
        runs=ctx.records,
        lock_active=preflight.lock_active(),
    )


def _preflight(
    options: RunOptions,
    manifest: ConditionsManifest,
    manifest_sha: str,
    source: Path,
    snapshot: Snapshot,
    argv: list[str],
    model_passed: str | None,
    identity: WorkerIdentity,
    mem: tuple[MemoryProfile, list[str], Path | None],
) -> PreflightReceipt:
    profile, memory_argv, home = mem
    return PreflightReceipt(
        evaluation_id=manifest.id,
        started_at=timestamp(),
        manifest_sha256=manifest_sha,
        project=ProjectReceipt(
            source=str(source), sha256=snapshot.sha256, files=len(snapshot.files)
        ),
        host=HostReceipt(
            argv=argv,
            declared=manifest.host,
            identity=identity,
            evidence_kind=PROTOCOL_FIXTURE if is_fixture_agent(argv) else None,
            model=HostModel(
                declared=manifest.host.model,
                requested=identity.model.requested,
                passed_as=model_passed,
            ),
            time_budget=TimeBudget(
                time_budget_s=manifest.host.time_budget_s,
                max_attempts=manifest.rework_budget + 1,
                max_per_call_s=MAX_HOST_CALL_MS // 1000,
            ),
        ),
        verification_scope=dict(VERIFICATION_SCOPE),
        verify_timeout_s=options.verify_timeout_s,
        memory=MemoryReceipt(
            profile=profile.name,
            argv=memory_argv,
            argv_kind="custom" if (options.memory_argv or manifest.memory.argv) else "default",
            home=str(home) if home else None,
            candidate_checks=(
                f"allowed by running the evaluation ({ALLOW_CHECKS_ENV}=1 in the server's "
                "environment)"
                if profile.name == "lorelab"
                else None
            ),
            unsupported=profile.unsupported_operations(),
            agent_id=profile.sent_agent_id(),
            dream_checks=RUNNER_CHECKS if profile.checks_by_runner else "run by the memory server",
        ),
    )


def _finish(ctx: RunContext) -> RunSummary:
    evidence: FixtureKind | None = PROTOCOL_FIXTURE if ctx.fixture else None
    ctx.log.write(
        RUNS_FILE,
        RunsDocument(
            runs=ctx.records,
            evaluation_id=ctx.manifest.id,
            manifest_sha256=ctx.manifest_sha256,
            evidence_kind=evidence,
        ),
    )
    tally = ctx.counts
    exit_code = 3 if tally.identity_changes else 1 if tally.failures else 0
    summary = RunSummary(
        output=ctx.log.path,
        runs=len(ctx.records),
        passed=sum(1 for record in ctx.records if record.passed),
        evidence_kind=evidence,
        exit_code=exit_code,
        **asdict(tally),
    )
    # run.json carries the summary's counts under the same names.
    counts = {name: value for name, value in asdict(summary).items() if name != "output"}
    finished = {
        **counts,
        "evaluation_id": ctx.manifest.id,
        "finished_at": timestamp(),
        "runs_file": RUNS_FILE,
        "executor": ctx.executor.describe() if ctx.executor else {"kind": "sequential", "jobs": 1},
    }
    ctx.log.finish(RUN_FILE, RunFinished.model_validate(finished))
    return summary


def _bind_host(
    argv: list[str],
    cwd: Path,
    options: RunOptions,
    manifest: ConditionsManifest,
    env: dict[str, str],
) -> WorkerIdentity:
    """Bind the host's identity in ``cwd``; refuse an argv asking for another model."""
    identity = bind_identity(argv, cwd=cwd, operator_identity=options.identity, env=env)
    problem = cannot_start(identity, env)
    if problem is not None:
        raise WorkerUnavailable(f"the host {worker_name(argv)} cannot start: {problem}")
    # No run starts against an endpoint that cannot be reached (no key sent, no completion).
    check_endpoints([argv])
    requested = identity.model.requested
    if manifest.host.model is not None and requested not in (None, manifest.host.model):
        raise UsageError(
            f"the host argv asks for model {requested!r} but the manifest declares "
            f"host.model {manifest.host.model!r}"
        )
    return identity


def check_memory_startable(argv: list[str], profile: MemoryProfile) -> None:
    """Refuse a memory server whose program cannot be found (exit 2, before any receipt).

    A bare name is looked up on this process's PATH (the server inherits it); a relative path
    with a ``/`` resolves against the server's cwd and is left to the start itself.
    """
    program = argv[0]
    if "/" in program and not os.path.isabs(program):
        return
    if shutil.which(program) is None:
        where = "is not an executable file" if os.path.isabs(program) else "is not on PATH"
        raise WorkerUnavailable(
            f"the memory server {program} (profile {profile.name}) cannot start: {program} "
            f"{where}; install it, or give its full argv with --memory-argv"
        )


def _run_logged(ctx: RunContext, mem: _Memory) -> None:
    """Run every phase; whatever stops the run (an error, Ctrl-C, SIGTERM, a bug) leaves
    aborted.json, so finalize can clear the lock (the caller removes the temporary copies)."""
    try:
        with progress_bar("conditions runs", len(ctx.manifest.tasks) * 4) as ctx.tick:
            run_async(_execute, ctx, mem)
    except BaseException as exc:
        ctx.log.abort(ABORTED_FILE, exc, lambda error: _aborted(ctx, mem.preflight, error))
        if isinstance(exc, LorelabError) or not isinstance(exc, OSError):
            raise
        raise IntegrityFailure(f"the run stopped: {exc}") from None


def run_conditions(options: RunOptions) -> RunSummary:
    """Run every task x condition of the manifest; write receipts and the runs file.

    Refusals before anything runs: bad manifest, host or memory options, a host or memory
    server that cannot start, no working sandbox without ``allow_unsandboxed`` (exit 2); a
    host that cannot be bound or a memory that cannot be reached (exit 3). Exit code in the
    summary: 0 when every run completed (whatever its outcome), 1 when a run could not
    complete as declared (a host call, a memory operation or the run's worker failed, or the
    host claimed another model; such runs stay in the record), 3 when an identity changed.
    """
    manifest = load_manifest(options.manifest_path)
    manifest_sha = sha256_file(options.manifest_path, cap=SCRIPT_HASH_CAP)
    source = project_dir(manifest, options.manifest_path)
    argv, model_passed = with_model(resolve_host(manifest, options.host), manifest.host.model)
    require_endpoint_use([argv], options.endpoint)
    argv = with_endpoint(argv, options.endpoint, flag="--host")
    profile, memory_argv, home = resolve_memory(manifest, options, source)
    seed = read_seed(options.seed_memory) if options.seed_memory else None
    # Verify commands (and the checks of a memory without its own) are untrusted code.
    confinement = require_sandbox(
        "lorelab eval conditions run", allow_unsandboxed=options.allow_unsandboxed
    )
    snapshot = take_snapshot(source)
    env = command_env()
    root = Path(tempfile.mkdtemp(prefix="lorelab-conditions-"))
    try:
        preflight_copy = snapshot.materialise(root / "preflight")
        # The memory server gets a pristine copy as its project, never the source: Dream checks
        # copy that project, and must see exactly what every condition's host sees.
        clean = snapshot.materialise(root / "memory-project")
        if not (options.memory_argv or manifest.memory.argv) and home is not None:
            memory_argv = lorelab_server_argv(home, clean)
        identity = _bind_host(argv, preflight_copy, options, manifest, env)
        check_memory_startable(memory_argv, profile)
        log = RunLog.start(options.output)
        log.write(
            MANIFEST_FILE,
            ManifestReceipt(sha256=manifest_sha, manifest=manifest, confinement=confinement),
        )
        mem = _Memory(
            profile,
            memory_argv,
            home,
            seed,
            clean,
            _preflight(
                options,
                manifest,
                manifest_sha,
                source,
                snapshot,
                argv,
                model_passed,
                identity,
                (profile, memory_argv, home),
            ),
        )
        ctx = RunContext(
            manifest=manifest,
            manifest_sha256=manifest_sha,
            snapshot=snapshot,
            root=root,
            argv=argv,
            identity=identity,
            env=env,
            log=log,
            verify_timeout_s=options.verify_timeout_s,
            fixture=is_fixture_agent(argv),
            executor=options.executor,
        )
        log.group(RUNS_DIR)
        _run_logged(ctx, mem)
        return _finish(ctx)
    finally:
        shutil.rmtree(root, ignore_errors=True)
