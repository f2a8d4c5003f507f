import pytest

from lorelab.errors import ComparisonRefused
from lorelab.runners import (
    Case,
    Execution,
    NodeRunner,
    PytestRunner,
    StabilityJob,
    assess,
    detect,
    is_valid_baseline,
    run_parallel,
)
from lorelab.workspace import FileEntry, RunRoot, write_files

RUNNER = PytestRunner(plugin_autoload=False)
NODE = NodeRunner()
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
# The imports happen inside a fixture and inside test bodies, so collection succeeds and a
# renamed function makes the cases themselves fail (ImportError, AttributeError on a module).
LAZY_REFERENCE = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
LAZY_TESTS = (
    "import pytest\n\n"
    "@pytest.fixture\n"
    "def add():\n    from src.calc import add\n    return add\n\n"
    "def test_fixture(add):\n    assert add(1, 2) == 3\n\n"
    "def test_inline():\n    from src.calc import add\n    assert add(2, 2) == 4\n\n"
    "def test_attribute():\n    import src.calc\n    assert src.calc.add(0, 0) == 0\n\n"
    "def test_mul():\n    from src.calc import mul\n    assert mul(2, 3) == 6\n\n"
    "def test_module():\n    import src.helper\n    assert src.helper.OK\n"
)
LAZY_DEFECTS = {
    # Renames both functions and drops a module: every case fails to import. Broken.
    "lazy-renames": (
        "def plus(a, b):\n    return a + b\n\n\ndef times(a, b):\n    return a * b\n",
        False,
    ),
    # add subtracts (a real detection), mul is renamed (only an import failure).
    "lazy-mixed": (
        "def add(a, b):\n    return a - b\n\n\ndef times(a, b):\n    return a * b\n",
        True,
    ),
}
NODE_REFERENCE = (
    "function add(a, b) { return a + b; }\nfunction mul(a, b) { return a * b; }\n"
    "module.exports = { add, mul };\n"
)
NODE_TESTS = (
    "const test = require('node:test');\n"
    "const assert = require('node:assert');\n"
    "const { add } = require('../src/calc');\n"
    "const calc = require('../src/calc');\n"
    "test('adds', () => { assert.strictEqual(add(1, 2), 3); });\n"
    "test('member', () => { assert.strictEqual(calc.add(2, 2), 4); });\n"
    "test('lazy', () => {\n"
    "  const { mul } = require('../src/calc');\n"
    "  assert.strictEqual(mul(2, 3), 6);\n"
    "});\n"
    "test('helper', () => { assert.ok(require('../src/helper').ok); });\n"
    "test('constructs', () => { assert.ok(new calc.Calc()); });\n"
)
NODE_CALC_CLASS = "class Calc {}\nmodule.exports.Calc = Calc;\n"
NODE_DEFECTS = {
    # Renames every export and drops a module: TypeError "... is not a function/constructor"
    # and MODULE_NOT_FOUND in every case. Broken.
    "node-renames": (
        "function plus(a, b) { return a + b; }\nfunction times(a, b) { return a * b; }\n"
        "class Calculator {}\nmodule.exports = { plus, times, Calculator };\n",
        False,
    ),
    # add subtracts (detected by 'adds' and 'member'); mul is renamed (an import failure).
    "node-mixed": (
        "function add(a, b) { return a - b; }\nfunction times(a, b) { return a * b; }\n"
        "class Calc {}\nmodule.exports = { add, times, Calc };\n",
        True,
    ),
}


def _python_project(root, name, source, tests, helper=True):
    files = [
        FileEntry(path="src/__init__.py", content=""),
        FileEntry(path="src/calc.py", content=source),
        FileEntry(path="tests/test_calc.py", content=tests),
    ]
    if helper:
        files.append(FileEntry(path="src/helper.py", content="OK = True\n"))
    return root.create_project(name, files)


