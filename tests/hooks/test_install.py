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
        ours = [c for c in commands if f"hooks run {spec.event} --agent {agent}" in c]
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
    monkeypatch.delenv("CODEX_HOME", raising=False)
    _invoke("install", "codex", "--project-dir", str(tmp_path))
    result = _invoke("status", "--project-dir", str(tmp_path), "--json")
    assert result.exit_code == 0
    rows = {(row["agent"], row["scope"]): row for row in json.loads(result.stdout)}
    assert rows[("codex", "project")]["installed"] == [s.event for s in AGENTS["codex"].events]
    assert rows[("codex", "project")]["missing"] == []
    notes = rows[("codex", "project")]["notes"]
    assert any("Codex hooks are on (the default" in note for note in notes)
    assert any("Codex hooks cannot verify" in note for note in notes)
    assert rows[("claude-code", "project")]["installed"] == []
    assert rows[("gemini", "user")]["exists"] is False


def _codex_status(tmp_path, monkeypatch, config):
    home = tmp_path / "codex-home"
    home.mkdir(parents=True)
    (home / "config.toml").write_text(config)
    monkeypatch.setenv("CODEX_HOME", str(home))
    assert _invoke("install", "codex", "--project-dir", str(tmp_path)).exit_code == 0
    result = _invoke("status", "--project-dir", str(tmp_path), "--json")
    assert result.exit_code == 0, result.output
    rows = {(row["agent"], row["scope"]): row for row in json.loads(result.stdout)}
    return rows[("codex", "project")]["notes"]


def test_codex_status_reads_the_current_hooks_feature_key(tmp_path, monkeypatch):
    # `hooks` is the key; `codex_hooks` its deprecated alias (openai/codex
    # codex-rs/features/src/legacy.rs; https://developers.openai.com/codex/hooks).
    notes = _codex_status(tmp_path, monkeypatch, "[features]\nhooks = true\n")
    assert not any("not on" in note for note in notes)
    assert any("Codex hooks are on" in note for note in notes)
    off = _codex_status(tmp_path / "off", monkeypatch, "[features]\nhooks = false\n")
    assert any("hooks are off (`hooks = false`" in note for note in off)
    alias = _codex_status(tmp_path / "alias", monkeypatch, "[features]\ncodex_hooks = true\n")
    assert any("`codex_hooks` is a deprecated alias of `hooks`" in note for note in alias)


def test_codex_status_says_which_entries_are_trusted_and_whether_the_project_is(
    tmp_path, monkeypatch
):
    # Trust is recorded as [hooks.state."FILE:EVENT:GROUP:HANDLER"] trusted_hash, and project
    # .codex/ hooks need a trusted project (openai/codex codex-rs/hooks/src/engine/discovery.rs).
    notes = _codex_status(tmp_path, monkeypatch, "")
    assert any("0 of 5 lorelab hooks have a trust record" in note for note in notes)
    assert any("is not a trusted project" in note for note in notes)
    hooks_file = (tmp_path / ".codex" / "hooks.json").resolve()
    trusted = (
        f'[projects."{tmp_path.resolve()}"]\ntrust_level = "trusted"\n'
        f'[hooks.state."{hooks_file}:post_tool_use:0:0"]\ntrusted_hash = "sha256:00"\n'
    )
    (tmp_path / "codex-home" / "config.toml").write_text(trusted)
    result = _invoke("status", "--project-dir", str(tmp_path))
    assert "1 of 5 lorelab hooks have a trust record" in result.output
    assert "is not a trusted project" not in result.output


def test_gemini_settings_with_hooks_notifications_are_accepted(tmp_path):
    # HOOKS_CONFIG_FIELDS = ['enabled', 'disabled', 'notifications'] in google-gemini/gemini-cli
    # packages/core/src/hooks/types.ts: switches beside the events, not events.
    path = tmp_path / FILES["gemini"]
    path.parent.mkdir()
    path.write_text(json.dumps({"hooks": {"notifications": True, "disabled": []}}))
    result = _invoke("install", "gemini", "--project-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    data = json.loads(path.read_text())
    assert data["hooks"]["notifications"] is True
    assert "AfterTool" in data["hooks"]


def test_gemini_status_says_hooks_run_by_default_and_when_they_are_off(tmp_path, monkeypatch):
    # hooksConfig.enabled defaults to true (packages/cli/src/config/settingsSchema.ts); project
    # hooks are skipped in an untrusted folder (packages/core/src/hooks/hookRegistry.ts).
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _invoke("install", "gemini", "--project-dir", str(tmp_path)).exit_code == 0
    result = _invoke("status", "--project-dir", str(tmp_path))
    assert "runs hooks by default" in result.output
    assert "does not trust" in result.output
    settings = tmp_path / FILES["gemini"]
    data = json.loads(settings.read_text())
    settings.write_text(json.dumps({**data, "hooksConfig": {"enabled": False}}))
    result = _invoke("status", "--project-dir", str(tmp_path))
    assert "hooks are off (`hooksConfig.enabled` is false)" in result.output


def test_codex_installs_its_edit_tool_matcher(tmp_path):
    # Codex names edits apply_patch in hook payloads (codex-rs/core/src/tools/hook_names.rs).
    assert _invoke("install", "codex", "--project-dir", str(tmp_path)).exit_code == 0
    data = json.loads((tmp_path / FILES["codex"]).read_text())
    (group,) = data["hooks"]["PostToolUse"]
    assert group["matcher"] == "Bash|apply_patch"
