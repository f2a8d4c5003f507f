import os

import pytest

from lorelab.runners import NodeRunner, run_stability
from lorelab.runners._node import discover

SOURCE = {"src/calc.js": "module.exports.add = (a, b) => a + b;\n"}
HEADER = (
    "const test = require('node:test');\n"
    "const { describe, it } = test;\n"
    "const assert = require('node:assert/strict');\n"
    "const { add } = require('../src/calc.js');\n"
)
PASSING = {
    **SOURCE,
    "test/calc.test.js": (
        HEADER + "test('adds', () => { assert.equal(add(1, 2), 3); });\n"
        "describe('outer', () => { describe('inner', () => {\n"
        "  it('adds \"zero\"', () => { assert.equal(add(0, 0), 0); });\n"
        "}); });\n"
        "test('skipped', { skip: true }, () => {});\n"
    ),
}
TIMEOUT = 60


def _ids(execution):
    return {case.id: case.status for case in execution.cases}


def test_a_passing_suite_has_file_qualified_case_ids(make):
    project = make("p", PASSING)
    execution = NodeRunner().run(project, timeout_s=TIMEOUT)
    assert execution.classification == "passed", execution.output_tail
    assert execution.exit_code == 0
    assert _ids(execution) == {
        "test/calc.test.js::adds": "passed",
        'test/calc.test.js::outer > inner > adds "zero"': "passed",
        "test/calc.test.js::skipped": "skipped",
    }
    assert execution.processes[0].argv[-1] == "./test/calc.test.js"
    assert "--test-reporter=junit" in execution.argv


def test_one_failing_case_is_named(make):
    project = make(
        "p",
        {
            **PASSING,
            "test/more.test.js": HEADER + "test('wrong', () => { assert.equal(add(1, 2), 4); });\n",
        },
    )
    execution = NodeRunner().run(project, timeout_s=TIMEOUT)
    assert execution.classification == "failed"
    assert execution.exit_code == 1
    assert _ids(execution)["test/more.test.js::wrong"] == "failed"
    assert _ids(execution)["test/calc.test.js::adds"] == "passed"
    assert "test/more.test.js::wrong" in execution.reason


def test_a_syntax_error_is_a_collection_error(make):
    project = make("p", {**PASSING, "test/broken.test.js": "const x = ;\n"})
    execution = NodeRunner().run(project, timeout_s=TIMEOUT)
    assert execution.classification == "collection-error"
    assert "test/broken.test.js" in execution.reason
    assert "SyntaxError" in execution.output_tail


def test_a_missing_module_is_a_collection_error(make):
    project = make("p", {"test/calc.test.js": "const { add } = require('../src/missing.js');\n"})
    execution = NodeRunner().run(project, timeout_s=TIMEOUT)
    assert execution.classification == "collection-error"
    assert "Cannot find module" in execution.output_tail


def test_a_test_file_without_tests_is_a_collection_error(make):
    project = make("p", {**PASSING, "test/empty.test.js": "const x = 1;\n"})
    execution = NodeRunner().run(project, timeout_s=TIMEOUT)
    assert execution.classification == "collection-error"
    assert "test/empty.test.js: yielded no cases" in execution.reason


def test_an_empty_suite_is_no_tests_and_runs_nothing(make):
    execution = NodeRunner().run(make("p", SOURCE), timeout_s=TIMEOUT)
    assert execution.classification == "no-tests"
    assert execution.processes == []
    assert execution.exit_code is None


def test_a_test_that_kills_its_own_process_is_a_crash(make):
    project = make(
        "p",
        {
            "test/die.test.js": (
                "const test = require('node:test');\n"
                "test('dies', () => { process.kill(process.pid, 'SIGKILL'); });\n"
            )
        },
    )
    execution = NodeRunner().run(project, timeout_s=TIMEOUT)
    assert execution.classification == "crashed"
    assert "SIGKILL" in execution.reason


@pytest.mark.parametrize("code", [0, 1])
def test_a_test_that_exits_its_process_before_reporting_is_a_crash(make, code):
    # Node 20 reports this file like one without tests (code 0) or one that failed to load
    # (code 1); the preloaded exit hook tells them apart.
    project = make(
        "p",
        {
            **PASSING,
            "test/exit.test.js": (
                "const test = require('node:test');\n"
                "test('fine', () => {});\n"
                f"test('exits', () => {{ process.exit({code}); }});\n"
            ),
        },
    )
    execution = NodeRunner().run(project, timeout_s=TIMEOUT)
    assert execution.classification == "crashed"
    assert f"test/exit.test.js: the test process called process.exit({code})" in execution.reason
    assert _ids(execution)["test/calc.test.js::adds"] == "passed"


def test_a_test_file_named_like_an_option_is_run_as_a_file(tmp_path):
    # Real projects can hold such names (copies keep them); node must not read one as a flag.
    (tmp_path / "-dash.test.js").write_text("require('node:test')('dash', () => {});\n")
    (tmp_path / "--require=x.test.js").write_text("require('node:test')('flag', () => {});\n")
    execution = NodeRunner().run(tmp_path, timeout_s=TIMEOUT)
    assert execution.classification == "passed", execution.output_tail
    assert _ids(execution) == {
        "--require=x.test.js::flag": "passed",
        "-dash.test.js::dash": "passed",
    }


