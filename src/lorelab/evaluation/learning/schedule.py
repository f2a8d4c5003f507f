"""The counterbalanced, seeded schedule of trials.

Specifications are shuffled by the seed. For each specification the arm that goes first in
repetition 1 is drawn from the seed; later repetitions alternate it, so each arm goes first
equally often (within one when the repetitions are odd). The run order is repetition-major:
every specification's pair of repetition 1, then repetition 2, and so on, so a drift in the
worker over the run does not fall on one specification. The seed controls nothing else.

With the placebo arm (three arms), each specification's order of the arms in repetition 1 is a
permutation drawn from the seed, and each later repetition rotates it by one place, so over
three repetitions every arm goes first, second and third once for every specification.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from lorelab.evaluation.learning.records import ARMS, Arm, ScheduledTrial


def _orders(rng: random.Random, order: list[str], arms: Sequence[Arm]) -> dict[str, list[Arm]]:
    """Each specification's arm order in repetition 1."""
    if tuple(arms) == ARMS:
        first: dict[str, Arm] = {spec: rng.choice(ARMS) for spec in order}
        return {
            spec: [lead, "no-memory" if lead == "memory" else "memory"]
            for spec, lead in first.items()
        }
    return {spec: rng.sample(list(arms), len(arms)) for spec in order}


def schedule(
    specifications: Sequence[str], repeat: int, seed: int, arms: Sequence[Arm] = ARMS
) -> list[ScheduledTrial]:
    """The run order for ``specifications`` x ``repeat`` x ``arms`` under ``seed``."""
    rng = random.Random(seed)
    order = list(specifications)
    rng.shuffle(order)
    firsts = _orders(rng, order, arms)
    entries: list[ScheduledTrial] = []
    for repetition in range(1, repeat + 1):
        for spec in order:
            lead = firsts[spec]
            shift = (repetition - 1) % len(lead)
            for arm in lead[shift:] + lead[:shift]:
                entries.append(
                    ScheduledTrial(
                        position=len(entries) + 1,
                        specification=spec,
                        repetition=repetition,
                        arm=arm,
                    )
                )
    return entries
