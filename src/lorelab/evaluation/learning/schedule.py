"""The counterbalanced, seeded schedule of trials.

Specifications are shuffled by the seed. For each specification the arm that goes first in
repetition 1 is drawn from the seed; later repetitions alternate it, so each arm goes first
equally often (within one when the repetitions are odd). The run order is repetition-major:
every specification's pair of repetition 1, then repetition 2, and so on, so a drift in the
worker over the run does not fall on one specification. The seed controls nothing else.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from lorelab.evaluation.learning.records import ARMS, Arm, ScheduledTrial


def schedule(specifications: Sequence[str], repeat: int, seed: int) -> list[ScheduledTrial]:
    """The run order for ``specifications`` x ``repeat`` x both arms under ``seed``."""
    rng = random.Random(seed)
    order = list(specifications)
    rng.shuffle(order)
    first: dict[str, Arm] = {spec: rng.choice(ARMS) for spec in order}
    entries: list[ScheduledTrial] = []
    for repetition in range(1, repeat + 1):
        for spec in order:
            lead = first[spec]
            other: Arm = "no-memory" if lead == "memory" else "memory"
            pair = (lead, other) if repetition % 2 == 1 else (other, lead)
            for arm in pair:
                entries.append(
                    ScheduledTrial(
                        position=len(entries) + 1,
                        specification=spec,
                        repetition=repetition,
                        arm=arm,
                    )
                )
    return entries
