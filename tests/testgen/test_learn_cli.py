import json

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from tests.support.testgen import PASSING_TEST, REQUIREMENTS, SOURCE


def _example(tmp_path, *, tests=PASSING_TEST, example_id="history-clip", path="tests/test_clip.py"):
    data = {
        "schemaVersion": 1,
        "id": example_id,
        "specificationId": "clip",
        "requirements": REQUIREMENTS,
        "runner": "pytest",
        "files": [{"path": SOURCE.path, "content": SOURCE.content}],
        "tests": [{"path": path, "content": tests}],
    }
    target = tmp_path / f"{example_id}.json"
    target.write_text(json.dumps(data))
    return target


def _cli(*args):
    return CliRunner().invoke(app, ["tests", *args])


def test_learn_stores_a_validated_example_and_lessons_list_and_show_it(tmp_path):
    home = tmp_path / "home"
    result = _cli("learn", str(_example(tmp_path)), "--home", str(home), "--stability-runs", "2")
    assert result.exit_code == 0, result.output
    assert "stored lesson history-clip" in result.stdout
    listed = json.loads(_cli("lessons", "list", "--home", str(home), "--json").stdout)
    assert [lesson["id"] for lesson in listed] == ["history-clip"]
    shown = json.loads(_cli("lessons", "show", "history-clip", "--home", str(home)).stdout)
    assert shown["validation"]["runner"] == "pytest"
    assert shown["validation"]["cases"] == [
        "tests/test_clip.py::test_above_range_is_clipped",
        "tests/test_clip.py::test_below_range_is_clipped",
    ]


def test_learn_refuses_a_failing_example_and_keeps_its_executions(tmp_path):
    home, output = tmp_path / "home", tmp_path / "out"
    failing = PASSING_TEST + "\n\ndef test_wrong():\n    assert False\n"
    result = _cli(
        "learn",
        str(_example(tmp_path, tests=failing)),
        "--home",
        str(home),
        "--stability-runs",
        "2",
        "--output",
        str(output),
        "--json",
    )
    assert result.exit_code == 1
    record = json.loads(result.stdout)
    assert record["lessonId"] is None
    assert len(record["validation"]["stability"]["runs"]) == 2
    assert json.loads((output / "learn.json").read_text()) == record
    assert json.loads(_cli("lessons", "list", "--home", str(home), "--json").stdout) == []


def test_learn_refuses_a_duplicate_id_before_running_anything(tmp_path):
    home = tmp_path / "home"
    example = _example(tmp_path)
    assert _cli("learn", str(example), "--home", str(home), "--stability-runs", "2").exit_code == 0
    again = _cli("learn", str(example), "--home", str(home), "--json")
    assert again.exit_code == 2
    assert "already" in again.stderr
    assert again.stdout == ""


@pytest.mark.parametrize("path", ["conftest.py", "src/test_clip.py", "tests/helper.py"])
def test_learn_refuses_tests_outside_canonical_test_paths(tmp_path, path):
    result = _cli("learn", str(_example(tmp_path, path=path)), "--home", str(tmp_path / "h"))
    assert result.exit_code == 2
    assert path in result.stderr


def test_lessons_list_without_a_store_creates_nothing(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    result = _cli("lessons", "list", "--project", str(project), "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == []
    assert not (project / ".lorelab").exists()
    shown = _cli("lessons", "show", "nope", "--project", str(project))
    assert shown.exit_code == 2
    assert not (project / ".lorelab").exists()


@pytest.mark.parametrize(
    "marker",
    ["@pytest.mark.skip(reason='later')", "@pytest.mark.xfail(reason='known', strict=False)"],
)
def test_learn_refuses_an_example_whose_case_was_skipped_or_xfailed(tmp_path, marker):
    home = tmp_path / "home"
    # The marked case asserts something false: storing it would keep an unvalidated test.
    tests = (
        "import pytest\n"
        + PASSING_TEST
        + f"\n\n{marker}\ndef test_never_checked():\n    assert False\n"
    )
    result = _cli(
        "learn",
        str(_example(tmp_path, tests=tests)),
        "--home",
        str(home),
        "--stability-runs",
        "2",
        "--json",
    )
    assert result.exit_code == 1, result.output
    record = json.loads(result.stdout)
    assert record["lessonId"] is None
    assert record["validation"]["reason"].startswith(
        "not every case passed: tests/test_clip.py::test_never_checked is skipped"
    )
    assert json.loads(_cli("lessons", "list", "--home", str(home), "--json").stdout) == []
