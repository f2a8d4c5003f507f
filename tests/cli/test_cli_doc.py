"""docs/cli.md is the command tree: every command ``--help`` lists is on it once, with the
same one-line summary, and nothing else is; old spellings work, hidden, with one warning."""

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from tests.support.command_tree import visible_commands

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
_ENTRY = re.compile(r"^\s*- `lorelab ([^`]+)`: (.*)$")


def _invoke(args, **kwargs):
    return CliRunner().invoke(app, args, prog_name="lorelab", **kwargs)


def _documented() -> list[tuple[str, str]]:
    tree = DOC.read_text(encoding="utf-8").split("## The tree", 1)[1].split("\n## ", 1)[0]
    return [m.groups() for line in tree.splitlines() if (m := _ENTRY.match(line))]  # type: ignore[misc]


def test_docs_cli_lists_every_command_of_the_help_once_with_its_summary():
    documented = _documented()
    paths = [path for path, _ in documented]
    assert len(paths) == len(set(paths)), "a command is listed twice"
    assert documented == [(path, summary) for path, summary, _ in visible_commands()]


def _listed(*group: str) -> list[str]:
    text = _invoke([*group, "--help"], terminal_width=500).output
    section = text.split("Commands:", 1)[1]
    return re.findall(r"^  (\S+)", section, flags=re.MULTILINE)


def test_each_groups_help_lists_exactly_the_documented_children():
    documented = [path for path, _ in _documented()]
    groups = [path for path, _, is_group in visible_commands() if is_group]
    for group in ["", *groups]:
        words = group.split() if group else []
        children = [p.split()[-1] for p in documented if p.split()[:-1] == words]
        assert _listed(*words) == sorted(children), group


@pytest.mark.parametrize("group", [["memory"], ["eval"], ["eval", "learning"], ["serve", "token"]])
def test_a_bare_group_prints_its_help_on_stdout_and_exits_0(group):
    result = _invoke(group)
    assert result.exit_code == 0
    assert result.stderr == ""
    assert result.stdout.startswith(f"Usage: lorelab {' '.join(group)} [OPTIONS] COMMAND")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (["memory", "health"], "lorelab memory skills health"),
        (["memory", "promote-candidate", "cand-1"], "lorelab memory candidates promote"),
        (["memory", "check", "cand-1"], "lorelab memory candidates check"),
        (["memory", "list", "--kind", "lesson"], "lorelab tests lessons list"),
    ],
)
def test_an_old_memory_spelling_still_runs_after_one_deprecation_line(tmp_path, old, new):
    home = str(tmp_path / "home")
    _invoke(["memory", "--home", home, "prepare", "make the store"])
    result = _invoke([old[0], "--home", home, *old[1:]])
    first = result.stderr.splitlines()[0]
    assert first.startswith("lorelab: warning: 'lorelab memory ")
    assert first.endswith(f"is deprecated; use {new!r}")
    assert old[1] not in _listed("memory") or old[1] == "list"


def test_the_old_conditions_report_spelling_is_decide_with_a_warning(tmp_path):
    runs = tmp_path / "runs.json"
    runs.write_text('{"runs": []}')
    new = _invoke(["eval", "conditions", "decide", "--input", str(runs)])
    old = _invoke(["eval", "conditions", "report", "--input", str(runs)])
    assert old.exit_code == new.exit_code
    assert old.stderr.splitlines()[0] == (
        "lorelab: warning: 'lorelab eval conditions report' is deprecated; "
        "use 'lorelab eval conditions decide'"
    )
    assert old.stderr.splitlines()[1:] == new.stderr.splitlines()


def test_serve_options_without_start_still_start_the_server_after_a_warning(tmp_path):
    # A bad option value stops it before anything binds: the routing is what is tested.
    result = _invoke(["serve", "--port", "70000"])
    lines = result.stderr.splitlines()
    assert lines[0] == "lorelab: warning: 'lorelab serve' is deprecated; use 'lorelab serve start'"
    assert "lorelab serve start --help" in lines[1]


def test_the_old_memory_home_flag_of_conditions_run_is_home(tmp_path):
    result = _invoke(["eval", "conditions", "run", "--home", "a", "--memory-home", "b", "--help"])
    assert result.exit_code == 0
    text = _invoke(["eval", "conditions", "run", "--help"]).output
    assert "--home" in text
    assert "--memory-home" not in text
