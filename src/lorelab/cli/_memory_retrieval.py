"""``lorelab memory explain|validity|feedback|reindex``: what retrieval serves, and why."""

from __future__ import annotations

from typing import Any

import click

from lorelab.cli import _memory_views as views
from lorelab.cli._common import echo_json, stderr_console
from lorelab.cli._memory_commands import Command, Options, from_options, store_for
from lorelab.memory import (
    ExplainResult,
    FeedbackResult,
    ReindexRequest,
    SqliteMemoryStore,
    ValidityResult,
)


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def print_explain(request: Any, result: ExplainResult) -> None:
    views.echo(
        f"{result.mode} retrieval"
        + (
            f", related at confidence >= {result.threshold}, match at >= {result.match_threshold}"
            if result.threshold is not None
            else ""
        )
        + (f": empty brief ({result.reason})" if result.empty else "")
    )
    for item in result.candidates:
        views.echo(
            f"{item.id}  lexical {_score(item.lexical)}  semantic {_score(item.semantic)}  "
            f"fused {item.fused:.4f}  confidence {_score(item.confidence)}  "
            f"{item.tier or '-'}  {item.task}"
        )
        views.echo(f"    {item.reason}")
        if item.recorded_by is not None:
            views.echo(f"    recorded by token {item.recorded_by}")


def print_validity(request: Any, result: ValidityResult) -> None:
    why = f": {result.reason}" if result.reason else ""
    by = f" (superseded by {result.superseded_by})" if result.superseded_by else ""
    views.echo(f"{result.item_id}: {result.state_before} -> {result.state}{why}{by}")


def print_feedback(request: Any, result: FeedbackResult) -> None:
    counts = result.counts
    views.echo(
        f"{result.experience_id} rated {result.rating}: {counts.helpful} helpful, "
        f"{counts.ignored} ignored, {counts.misleading} misleading, {counts.harmful} harmful; "
        f"rank x{result.rank_factor}, confidence logit {result.confidence_shift:+.2f}"
        + ("; withheld from briefs (repeated harm)" if result.withheld else "")
    )


EXPLAIN = Command(
    help="""Explain retrieval for TASK: every candidate experience with its lexical, semantic
    and fused scores, its confidence, and why it is served or withheld. Records no brief.""",
    params=[
        click.Argument(["task"]),
        click.Option(
            ["--project-name"],
            default=None,
            help="Only use memories of this project (and memories with no project).",
        ),
    ],
    call=from_options("explain", task="task", project="project_name"),
    human=print_explain,
)

VALIDITY = Command(
    help="""Mark ITEM_ID (exp-N or skill-N) trusted, superseded, contradicted or deprecated.

    A non-trusted item is withheld from briefs and plans, never deleted; show and explain
    give the reason. Marking it trusted again restores it.""",
    params=[
        click.Argument(["item_id"]),
        click.Argument(
            ["state"],
            type=click.Choice(["trusted", "superseded", "contradicted", "deprecated"]),
        ),
        click.Option(["--reason"], default=None, help="Why (required unless trusted)."),
        click.Option(
            ["--superseded-by"], default=None, help="The item that replaces it (superseded)."
        ),
    ],
    call=from_options(
        "validity", item_id="item_id", state="state", reason="reason", superseded_by="superseded_by"
    ),
    human=print_validity,
)

FEEDBACK = Command(
    help="""Rate EXPERIENCE_ID as a brief served it: helpful, ignored, misleading or harmful.

    Ratings shift later ranking (docs/memory.md gives the rule): one bad rating never buries
    an item; two harmful ratings outnumbering helpful ones withhold it.""",
    params=[
        click.Argument(["experience_id"]),
        click.Argument(
            ["rating"], type=click.Choice(["helpful", "ignored", "misleading", "harmful"])
        ),
        click.Option(["--brief-id"], default=None, help="The brief that served it."),
        click.Option(["--note"], default=None, help="What happened (redacted before storing)."),
    ],
    call=from_options(
        "feedback", experience_id="experience_id", rating="rating", brief_id="brief_id", note="note"
    ),
    human=print_feedback,
)


def _reindex_divert(ctx: click.Context, options: Options, as_json: bool) -> bool:
    """Reindex with a progress bar on stderr (the operation's result is printed the same)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    store = store_for(ctx, create=False)
    request = ReindexRequest(model=options["model"])
    missing = store.missing_vectors(options["model"])
    with Progress(
        TextColumn("embedding"),
        BarColumn(),
        MofNCompleteColumn(),
        console=stderr_console(),
        transient=False,
        disable=missing == 0,
    ) as progress:
        bar = progress.add_task("embedding", total=missing)
        if isinstance(store, SqliteMemoryStore):
            result = store.reindex(request, progress=lambda count: progress.advance(bar, count))
        else:
            result = store.reindex(request)
    if as_json:
        echo_json(result)
    else:
        views.echo(
            f"{result.experiences} experiences and {result.lessons} lessons given "
            f"{result.model} vectors"
        )
    return True


REINDEX = Command(
    help="""Compute the embedding vector of every experience and lesson that has none.

    A store written before vectors existed is ranked by keywords alone until it is
    reindexed. With --model, the vectors of that model are computed and the store switches
    to it once every item has one (until then it serves with its current model). Safe to
    interrupt and run again: it carries on where it stopped.""",
    params=[
        click.Option(
            ["--model"],
            type=click.Choice(["minilm", "wordllama"]),
            default=None,
            help="Switch the store to this embedding model (default: keep its own).",
        )
    ],
    call=from_options("reindex", model="model"),
    human=lambda request, result: None,
    divert=_reindex_divert,
)

RETRIEVAL_COMMANDS: dict[str, Command] = {
    "explain": EXPLAIN,
    "validity": VALIDITY,
    "feedback": FEEDBACK,
    "reindex": REINDEX,
}
