"""The pytest runner: ``python -m pytest`` in a scrubbed subprocess, outcomes read from JUnit XML.

The JUnit report and the collection report go to a private temporary directory outside the
project, and bytecode and cache writing are off, so the project tree stays as it was. The
project's own pytest configuration is honoured; a configuration file in a directory *above*
the project never is (an empty one is passed with ``-c`` when the project has none).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from lorelab._model import RunnerName
from lorelab.io import ProcessResult, run_process
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
from lorelab.runners._tamper import contradiction

PLUGIN: Final = "lorelab.runners._pytest_plugin"
REMOVED_ENV: Final = (
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
    "PYTHONPATH",
    "FORCE_COLOR",
)
# Every inherited PYTHON* and PYTEST_* variable goes, not only the ones named above: each
# changes what a test run means (PYTHONSAFEPATH drops the project root from sys.path, so
# `from src.x import ...` fails; PYTHONOPTIMIZE strips asserts outside test modules;
# PYTHONWARNINGS, PYTHONDEVMODE and PYTHONINTMAXSTRDIGITS change behaviour; PYTEST_XDIST_*
# leaks an outer test session). Only what locates the interpreter itself is kept.
REMOVED_PREFIXES: Final = ("PYTHON", "PYTEST_")
KEPT_ENV: Final = ("PYTHONHOME", "PYTHONPLATLIBDIR")
SET_ENV: Final = {
    "PYTHONHASHSEED": "0",
    "TZ": "UTC",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",
}
_CONFIG_MARKERS: Final = (
    ("pytest.toml", None),
    (".pytest.toml", None),
    ("pytest.ini", None),
    (".pytest.ini", None),
    ("pyproject.toml", re.compile(r"^\[tool\.pytest(\.ini_options)?\]", re.MULTILINE)),
    ("tox.ini", re.compile(r"^\[pytest\]", re.MULTILINE)),
    ("setup.cfg", re.compile(r"^\[tool:pytest\]", re.MULTILINE)),
)
_CONFIG_READ_LIMIT: Final = 1024 * 1024
_ERROR_LINE: Final = re.compile(r"^E\s+(\S.*)$", re.MULTILINE)
# pytest's JUnit message is the exception line; a setup/teardown error wraps it in quotes.
_ERROR_WRAPPER: Final = re.compile(r'^failed on (?:setup|teardown) with "')
# Failures that mean "a module, or a name in it, could not be found", not a wrong behaviour.
_IMPORT_FAILURE: Final = re.compile(
    r"(?:ImportError|ModuleNotFoundError): "
    r"|AttributeError: (?:partially initialized )?module '[^']*' has no attribute "
)


def has_own_config(project: Path) -> bool:
    """Whether ``project`` itself holds a pytest configuration file pytest would use."""
    for name, marker in _CONFIG_MARKERS:
        candidate = project / name
        if not candidate.is_file():
            continue
        if marker is None:
            return True
        with candidate.open("rb") as handle:
            text = handle.read(_CONFIG_READ_LIMIT).decode("utf-8", errors="replace")
        if marker.search(text):
            return True
    return False


def _mangle(nodeid: str) -> tuple[str, str]:
    """The (classname, name) pytest's JUnit XML writes for ``nodeid``."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def _fallback_id(testcase: ET.Element) -> str:
    file = testcase.get("file") or ""
    classname = testcase.get("classname") or ""
    name = testcase.get("name") or ""
    module = re.sub(r"\.py$", "", file.replace("/", "."))
    if file and (classname == module or classname.startswith(f"{module}.")):
        classes = [part for part in classname[len(module) :].split(".") if part]
        return "::".join([file, *classes, name])
    return f"{file or classname}::{name}"


def _status(testcase: ET.Element) -> CaseStatus:
    tags = {child.tag for child in testcase}
    if "error" in tags:
        return "error"
    if "failure" in tags:
        return "failed"
    if "skipped" in tags:
        return "skipped"
    return "passed"


