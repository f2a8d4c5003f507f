"""Every module stays small enough to read in one sitting: at most 600 lines."""

from pathlib import Path

import lorelab

MAX_LINES = 600


def test_every_module_has_at_most_600_lines():
    root = Path(lorelab.__file__).parent
    over = {
        str(path.relative_to(root)): count
        for path in sorted(root.rglob("*.py"))
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert over == {}
