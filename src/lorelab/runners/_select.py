"""Choosing a runner: by name, or from what a project tree contains."""

from __future__ import annotations

import os
from pathlib import Path

from lorelab.errors import UsageError
from lorelab.runners._base import TestRunner
from lorelab.runners._models import RUNNER_NAMES, RunnerName
from lorelab.runners._node import NodeRunner, is_node_test_file
from lorelab.runners._pytest import PytestRunner


def get_runner(name: str, *, plugin_autoload: bool = True) -> TestRunner:
    """The runner called ``name`` (``pytest`` or ``node``).

    ``plugin_autoload=False`` keeps installed pytest plugins out of the executions, so an
    outcome depends only on pytest and the project; the evaluations use it.
    """
    if name == "pytest":
        return PytestRunner(plugin_autoload=plugin_autoload)
    if name == "node":
        return NodeRunner()
    raise UsageError(f"runner {name!r}: unknown; choose one of {', '.join(RUNNER_NAMES)}")


def _has_node_test_file(project: Path) -> bool:
    for directory, subdirs, files in os.walk(project):
        subdirs[:] = [d for d in subdirs if d != "node_modules" and not d.startswith(".")]
        if any(name.endswith(".test.js") for name in files):
            return True
        del directory
    return False


def detect_runner(project: Path) -> tuple[RunnerName, str]:
    """Pick a runner for ``project`` and say why: package.json or ``*.test.js`` mean node."""
    if (project / "package.json").is_file():
        return "node", "package.json found"
    if _has_node_test_file(project):
        return "node", "*.test.js files found"
    return "pytest", "no package.json or *.test.js found"


def is_test_file(runner: str, path: str) -> bool:
    """Whether ``runner`` collects the canonical relative ``path`` by its default patterns.

    pytest: ``test_*.py`` or ``*_test.py``; node: node 20's defaults (see the node runner).
    """
    if runner == "node":
        return is_node_test_file(path)
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))
