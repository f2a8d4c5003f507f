"""Memory profiles are files: the template language, `profile check`, and conditions that do
not apply to a memory (declared in the runs file, decided on what ran)."""

import json

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.errors import SchemaError
from lorelab.evaluation.conditions import load_profile, read_runs
from lorelab.evaluation.conditions._evaluate import evaluate
from lorelab.evaluation.conditions._memory import LORELAB_PROFILE, MEMCODER_PROFILE, PROFILES
from lorelab.evaluation.conditions._profile_spec import render
from tests.support.conditions import runs_of, uniform_outcomes

MINIMAL = {
    "schemaVersion": 1,
    "name": "notes",
    "operations": {
        "prepare": {
            "tool": "find",
            "arguments": {"q": {"$ref": "request.task"}},
            "items": {"path": "hits", "id": "key", "text": "body"},
        },
        "record": {
            "tool": "save",
            "arguments": {"body": {"$format": "{request.task}: {request.files}"}},
            "id": {"regex": "saved (\\w+)"},
        },
    },
}


def test_the_lorelab_and_memcoder_profiles_are_shipped_files_with_their_hashes():
    for profile in (LORELAB_PROFILE, MEMCODER_PROFILE):
        assert profile.path is not None
        assert profile.path.endswith(f"profiles/{profile.name}.json")
        assert profile.sha256 is not None
        assert len(profile.sha256) == 64
    assert LORELAB_PROFILE.tool("prepare") == "lore_prepare"
    assert MEMCODER_PROFILE.sent_agent_id() == "lorelab-eval"
    assert set(PROFILES) >= {"server-memory", "basic-memory", "memorix", "memory-keeper"}


def test_templates_fill_references_formats_lists_and_joins_and_drop_nulls():
    namespace = {
        "request": {"task": "fix it", "files": ["a.py", "b.py"], "commands": [{"c": "ls"}]},
        "call": {"uid": "u1"},
    }
    template = {
        "q": {"$ref": "request.task"},
        "absent": {"$ref": "request.plan_id"},
        "fallback": {"$ref": "request.plan_id", "default": "none"},
        "line": {"$format": "task: {request.task} files: {request.files}"},
        "cmds": {"$each": "request.commands", "$item": {"$ref": "item.c"}},
        "key": {"$join": [{"$ref": "request.task_id"}, {"$ref": "call.uid"}], "sep": "-"},
        "literal": [1, {"nested": {"$ref": "request.files.1"}}],
    }
    assert render(template, namespace) == {
        "q": "fix it",
        "fallback": "none",
        "line": "task: fix it files: a.py; b.py",
        "cmds": ["ls"],
        "key": "u1",
        "literal": [1, {"nested": "b.py"}],
    }


def test_a_user_profile_file_in_toml_is_read_like_json(tmp_path):
    path = tmp_path / "notes.toml"
    path.write_text(
        'schemaVersion = 1\nname = "notes"\n'
        '[operations.prepare]\ntool = "find"\narguments = { q = { "$ref" = "request.task" } }\n'
        'items = { path = "hits", id = "key" }\n'
        '[operations.record]\ntool = "save"\nid = { path = "key" }\n',
        encoding="utf-8",
    )
    profile = load_profile(path)
    assert profile.request("prepare", {"task": "t"}) == {"q": "t"}
    brief = profile.decode_answer("prepare", {"hits": [{"key": "k1"}]}, "")
    assert brief["experiences"][0]["id"] == "k1"
    assert profile.unsupported["start"] == "the profile maps no tool"


def test_profile_check_accepts_a_valid_file_and_names_what_it_lacks(tmp_path):
    path = tmp_path / "notes.json"
    path.write_text(json.dumps(MINIMAL), encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", "conditions", "profile", "check", str(path)])
    assert result.exit_code == 0, result.output
    assert "profile notes is valid" in result.output
    assert "lacks start, dream" in result.output


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"arguments": {"$eval": "1"}}, "unknown template key \\$eval"),
        ({"id": None}, "operations.record needs id"),
        ({"errors": ["("]}, "record"),
    ],
)
def test_profile_check_refuses_a_bad_file_with_exit_2_and_one_line(tmp_path, change, message):
    spec = json.loads(json.dumps(MINIMAL))
    spec["operations"]["record"].update(change)
    if change.get("id", "x") is None:
        del spec["operations"]["record"]["id"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", "conditions", "profile", "check", str(path)])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1
    assert "Traceback" not in result.output
    assert message.replace("\\", "") in result.output or message in result.output


def test_a_profile_without_prepare_or_record_is_refused(tmp_path):
    spec = json.loads(json.dumps(MINIMAL))
    del spec["operations"]["prepare"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", "conditions", "profile", "check", str(path)])
    assert result.exit_code == 2
    assert "lacks the required prepare" in result.output


def _without(document, conditions, reasons):
    document["runs"] = [run for run in document["runs"] if run["condition"] not in conditions]
    document["conditions_not_applicable"] = reasons
    return document


def test_without_dreaming_the_decision_rests_on_memory_guided(tmp_path):
    document = _without(
        runs_of(uniform_outcomes(8, False, True), holdout=True),
        ("skill_planned", "dreaming"),
        {"skill_planned": "no plans", "dreaming": "no Dream"},
    )
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    report = evaluate(read_runs(path))
    assert report.decision.condition == "memory_guided"
    assert report.decision.verdict == "advance"
    assert [c.condition for c in report.conditions] == ["baseline", "memory_guided"]
    assert report.conditions_not_applicable == {"skill_planned": "no plans", "dreaming": "no Dream"}


def test_runs_of_a_condition_declared_not_applicable_are_refused(tmp_path):
    document = runs_of(uniform_outcomes(8, False, True), holdout=True)
    document["conditions_not_applicable"] = {"dreaming": "no Dream"}
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(SchemaError, match="runs of conditions declared not applicable"):
        read_runs(path)


def test_missing_skill_planned_runs_without_a_declaration_are_still_refused(tmp_path):
    document = _without(
        runs_of(uniform_outcomes(8, False, True), holdout=True), ("skill_planned",), None
    )
    del document["conditions_not_applicable"]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(SchemaError, match="missing task x condition"):
        read_runs(path)