def failure_kind(testcase: ET.Element) -> FailureKind | None:
    """``import`` if the case failed or errored only because an import failed, else ``other``.

    Read from the ``message`` of the JUnit ``<failure>``/``<error>``: pytest writes the
    exception line there (``ImportError: cannot import name 'add' from 'src.calc'``), wrapped
    as ``failed on setup with "..."`` for a fixture error. None for passed and skipped cases.
    """
    messages = [
        _ERROR_WRAPPER.sub("", (child.get("message") or "").lstrip(), count=1)
        for child in testcase
        if child.tag in ("failure", "error")
    ]
    if not messages:
        return None
    return "import" if all(_IMPORT_FAILURE.match(text) for text in messages) else "other"


@dataclass(frozen=True, slots=True)
class _Reading:
    cases: list[Case]
    collection_errors: list[str]
    empty_modules: list[str]


def _last_error_line(element: ET.Element | None) -> str:
    if element is None:
        return ""
    found = _ERROR_LINE.findall(element.text or "")
    if found:
        return str(found[-1]).strip()
    return (element.get("message") or "").strip()


def _read_outcomes(root: ET.Element, report: dict[str, Any]) -> _Reading:
    nodeids = {_mangle(nodeid): nodeid for nodeid in report.get("nodeids", [])}
    cases: list[Case] = []
    collection_errors: list[str] = []
    for testcase in root.iter("testcase"):
        classname = testcase.get("classname") or ""
        status = _status(testcase)
        if not classname:
            # A report about a whole module: a collection error or a module-level skip.
            file = testcase.get("file") or (testcase.get("name") or "").replace(".", "/")
            cases.append(Case(id=file, status=status, failure_kind=failure_kind(testcase)))
            if status == "error":
                detail = _last_error_line(testcase.find("error"))
                collection_errors.append(f"{file}: {detail}" if detail else file)
            continue
        key = (classname, testcase.get("name") or "")
        case_id = nodeids.get(key) or _fallback_id(testcase)
        cases.append(Case(id=case_id, status=status, failure_kind=failure_kind(testcase)))
    modules: dict[str, dict[str, Any]] = report.get("modules", {})
    empty = [
        nodeid
        for nodeid, entry in modules.items()
        if entry.get("outcome") == "passed" and entry.get("cases") == 0
    ]
    return _Reading(merge_cases(cases), collection_errors, empty)


