"""The command tree's one shape: every group takes explicit subcommands, each thing has one
home, and the old spellings (``hook``, ``evaluate``, ``eval learning`` and ``eval context``
without ``run``) keep working, listed in no help."""

import json
import re

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.evaluation.learning import get_dataset
from lorelab.hooks._agents import AGENTS

CODEX_HOOKS = ".codex/hooks.json"


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args), terminal_width=200, prog_name="lorelab")


def _listed(help_text: str) -> list[str]:
    """The command names a --help page lists under Commands."""
    section = help_text.split("Commands:", 1)[1]
    return re.findall(r"^  (\S+)", section, flags=re.MULTILINE)


def test_the_top_level_help_lists_hooks_and_eval_but_neither_old_spelling():
    result = _invoke("--help")
    assert result.exit_code == 0
    listed = _listed(result.output)
    assert {"hooks", "eval"} <= set(listed)
    assert "hook" not in listed
    assert "evaluate" not in listed


def test_a_typo_is_never_pointed_at_an_old_spelling():
    result = _invoke("hoo", "Stop")
    assert result.exit_code == 2
    assert "Did you mean 'hooks'?" in result.stderr


@pytest.mark.parametrize(
    ("group", "commands"),
    [
        (["hooks"], {"install", "uninstall", "status", "trust", "run"}),
        (["eval", "learning"], {"run", "export-dataset", "schema"}),
        (["eval", "context"], {"run", "import", "scan", "schema"}),
        (["eval", "conditions"], {"run", "decide", "finalize", "schema"}),
    ],
)
def test_every_group_lists_its_subcommands_and_takes_one(group, commands):
    result = _invoke(*group, "--help")
    assert result.exit_code == 0
    assert set(_listed(result.output)) == commands
    assert f"Usage: lorelab {' '.join(group)} [OPTIONS] COMMAND [ARGS]..." in result.output
    # Its own options are only --help: each subcommand has its own.
    options = result.output.split("Options:", 1)[1].split("Commands:", 1)[0]
    assert re.findall(r"^  (-\S+)", options, flags=re.MULTILINE) == ["-h,"]


def test_no_eval_group_advertises_running_without_run():
    for group in ("learning", "context", "conditions"):
        text = _invoke("eval", group, "--help").output
        lines = [line.split() for line in text.splitlines() if line.strip().startswith("lorelab")]
        assert lines, group
        for words in lines:
            assert words[3] in _listed(text), words
    assert "default subcommand" not in _invoke("eval", "context", "--help").output


def test_hooks_run_answers_a_hook_and_hook_is_the_same_command(tmp_path, monkeypatch):
    # Claude Code's Stop input (code.claude.com/docs/en/hooks) for a session that ran nothing:
    # no experience to propose, so both spellings answer nothing and exit 0.
    monkeypatch.setenv("LORELAB_HOME", str(tmp_path / "home"))
    payload = json.dumps(
        {
            "session_id": "s-1",
            "transcript_path": str(tmp_path / "t.jsonl"),
            "cwd": str(tmp_path),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
        }
    )
    new = CliRunner().invoke(app, ["hooks", "run", "Stop", "--agent", "claude-code"], input=payload)
    old = CliRunner().invoke(app, ["hook", "Stop", "--agent", "claude-code"], input=payload)
    assert new.exit_code == old.exit_code == 0, new.output
    assert new.stdout == old.stdout


def _commands(path) -> list[str]:
    data = json.loads(path.read_text())
    return [h["command"] for groups in data["hooks"].values() for g in groups for h in g["hooks"]]


def test_install_writes_hooks_run_and_the_old_spelling_stays_recognised(tmp_path):
    project = str(tmp_path)
    assert _invoke("hooks", "install", "codex", "--project-dir", project).exit_code == 0
    path = tmp_path / CODEX_HOOKS
    installed = _commands(path)
    assert len(installed) == len(AGENTS["codex"].events)
    assert all(" hooks run " in command and " hook " not in command for command in installed)
    # What an earlier release installed: the same entries in the old spelling.
    path.write_text(path.read_text().replace(" hooks run ", " hook "))
    status = json.loads(_invoke("hooks", "status", "--project-dir", project, "--json").stdout)
    codex = next(s for s in status if s["agent"] == "codex" and s["scope"] == "project")
    assert codex["missing"] == []
    again = json.loads(
        _invoke("hooks", "install", "codex", "--project-dir", project, "--json").stdout
    )
    assert again["changed"] is True
    assert _commands(path) == installed
    # Hooks left in the old spelling are lorelab's to remove, too.
    path.write_text(path.read_text().replace(" hooks run ", " hook "))
    removed = json.loads(
        _invoke("hooks", "uninstall", "codex", "--project-dir", project, "--json").stdout
    )
    assert set(removed["events"]) == {spec.event for spec in AGENTS["codex"].events}
    assert "hooks" not in json.loads(path.read_text())


def _two_task_runs(tmp_path):
    runs = [
        {
            "task_id": task,
            "condition": condition,
            "passed": condition != "baseline",
            "rework_count": 0,
            "retrieval_relevant": None if condition == "baseline" else True,
            "guidance_tokens": 0 if condition == "baseline" else 100,
            "notes": "",
        }
        for task in ("t1", "t2")
        for condition in ("baseline", "memory_guided", "skill_planned", "dreaming")
    ]
    path = tmp_path / "beta2_runs.json"
    path.write_text(json.dumps({"runs": runs}))
    return str(path)


def test_evaluate_is_a_hidden_alias_of_eval_conditions_decide(tmp_path):
    runs = _two_task_runs(tmp_path)
    new = _invoke("eval", "conditions", "decide", "--input", runs, "--json")
    old = _invoke("evaluate", "--input", runs, "--json")
    # Two tasks are under the protocol minimums: "insufficient", exit 1, in both spellings.
    assert new.exit_code == old.exit_code == 1
    assert json.loads(new.stdout) == json.loads(old.stdout)
    assert "decide" in _listed(_invoke("eval", "conditions", "--help").output)
    assert "evaluate" not in _listed(_invoke("--help").output)


def test_eval_learning_without_run_is_refused_exactly_as_run(tmp_path):
    (tmp_path / "out").mkdir()
    args = ["--output", str(tmp_path / "out"), "--agent", "fixture"]
    new = _invoke("eval", "learning", "run", *args)
    old = _invoke("eval", "learning", *args)
    assert new.exit_code == old.exit_code == 2
    assert new.stderr == old.stderr
    assert "exists" in new.stderr


def test_the_old_eval_learning_spelling_still_runs_and_its_options_are_run_s(tmp_path):
    manifest = get_dataset("default")
    spec = manifest.fixtures[0].model_copy(update={"defects": manifest.fixtures[0].defects[:1]})
    path = tmp_path / "manifest.json"
    path.write_text(manifest.model_copy(update={"fixtures": [spec]}).model_dump_json(by_alias=True))
    out = tmp_path / "out"
    result = _invoke(
        "eval", "learning", "--fixtures", str(path), "--repeat", "1", "--seed", "3",
        "--agent", "fixture", "--output", str(out), "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["evidenceKind"] == "protocol-fixture"
    assert (out / "summary.json").is_file()
    assert "--repeat" not in _invoke("eval", "learning", "--help").output
    assert "--repeat" in _invoke("eval", "learning", "run", "--help").output
