"""``hooks install`` keeps lorelab's files out of ``git status`` when asked: ``.lorelab/`` and the
configuration backups go to the repository's own ``.git/info/exclude``."""

import json
import subprocess

from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.hooks import EXCLUDED, exclude_state


def _repo(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=60)
    return tmp_path


def _install(project, *flags, input=None):
    return CliRunner().invoke(
        app, ["hooks", "install", "claude-code", "--project-dir", str(project), *flags], input=input
    )


def _status(project) -> str:
    done = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=project, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout


def test_git_exclude_hides_the_memory_home_and_the_backups_from_git_status(tmp_path):
    project = _repo(tmp_path)
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text('{"theme": "dark"}')
    (project / ".lorelab").mkdir()
    (project / ".lorelab" / "memory.db").write_bytes(b"")
    result = _install(project, "--git-exclude")
    assert result.exit_code == 0, result.output
    assert "git: added .lorelab/, *.lorelab-backup-* to" in result.stdout
    status = _status(project)
    assert ".lorelab" not in status
    assert "lorelab-backup" not in status
    assert ".claude/settings.json" in status  # the agent's configuration is the user's to commit
    again = _install(project, "--git-exclude")
    assert "git: added" not in again.stdout  # nothing added twice
    exclude = (project / ".git" / "info" / "exclude").read_text()
    assert exclude.count(".lorelab/") == 1


def test_without_the_flag_off_a_terminal_nothing_changes_and_a_note_says_how(tmp_path):
    project = _repo(tmp_path)
    before = (project / ".git" / "info" / "exclude").read_text()
    result = _install(project)
    assert result.exit_code == 0
    assert "--git-exclude adds them to .git/info/exclude" in result.stdout
    assert (project / ".git" / "info" / "exclude").read_text() == before
    assert _install(project, "--no-git-exclude").stdout.count("note: git status") == 1


def test_json_output_says_what_was_added(tmp_path):
    project = _repo(tmp_path)
    data = json.loads(_install(project, "--git-exclude", "--json").stdout)
    assert data["git_exclude"]["added"] == list(EXCLUDED)
    assert data["git_exclude"]["missing"] == []


def test_outside_a_repository_there_is_nothing_to_exclude(tmp_path):
    assert exclude_state(tmp_path) is None
    result = _install(tmp_path, "--git-exclude")
    assert result.exit_code == 0
