import pytest

from lorelab.errors import ComparisonRefused
from lorelab.runners import (
    Case,
    Execution,
    PytestRunner,
    StabilityJob,
    assess,
    detect,
    is_valid_baseline,
    run_parallel,
)
from lorelab.workspace import FileEntry, RunRoot, write_files

RUNNER = PytestRunner(plugin_autoload=False)
REFERENCE = "def add(a, b):\n    return a + b\n\n\ndef unused():\n    return 1\n"
TESTS = (
    "from src.calc import add\n\n"
    "def test_adds():\n    assert add(1, 2) == 3\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n"
)
DEFECTS = {
    # Renames the function: every test module fails to import. Broken, not detected.
    "imports": "def plus(a, b):\n    return a + b\n",
    # Subtracts: test_adds fails, test_zero still passes. Detected by test_adds.
    "subtracts": "def add(a, b):\n    return a - b\n\n\ndef unused():\n    return 1\n",
    # Changes code no test reaches. Survived.
    "unused": "def add(a, b):\n    return a + b\n\n\ndef unused():\n    return 2\n",
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """The reference and every defect, each stable-checked (2 runs) on a pool of two."""
    with RunRoot(tmp_path_factory.mktemp("detection")) as root:
        files = [
            FileEntry(path="src/__init__.py", content=""),
            FileEntry(path="src/calc.py", content=REFERENCE),
            FileEntry(path="tests/test_calc.py", content=TESTS),
        ]
        reference = root.create_project("reference", files)
        projects = {"reference": reference}
        for name, source in DEFECTS.items():
            project = root.copy_project(reference, name)
            write_files(
                project, [FileEntry(path="src/calc.py", content=source)], allow_overwrite=True
            )
            projects[name] = project
        jobs = [
            StabilityJob(runner=RUNNER, project=path, runs=2, timeout_s=60)
            for path in projects.values()
        ]
        results = run_parallel(jobs, max_workers=2)
    return dict(zip(projects, results, strict=True))


def test_the_reference_run_is_a_valid_baseline(outcomes):
    assert outcomes["reference"].stable
    assert outcomes["reference"].classification == "passed"
    assert is_valid_baseline(outcomes["reference"])


def test_a_defect_that_only_breaks_imports_is_broken_not_detected(outcomes):
    assert outcomes["imports"].classification == "collection-error"
    outcome = detect(outcomes["reference"], outcomes["imports"])
    assert outcome.status == "broken"
    assert outcome.detecting_cases == []
    assert "collection-error" in outcome.reason


def test_a_defect_that_fails_a_reference_passing_case_is_detected_by_that_case(outcomes):
    outcome = detect(outcomes["reference"], outcomes["subtracts"])
    assert outcome.status == "detected"
    assert outcome.detecting_cases == ["tests/test_calc.py::test_adds"]


def test_a_defect_no_case_notices_survives(outcomes):
    outcome = detect(outcomes["reference"], outcomes["unused"])
    assert outcome.status == "survived"
    assert outcome.detecting_cases == []


def _execution(classification, cases, exit_code=0, runner="pytest"):
    return Execution(
        runner=runner,
        argv=["x"],
        exit_code=exit_code,
        duration_ms=1,
        cases=[Case(id=case_id, status=status) for case_id, status in cases],
        classification=classification,
        reason="synthetic record for a rule test",
        reverse=False,
        processes=[],
        output_tail="",
    )


BASELINE = assess([_execution("passed", [("t::a", "passed"), ("t::b", "passed")])] * 2)


@pytest.mark.parametrize("classification", ["timeout", "crashed", "collection-error", "no-tests"])
def test_a_defect_run_that_did_not_complete_is_broken_even_with_failing_cases(classification):
    # A timeout or crash may still carry a failed case: it is never a detection.
    run = _execution(classification, [("t::a", "failed")], exit_code=None)
    outcome = detect(BASELINE, assess([run, run]))
    assert outcome.status == "broken"
    assert outcome.detecting_cases == []


def test_an_unstable_defect_run_is_broken_even_if_one_run_failed_a_case():
    failing = _execution("failed", [("t::a", "failed"), ("t::b", "passed")], exit_code=1)
    passing = _execution("passed", [("t::a", "passed"), ("t::b", "passed")])
    outcome = detect(BASELINE, assess([failing, passing]))
    assert outcome.status == "broken"
    assert "unstable" in outcome.reason


def test_an_erroring_case_that_passed_on_the_reference_is_a_detection():
    run = _execution("failed", [("t::a", "error"), ("t::b", "passed")], exit_code=1)
    assert detect(BASELINE, assess([run, run])).detecting_cases == ["t::a"]


def test_a_case_that_was_skipped_on_the_reference_cannot_detect():
    baseline = assess([_execution("passed", [("t::a", "skipped"), ("t::b", "passed")])] * 2)
    run = _execution("failed", [("t::a", "failed"), ("t::b", "passed")], exit_code=1)
    assert detect(baseline, assess([run, run])).status == "survived"


@pytest.mark.parametrize("classification", ["failed", "collection-error"])
def test_a_baseline_that_is_not_stable_and_passing_is_refused(classification):
    baseline = assess([_execution(classification, [("t::a", "failed")], exit_code=1)] * 2)
    run = _execution("passed", [("t::a", "passed")])
    with pytest.raises(ComparisonRefused, match="stable and passing"):
        detect(baseline, assess([run, run]))


def test_an_unstable_baseline_is_refused():
    baseline = assess(
        [
            _execution("passed", [("t::a", "passed")]),
            _execution("failed", [("t::a", "failed")], exit_code=1),
        ]
    )
    run = _execution("passed", [("t::a", "passed")])
    with pytest.raises(ComparisonRefused):
        detect(baseline, assess([run, run]))


def test_runs_of_different_runners_are_not_compared():
    run = _execution("failed", [("t::a", "failed")], exit_code=1, runner="node")
    with pytest.raises(ComparisonRefused, match="node"):
        detect(BASELINE, assess([run, run]))


def test_stability_requires_agreeing_exit_codes():
    first = _execution("passed", [("t::a", "passed")], exit_code=0)
    second = _execution("passed", [("t::a", "passed")], exit_code=3)
    stability = assess([first, second])
    assert not stability.stable
    assert "exit codes" in stability.first_difference
    assert stability.flaky_cases == []


def test_a_case_missing_from_a_later_run_is_flaky():
    first = _execution("passed", [("t::a", "passed"), ("t::b", "passed")])
    second = _execution("passed", [("t::a", "passed")])
    stability = assess([first, second])
    assert not stability.stable
    assert stability.flaky_cases == ["t::b"]
    assert stability.first_difference.startswith("case t::b: passed in run 1, missing in run 2")
