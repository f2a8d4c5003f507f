"""``lorelab eval learning``: the learning evaluation's datasets and manifest schema."""

from __future__ import annotations

import click

from lorelab.cli._common import LorelabGroup, echo_json
from lorelab.errors import UsageError
from lorelab.evaluation.learning import DATASET_NAMES, get_dataset, manifest_schema


@click.group(name="learning", cls=LorelabGroup, invoke_without_command=True)
@click.pass_context
def learning_group(ctx: click.Context) -> None:
    """Paired memory vs no-memory test generation, scored by planted-defect recall."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())
        raise UsageError(
            "lorelab eval learning: choose a subcommand (export-dataset, schema); "
            "see the help above"
        )


@learning_group.command(name="export-dataset")
@click.argument("name", type=click.Choice(DATASET_NAMES))
def export_dataset_command(name: str) -> None:
    """Print the shipped dataset NAME as a manifest (JSON; valid input for --fixtures)."""
    echo_json(get_dataset(name))


@learning_group.command(name="schema")
def schema_command() -> None:
    """Print the JSON Schema of the learning manifest (generated from its models)."""
    echo_json(manifest_schema())
