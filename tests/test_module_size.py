"""Every module of lorelab stays at most 600 lines: past that, it is two ideas in one file."""

from __future__ import annotations

from pathlib import Path

import lorelab

MAX_LINES = 600


def test_every_lorelab_module_is_at_most_600_lines():
    root = Path(lorelab.__file__).resolve().parent
    longer = {
        str(path.relative_to(root)): count
        for path in sorted(root.rglob("*.py"))
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert longer == {}