def test_an_esm_project_runs_with_the_exit_hook_preloaded(make):
    project = make(
        "p",
        {
            "package.json": '{"type": "module"}\n',
            "src/calc.js": "export const add = (a, b) => a + b;\n",
            "test/calc.test.mjs": (
                "import test from 'node:test';\n"
                "import assert from 'node:assert/strict';\n"
                "import { add } from '../src/calc.js';\n"
                "test('adds', () => { assert.equal(add(1, 2), 3); });\n"
            ),
        },
    )
    execution = NodeRunner().run(project, timeout_s=TIMEOUT)
    assert execution.classification == "passed", execution.output_tail
    assert "--require" in execution.processes[0].argv


def test_failures_are_kinded_import_only_for_missing_modules_and_names(make):
    project = make(
        "p",
        {
            **SOURCE,
            "test/kinds.test.js": (
                HEADER + "const calc = require('../src/calc.js');\n"
                "test('assertion', () => { assert.equal(add(1, 2), 4); });\n"
                "test('call result', () => { calc.add(1, 2).map((x) => x); });\n"
                "test('missing name', () => { calc.sub(1, 2); });\n"
                "test('missing module', () => { require('../src/gone.js'); });\n"
                "test('passes', () => {});\n"
            ),
        },
    )
    execution = NodeRunner().run(project, timeout_s=TIMEOUT)
    assert execution.classification == "failed"
    assert {case.id.split("::")[1]: case.failure_kind for case in execution.cases} == {
        "assertion": "other",
        "call result": "other",
        "missing name": "import",
        "missing module": "import",
        "passes": None,
    }


def test_an_infinite_loop_times_out_and_its_children_are_killed(make, tmp_path, gone):
    pid_file = tmp_path / "grandchild.pid"
    project = make(
        "p",
        {
            "test/loop.test.js": (
                "const test = require('node:test');\n"
                "const { spawn } = require('node:child_process');\n"
                "const fs = require('node:fs');\n"
                "test('forever', () => {\n"
                "  const child = spawn('sleep', ['300']);\n"
                f"  fs.writeFileSync({str(pid_file)!r}, String(child.pid));\n"
                "  for (;;) {}\n"
                "});\n"
            )
        },
    )
    execution = NodeRunner().run(project, timeout_s=3)
    assert execution.classification == "timeout"
    assert execution.exit_code is None
    assert execution.processes[-1].timed_out
    assert gone(int(pid_file.read_text()))


def test_a_test_whose_outcome_changes_between_runs_is_unstable(make):
    project = make(
        "p",
        {
            "test/flaky.test.js": (
                "const test = require('node:test');\n"
                "const assert = require('node:assert/strict');\n"
                "const fs = require('node:fs');\n"
                "const path = require('node:path');\n"
                "const state = path.join(__dirname, 'coin.txt');\n"
                "test('steady', () => {});\n"
                "test('coin', () => {\n"
                "  const seen = fs.existsSync(state);\n"
                "  const flips = seen ? Number(fs.readFileSync(state, 'utf8')) : 0;\n"
                "  fs.writeFileSync(state, String(flips + 1));\n"
                "  assert.equal(flips % 2, 0);\n"
                "});\n"
            )
        },
    )
    stability = run_stability(NodeRunner(), project, runs=2, timeout_s=TIMEOUT)
    assert not stability.stable
    assert stability.flaky_cases == ["test/flaky.test.js::coin"]
    assert "test/flaky.test.js::coin" in stability.first_difference


def test_reverse_runs_the_files_in_reverse_order(make):
    project = make(
        "p",
        {
            "test/a.test.js": "require('node:test')('a', () => {});\n",
            "test/b.test.js": "require('node:test')('b', () => {});\n",
        },
    )
    execution = NodeRunner().run(project, timeout_s=TIMEOUT, reverse=True)
    assert [case.id for case in execution.cases] == ["test/b.test.js::b", "test/a.test.js::a"]
    assert execution.reverse


def test_node_options_from_the_environment_do_not_leak_in(make, monkeypatch):
    monkeypatch.setenv("NODE_OPTIONS", "--require /nonexistent/hook.js")
    monkeypatch.setenv("TZ", "Europe/Paris")
    project = make(
        "p",
        {
            "test/env.test.js": (
                "const test = require('node:test');\n"
                "const assert = require('node:assert/strict');\n"
                "test('env', () => {\n"
                "  assert.equal(process.env.NODE_OPTIONS, undefined);\n"
                "  assert.equal(process.env.TZ, 'UTC');\n"
                "  assert.equal(new Date(0).getTimezoneOffset(), 0);\n"
                "});\n"
            )
        },
    )
    execution = NodeRunner().run(project, timeout_s=TIMEOUT)
    assert execution.classification == "passed", execution.output_tail


def test_discovery_follows_node_20_default_patterns_without_symlinks(tmp_path):
    files = [
        "a.test.js",
        "b-test.mjs",
        "c_test.cjs",
        "test-d.js",
        "test.js",
        "test/helper.js",
        "sub/test/deep/e.js",
        "src/calc.js",
        "node_modules/pkg/x.test.js",
        ".hidden/y.test.js",
        "test/readme.md",
    ]
    for name in files:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    os.symlink(tmp_path / "a.test.js", tmp_path / "link.test.js")
    assert discover(tmp_path) == [
        ".hidden/y.test.js",
        "a.test.js",
        "b-test.mjs",
        "c_test.cjs",
        "sub/test/deep/e.js",
        "test-d.js",
        "test.js",
        "test/helper.js",
    ]


@pytest.mark.parametrize("name", ["x.spec.js", "testing.js", "mytest.js"])
def test_files_outside_the_patterns_are_not_tests(tmp_path, name):
    (tmp_path / name).write_text("")
    assert discover(tmp_path) == []
