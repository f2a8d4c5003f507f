"""A test that rewrites lorelab's own reports is caught: what the JUnit and collection reports
say is checked against what lorelab sees for itself (the exit code, the cases in the project's
files, the cases pytest ran), and a contradiction makes the execution ``tampered``: a failure
of the trial, never a detection (issue 31 item 4)."""

from __future__ import annotations

from lorelab.runners import PytestRunner, assess, detect, run_stability

TIMEOUT = 60
FAST = PytestRunner(plugin_autoload=False)
SOURCE = {"src/__init__.py": "", "src/calc.py": "def add(a, b):\n    return a + b\n"}
PASSING = {**SOURCE, "tests/test_calc.py": "def test_adds():\n    assert 1 + 2 == 3\n"}

# Rewrites both reports as five passing cases, then leaves with status 0 before pytest can
# write the real ones: the attack the issue describes.
FORGE = """\
import json, os, sys

def _paths():
    junit = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml="))
    collect = next(
        a.split("=", 1)[1] for a in sys.argv if a.startswith("--lorelab-collect-report=")
    )
    return junit, collect

def forge(names):
    junit, collect = _paths()
    cases = "".join(
        f'<testcase classname="tests.test_calc" name="{name}" file="tests/test_calc.py"/>'
        for name in names
    )
    with open(junit, "w") as handle:
        handle.write(f'<testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>')
    nodeids = [f"tests/test_calc.py::{name}" for name in names]
    with open(collect, "w") as handle:
        json.dump(
            {"modules": {"tests/test_calc.py": {"outcome": "passed", "cases": len(names)}},
             "nodeids": nodeids},
            handle,
        )
"""


def _forging_test(names: list[str] | str, *, exit_now: bool) -> str:
    # A string is an expression computing the names at run time (not spelled in the file).
    body = f"    forge({names if isinstance(names, str) else repr(names)})\n"
    if exit_now:
        body += "    os._exit(0)\n"
    return FORGE + "\ndef test_adds():\n" + body + "    assert 1 + 2 == 4\n"


def test_a_failing_test_that_forges_five_passing_cases_and_exits_0_is_tampered(make):
    names = "['test_' + 'invented_%d' % n for n in range(5)]"
    project = make("p", {**SOURCE, "tests/test_calc.py": _forging_test(names, exit_now=True)})
    execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.exit_code == 0
    assert execution.classification == "tampered", execution.reason
    assert "test_invented_0" in execution.reason


def test_forged_reports_naming_only_real_cases_are_still_tampered(make):
    # The names exist in the file, but pytest never finished the session it claims.
    project = make(
        "p", {**SOURCE, "tests/test_calc.py": _forging_test(["test_adds"], exit_now=True)}
    )
    execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.classification == "tampered", execution.reason
    assert "never finished" in execution.reason


def test_reports_rewritten_after_pytest_wrote_them_are_tampered(make):
    # A conftest that lets pytest finish, then overwrites the reports and the exit status.
    conftest = (
        FORGE + "\nimport pytest\n\n"
        "def pytest_sessionfinish(session):\n"
        "    session.exitstatus = 0\n\n"
        "@pytest.hookimpl(trylast=True)\n"
        "def pytest_unconfigure(config):\n"
        "    forge(['test_adds'])\n"
    )
    failing = {**SOURCE, "tests/test_calc.py": "def test_adds():\n    assert 1 + 2 == 4\n"}
    project = make("p", {**failing, "tests/conftest.py": conftest})
    execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.classification == "tampered", execution.reason


def test_an_honest_failing_suite_is_not_tampered(make):
    project = make("p", {**SOURCE, "tests/test_calc.py": "def test_adds():\n    assert 0\n"})
    execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.classification == "failed", execution.reason


def test_a_tampered_defect_run_is_never_a_detection(make):
    baseline = run_stability(FAST, make("ref", PASSING), runs=2, timeout_s=TIMEOUT)
    assert baseline.classification == "passed"
    forged = _forging_test(["test_adds"], exit_now=True).replace(
        "assert 1 + 2 == 4", "assert 1 + 2 == 3"
    )
    # The defect run reports pass by forgery; an honest failing case would have been a
    # detection, a forged one never is: the defect is broken.
    defect = assess(
        [
            FAST.run(make(f"d{n}", {**SOURCE, "tests/test_calc.py": forged}), timeout_s=TIMEOUT)
            for n in range(2)
        ]
    )
    outcome = detect(baseline, defect)
    assert defect.classification == "tampered"
    assert outcome.status == "broken"
    assert "tampered" in outcome.reason


def test_the_plugin_and_the_check_spell_the_end_of_session_line_alike():
    from lorelab.runners import _pytest_plugin, _tamper

    assert _pytest_plugin.SUMMARY_PREFIX == _tamper.SUMMARY_PREFIX
