"""Helpers shared by the test-generation tests: a small project and a scripted worker."""

import json
import sys
import textwrap
from pathlib import Path

from lorelab.workspace import FileEntry

SOURCE = FileEntry(
    path="src/clip.py",
    content=textwrap.dedent(
        '''
        def clip(value, low, high):
            """Limit value to the closed range [low, high]."""
            if low > high:
                raise ValueError("low must not exceed high")
            return max(low, min(high, value))
        '''
    ).lstrip(),
)

REQUIREMENTS = textwrap.dedent(
    """
    Clip a number into a closed range.

    clip(value, low, high) -> number, in module src/clip.py.

    Examples:
    - clip(5, 0, 3) == 3
    - clip(-1, 0, 3) == 0
    Edge cases:
    - [boundary] clip(3, 0, 3) == 3
    - [invalid] clip(1, 3, 0) raises ValueError
    """
).lstrip()

PASSING_TEST = textwrap.dedent(
    """
    from src.clip import clip


    def test_above_range_is_clipped():
        assert clip(5, 0, 3) == 3


    def test_below_range_is_clipped():
        assert clip(-1, 0, 3) == 0
    """
).lstrip()

_WORKER = """
import json, sys
payload = json.loads(sys.stdin.read())
answers = json.loads({answers!r})
answer = answers[payload["role"]]
print(json.dumps(answer))
"""


def scripted_worker(directory: Path, *, files, verdict="approve", reasons=()) -> list[str]:
    """A stand-in worker: fixed answers per role, written as a real script."""
    answers = {
        "architect": {"cases": [{"name": "planned", "intent": "whatever the author writes"}]},
        "author": {"files": [{"path": p, "content": c} for p, c in files]},
        "reviewer": {"verdict": verdict, "reasons": list(reasons)},
    }
    script = directory / "scripted_worker.py"
    script.write_text(_WORKER.format(answers=json.dumps(answers)))
    return [sys.executable, str(script)]
