import os
import subprocess
import sys

import pytest

from lorelab.errors import InputFileError, UsageError
from lorelab.runners import PytestRunner, get_runner, run_stability
from lorelab.runners._pytest import has_own_config
from lorelab.workspace import RunRoot

SOURCE = {"src/__init__.py": "", "src/calc.py": "def add(a, b):\n    return a + b\n"}
PASSING = {
    **SOURCE,
    "tests/test_calc.py": (
        "from src.calc import add\n\n"
        "def test_adds():\n    assert add(1, 2) == 3\n\n"
        "class TestMore:\n    def test_zero(self):\n        assert add(0, 0) == 0\n"
    ),
}
TIMEOUT = 60
# Entry-point plugins of the dev environment (hypothesis above all) cost over a second a
# run; most tests here do not depend on them, so they use a runner without autoload.
FAST = PytestRunner(plugin_autoload=False)


def _snapshot(project):
    return sorted(
        os.path.relpath(os.path.join(directory, name), project)
        for directory, dirs, files in os.walk(project)
        for name in dirs + files
    )


def _ids(execution):
    return {case.id: case.status for case in execution.cases}


def _seeded_hash(text):
    """``hash(text)`` in a fresh interpreter with PYTHONHASHSEED=0 (differs from a random seed)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run(
        [sys.executable, "-c", f"print(hash({text!r}))"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return int(out.stdout)


def test_a_passing_suite_is_passed_with_node_ids_and_leaves_the_tree_as_it_was(make):
    project = make("p", PASSING)
    before = _snapshot(project)
    execution = PytestRunner().run(project, timeout_s=TIMEOUT)
    assert execution.classification == "passed"
    assert execution.exit_code == 0
    assert [case.id for case in execution.cases] == [
        "tests/test_calc.py::test_adds",
        "tests/test_calc.py::TestMore::test_zero",
    ]
    assert {case.status for case in execution.cases} == {"passed"}
    assert execution.argv[1:3] == ["-m", "pytest"]
    assert "-p" in execution.argv
    assert "no:cacheprovider" in execution.argv
    assert _snapshot(project) == before


def test_one_failing_case_is_named_and_the_execution_failed(make):
    project = make(
        "p",
        {
            **SOURCE,
            "tests/test_calc.py": (
                "import pytest\nfrom src.calc import add\n\n"
                "def test_adds():\n    assert add(1, 2) == 3\n\n"
                "def test_wrong():\n    assert add(1, 2) == 4\n\n"
                "@pytest.mark.parametrize('x', [1, 'a::b'])\n"
                "def test_param(x):\n    assert x\n"
            ),
        },
    )
    execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.classification == "failed"
    assert execution.exit_code == 1
    assert _ids(execution) == {
        "tests/test_calc.py::test_adds": "passed",
        "tests/test_calc.py::test_wrong": "failed",
        "tests/test_calc.py::test_param[1]": "passed",
        "tests/test_calc.py::test_param[a::b]": "passed",
    }
    assert "test_wrong" in execution.reason


def test_a_syntax_error_is_a_collection_error(make):
    project = make("p", {**PASSING, "tests/test_broken.py": "def test_x(:\n    pass\n"})
    execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.classification == "collection-error"
    assert "tests/test_broken.py" in execution.reason
    assert "SyntaxError" in execution.reason
    assert _ids(execution)["tests/test_broken.py"] == "error"


def test_an_import_error_is_a_collection_error(make):
    project = make(
        "p",
        {
            **SOURCE,
            "tests/test_calc.py": "from src.calc import subtract\n\ndef test_x():\n    pass\n",
        },
    )
    execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.classification == "collection-error"
    assert "ImportError" in execution.reason


def test_failures_are_kinded_import_only_for_missing_modules_and_names(make):
    project = make(
        "p",
        {
            **SOURCE,
            "tests/test_kinds.py": (
                "import pytest\n\n"
                "@pytest.fixture\n"
                "def gone():\n    import src.gone\n\n"
                "def test_fixture(gone):\n    pass\n\n"
                "def test_name():\n    from src.calc import sub\n\n"
                "def test_module_attribute():\n    import src.calc\n    src.calc.sub(1, 2)\n\n"
                "def test_value_attribute():\n    'text'.no_such_method()\n\n"
                "def test_assertion():\n    assert 1 == 2\n\n"
                "def test_raises_other():\n    raise ValueError('ImportError: not really')\n\n"
                "def test_passes():\n    pass\n"
            ),
        },
    )
    execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.classification == "failed"
    assert {case.id.split("::")[1]: case.failure_kind for case in execution.cases} == {
        "test_fixture": "import",
        "test_name": "import",
        "test_module_attribute": "import",
        "test_value_attribute": "other",
        "test_assertion": "other",
        "test_raises_other": "other",
        "test_passes": None,
    }


def test_a_test_file_that_yields_no_cases_is_a_collection_error(make):
    project = make("p", {**PASSING, "tests/test_empty.py": "HELPER = 1\n"})
    execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.classification == "collection-error"
    assert "tests/test_empty.py" in execution.reason


def test_an_empty_suite_is_no_tests(make):
    execution = FAST.run(make("p", SOURCE), timeout_s=TIMEOUT)
    assert execution.classification == "no-tests"
    assert execution.exit_code == 5
    assert execution.cases == []


def test_an_infinite_loop_times_out_and_its_grandchild_is_killed(make, tmp_path, gone):
    pid_file = tmp_path / "grandchild.pid"
    project = make(
        "p",
        {
            "tests/test_loop.py": (
                "import subprocess, time\n\n"
                "def test_forever():\n"
                "    child = subprocess.Popen(['sleep', '300'])\n"
                f"    open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
                "    while True:\n"
                "        time.sleep(0.05)\n"
            )
        },
    )
    execution = FAST.run(project, timeout_s=3)
    assert execution.classification == "timeout"
    assert execution.exit_code is None
    assert execution.processes[0].timed_out
    assert gone(int(pid_file.read_text()))


def test_a_test_that_kills_its_own_interpreter_is_a_crash(make):
    project = make(
        "p",
        {
            "tests/test_die.py": (
                "import os, signal\n\n"
                "def test_ok():\n    pass\n\n"
                "def test_die():\n    os.kill(os.getpid(), signal.SIGKILL)\n"
            )
        },
    )
    execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.classification == "crashed"
    assert execution.processes[0].signal == "SIGKILL"
    assert "SIGKILL" in execution.reason


def test_a_test_that_exits_the_interpreter_quietly_is_a_crash(make):
    project = make("p", {"tests/test_exit.py": "import os\n\ndef test_exit():\n    os._exit(0)\n"})
    execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.classification == "crashed"
    assert execution.exit_code == 0
    assert "no JUnit report" in execution.reason


def test_a_test_whose_outcome_changes_between_runs_is_unstable_and_named(make):
    # Each run flips a coin kept in the project; the draw changes outcome run to run.
    project = make(
        "p",
        {
            "tests/test_flaky.py": (
                "import pathlib\n\n"
                "STATE = pathlib.Path(__file__).parent / 'coin.txt'\n\n"
                "def test_steady():\n    pass\n\n"
                "def test_coin():\n"
                "    flips = int(STATE.read_text()) if STATE.exists() else 0\n"
                "    STATE.write_text(str(flips + 1))\n"
                "    assert flips % 2 == 0\n"
            )
        },
    )
    stability = run_stability(FAST, project, runs=3, timeout_s=TIMEOUT)
    assert not stability.stable
    assert stability.classification == "unstable"
    assert len(stability.runs) == 3
    assert stability.flaky_cases == ["tests/test_flaky.py::test_coin"]
    assert "tests/test_flaky.py::test_coin" in stability.first_difference
    assert "run 2" in stability.first_difference


def test_a_stable_passing_suite_is_stable(make):
    stability = run_stability(FAST, make("p", PASSING), runs=2, timeout_s=TIMEOUT)
    assert stability.stable
    assert stability.classification == "passed"
    assert stability.first_difference is None
    assert stability.flaky_cases == []


def test_reverse_runs_cases_in_reverse_and_exposes_order_dependence(make):
    project = make(
        "p",
        {
            "tests/test_order.py": (
                "STATE = []\n\n"
                "def test_first():\n    STATE.append(1)\n\n"
                "def test_second():\n    assert STATE == [1]\n"
            )
        },
    )
    forward = FAST.run(project, timeout_s=TIMEOUT)
    backward = FAST.run(project, timeout_s=TIMEOUT, reverse=True)
    assert forward.classification == "passed"
    assert backward.classification == "failed"
    assert backward.reverse
    assert "--lorelab-reverse" in backward.argv
    assert [case.id for case in backward.cases] == [
        "tests/test_order.py::test_second",
        "tests/test_order.py::test_first",
    ]


def test_the_environment_is_scrubbed_and_ancestor_configuration_ignored(tmp_path, monkeypatch):
    # A hostile configuration above the project and in the environment must not leak in.
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --no-such-option\n")
    monkeypatch.setenv("PYTEST_ADDOPTS", "--also-no-such-option")
    monkeypatch.setenv("PYTHONPATH", "/nonexistent-lorelab-path")
    monkeypatch.setenv("TZ", "Europe/Paris")
    with RunRoot(tmp_path) as root:
        project = root.create_project(
            "p",
            [],
        )
        (project / "tests").mkdir()
        (project / "tests" / "test_env.py").write_text(
            "import os, sys, time\n\n"
            "def test_environment():\n"
            "    assert os.environ['PYTHONHASHSEED'] == '0'\n"
            "    assert os.environ['TZ'] == 'UTC'\n"
            "    assert time.strftime('%Z') == 'UTC'\n"
            "    assert os.environ['PYTHONDONTWRITEBYTECODE'] == '1'\n"
            "    assert sys.flags.no_user_site == 1\n"
            "    assert 'PYTEST_ADDOPTS' not in os.environ\n"
            "    assert 'PYTHONPATH' not in os.environ\n"
            # Hash randomization is off (the seed is 0), so str hashes are reproducible.
            "    assert sys.flags.hash_randomization == 0\n"
            f"    assert hash('lorelab') == {_seeded_hash('lorelab')}\n"
        )
        execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.classification == "passed", execution.output_tail
    assert _ids(execution) == {"tests/test_env.py::test_environment": "passed"}


def test_the_projects_own_configuration_is_honoured(make):
    project = make(
        "p",
        {
            "pytest.ini": "[pytest]\npython_files = check_*.py\n",
            "tests/check_calc.py": "def test_checked():\n    pass\n",
        },
    )
    execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.classification == "passed"
    assert _ids(execution) == {"tests/check_calc.py::test_checked": "passed"}
    assert "-c" not in execution.argv


def test_a_missing_project_or_bad_timeout_is_refused_before_running(tmp_path):
    with pytest.raises(InputFileError, match="no such directory"):
        FAST.run(tmp_path / "nope", timeout_s=TIMEOUT)
    with pytest.raises(UsageError, match="timeout"):
        FAST.run(tmp_path, timeout_s=0)


def test_get_runner_names_the_two_runners_and_refuses_others():
    assert get_runner("pytest").name == "pytest"
    assert get_runner("node").name == "node"
    with pytest.raises(UsageError, match="unknown"):
        get_runner("jest")


def test_without_plugin_autoload_installed_plugins_stay_out(make):
    project = make(
        "p",
        {
            "tests/test_plugins.py": (
                "import os\n\n"
                "def test_no_autoload(pytestconfig):\n"
                "    assert os.environ['PYTEST_DISABLE_PLUGIN_AUTOLOAD'] == '1'\n"
                "    assert not pytestconfig.pluginmanager.has_plugin('anyio')\n"
            )
        },
    )
    assert FAST.run(project, timeout_s=TIMEOUT).classification == "passed"


@pytest.mark.parametrize(
    ("name", "text", "own"),
    [
        ("pytest.ini", "", True),
        ("pytest.toml", "", True),
        ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = '-q'\n", True),
        ("pyproject.toml", "[tool.pytest]\n", True),
        ("pyproject.toml", "[project]\nname = 'x'\n", False),
        ("tox.ini", "[pytest]\n", True),
        ("tox.ini", "[tox]\n", False),
        ("setup.cfg", "[tool:pytest]\n", True),
        ("setup.cfg", "[metadata]\n", False),
    ],
)
def test_only_a_real_pytest_configuration_counts_as_the_projects_own(tmp_path, name, text, own):
    (tmp_path / name).write_text(text)
    assert has_own_config(tmp_path) is own


def test_a_root_conftest_is_loaded_when_the_project_has_no_configuration(make):
    project = make(
        "p",
        {
            "conftest.py": "import pytest\n\n@pytest.fixture\ndef answer():\n    return 42\n",
            "tests/test_answer.py": "def test_answer(answer):\n    assert answer == 42\n",
        },
    )
    execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.classification == "passed", execution.output_tail


def test_source_modules_without_doctests_do_not_count_as_empty_test_files(make):
    project = make(
        "p",
        {
            "pytest.ini": "[pytest]\naddopts = --doctest-modules\n",
            "src/__init__.py": "",
            "src/calc.py": "def add(a, b):\n    return a + b\n",
            "src/doc.py": 'def one():\n    """\n    >>> one()\n    1\n    """\n    return 1\n',
            "tests/test_calc.py": (
                "from src.calc import add\n\ndef test_add():\n    assert add(1, 1) == 2\n"
            ),
        },
    )
    execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.classification == "passed", execution.reason
    assert _ids(execution) == {
        "src/doc.py::src.doc.one": "passed",
        "tests/test_calc.py::test_add": "passed",
    }


def test_inherited_python_and_pytest_variables_cannot_change_what_a_run_means(make, monkeypatch):
    # Each of these, left in place, changes the outcome: without the project root on
    # sys.path `from src...` fails to import; -OO strips the helper's assert; warnings
    # become errors; an outer xdist session leaks in.
    monkeypatch.setenv("PYTHONSAFEPATH", "1")
    monkeypatch.setenv("PYTHONOPTIMIZE", "2")
    monkeypatch.setenv("PYTHONWARNINGS", "error")
    monkeypatch.setenv("PYTHONINTMAXSTRDIGITS", "640")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw9")
    project = make(
        "p",
        {
            "src/calc.py": "def positive(x):\n    assert x > 0, 'not positive'\n    return x\n",
            "tests/test_env.py": (
                "import os, sys, warnings\n"
                "import pytest\n"
                "from src.calc import positive\n\n"
                "def test_the_source_assert_runs():\n"
                "    with pytest.raises(AssertionError):\n"
                "        positive(-1)\n\n"
                "def test_flags_and_variables_are_the_interpreters_defaults():\n"
                "    assert sys.flags.optimize == 0\n"
                "    assert sys.flags.safe_path is False\n"
                "    assert sys.get_int_max_str_digits() == 4300\n"
                "    assert 'PYTEST_XDIST_WORKER' not in os.environ\n"
                "    assert 'PYTHONWARNINGS' not in os.environ\n"
                "    warnings.warn('only a warning', UserWarning)\n"
            ),
        },
    )
    execution = FAST.run(project, timeout_s=TIMEOUT)
    assert execution.classification == "passed", execution.output_tail
    assert _ids(execution) == {
        "tests/test_env.py::test_the_source_assert_runs": "passed",
        "tests/test_env.py::test_flags_and_variables_are_the_interpreters_defaults": "passed",
    }
