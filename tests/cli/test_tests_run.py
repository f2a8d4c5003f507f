import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.workspace import FileEntry, RunRoot

PYTEST_PASSING = {
    "src/__init__.py": "",
    "src/calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": (
        "from src.calc import add\n\ndef test_adds():\n    assert add(1, 2) == 3\n"
    ),
}
NODE_FAILING = {
    "package.json": '{"name": "demo", "version": "1.0.0"}\n',
    "test/calc.test.js": (
        "const test = require('node:test');\n"
        "const assert = require('node:assert/strict');\n"
        "test('good', () => {});\n"
        "test('bad', () => { assert.equal(1, 2); });\n"
    ),
}
NODE_FLAKY = {
    "test/flaky.test.js": (
        "const test = require('node:test');\n"
        "const assert = require('node:assert/strict');\n"
        "const fs = require('node:fs');\n"
        "const state = require('node:path').join(__dirname, 'coin.txt');\n"
        "test('coin', () => {\n"
        "  const flips = fs.existsSync(state) ? Number(fs.readFileSync(state, 'utf8')) : 0;\n"
        "  fs.writeFileSync(state, String(flips + 1));\n"
        "  assert.equal(flips % 2, 0);\n"
        "});\n"
    ),
}


@pytest.fixture
def project(tmp_path):
    with RunRoot(tmp_path) as root:

        def _make(files, name="p"):
            entries = [FileEntry(path=path, content=text) for path, text in files.items()]
            return root.create_project(name, entries)

        yield _make


def _invoke(*args):
    return CliRunner().invoke(app, ["tests", "run", *map(str, args)])


def test_a_stable_passing_pytest_suite_exits_0_with_the_documented_json(project):
    result = _invoke(project(PYTEST_PASSING), "--stability-runs", "2", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["classification"] == "passed"
    assert report["stable"] is True
    assert report["flakyCases"] == []
    assert report["runner"] == "pytest"
    assert report["schemaVersion"] == 1
    assert len(report["runs"]) == 2
    for run in report["runs"]:
        assert run["exitCode"] == 0
        assert isinstance(run["durationMs"], int)
        assert run["cases"] == [
            {"id": "tests/test_calc.py::test_adds", "status": "passed", "failureKind": None}
        ]
    assert "runner pytest (no package.json or node test file found)" in result.stderr


def test_a_failing_node_suite_exits_1_and_the_table_names_the_runner_and_failure(project):
    result = _invoke(project(NODE_FAILING), "--stability-runs", "2")
    assert result.exit_code == 1
    assert "runner node (package.json found)" in result.stderr
    assert "classification: failed" in result.stdout
    assert "stable: yes" in result.stdout
    assert "test/calc.test.js::bad" in result.stdout


def test_a_flaky_suite_exits_1_and_names_the_flaky_case(project):
    result = _invoke(project(NODE_FLAKY), "--stability-runs", "3", "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["stable"] is False
    assert report["classification"] == "unstable"
    assert report["flakyCases"] == ["test/flaky.test.js::coin"]
    assert [run["cases"][0]["status"] for run in report["runs"]] == ["passed", "failed", "passed"]


def test_the_runner_can_be_chosen_explicitly(project):
    path = project({"tests/test_x.py": "def test_x():\n    pass\n"})
    result = _invoke(path, "--runner", "node", "--stability-runs", "2", "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["runner"] == "node"
    assert report["runnerChosenBy"] == "--runner"
    assert report["classification"] == "no-tests"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--stability-runs", "1"], "stability runs 1"),
        (["--stability-runs", "6"], "stability runs 6"),
        (["--timeout-s", "0"], "timeout 0.0"),
        (["--timeout-s", "-5"], "timeout -5.0"),
    ],
)
def test_bad_numbers_exit_2_with_one_line_and_run_nothing(project, args, message):
    path = project(NODE_FLAKY)
    result = _invoke(path, *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (path / "test" / "coin.txt").exists()


def test_a_missing_path_exits_2(tmp_path):
    result = _invoke(tmp_path / "nope")
    assert result.exit_code == 2
    assert "no such directory" in result.stderr


@pytest.mark.parametrize("kind", ["too long", "symlink loop"])
def test_a_path_the_os_cannot_even_look_up_exits_2_with_one_line(tmp_path, kind):
    if kind == "too long":
        path = tmp_path / ("a" * 5000)
        expected = "File name too long"
    else:
        path = tmp_path / "loop"
        path.symlink_to(path)
        expected = "Too many levels of symbolic links"
    result = _invoke(path)
    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert "Traceback" not in result.output


def test_an_empty_path_is_refused_instead_of_meaning_the_current_directory(tmp_path, monkeypatch):
    # The current directory holds a passing suite: an empty PATH must still not run it.
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["tests", "run", ""])
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert (
        line == "lorelab: error: PATH is empty; name the project directory (. for the current one)"
    )


def test_a_file_instead_of_a_directory_exits_2(tmp_path):
    file = tmp_path / "file.py"
    file.write_text("x = 1\n")
    result = _invoke(file)
    assert result.exit_code == 2
    assert "not a directory" in result.stderr


def test_an_unknown_runner_exits_2(tmp_path):
    result = _invoke(tmp_path, "--runner", "jest")
    assert result.exit_code == 2


def test_the_installed_program_reports_bad_input_without_a_traceback(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "lorelab", "tests", "run", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2
    assert completed.stderr.startswith("lorelab: error: project ")
    assert "Traceback" not in completed.stderr


def test_the_table_prints_case_ids_with_brackets_verbatim(project):
    path = project(
        {
            "tests/test_p.py": (
                "import pytest\n\n"
                "@pytest.mark.parametrize('x', ['[bold]', ':smile:'])\n"
                "def test_p(x):\n    assert x == 'never'\n"
            )
        },
    )
    result = _invoke(path, "--stability-runs", "2")
    assert result.exit_code == 1
    assert "tests/test_p.py::test_p[[bold]]" in result.stdout
    assert "test_p[:smile:]" in result.stdout


def test_an_mjs_test_file_without_package_json_selects_node(project):
    # Detection uses node's own test-file patterns, not only *.test.js.
    path = project({"test/a.test.mjs": ("import test from 'node:test';\ntest('ok', () => {});\n")})
    result = _invoke(path, "--stability-runs", "2", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["runner"] == "node"
    assert report["runnerChosenBy"] == "node test file test/a.test.mjs found"
    assert report["runs"][0]["cases"][0]["id"] == "test/a.test.mjs::ok"


def test_a_failing_suite_s_escape_and_bidi_characters_are_printed_escaped(tmp_path):
    # Issue 31 item 17: `lorelab tests run` printed a test's raw ESC and bidi controls.
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_loud.py").write_text(
        "def test_loud():\n"
        "    print('\\x1b]0;pwned\\x07 \\u202eevil')\n"
        "    assert False, '\\x1b[2J cleared'\n"
    )
    result = CliRunner().invoke(app, ["tests", "run", str(tmp_path), "--stability-runs", "2"])
    assert result.exit_code == 1, result.output
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in result.output
    assert "\\x1b" in result.output
