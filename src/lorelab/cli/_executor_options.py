"""``--jobs``, ``--executor`` and ``--ray-address``: where an evaluation's runs execute."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def executor_options(unit: str) -> Callable[[F], F]:
    """The three executor options; ``unit`` names what runs side by side (for the help)."""

    def decorate(function: F) -> F:
        function = click.option(
            "--ray-address",
            default=None,
            metavar="ADDR",
            help="With --executor ray: the cluster to join (host:port of its head, or "
            "'auto'); without it a local Ray instance is started for the run.",
        )(function)
        function = click.option(
            "--executor",
            "executor",
            type=click.Choice(["local", "ray"]),
            default="local",
            show_default=True,
            help=f"Where {unit} run: this machine, or a Ray cluster (needs "
            "pip install 'lorelab[ray]').",
        )(function)
        return click.option(
            "--jobs",
            type=click.IntRange(min=1, max=1024),
            default=1,
            show_default=True,
            help=f"How many {unit} run side by side (local worker processes; with "
            "--executor ray, at most this many Ray tasks at once, default: the cluster's CPUs).",
        )(function)

    return decorate
