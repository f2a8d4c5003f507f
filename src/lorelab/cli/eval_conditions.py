"""``lorelab eval conditions``: the four-condition protocol's schema, runner and finalize."""

from __future__ import annotations

import click

from lorelab.cli._common import LorelabGroup, echo_json
from lorelab.evaluation.conditions import manifest_schema


@click.group(name="conditions", cls=LorelabGroup)
def conditions_group() -> None:
    """The four-condition protocol: baseline, memory_guided, skill_planned, dreaming."""


@conditions_group.command(name="schema")
def schema_command() -> None:
    """Print the JSON Schema of the conditions manifest (eval/conditions.json)."""
    echo_json(manifest_schema())
