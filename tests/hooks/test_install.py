"""`lorelab hooks install|uninstall|status` on each agent's own configuration file.

File locations and shapes: Claude Code's hooks reference (https://code.claude.com/docs/en/hooks,
"Configuration"); Codex CLI's hooks.json (openai/codex, codex-rs/hooks); Gemini CLI's
docs/hooks/index.md ("Configuration schema", hook ``name`` field).
"""

import json

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.hooks import AGENTS

FILES = {
    "claude-code": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
}
USER_ENTRY = {"type": "command", "command": "./scripts/lint.sh"}


def _invoke(*args):
    return CliRunner().invoke(app, ["hooks", *args])


def _existing(project, agent):
    path = project / FILES[agent]
    path.parent.mkdir(parents=True)
    event = AGENTS[agent].events[0].event
    data = {"hooks": {event: [{"hooks": [USER_ENTRY]}]}, "theme": "dark"}
    path.write_text(json.dumps(data))
    return path, data


@pytest.mark.parametrize("agent", sorted(FILES))
def test_install_keeps_existing_hooks_and_adds_one_entry_per_event(tmp_path, agent):
    path, original = _existing(tmp_path, agent)
    result = _invoke("install", agent, "--project-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    data = json.loads(path.read_text())
    assert data["theme"] == "dark"
    first = AGENTS[agent].events[0].event
    assert data["hooks"][first][0] == original["hooks"][first][0]
    for spec in AGENTS[agent].events:
        commands = [h["command"] for g in data["hooks"][spec.event] for h in g["hooks"]]
        ours = [c for c in commands if f"hook {spec.event} --agent {agent}" in c]
        assert len(ours) == 1, (spec.event, commands)


@pytest.mark.parametrize("agent", sorted(FILES))
def test_installing_twice_changes_nothing(tmp_path, agent):
    path, _ = _existing(tmp_path, agent)
    assert _invoke("install", agent, "--project-dir", str(tmp_path)).exit_code == 0
    once = path.read_bytes()
    backups = sorted(path.parent.glob(f"{path.name}.lorelab-backup-*"))
    second = _invoke("install", agent, "--project-dir", str(tmp_path))
    assert second.exit_code == 0
    assert "nothing changed" in second.output
    assert path.read_bytes() == once
    assert sorted(path.parent.glob(f"{path.name}.lorelab-backup-*")) == backups


@pytest.mark.parametrize("agent", sorted(FILES))
def test_a_backup_of_the_configuration_is_written_before_the_change(tmp_path, agent):
    path, _ = _existing(tmp_path, agent)
    before = path.read_bytes()
    _invoke("install", agent, "--project-dir", str(tmp_path))
    (backup,) = path.parent.glob(f"{path.name}.lorelab-backup-*")
    assert backup.read_bytes() == before
    assert backup.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("agent", sorted(FILES))
def test_uninstall_removes_exactly_what_install_added(tmp_path, agent):
    path, original = _existing(tmp_path, agent)
    _invoke("install", agent, "--project-dir", str(tmp_path))
    result = _invoke("uninstall", agent, "--project-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert json.loads(path.read_text()) == original


def test_uninstall_keeps_another_agent_s_lorelab_hooks(tmp_path):
    # Claude Code and Codex share the hook format; each uninstall removes only its own agent.
    _invoke("install", "claude-code", "--project-dir", str(tmp_path))
    path = tmp_path / FILES["claude-code"]
    data = json.loads(path.read_text())
    data["hooks"]["Stop"].append(
        {"hooks": [{"type": "command", "command": "lorelab hook Stop --agent codex"}]}
    )
    path.write_text(json.dumps(data))
    _invoke("uninstall", "claude-code", "--project-dir", str(tmp_path))
    left = json.loads(path.read_text())
    assert left == {
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "lorelab hook Stop --agent codex"}]}]
        }
    }


def test_install_into_a_project_without_configuration_creates_it(tmp_path):
    result = _invoke("install", "gemini", "--project-dir", str(tmp_path), "--json")
    assert result.exit_code == 0
    summary = json.loads(result.stdout)
    assert summary["changed"] is True
    assert summary["backup"] is None
    data = json.loads((tmp_path / FILES["gemini"]).read_text())
    names = [h["name"] for groups in data["hooks"].values() for g in groups for h in g["hooks"]]
    assert names == [f"lorelab-{spec.event}" for spec in AGENTS["gemini"].events]


def test_user_scope_writes_the_user_configuration(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    project.mkdir()
    assert _invoke("install", "claude-code", "--user", "--project-dir", str(project)).exit_code == 0
    assert (tmp_path / "home" / ".claude" / "settings.json").exists()
    assert not (project / ".claude").exists()


def test_user_scope_for_codex_follows_codex_home(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    assert _invoke("install", "codex", "--user", "--project-dir", str(tmp_path)).exit_code == 0
    assert (tmp_path / "codex-home" / "hooks.json").exists()


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "not readable JSON"),
        ("[]", "not a JSON object"),
        ('{"hooks": 3}', "'hooks' is not an object"),
    ],
)
def test_a_malformed_configuration_is_refused_in_one_line_and_left_unchanged(
    tmp_path, content, problem
):
    path = tmp_path / FILES["claude-code"]
    path.parent.mkdir()
    path.write_text(content)
    result = _invoke("install", "claude-code", "--project-dir", str(tmp_path))
    assert result.exit_code == 2
    assert problem in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert path.read_text() == content
    assert not list(path.parent.glob("*.lorelab-backup-*"))


def test_status_names_what_is_installed_where(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _invoke("install", "codex", "--project-dir", str(tmp_path))
    result = _invoke("status", "--project-dir", str(tmp_path), "--json")
    assert result.exit_code == 0
    rows = {(row["agent"], row["scope"]): row for row in json.loads(result.stdout)}
    assert rows[("codex", "project")]["installed"] == [s.event for s in AGENTS["codex"].events]
    assert rows[("codex", "project")]["missing"] == []
    assert any("codex_hooks" in note for note in rows[("codex", "project")]["notes"])
    assert rows[("claude-code", "project")]["installed"] == []
    assert rows[("gemini", "user")]["exists"] is False
