"""pytest plugin loaded by lorelab's pytest runner (``-p lorelab.runners._pytest_plugin``).

It reverses the collected items on request (to expose order-dependent tests) and writes a
small collection report: every test module pytest collected with the number of cases it
yielded, and every collected node id, so the runner can name files that yielded no cases and
map JUnit entries back to exact node ids. It imports nothing from lorelab.

With ``--lorelab-summary`` it also writes one line to the output stream as pytest ends
(``lorelab-pytest-summary: exit=N cases=N bad=N``): the session's exit status and the cases it
ran, counted from pytest's own reports as they happened. The runner reads it from the output
it captured, which a test can add to but never take back, and checks the files against it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from typing import Any

import pytest

_MODULES = pytest.StashKey[dict[str, dict[str, Any]]]()
_ITEMS = pytest.StashKey[list[str]]()
_SESSION = pytest.StashKey[pytest.Session]()
SUMMARY_PREFIX = "lorelab-pytest-summary:"
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
# Each case's worst outcome over its setup, call and teardown reports (one session a process).
_outcomes: dict[str, str] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lorelab", "lorelab test runner")
    group.addoption(
        "--lorelab-reverse",
        action="store_true",
        default=False,
        help="run the collected test items in reverse order",
    )
    group.addoption(
        "--lorelab-collect-report",
        default=None,
        metavar="PATH",
        help="write the collection report (modules, case counts, node ids) as JSON to PATH",
    )
    group.addoption(
        "--lorelab-summary",
        action="store_true",
        default=False,
        help="write the exit status and the cases run as one line when pytest ends",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_MODULES] = {}
    config.stash[_ITEMS] = []
    _outcomes.clear()


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_SESSION] = session


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        outcome: str = report.outcome
    elif report.failed:
        outcome = "error"
    elif report.skipped:
        outcome = "skipped"
    else:
        _outcomes.setdefault(report.nodeid, "passed")
        return
    seen = _outcomes.get(report.nodeid, "passed")
    _outcomes[report.nodeid] = outcome if _RANK[outcome] >= _RANK[seen] else seen


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(_SESSION, None)
    if not config.getoption("lorelab_summary", False) or session is None:
        return
    bad = sum(outcome in ("failed", "error") for outcome in _outcomes.values())
    line = f"\n{SUMMARY_PREFIX} exit={int(session.exitstatus)} cases={len(_outcomes)} bad={bad}\n"
    # Straight to the descriptor: pytest's own capture has ended, the terminal may be off.
    os.write(2, line.encode("ascii"))


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    report = yield
    # A doctest module without doctests is not a test file that yielded nothing.
    if isinstance(collector, pytest.Module) and type(collector).__name__ != "DoctestModule":
        entry = collector.config.stash[_MODULES].setdefault(
            collector.nodeid, {"outcome": None, "cases": 0}
        )
        entry["outcome"] = report.outcome
    return report


def pytest_itemcollected(item: pytest.Item) -> None:
    item.config.stash[_ITEMS].append(item.nodeid)
    module = item.getparent(pytest.Module)
    if module is not None and type(module).__name__ != "DoctestModule":
        entry = item.config.stash[_MODULES].setdefault(module.nodeid, {"outcome": None, "cases": 0})
        entry["cases"] += 1


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    del session
    if config.getoption("lorelab_reverse"):
        items.reverse()


def pytest_collection_finish(session: pytest.Session) -> None:
    path = session.config.getoption("lorelab_collect_report")
    if not path:
        return
    report = {
        "modules": session.config.stash[_MODULES],
        "nodeids": session.config.stash[_ITEMS],
    }
    temp = f"{path}.tmp"
    with open(temp, "w", encoding="utf-8") as handle:
        json.dump(report, handle)
    os.replace(temp, path)
