"""What both runners share: the interface, argument checks, scrubbed environments, JUnit reading."""

from __future__ import annotations

import contextlib
import os
import stat
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final, Protocol

from lorelab._model import RunnerName
from lorelab.errors import InputFileError, InvalidInput, UsageError
from lorelab.io import read_bounded, remove_tree
from lorelab.runners._models import (
    OUTPUT_TAIL_CHARS,
    Case,
    CaseStatus,
    Execution,
    FailureKind,
)

MAX_TIMEOUT_S: Final = 24 * 3600.0
JUNIT_LIMIT: Final = 32 * 1024 * 1024


class TestRunner(Protocol):
    """Runs one project's test suite once and reports an :class:`Execution`."""

    @property
    def name(self) -> RunnerName:
        """The runner's name, as ``Execution.runner`` records it."""
        ...

    def run(self, project: Path, *, timeout_s: float, reverse: bool = False) -> Execution:
        """Run the suite of ``project`` once, killing it after ``timeout_s`` seconds."""
        ...


# pytest would try to collect a class named Test* imported into a test module; opt out without
# making ``__test__`` a protocol member every implementation would need.
setattr(TestRunner, "__test__", False)  # noqa: B010


def check_timeout(timeout_s: float) -> float:
    """Return ``timeout_s`` if it is a usable per-execution timeout, else raise UsageError."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float):
        raise UsageError(f"timeout {timeout_s!r}: must be a number of seconds")
    if not 0 < timeout_s <= MAX_TIMEOUT_S:
        raise UsageError(f"timeout {timeout_s!r}: must be above 0 and at most {MAX_TIMEOUT_S:.0f}")
    return float(timeout_s)


def check_project(project: str | os.PathLike[str]) -> Path:
    """Return the absolute, resolved project directory, or raise :class:`InputFileError`."""
    path = Path(project)
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise InputFileError(f"project {path}: no such directory") from None
    except OSError as exc:  # a name too long, a loop of symlinks, no permission...
        raise InputFileError(f"project {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise InputFileError(f"project {path}: not a directory")
    return path.resolve()


def scrubbed_env(
    remove: Iterable[str],
    set_: Mapping[str, str],
    *,
    remove_prefixes: tuple[str, ...] = (),
    keep: Iterable[str] = (),
) -> dict[str, str]:
    """This process's environment without ``remove`` and with ``set_`` applied.

    Every variable whose name starts with one of ``remove_prefixes`` goes too, unless it is
    in ``keep``.
    """
    kept = set(keep)
    env = {
        name: value
        for name, value in os.environ.items()
        if name in kept or not name.startswith(remove_prefixes)
    }
    for name in remove:
        env.pop(name, None)
    env.update(set_)
    return env


def discard_workdir(path: Path) -> None:
    """Remove a runner's private report directory, however deep a tree a test left in it."""
    with contextlib.suppress(OSError):
        remove_tree(path)


def output_tail(data: bytes) -> str:
    """The last ``OUTPUT_TAIL_CHARS`` characters of process output, decoded leniently."""
    return data.decode("utf-8", errors="replace")[-OUTPUT_TAIL_CHARS:]


class ReportUnreadable(Exception):
    """A JUnit report is missing, too large or malformed; the execution is then ``crashed``."""


def read_junit(path: Path) -> ET.Element:
    """Parse a JUnit XML report written by the test process, refusing DTDs and huge files."""
    if not path.exists():
        raise ReportUnreadable(f"no JUnit report at {path.name}")
    try:
        data = read_bounded(path, "fixture", JUNIT_LIMIT)
    except InvalidInput as exc:
        raise ReportUnreadable(str(exc)) from None
    # The report is written by the code under test's process: never expand entities from it.
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise ReportUnreadable("JUnit report declares a DTD")
    try:
        return ET.fromstring(data)
    except ET.ParseError as exc:
        raise ReportUnreadable(f"JUnit report is not well-formed XML: {exc}") from None


_STATUS_RANK: Final[dict[CaseStatus, int]] = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}


def _merged_kind(first: Case, second: Case) -> FailureKind | None:
    # 'import' only if every failing report of the case failed to import; unknown stays None.
    kinds = [case.failure_kind for case in (first, second) if case.status in ("failed", "error")]
    if not kinds:
        return None
    if "other" in kinds:
        return "other"
    if None in kinds:
        return None
    return "import"


def merge_cases(cases: Iterable[Case]) -> list[Case]:
    """Merge repeated reports of one case id, keeping the first position and the worst status.

    pytest reports a test that failed and then errored in teardown twice under one id. The
    merged failure kind is ``import`` only if every failing report of the case was one.
    """
    merged: dict[str, Case] = {}
    for case in cases:
        seen = merged.get(case.id)
        if seen is None:
            merged[case.id] = case
            continue
        worst = case if _STATUS_RANK[case.status] > _STATUS_RANK[seen.status] else seen
        merged[case.id] = Case(
            id=case.id, status=worst.status, failure_kind=_merged_kind(seen, case)
        )
    return list(merged.values())
