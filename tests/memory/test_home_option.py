"""``--home`` works both before and after a ``memory`` command."""

import json

from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.memory import OPERATIONS

RECORD = [
    "--task", "Fix the flaky login test", "--summary", "Waited for the cookie.",
    "--outcome", "passed", "--verify-command", "pytest -q", "--verify-exit-code", "0",
]  # fmt: skip


def test_home_after_the_command_is_the_same_store_as_before_it(tmp_path):
    home = str(tmp_path / "home")
    runner = CliRunner()
    recorded = runner.invoke(app, ["memory", "record", *RECORD, "--home", home, "--json"])
    assert recorded.exit_code == 0, recorded.output
    assert json.loads(recorded.output)["id"] == "exp-1"
    before = runner.invoke(app, ["memory", "--home", home, "list", "--json"])
    after = runner.invoke(app, ["memory", "list", "--home", home, "--json"])
    both = runner.invoke(app, ["memory", "--home", home, "list", "--home", home, "--json"])
    assert json.loads(before.output)["total"] == 1
    assert before.output == after.output == both.output


def test_two_different_homes_are_refused_in_one_line(tmp_path):
    result = CliRunner().invoke(
        app, ["memory", "--home", str(tmp_path / "a"), "list", "--home", str(tmp_path / "b")]
    )
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert "--home is given twice" in line
    assert not (tmp_path / "a").exists()
    assert not (tmp_path / "b").exists()


def test_every_memory_command_accepts_home_after_it():
    runner = CliRunner()
    for entry in OPERATIONS:
        result = runner.invoke(app, ["memory", *entry.name.split(" "), "--help"])
        assert result.exit_code == 0, entry.name
        assert "--home DIRECTORY" in result.output, entry.name
