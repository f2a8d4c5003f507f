"""pytest plugin loaded by lorelab's pytest runner (``-p lorelab.runners._pytest_plugin``).

It reverses the collected items on request (to expose order-dependent tests) and writes a
small collection report: every test module pytest collected with the number of cases it
yielded, and every collected node id, so the runner can name files that yielded no cases and
map JUnit entries back to exact node ids. It imports nothing from lorelab.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from typing import Any

import pytest

_MODULES = pytest.StashKey[dict[str, dict[str, Any]]]()
_ITEMS = pytest.StashKey[list[str]]()


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


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_MODULES] = {}
    config.stash[_ITEMS] = []


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
