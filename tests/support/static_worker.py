"""The static worker's test subject: a small module and the specification it implements."""

import textwrap

from lorelab.workers.roles import Task

CLAMP = textwrap.dedent(
    """
    import math

    LIMIT = 10


    def clamp(x: int, lo: int, hi: int) -> int:
        if lo > hi:
            raise ValueError("lo > hi")
        return max(lo, min(x, hi))


    class Box:
        def get(self):
            return 1


    if LIMIT:
        FLAG = True
    """
).lstrip()

REQUIREMENTS = textwrap.dedent(
    """
    Clamp a value into a range.

    clamp(x: int, lo: int, hi: int) -> int, in module src/clamp.py. It raises ValueError
    when lo > hi.

    Examples:
    - clamp(5, 0, 3) == 3
    - clamp(-1, 0, 3) == 0
    Edge cases:
    - [boundary] clamp(3, 0, 3) == 3
    - [invalid] clamp(1, 3, 0) raises ValueError
    Notes follow.
    - not an item any more
    """
).lstrip()


def static_task(
    source: str = CLAMP, requirements: str = REQUIREMENTS, runner: str = "pytest"
) -> Task:
    return Task.model_validate(
        {
            "requirements": requirements,
            "runner": runner,
            "source": [{"path": "src/clamp.py", "content": source}],
        }
    )
