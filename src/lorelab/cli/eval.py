"""``lorelab eval``: the evaluations (learning, context, conditions), one subcommand each.

Each evaluation's module is imported only when it is used (the conditions runner needs the
MCP SDK, the learning evaluation the statistics).
"""

from __future__ import annotations

from typing import Final

import click

from lorelab.cli._common import LazyCommand, LazyGroup

COMMANDS: Final = {
    "conditions": LazyCommand(
        "lorelab.cli.eval_conditions:conditions_group",
        "The four-condition protocol: baseline, memory_guided, skill_planned, dreaming.",
    ),
    "context": LazyCommand(
        "lorelab.cli.eval_context:context_group",
        "Score agent traces across compaction, restart and child handoff (no provider calls).",
    ),
    "learning": LazyCommand(
        "lorelab.cli.eval_learning:learning_group",
        "Paired memory vs no-memory test generation, scored by planted-defect recall.",
    ),
}


@click.group(name="eval", cls=LazyGroup, lazy_commands=COMMANDS)
def eval_group() -> None:
    """Evaluate whether memory helped, with receipts on disk."""
