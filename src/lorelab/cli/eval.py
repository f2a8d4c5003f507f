"""``lorelab eval``: the evaluations (learning, context, conditions), one subcommand each."""

from __future__ import annotations

import click

from lorelab.cli._common import LorelabGroup
from lorelab.cli.eval_conditions import conditions_group
from lorelab.cli.eval_context import context_group
from lorelab.cli.eval_learning import learning_group


@click.group(name="eval", cls=LorelabGroup)
def eval_group() -> None:
    """Evaluate whether memory helped, with receipts on disk."""


eval_group.add_command(conditions_group)
eval_group.add_command(learning_group)
eval_group.add_command(context_group)
