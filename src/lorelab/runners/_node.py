"""The node runner: ``node --test`` with the JUnit reporter, one process per test file.

Node 20's JUnit reporter names no file for a case (every ``classname`` is ``"test"``), so each
test file gets its own ``node --test`` process and its own report; that is how a case id
``<file>::<name>`` is known exactly. A file whose test process failed outside any test shows up
as one entry named by the file's absolute path, with the child's exit code and signal in its
text: a signal or an exit status other than 1 is a crash, status 1 with no case reported is a
collection error (syntax error, missing module, a throw at load), and a file that reported no
case at all yielded nothing, which is a collection error too, unless a preloaded hook saw the
test process call ``process.exit()`` first: then the file crashed before it could report.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lorelab._model import RunnerName
from lorelab.errors import PreflightError
from lorelab.io import ProcessResult, run_process, sandbox_kind
from lorelab.runners._base import (
    ReportUnreadable,
    check_project,
    check_timeout,
    discard_workdir,
    merge_cases,
    output_tail,
    read_junit,
    scrubbed_env,
)
from lorelab.runners._models import (
    Case,
    CaseStatus,
    Classification,
    Execution,
    FailureKind,
    ProcessRecord,
)

REMOVED_ENV: Final = (
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_TEST_CONTEXT",
    "NODE_V8_COVERAGE",
    "FORCE_COLOR",
)
SET_ENV: Final = {"TZ": "UTC", "NO_COLOR": "1"}
_EXTENSIONS: Final = (".js", ".cjs", ".mjs")
_NAME_PATTERNS: Final = (
    re.compile(r".+\.test\.[cm]?js"),
    re.compile(r".+-test\.[cm]?js"),
    re.compile(r".+_test\.[cm]?js"),
    re.compile(r"test-.+\.[cm]?js"),
    re.compile(r"test\.[cm]?js"),
)
EXIT_MARKER_ENV: Final = "LORELAB_NODE_EXIT_MARKER"
# Preloaded (--require) into every test process: node 20 reports a test file that called
# process.exit() before its report was sent exactly like a file without tests (one passing
# entry, or a failing one for a non-zero status), so the hook leaves a marker saying it did.
# Only the per-file test process (NODE_TEST_CONTEXT set) on its main thread is watched.
_EXIT_HOOK: Final = f"""'use strict';
const marker = process.env.{EXIT_MARKER_ENV};
if (marker && process.env.NODE_TEST_CONTEXT && require('node:worker_threads').isMainThread) {{
  const fs = require('node:fs');
  const exit = process.exit;
  process.exit = function exit_(code) {{
    try {{
      fs.writeFileSync(marker, String(code === undefined ? (process.exitCode ?? 0) : code));
    }} catch {{}}
    return exit.apply(process, arguments);
  }};
}}
"""
_EXIT_INFO: Final = re.compile(r"exitCode: (null|-?\d+), signal: (null|'(\w+)')")
_SEPARATOR: Final = " > "
_FAILED_TYPES: Final = frozenset({"testCodeFailure", "testTimeoutFailure"})
# The error a test threw, as node 20's JUnit text shows it: "cause: TypeError [Error]: msg".
_CAUSE: Final = re.compile(r"^\s*cause: ([A-Za-z_$][\w$]*)(?: \[[^\]\n]*\])?: (.*)$", re.MULTILINE)
_MODULE_NOT_FOUND: Final = re.compile(r"code: '(?:ERR_)?MODULE_NOT_FOUND'")
_CHAIN: Final = r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*"
# A plain name or member chain that is not callable: what a missing export looks like.
_NOT_CALLABLE: Final = re.compile(
    rf"(?:{_CHAIN}|\(0 ?, ?{_CHAIN}\)) is not a (?:function|constructor)"
)


def is_node_test_file(relative: str) -> bool:
    """Node 20's default patterns: ``*.test.js``, ``*-test.js``, ``*_test.js``, ``test-*.js``,
    ``test.js`` (each also ``.cjs``/``.mjs``), and any script under a ``test`` directory."""
    parts = relative.split("/")
    name = parts[-1]
    if not name.endswith(_EXTENSIONS):
        return False
    if "test" in parts[:-1]:
        return True
    return any(pattern.fullmatch(name) for pattern in _NAME_PATTERNS)


def _walk(root: Path, prefix: str = "") -> Iterator[str]:
    with os.scandir(root / prefix if prefix else root) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    for entry in entries:
        # Like node 20: node_modules is never searched (hidden directories are). Unlike node,
        # symlinks are neither followed nor run: lorelab never follows a symlink in a project.
        if entry.name == "node_modules":
            continue
        relative = f"{prefix}{entry.name}"
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(root, f"{relative}/")
        elif entry.is_file(follow_symlinks=False):
            yield relative


def discover(project: Path) -> list[str]:
    """Test files node 20 would run in ``project``, as sorted '/'-separated relative paths."""
    return sorted(relative for relative in _walk(project) if is_node_test_file(relative))


def _node_binary() -> str:
    found = shutil.which("node")
    if found is None:
        raise PreflightError("node runner: no 'node' executable on PATH")
    return found


def _name(element: ET.Element) -> str:
    # Node 20 escapes '"' as '&quot;' and then escapes its '&' again; undo the double escape.
    return (element.get("name") or "").replace("&quot;", '"')


def _status(testcase: ET.Element) -> CaseStatus:
    failure = testcase.find("failure")
    if failure is not None:
        kind = failure.get("type") or "testCodeFailure"
        return "failed" if kind in _FAILED_TYPES else "error"
    if testcase.find("skipped") is not None:
        return "skipped"
    return "passed"


def failure_kind(testcase: ET.Element) -> FailureKind | None:
    """``import`` if the case failed only because a module or an export could not be found.

    Read from the error node 20 prints as the failure's ``cause``: MODULE_NOT_FOUND or
    ERR_MODULE_NOT_FOUND (``Cannot find module``), a SyntaxError saying a module "does not
    provide an export named" something, or a TypeError saying a plain name or member chain
    ``is not a function``/``is not a constructor`` (what a renamed export gives). Anything
    else is ``other``; None for passed and skipped cases.
    """
    failure = testcase.find("failure")
    if failure is None:
        return None
    text = failure.text or ""
    if _MODULE_NOT_FOUND.search(text):
        return "import"
    cause = _CAUSE.search(text)
    if cause is None:
        return "other"
    name, message = cause.group(1), cause.group(2).strip()
    if message.startswith(("Cannot find module ", "Cannot find package ")):
        return "import"
    if name == "SyntaxError" and "does not provide an export named" in message:
        return "import"
    if name == "TypeError" and _NOT_CALLABLE.fullmatch(message):
        return "import"
    return "other"


def _cases(element: ET.Element, file: str, absolute: str, names: list[str]) -> Iterator[Case]:
    for child in element:
        if child.tag == "testsuite":
            yield from _cases(child, file, absolute, [*names, _name(child)])
        elif child.tag == "testcase":
            name = _name(child)
            if not names and name == absolute:
                continue  # the file-level entry; read by _file_entry
            yield Case(
                id=f"{file}::{_SEPARATOR.join([*names, name])}",
                status=_status(child),
                failure_kind=failure_kind(child),
            )


@dataclass(frozen=True, slots=True)
class _FileEntry:
    failed: bool
    exit_code: int | None
    signal: str | None


def _file_entry(root: ET.Element, absolute: str) -> _FileEntry | None:
    for child in root.findall("testcase"):
        if _name(child) != absolute:
            continue
        failure = child.find("failure")
        if failure is None:
            return _FileEntry(failed=False, exit_code=0, signal=None)
        found = _EXIT_INFO.search(failure.text or "")
        if found is None:
            return _FileEntry(failed=True, exit_code=None, signal=None)
        code = None if found.group(1) == "null" else int(found.group(1))
        return _FileEntry(failed=True, exit_code=code, signal=found.group(3))
    return None


@dataclass(frozen=True, slots=True)
class _FileOutcome:
    cases: list[Case]
    classification: Classification
    reason: str


def _read_exit_marker(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            return handle.read(64).decode("utf-8", errors="replace").strip() or "?"
    except FileNotFoundError:
        return None


def _classify_file(
    file: str, absolute: str, proc: ProcessResult, junit: Path, exit_marker: Path
) -> _FileOutcome:
    if proc.timed_out:
        return _FileOutcome([], "timeout", f"{file}: still running at the timeout; killed")
    if proc.signal is not None:
        return _FileOutcome([], "crashed", f"{file}: node was killed by {proc.signal}")
    try:
        root = read_junit(junit)
    except ReportUnreadable as exc:
        return _FileOutcome([], "crashed", f"{file}: node exited {proc.exit_code}: {exc}")
    cases = merge_cases(_cases(root, file, absolute, []))
    entry = _file_entry(root, absolute)
    exited = _read_exit_marker(exit_marker)
    if exited is not None and not cases:
        # The test process ended itself before any case reached the report: a crash, as a
        # pytest test calling os._exit is, not a file that had no tests.
        return _FileOutcome(
            cases,
            "crashed",
            f"{file}: the test process called process.exit({exited}) before reporting any case",
        )
    if entry is not None and entry.failed:
        if entry.signal is not None:
            return _FileOutcome(cases, "crashed", f"{file}: test process killed by {entry.signal}")
        if entry.exit_code != 1 or cases:
            what = "after its tests ran" if cases else "during a test"
            return _FileOutcome(
                cases, "crashed", f"{file}: test process exited {entry.exit_code} {what}"
            )
        return _FileOutcome(
            cases, "collection-error", f"{file}: failed to load (syntax error, missing module)"
        )
    if not cases:
        return _FileOutcome(cases, "collection-error", f"{file}: yielded no cases")
    bad = [case.id for case in cases if case.status in ("failed", "error")]
    if bad and proc.exit_code == 1:
        return _FileOutcome(cases, "failed", f"{len(bad)} cases failed, first {bad[0]}")
    if not bad and proc.exit_code == 0:
        return _FileOutcome(cases, "passed", f"{file}: {len(cases)} cases")
    return _FileOutcome(
        cases, "crashed", f"{file}: node exited {proc.exit_code} inconsistently with its report"
    )


# When files disagree, the worst classification describes the execution.
_SEVERITY: Final[dict[Classification, int]] = {
    "no-tests": 0,
    "passed": 1,
    "failed": 2,
    "collection-error": 3,
    "crashed": 4,
    "timeout": 5,
}


class NodeRunner:
    """Runs a project's ``node --test`` files, one ``node --test`` process per file.

    ``reverse=True`` runs the files in reverse order; node:test offers no way to reorder the
    tests inside one file, so their order is unchanged.
    """

    __test__ = False

    def __init__(self, *, sandbox: bool = False) -> None:
        # Run each file in bubblewrap as far as this machine allows (lorelab.io.run_process).
        self.sandbox = sandbox

    @property
    def name(self) -> RunnerName:
        return "node"

    def argv_prefix(self, node: str, junit: Path, exit_hook: Path) -> list[str]:
        """The command each test file is appended to; the JUnit report goes to ``junit``.

        ``exit_hook`` is preloaded into the test process to notice an early process.exit().
        """
        return [
            node,
            "--require",
            str(exit_hook),
            "--test",
            "--test-reporter=junit",
            f"--test-reporter-destination={junit}",
            # A second, human-readable reporter: the JUnit one drops the child's stderr.
            "--test-reporter=spec",
            "--test-reporter-destination=stdout",
        ]

    def run(self, project: Path, *, timeout_s: float, reverse: bool = False) -> Execution:
        """Run every test file of ``project``; the timeout covers the whole execution."""
        timeout = check_timeout(timeout_s)
        root = check_project(project)
        node = _node_binary()
        files = discover(root)
        if reverse:
            files.reverse()
        env = scrubbed_env(REMOVED_ENV, SET_ENV)
        workdir = Path(tempfile.mkdtemp(prefix="lorelab-node-"))
        hook = workdir / "exit-hook.cjs"
        prefix = self.argv_prefix(node, Path("<report-per-file>.xml"), Path("<exit-hook>.cjs"))
        start = time.monotonic()
        deadline = start + timeout
        processes: list[ProcessRecord] = []
        outcomes: list[_FileOutcome] = []
        tails: list[bytes] = []
        try:
            hook.write_text(_EXIT_HOOK, encoding="utf-8")
            for index, file in enumerate(files):
                remaining = deadline - time.monotonic()
                junit = workdir / f"{index}.xml"
                marker = workdir / f"{index}.exit"
                # './' keeps a file named '-x.test.js' from being read as an option.
                argv = [*self.argv_prefix(node, junit, hook), f"./{file}"]
                if remaining <= 0:
                    outcomes.append(_FileOutcome([], "timeout", f"{file}: not started, timed out"))
                    break
                proc = run_process(
                    argv,
                    cwd=root,
                    env={**env, EXIT_MARKER_ENV: str(marker)},
                    timeout_s=remaining,
                    sandbox=self.sandbox,
                    writable=[workdir],
                )
                processes.append(
                    ProcessRecord(
                        argv=argv,
                        exit_code=proc.exit_code,
                        signal=proc.signal,
                        timed_out=proc.timed_out,
                        duration_ms=proc.duration_ms,
                    )
                )
                tails.append(proc.output_tail)
                outcome = _classify_file(file, str(root / file), proc, junit, marker)
                outcomes.append(outcome)
                if outcome.classification == "timeout":
                    break
        finally:
            discard_workdir(workdir)
        duration_ms = int((time.monotonic() - start) * 1000)
        return Execution(
            runner="node",
            argv=prefix,
            exit_code=_exit_code(processes),
            duration_ms=duration_ms,
            cases=[case for outcome in outcomes for case in outcome.cases],
            classification=_combine(outcomes),
            reason=_reason(outcomes),
            reverse=reverse,
            processes=processes,
            output_tail=output_tail(b"".join(tails)),
            sandbox=sandbox_kind(self.sandbox),
        )


def _exit_code(processes: list[ProcessRecord]) -> int | None:
    if not processes:
        return None
    for process in processes:
        if process.exit_code is None or process.exit_code != 0:
            return process.exit_code
    return 0


def _combine(outcomes: list[_FileOutcome]) -> Classification:
    if not outcomes:
        return "no-tests"
    return max((outcome.classification for outcome in outcomes), key=_SEVERITY.__getitem__)


def _reason(outcomes: list[_FileOutcome]) -> str:
    if not outcomes:
        return "no test files match node's default patterns"
    worst = _combine(outcomes)
    if worst == "passed":
        total = sum(len(outcome.cases) for outcome in outcomes)
        return f"{total} cases in {len(outcomes)} files, none failed"
    return next(outcome.reason for outcome in outcomes if outcome.classification == worst)
