"""Choosing a runner: by name, or from what a project tree contains."""

from __future__ import annotations

import os
from pathlib import Path

from lorelab._model import RUNNER_NAMES, RunnerName
from lorelab.errors import UsageError
from lorelab.runners._base import TestRunner
from lorelab.runners._node import NodeRunner, is_node_test_file
from lorelab.runners._pytest import PytestRunner


def get_runner(name: str, *, plugin_autoload: bool = True, sandbox: bool = False) -> TestRunner:
    """The runner called ``name`` (``pytest`` or ``node``).

    ``plugin_autoload=False`` keeps installed pytest plugins out of the executions, so an
    outcome depends only on pytest and the project; the evaluations use it. ``sandbox=True``
    runs every execution in bubblewrap as far as this machine allows (each execution records
    what it got); every execution is contained either way.
    """
    if name == "pytest":
        return PytestRunner(plugin_autoload=plugin_autoload, sandbox=sandbox)
    if name == "node":
        return NodeRunner(sandbox=sandbox)
    raise UsageError(f"runner {name!r}: unknown; choose one of {', '.join(RUNNER_NAMES)}")


def _first_node_test_file(project: Path) -> str | None:
    """The first file (sorted walk) node 20 would run, skipping what detection should ignore.

    The test is node's own (:func:`is_node_test_file`; symlinks are not run by the node
    runner, so they do not count either). Unlike node's discovery, hidden
    directories and virtual environments (a ``pyvenv.cfg`` inside) are not searched, so a
    Python project's ``.venv`` or ``.tox`` holding JavaScript does not make it a node project.
    """
    for directory, subdirs, files in os.walk(project):
        base = Path(directory)
        subdirs[:] = sorted(
            d
            for d in subdirs
            if d != "node_modules"
            and not d.startswith(".")
            and not (base / d / "pyvenv.cfg").is_file()
        )
        prefix = base.relative_to(project).as_posix()
        for name in sorted(files):
            relative = name if prefix == "." else f"{prefix}/{name}"
            if is_node_test_file(relative) and not (base / name).is_symlink():
                return relative
    return None


def detect_runner(project: Path) -> tuple[RunnerName, str]:
    """Pick a runner for ``project`` and say why: package.json or a node test file mean node.

    A node test file is one node 20's default patterns select (``*.test.js``, ``*.test.mjs``,
    ``test/*.js`` and the rest, see :func:`is_node_test_file`). A symlink counts as neither: a
    ``package.json`` linked to ``/etc/passwd`` says nothing about the project.
    """
    manifest = project / "package.json"
    if manifest.is_file() and not manifest.is_symlink():
        return "node", "package.json found"
    found = _first_node_test_file(project)
    if found is not None:
        return "node", f"node test file {found} found"
    return "pytest", "no package.json or node test file found"


def is_test_file(runner: str, path: str) -> bool:
    """Whether ``runner`` collects the canonical relative ``path`` by its default patterns.

    pytest: ``test_*.py`` or ``*_test.py``; node: node 20's defaults (see the node runner).
    """
    if runner == "node":
        return is_node_test_file(path)
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))
