"""``lorelab tests``: --home in both places, the worker's reason in plain output, the samples."""

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "testgen"


def _lessons(*args):
    result = CliRunner().invoke(app, ["tests", *args])
    assert result.exit_code == 0, result.output
    return result


def _learn(home_flags_before, home_flags_after):
    return CliRunner().invoke(
        app,
        [
            "tests",
            *home_flags_before,
            "learn",
            str(EXAMPLES / "history-clip.json"),
            *home_flags_after,
            "--stability-runs",
            "2",
            "--json",
        ],
    )


@pytest.mark.parametrize("where", ["group", "subcommand"])
def test_home_is_accepted_on_the_group_and_after_the_subcommand(tmp_path, where):
    home = tmp_path / "home"
    flags = ["--home", str(home)]
    result = _learn(flags, []) if where == "group" else _learn([], flags)
    assert result.exit_code == 0, result.output
    assert (home / "memory.db").exists()
    listed = _lessons("--home", str(home), "lessons", "list", "--json")
    assert [lesson["id"] for lesson in json.loads(listed.stdout)] == ["history-clip"]
    listed = _lessons("lessons", "list", "--home", str(home), "--json")
    assert [lesson["id"] for lesson in json.loads(listed.stdout)] == ["history-clip"]


def test_two_different_homes_are_a_usage_error_before_anything_runs(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    result = _learn(["--home", str(one)], ["--home", str(two)])
    assert result.exit_code == 2
    assert "--home given twice" in result.stderr
    assert not one.exists()
    assert not two.exists()


def _project(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES / "project", project)
    return project


def test_the_fixture_s_reason_is_printed_without_json(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("Clamp a number into a range.\n")
    result = CliRunner().invoke(
        app,
        [
            "tests",
            "generate",
            str(_project(tmp_path)),
            "--no-memory",
            "--requirements",
            str(requirements),
            "--source",
            "src/clamp.py",
            "--agent",
            "fixture",
            "--stability-runs",
            "2",
        ],
    )
    assert result.exit_code == 1
    assert "the requirements state no usable examples" in result.stdout


def test_the_shipped_samples_run_learn_then_generate(tmp_path):
    home = tmp_path / "home"
    learned = _learn(["--home", str(home)], [])
    assert learned.exit_code == 0, learned.output
    assert json.loads(learned.stdout)["lessonId"] == "history-clip"
    project = _project(tmp_path)
    result = CliRunner().invoke(
        app,
        [
            "tests",
            "--home",
            str(home),
            "generate",
            str(project),
            "--requirements",
            str(EXAMPLES / "requirements.txt"),
            "--source",
            "src/clamp.py",
            "--agent",
            "fixture",
            "--stability-runs",
            "2",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert [lesson["id"] for lesson in record["recall"]["lessons"]] == ["history-clip"]
    assert record["validation"]["valid"] is True
    assert (project / "tests" / "test_clamp.py").exists()
