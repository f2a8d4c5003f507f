"""Checking what a test process's own reports say against what lorelab sees for itself.

The JUnit and collection reports are files the code under test can rewrite: a worker under
evaluation could forge passing cases to raise its score. Before a pytest execution is
classified from them, they are checked against three things lorelab has apart from them:

- the exit status it observed;
- the plugin's end-of-session line (exit status, cases run, cases failed), written to the
  output stream lorelab captured as pytest ended, counted from pytest's own reports;
- the project's files: every case must name a file of the project and a name found in its
  Python files.

Any contradiction makes the execution ``tampered``: never a pass, never a detection.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lorelab.runners._models import Case

SUMMARY_PREFIX: Final = "lorelab-pytest-summary:"
"""Starts the plugin's end-of-session line (the plugin, which imports nothing from lorelab,
spells it too; a test pins the two together)."""

_SUMMARY: Final = re.compile(
    rf"^{re.escape(SUMMARY_PREFIX)} exit=(-?\d+) cases=(\d+) bad=(\d+)\r?$", re.MULTILINE
)
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# How much Python source is read to look a case's name up (a project is bounded far below it).
_SOURCE_LIMIT: Final = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Summary:
    """The plugin's end-of-session line."""

    exit_code: int
    cases: int
    bad: int


def read_summary(output: str) -> Summary | None:
    """The last end-of-session line in ``output``; ``None`` when pytest never wrote one."""
    found = _SUMMARY.findall(output)
    if not found:
        return None
    code, cases, bad = found[-1]
    return Summary(int(code), int(cases), int(bad))


def _python_text(project: Path, first: Path) -> str:
    """The case's own file first, then the project's other Python files, up to a bound."""
    parts: list[str] = []
    total = 0
    paths = [first]
    for directory, dirnames, files in os.walk(project):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "node_modules"]
        paths += [Path(directory, name) for name in files if name.endswith(".py")]
    for path in dict.fromkeys(paths):
        if total >= _SOURCE_LIMIT or path.is_symlink() or not path.is_file():
            continue
        with path.open("rb") as handle:
            data = handle.read(_SOURCE_LIMIT - total)
        total += len(data)
        parts.append(data.decode("utf-8", "replace"))
    return "\n".join(parts)


def _unknown_case(project: Path, cases: Sequence[Case]) -> str | None:
    """The first case that names no file of the project, or a name none of its files holds."""
    texts: dict[str, str] = {}
    for case in cases:
        file, _, rest = case.id.partition("::")
        path = project / file
        inside = os.path.realpath(path).startswith(f"{os.path.realpath(project)}{os.sep}")
        if not file or not inside or path.is_symlink() or not path.is_file():
            return f"case {case.id}: no such file in the project"
        if not rest:
            continue
        name = rest.split("::")[-1].split("[", 1)[0]
        if not _NAME.fullmatch(name):
            continue
        if file not in texts:
            texts[file] = _python_text(project, path)
        if not re.search(rf"\b{re.escape(name)}\b", texts[file]):
            return f"case {case.id}: no test named {name} in the project's files"
    return None


def contradiction(
    exit_code: int | None, output: str, cases: Sequence[Case], project: Path
) -> str | None:
    """Why the reports cannot be believed, or ``None`` when nothing contradicts them.

    Only for a process that exited 0 or 1 (pytest's "passed" and "failed"), whose reports are
    otherwise taken as they are; module-level entries (collection errors and module skips,
    ids without ``::``) are not in the end-of-session count.
    """
    if exit_code not in (0, 1):
        return None
    bad = [case for case in cases if case.status in ("failed", "error")]
    if (exit_code == 0) == bool(bad):
        what = f"{len(bad)} failed cases" if bad else "no failed case"
        return f"pytest exited {exit_code} but its reports name {what}"
    unknown = _unknown_case(project, cases)
    if unknown is not None:
        return unknown
    summary = read_summary(output)
    if summary is None:
        return f"pytest exited {exit_code} but never finished its session (no end-of-session line)"
    if summary.exit_code != exit_code:
        return f"pytest ended its session with status {summary.exit_code} but exited {exit_code}"
    ran = [case for case in cases if "::" in case.id]
    ran_bad = sum(case.status in ("failed", "error") for case in ran)
    if (summary.cases, summary.bad) != (len(ran), ran_bad):
        return (
            f"the reports name {len(ran)} cases ({ran_bad} failed), pytest ran "
            f"{summary.cases} ({summary.bad} failed)"
        )
    return None
