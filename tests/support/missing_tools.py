"""Tests that need a system tool the machine lacks skip saying so, and the run says which.

A skip reason that starts with :data:`MISSING` (``missing: chromium (...)``) names the tool.
At the end of the run one line counts them per tool and says how to install them; with
``LORELAB_TEST_REQUIRE_SYSTEM=1`` (CI sets it) such a skip fails the run instead.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from typing import Any, Final

import pytest

MISSING: Final = "missing: "
INSTALL: Final = "scripts/install-system-deps installs it"
REQUIRE_ENV: Final = "LORELAB_TEST_REQUIRE_SYSTEM"


def missing(tool: str, how: str = INSTALL) -> str:
    """The skip reason of a test that needs ``tool``."""
    return f"{MISSING}{tool} ({how})"


NO_NODE: Final = missing("node", "node 20 on PATH, a prerequisite")


def bubblewrap_reason(detail: str) -> str:
    """Why the bubblewrap tests skip: the tool is missing, or this machine cannot run it."""
    if shutil.which("bwrap") is None:
        return missing("bwrap")
    return f"no full bubblewrap sandbox on this machine ({detail})"


def require(tool: str, *names: str) -> str:
    """The path of ``tool`` (or one of ``names``); the test skips naming it when absent."""
    for name in names or (tool,):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(missing(tool))


def _reason(report: Any) -> str | None:
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple) and len(longrepr) == 3:
        text = str(longrepr[2]).removeprefix("Skipped: ")
        return text if text.startswith(MISSING) else None
    return None


class MissingTools:
    """The plugin: counts skips for missing tools and reports them at the end."""

    def __init__(self) -> None:
        self.tools: Counter[str] = Counter()

    def _count(self, report: Any) -> None:
        reason = _reason(report)
        if reason is not None:
            self.tools[reason.removeprefix(MISSING).split(" ", 1)[0]] += 1

    def pytest_runtest_logreport(self, report: Any) -> None:
        self._count(report)

    def pytest_collectreport(self, report: Any) -> None:
        self._count(report)

    def summary(self) -> str | None:
        if not self.tools:
            return None
        counts = ", ".join(
            f"{tool} ({count} test{'s' if count > 1 else ''})"
            for tool, count in sorted(self.tools.items())
        )
        return (
            f"skipped because missing: {counts}; scripts/install-system-deps installs the "
            "system tools, pip install -e '.[dev,ray]' the ray extra"
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        line = self.summary()
        if line is not None:
            terminalreporter.write_line(line, yellow=True, bold=True)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.tools and os.environ.get(REQUIRE_ENV) == "1" and exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(MissingTools(), "lorelab-missing-tools")
