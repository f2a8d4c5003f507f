"""The project's pytest configuration works for a user who installed only lorelab (pytest, no
pytest-xdist): its options must not need a plugin the dev extra adds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_plain_pytest_without_xdist_accepts_the_projects_configuration():
    # -p no:xdist is pytest without the plugin, as after `pip install .` alone.
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "--collect-only", "-q",
         "tests/io/test_hash.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert "unrecognized arguments" not in done.stderr
    assert done.returncode == 0, done.stderr