def _node_project(root, name, source, helper=True):
    files = [
        FileEntry(path="src/calc.js", content=source),
        FileEntry(path="test/calc.test.js", content=NODE_TESTS),
    ]
    if helper:
        files.append(FileEntry(path="src/helper.js", content="module.exports = { ok: true };\n"))
    return root.create_project(name, files)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """Every reference and defect, each stable-checked (2 runs) on a pool of two."""
    with RunRoot(tmp_path_factory.mktemp("detection")) as root:
        files = [
            FileEntry(path="src/__init__.py", content=""),
            FileEntry(path="src/calc.py", content=REFERENCE),
            FileEntry(path="tests/test_calc.py", content=TESTS),
        ]
        reference = root.create_project("reference", files)
        projects = {"reference": (RUNNER, reference)}
        for name, source in DEFECTS.items():
            project = root.copy_project(reference, name)
            write_files(
                project, [FileEntry(path="src/calc.py", content=source)], allow_overwrite=True
            )
            projects[name] = (RUNNER, project)
        projects["lazy-reference"] = (
            RUNNER,
            _python_project(root, "lazy-reference", LAZY_REFERENCE, LAZY_TESTS),
        )
        for name, (source, helper) in LAZY_DEFECTS.items():
            projects[name] = (RUNNER, _python_project(root, name, source, LAZY_TESTS, helper))
        projects["node-reference"] = (
            NODE,
            _node_project(root, "node-reference", NODE_REFERENCE + NODE_CALC_CLASS),
        )
        for name, (source, helper) in NODE_DEFECTS.items():
            projects[name] = (NODE, _node_project(root, name, source, helper))
        jobs = [
            StabilityJob(runner=runner, project=path, runs=2, timeout_s=60)
            for runner, path in projects.values()
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


def _kinds(stability):
    return {case.id: (case.status, case.failure_kind) for case in stability.runs[0].cases}


def test_imports_inside_tests_and_fixtures_that_fail_are_recorded_as_import_failures(outcomes):
    assert outcomes["lazy-reference"].classification == "passed"
    renames = outcomes["lazy-renames"]
    assert renames.stable
    assert renames.classification == "failed"
    assert _kinds(renames) == {
        "tests/test_calc.py::test_fixture": ("error", "import"),
        "tests/test_calc.py::test_inline": ("failed", "import"),
        "tests/test_calc.py::test_attribute": ("failed", "import"),
        "tests/test_calc.py::test_mul": ("failed", "import"),
        "tests/test_calc.py::test_module": ("failed", "import"),
    }


def test_a_python_defect_that_only_breaks_imports_inside_tests_is_broken(outcomes):
    outcome = detect(outcomes["lazy-reference"], outcomes["lazy-renames"])
    assert outcome.status == "broken"
    assert outcome.detecting_cases == []
    assert len(outcome.import_failure_cases) == 5
    assert "only breaks imports" in outcome.reason


def test_a_python_defect_with_a_behavioural_failure_is_detected_by_that_case_only(outcomes):
    assert _kinds(outcomes["lazy-mixed"])["tests/test_calc.py::test_inline"] == (
        "failed",
        "other",
    )
    outcome = detect(outcomes["lazy-reference"], outcomes["lazy-mixed"])
    assert outcome.status == "detected"
    assert outcome.detecting_cases == [
        "tests/test_calc.py::test_fixture",
        "tests/test_calc.py::test_inline",
    ]
    assert outcome.import_failure_cases == ["tests/test_calc.py::test_mul"]


def test_node_missing_exports_and_modules_are_recorded_as_import_failures(outcomes):
    assert outcomes["node-reference"].classification == "passed"
    renames = outcomes["node-renames"]
    assert renames.stable
    assert renames.classification == "failed"
    assert _kinds(renames) == {
        "test/calc.test.js::adds": ("failed", "import"),
        "test/calc.test.js::member": ("failed", "import"),
        "test/calc.test.js::lazy": ("failed", "import"),
        "test/calc.test.js::helper": ("failed", "import"),
        "test/calc.test.js::constructs": ("failed", "import"),
    }


def test_a_node_defect_that_only_breaks_exports_is_broken_not_detected(outcomes):
    outcome = detect(outcomes["node-reference"], outcomes["node-renames"])
    assert outcome.status == "broken"
    assert outcome.detecting_cases == []
    assert len(outcome.import_failure_cases) == 5


def test_a_node_defect_with_a_behavioural_failure_is_detected_by_that_case_only(outcomes):
    outcome = detect(outcomes["node-reference"], outcomes["node-mixed"])
    assert outcome.status == "detected"
    assert outcome.detecting_cases == ["test/calc.test.js::adds", "test/calc.test.js::member"]
    assert outcome.import_failure_cases == ["test/calc.test.js::lazy"]


def _execution(classification, cases, exit_code=0, runner="pytest"):
    return Execution(
        runner=runner,
        argv=["x"],
        exit_code=exit_code,
        duration_ms=1,
        # Each case is (id, status) or (id, status, failure kind).
        cases=[Case(id=c[0], status=c[1], failure_kind=(*c[2:], None)[0]) for c in cases],
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


def test_a_case_that_failed_to_import_in_any_run_is_not_a_detection():
    # Stable statuses, but run 2 says the failure was an import: conservatively not a detection.
    first = _execution("failed", [("t::a", "failed", "other"), ("t::b", "passed")], exit_code=1)
    second = _execution("failed", [("t::a", "failed", "import"), ("t::b", "passed")], exit_code=1)
    outcome = detect(BASELINE, assess([first, second]))
    assert outcome.status == "broken"
    assert outcome.import_failure_cases == ["t::a"]


def test_a_failing_case_of_unknown_kind_still_counts_as_a_detection():
    # Records made without failure kinds (older receipts) keep the rule they were scored by.
    run = _execution("failed", [("t::a", "failed"), ("t::b", "passed")], exit_code=1)
    outcome = detect(BASELINE, assess([run, run]))
    assert outcome.status == "detected"
    assert outcome.import_failure_cases == []