def _read_report(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            data = json.loads(handle.read(32 * 1024 * 1024))
    except FileNotFoundError:
        raise ReportUnreadable("pytest left no collection report") from None
    except (OSError, ValueError) as exc:
        raise ReportUnreadable(f"collection report unreadable: {exc}") from None
    if not isinstance(data, dict):
        raise ReportUnreadable("collection report is not a JSON object")
    return data


def classify(
    proc: ProcessResult, junit: Path, report_path: Path, project: Path
) -> tuple[list[Case], Classification, str]:
    """Turn one pytest process and its reports into cases, a classification and a reason.

    Reports that contradict what lorelab saw itself (the exit status, the end-of-session line
    in the output, the project's files) make the execution ``tampered``
    (:mod:`lorelab.runners._tamper`).
    """
    if proc.timed_out:
        return (
            [],
            "timeout",
            "pytest was still running at the timeout; its process group was killed",
        )
    if proc.signal is not None:
        return [], "crashed", f"pytest was killed by {proc.signal}"
    try:
        root = read_junit(junit)
        report = _read_report(report_path)
    except ReportUnreadable as exc:
        return [], "crashed", f"pytest exited with status {proc.exit_code}: {exc}"
    reading = _read_outcomes(root, report)
    cases = reading.cases
    code = proc.exit_code
    if reading.collection_errors:
        return cases, "collection-error", "; ".join(reading.collection_errors)
    if reading.empty_modules:
        names = ", ".join(reading.empty_modules)
        return cases, "collection-error", f"test files yielded no cases: {names}"
    output = proc.output_tail.decode("utf-8", "replace")
    tampered = contradiction(code, output, cases, project)
    if tampered is not None:
        return cases, "tampered", f"the reports contradict what lorelab saw: {tampered}"
    bad = [case.id for case in cases if case.status in ("failed", "error")]
    if code == 0 and not bad:
        if not cases:
            return cases, "no-tests", "pytest collected no tests"
        passed = sum(case.status == "passed" for case in cases)
        return cases, "passed", f"{passed} passed, {len(cases) - passed} skipped"
    if code == 1 and bad:
        return cases, "failed", f"{len(bad)} of {len(cases)} cases failed, first {bad[0]}"
    if code == 5 and not cases:
        return cases, "no-tests", "pytest collected no tests"
    meaning = {
        2: "interrupted",
        3: "an internal error",
        4: "a usage error",
        5: "no tests although cases ran",
    }.get(code if code is not None else -1, "an unknown status")
    return cases, "crashed", f"pytest exited with status {code} ({meaning})"


class PytestRunner:
    """Runs a project's tests with ``sys.executable -m pytest`` from the project root.

    Tests import the module under test as ``from src.<name> import ...``: the project root
    is the working directory, which ``python -m`` puts on ``sys.path``.
    """

    __test__ = False

    def __init__(self, *, plugin_autoload: bool = True, sandbox: bool = False) -> None:
        # Plugins installed next to lorelab (entry points) load by default, as with a bare
        # pytest; ``plugin_autoload=False`` sets PYTEST_DISABLE_PLUGIN_AUTOLOAD so an
        # execution depends only on pytest and the project's own conftest and ``-p`` options.
        self.plugin_autoload = plugin_autoload
        # Run the suite in bubblewrap as far as this machine allows (lorelab.io.run_process).
        self.sandbox = sandbox

    @property
    def name(self) -> RunnerName:
        return "pytest"

    def environment(self) -> dict[str, str]:
        """The scrubbed environment an execution runs in."""
        extra = {} if self.plugin_autoload else {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        return scrubbed_env(
            REMOVED_ENV,
            {**SET_ENV, **extra},
            remove_prefixes=REMOVED_PREFIXES,
            keep=KEPT_ENV,
        )

    def argv(self, project: Path, workdir: Path, *, reverse: bool) -> list[str]:
        """The command for one execution; reports go to ``workdir``, outside the project."""
        argv = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            PLUGIN,
            f"--lorelab-collect-report={workdir / 'collect.json'}",
            "-o",
            "junit_family=xunit1",
            f"--junitxml={workdir / 'junit.xml'}",
            "--lorelab-summary",
            f"--rootdir={project}",
            f"--confcutdir={project}",
        ]
        if not has_own_config(project):
            ini = workdir / "pytest.ini"
            ini.write_text("[pytest]\n", encoding="utf-8")
            argv += ["-c", str(ini)]
        if reverse:
            argv.append("--lorelab-reverse")
        return argv

    def run(self, project: Path, *, timeout_s: float, reverse: bool = False) -> Execution:
        """Run the suite of ``project`` once; see :class:`Execution` for what is recorded."""
        timeout = check_timeout(timeout_s)
        root = check_project(project)
        workdir = Path(tempfile.mkdtemp(prefix="lorelab-pytest-"))
        try:
            argv = self.argv(root, workdir, reverse=reverse)
            env = self.environment()
            start = time.monotonic()
            proc = run_process(
                argv, cwd=root, env=env, timeout_s=timeout, sandbox=self.sandbox, writable=[workdir]
            )
            cases, classification, reason = classify(
                proc, workdir / "junit.xml", workdir / "collect.json", root
            )
            duration_ms = int((time.monotonic() - start) * 1000)
        finally:
            discard_workdir(workdir)
        return Execution(
            runner="pytest",
            argv=argv,
            exit_code=proc.exit_code,
            duration_ms=duration_ms,
            cases=cases,
            classification=classification,
            reason=reason,
            reverse=reverse,
            processes=[
                ProcessRecord(
                    argv=list(proc.argv),
                    exit_code=proc.exit_code,
                    signal=proc.signal,
                    timed_out=proc.timed_out,
                    duration_ms=proc.duration_ms,
                )
            ],
            output_tail=output_tail(proc.output_tail),
            sandbox=proc.sandbox,
        )
