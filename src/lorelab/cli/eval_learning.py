"""``lorelab eval learning run|export-dataset|schema|verify``: the paired evaluation, its
datasets, its manifest schema and the check of a run from its receipts."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.table import Table

from lorelab.cli._common import (
    DefaultRunGroup,
    echo_json,
    exit_with,
    require_options,
    stdout_console,
)
from lorelab.cli._executor_options import executor_options
from lorelab.cli._options import (
    agent_option,
    allow_unsandboxed_option,
    endpoint_options,
    identity_option,
    json_option,
    max_output_bytes_option,
    output_option,
    quiet_option,
    worker_timeout_option,
)
from lorelab.evaluation.executors import make_executor
from lorelab.evaluation.learning import (
    DATASET_NAMES,
    DATASET_SETS,
    get_dataset,
    get_set,
    manifest_schema,
)
from lorelab.evaluation.learning.controller import (
    DEFAULT_REPEAT,
    DEFAULT_STABILITY_RUNS,
    LearningRequest,
    read_manifest_input,
    run_learning,
)
from lorelab.evaluation.learning.records import Summary
from lorelab.io import progress_bar
from lorelab.workers import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_TIMEOUT_MS,
    EndpointOptions,
    WorkerBounds,
    require_endpoint_use,
    resolve_agent,
    with_endpoint,
)

_ADAPTERS = ("fixture", "claude", "codex", "gemini", "openai", "pynguin", "static")


@click.group(name="learning", cls=DefaultRunGroup)
def learning_group() -> None:
    """Paired memory vs no-memory test generation, scored by planted-defect recall.

    \b
    lorelab eval learning run --agent NAME_OR_ARGV --output DIR [--dataset NAME]
    lorelab eval learning export-dataset NAME [--set]
    lorelab eval learning schema
    """


@learning_group.command(name="run")
@output_option(help_text="Fresh receipt directory.")
@agent_option(adapters=_ADAPTERS)
@agent_option(
    flag="--architect-agent",
    name="architect_agent",
    prefix="Worker of the architect role (default: --agent; the same in both arms), e.g. static:",
    adapters=_ADAPTERS,
)
@agent_option(
    flag="--author-agent",
    name="author_agent",
    prefix="Worker of the author role (default: --agent; the same in both arms):",
    adapters=_ADAPTERS,
)
@agent_option(
    flag="--reviewer-agent",
    name="reviewer_agent",
    prefix="Worker of the reviewer role (default: --agent; the same in both arms), e.g. static "
    "for a pynguin author:",
    adapters=_ADAPTERS,
)
@identity_option("Operator's identity text for receipts.")
@click.option("--repeat", type=int, default=DEFAULT_REPEAT, show_default=True, help="1 to 5.")
@click.option("--seed", type=int, default=None, help="Order seed (drawn and recorded if absent).")
@click.option("--max-calls", type=int, default=None, help="Role-call budget (at most 360).")
@click.option(
    "--fixtures",
    "manifest_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="A learning manifest (JSON) instead of a shipped dataset.",
)
@click.option("--dataset", type=click.Choice(DATASET_NAMES), default=None, help="Default: default.")
@click.option(
    "--control",
    type=click.Choice(["placebo"]),
    default=None,
    help="placebo: add a third arm whose lessons come from other specifications' history.",
)
@max_output_bytes_option(default=DEFAULT_MAX_OUTPUT_BYTES)
@worker_timeout_option(default_ms=DEFAULT_TIMEOUT_MS)
@click.option(
    "--stability-runs", type=int, default=DEFAULT_STABILITY_RUNS, show_default=True, help="2 to 5."
)
@click.option(
    "--evidence-kind",
    type=click.Choice(["live", "protocol-fixture"]),
    default=None,
    help="Default: live, or protocol-fixture for the fixture adapter (always).",
)
@executor_options("trials")
@endpoint_options()
@allow_unsandboxed_option()
@json_option("Print summary.json instead of a table.")
@quiet_option()
def run_command(
    output: Path | None,
    agent: str | None,
    architect_agent: str | None,
    author_agent: str | None,
    reviewer_agent: str | None,
    operator_identity: str | None,
    repeat: int,
    seed: int | None,
    max_calls: int | None,
    manifest_path: str | None,
    dataset: str | None,
    control: str | None,
    max_output_bytes: int,
    timeout_ms: int,
    stability_runs: int,
    evidence_kind: str | None,
    jobs: int,
    executor: str,
    ray_address: str | None,
    endpoint: EndpointOptions,
    allow_unsandboxed: bool,
    as_json: bool,
) -> None:
    """Run the paired evaluation into a fresh --output directory, with receipts.

    The worker --agent plays every role, except the roles --architect-agent, --author-agent
    and --reviewer-agent hand to another worker (the same in both arms). Reference suites and
    generated tests run in bubblewrap; without a working one the run is refused (exit 2)
    unless --allow-unsandboxed. Exit 0 when every trial
    qualified; 1 when ground truth failed or some trial did not qualify (the summary is still
    written); 2 for bad input; 3 when a worker's identity fails preflight or reference-test or
    defect content would reach a worker; 130/143 when interrupted (the worker is killed,
    controller.json says so).

    With --jobs N or --executor ray, trials run side by side in the order decided up front;
    recall figures stand and the summary marks time comparisons confounded.
    """
    require_options({"--output": output, "--agent": agent})
    assert output is not None
    assert agent is not None
    started = time.perf_counter()
    manifest, label = read_manifest_input(manifest_path, dataset)
    main_agent, role_agents = _agents(
        agent, (architect_agent, author_agent, reviewer_agent), endpoint
    )
    request = LearningRequest(
        manifest=manifest,
        dataset=label,
        agent=main_agent,
        architect_agent=role_agents[0],
        author_agent=role_agents[1],
        reviewer_agent=role_agents[2],
        operator_identity=operator_identity,
        repeat=repeat,
        seed=seed,
        max_calls=max_calls,
        bounds=WorkerBounds(timeout_ms, max_output_bytes),
        stability_runs=stability_runs,
        evidence_kind="live"
        if evidence_kind == "live"
        else ("protocol-fixture" if evidence_kind else None),
        started=started,
        control="placebo" if control == "placebo" else None,
        allow_unsandboxed=allow_unsandboxed,
    )
    variants = sum(1 + len(fixture.defects) for fixture in manifest.fixtures)
    runs_on = make_executor(jobs, executor, ray_address)
    try:
        arms = 3 if control == "placebo" else 2
        with _progress(variants + len(manifest.fixtures) * repeat * arms) as progress:
            outcome = run_learning(request, output, progress, runs_on)
    finally:
        runs_on.close()
    if outcome.summary is not None:
        if as_json:
            echo_json(outcome.summary)
        else:
            _print_summary(outcome.summary)
    click.echo(f"lorelab: {outcome.message} (receipts in {output})", err=True)
    exit_with(outcome.exit_code)


def _agents(
    agent: str, roles: tuple[str | None, str | None, str | None], endpoint: EndpointOptions
) -> tuple[tuple[str, ...], list[tuple[str, ...] | None]]:
    """The main worker's argv and each role's own (None: the main one), endpoint options
    appended to every openai worker (refused when no worker is openai)."""
    main_agent = tuple(with_endpoint(resolve_agent(agent), endpoint))
    flags = ("--architect-agent", "--author-agent", "--reviewer-agent")
    role_agents = [
        _role_agent(value, flag, endpoint) for value, flag in zip(roles, flags, strict=True)
    ]
    require_endpoint_use([main_agent, *[a for a in role_agents if a is not None]], endpoint)
    return main_agent, role_agents


def _role_agent(value: str | None, flag: str, endpoint: EndpointOptions) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(with_endpoint(resolve_agent(value, flag), endpoint, flag=flag))


@contextmanager
def _progress(total: int) -> Iterator[Callable[[str], None]]:
    with progress_bar("learning evaluation", total) as tick:

        def update(message: str) -> None:
            if message.startswith(("trial ", "ground truth run ")):
                tick(message)

        yield update


def _print_summary(summary: Summary) -> None:
    console = stdout_console()
    table = Table(title=f"learning evaluation ({summary.evidence_kind})")
    for column in ("arm", "trials", "qualified", "defects", "detected", "recall", "calls"):
        table.add_column(column)
    for arm, data in summary.arms.items():
        recall = "n/a" if data.defect_recall is None else f"{data.defect_recall:.3f}"
        table.add_row(
            arm,
            str(data.trials),
            str(data.qualified_trials),
            str(data.defects),
            str(data.detected),
            recall,
            f"{data.attempted_calls}/{data.calls}",
        )
    console.print(table)
    console.print(
        "roles: "
        + (
            "; ".join(f"{role} {worker.kind}" for role, worker in summary.roles.pairs())
            if summary.roles is not None
            else "not recorded"
        )
        + (
            f" (the protocol fixture plays the {', '.join(summary.fixture_roles)} role)"
            if summary.fixture_roles
            else ""
        ),
        markup=False,
    )
    specs = Table(title="paired by specification (memory minus no-memory)")
    for column in ("specification", "memory", "no-memory", "difference"):
        specs.add_column(column)
    for pair in summary.paired.specs:
        specs.add_row(
            pair.specification,
            f"{pair.memory_recall:.3f}",
            f"{pair.no_memory_recall:.3f}",
            f"{pair.difference:+.3f}",
        )
    console.print(specs)
    test = summary.paired.sign_test
    console.print(
        f"sign test: +{test['positive']} -{test['negative']} ={test['ties']}, "
        f"p = {test['pValue']:.4g}",
        markup=False,
    )
    console.print(f"label: {summary.paired.label} ({summary.paired.label_reason})", markup=False)
    placebo = summary.paired_placebo
    if placebo is not None:
        test = placebo.sign_test
        console.print(
            f"memory vs placebo: sign test +{test['positive']} -{test['negative']} "
            f"={test['ties']}, p = {test['pValue']:.4g}; label: {placebo.label} "
            f"({placebo.label_reason})",
            markup=False,
        )
    console.print(summary.power_note, markup=False)
    if summary.time_comparisons == "confounded":
        console.print(
            f"time comparisons: confounded (trials ran side by side on "
            f"{summary.executor.get('kind')}; times are not compared, recall figures stand)",
            markup=False,
        )


@learning_group.command(name="export-dataset")
@click.argument("name", type=click.Choice(DATASET_NAMES))
@click.option(
    "--set",
    "as_set",
    is_flag=True,
    help=f"List the set NAME ({', '.join(DATASET_SETS)}: the dataset NAME and every "
    "NAME-<project>) instead of printing one manifest.",
)
def export_dataset_command(name: str, as_set: bool) -> None:
    """Print the shipped dataset NAME as a manifest (JSON; valid input for --fixtures), or list
    the set NAME with --set.

    With --set, print the set NAME instead: every manifest of its campaign (one run each, then
    pool) with its dataset, id, project, SHA-256 and specification ids, and the totals of
    specifications and projects (JSON; not a manifest). evolution is a set: the datasets
    evolution and evolution-*.
    """
    echo_json(get_set(name) if as_set else get_dataset(name))


@learning_group.command(name="schema")
def schema_command() -> None:
    """Print the JSON Schema of the learning manifest (generated from its models)."""
    echo_json(manifest_schema())


@learning_group.command(name="verify")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
def verify_command(directory: Path) -> None:
    """Check the run in DIRECTORY from its receipts alone: every receipt's hash against the one
    summary.json records, and every figure and label of summary.json recomputed from the trial
    receipts. Exit 0 when all match, 1 naming each file that does not, 2 for a directory that
    is not a run with recorded hashes."""
    from lorelab.evaluation.learning.verify import verify_run

    found = verify_run(directory)
    for problem in found.problems:
        click.echo(problem, err=True)
    if not found.ok:
        exit_with(1)
    labels = ", ".join(f"{name} {label}" for name, label in found.labels.items())
    click.echo(
        f"verified: {found.checked} receipts match their hashes; labels recomputed: {labels}"
    )


@learning_group.command(name="pool")
@click.argument("directories", nargs=-1, type=click.Path(file_okay=False, path_type=Path))
@json_option("Print the pooled summary as JSON instead of a table.")
def pool_command(directories: tuple[Path, ...], as_json: bool) -> None:
    """Pool the specification pairs of several verified runs (one per manifest of a set) and
    label them together by the summary's own rule. Exit 0, or 2 when a run does not verify,
    the runs differ in evidence kind, repetitions or control, or a specification id repeats."""
    from lorelab.evaluation.learning.pooled import pool_runs

    pooled = pool_runs(list(directories))
    if as_json:
        echo_json(pooled)
        return
    comparisons = [("memory vs no-memory", pooled.paired)]
    if pooled.paired_placebo is not None:
        comparisons.append(("memory vs placebo", pooled.paired_placebo))
    click.echo(f"{len(pooled.runs)} runs, {pooled.specifications} specifications pooled")
    for name, paired in comparisons:
        test = paired.sign_test
        click.echo(
            f"{name}: {test['positive']} better, {test['negative']} worse, {test['ties']} ties, "
            f"p = {test['pValue']:.4g}; label {paired.label} ({paired.label_reason})"
        )
