"""A test that needs a system tool the machine lacks skips naming the tool, and the run ends with
one line saying what was skipped and why (CI, which installs every tool, fails instead)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.browser import chromium
from tests.support.missing_tools import MISSING, bubblewrap_reason, missing

ROOT = Path(__file__).resolve().parents[1]

_TESTS = """
import pytest
from tests.support.missing_tools import missing, require

def test_needs_a_browser():
    require("no-such-browser-here")

@pytest.mark.skipif(True, reason=missing("no-such-proxy"))
def test_needs_a_proxy():
    pass

@pytest.mark.skipif(True, reason=missing("no-such-proxy"))
def test_needs_the_proxy_too():
    pass

def test_runs():
    pass
"""


def _pytest(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text("pytest_plugins = ['tests.support.missing_tools']\n")
    (tmp_path / "test_tools.py").write_text(_TESTS)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
         "-rs", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )  # fmt: skip


def test_the_run_names_every_missing_tool_and_how_many_tests_it_skipped(tmp_path):
    done = _pytest(tmp_path, LORELAB_TEST_REQUIRE_SYSTEM="0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "skipped because missing: no-such-browser-here (1 test), no-such-proxy (2 tests); "
        "scripts/install-system-deps installs the system tools"
    ) in done.stdout
    assert "missing: no-such-browser-here (scripts/install-system-deps installs it)" in done.stdout


def test_ci_fails_a_run_that_skipped_for_a_missing_tool(tmp_path):
    done = _pytest(tmp_path, LORELAB_TEST_REQUIRE_SYSTEM="1")
    assert done.returncode == 1, done.stdout
    assert "skipped because missing:" in done.stdout


def test_a_missing_bubblewrap_or_chromium_is_named_as_missing(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert bubblewrap_reason("no bwrap").startswith(f"{MISSING}bwrap ")
    assert missing("chromium").startswith(MISSING)
    import pytest

    with pytest.raises(pytest.skip.Exception, match=r"^missing: chromium "):
        chromium()
