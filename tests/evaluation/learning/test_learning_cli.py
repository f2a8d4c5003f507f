"""``lorelab eval learning``: the export-dataset and schema subcommands, ``run`` without its
options, and the bare group."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.evaluation.learning import DATASET_NAMES
from lorelab.evaluation.learning.manifest import LearningManifest, load_manifest


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_export_dataset_prints_a_manifest_that_load_manifest_accepts(name: str, tmp_path: Path):
    result = CliRunner().invoke(app, ["eval", "learning", "export-dataset", name])
    assert result.exit_code == 0, result.output
    path = tmp_path / f"{name}.json"
    path.write_text(result.stdout, encoding="utf-8")
    manifest = load_manifest(path)
    assert manifest.runner == "pytest"
    assert json.loads(result.stdout)["schemaVersion"] == 1


def test_exported_default_dataset_has_the_documented_shape():
    result = CliRunner().invoke(app, ["eval", "learning", "export-dataset", "default"])
    data = json.loads(result.stdout)
    assert [fixture["id"] for fixture in data["fixtures"]] == [
        "normalize",
        "dedupe",
        "interval-overlap",
    ]
    assert sum(len(fixture["defects"]) for fixture in data["fixtures"]) == 9
    assert [item["specificationId"] for item in data["history"]] == ["clamp"]
    assert set(data["fixtures"][0]) == {"id", "requirements", "files", "referenceTests", "defects"}
    assert "expectedFailingCases" in data["fixtures"][0]["defects"][0]


def test_exported_qualification_dataset_has_six_contracts_eighteen_defects_two_histories():
    result = CliRunner().invoke(app, ["eval", "learning", "export-dataset", "qualification"])
    data = json.loads(result.stdout)
    assert len(data["fixtures"]) == 6
    assert sum(len(fixture["defects"]) for fixture in data["fixtures"]) == 18
    assert len(data["history"]) == 2


def test_export_dataset_refuses_an_unknown_name_with_exit_2():
    result = CliRunner().invoke(app, ["eval", "learning", "export-dataset", "nope"])
    assert result.exit_code == 2
    assert "nope" in result.output
    assert result.stdout == ""


def test_schema_prints_the_manifest_json_schema_from_the_models():
    result = CliRunner().invoke(app, ["eval", "learning", "schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["required"] == LearningManifest.model_json_schema(by_alias=True)["required"]
    assert set(schema["properties"]) == {"schemaVersion", "id", "runner", "history", "fixtures"}
    assert schema["properties"]["history"]["maxItems"] == 8
    assert schema["properties"]["fixtures"]["maxItems"] == 12
    assert schema["$defs"]["Fixture"]["properties"]["defects"]["maxItems"] == 8
    assert "expectedFailingCases" in schema["$defs"]["Defect"]["properties"]
    assert schema["$defs"]["Defect"]["properties"]["expectedFailingCases"]["description"]


def test_run_without_output_and_agent_is_a_one_line_usage_error():
    result = CliRunner().invoke(app, ["eval", "learning", "run"])
    assert result.exit_code == 2
    assert result.stdout == ""
    hint = result.stderr.strip().splitlines()
    assert len(hint) == 1
    assert hint[0].startswith("lorelab: error: ")
    assert "Missing options --output and --agent." in hint[0]


def test_run_names_only_the_flag_that_is_missing():
    result = CliRunner().invoke(
        app, ["eval", "learning", "run", "--dataset", "default", "--agent", "fixture"]
    )
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("lorelab: error: Missing option --output.")
    assert "--agent" not in line.split("(see")[0]


def test_the_bare_learning_group_shows_its_help_and_runs_nothing():
    result = CliRunner().invoke(app, ["eval", "learning"])
    assert result.exit_code == 0
    assert result.stderr == ""
    assert "Commands:" in result.output
    assert "run" in result.output.split("Commands:", 1)[1]


def test_installed_program_exports_the_default_dataset_without_a_traceback():
    completed = subprocess.run(
        [sys.executable, "-m", "lorelab", "eval", "learning", "export-dataset", "default"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr.decode()
    assert json.loads(completed.stdout)["id"] == "lorelab-default-1"


def _fake_run(request, output, progress, runs_on):
    from types import SimpleNamespace

    progress("ground truth run normalize reference")
    progress("trial 1/2 normalize r1 memory: qualified, 3/3 detected")
    progress("trial 2/2 normalize r1 no-memory: qualified, 2/3 detected")
    return SimpleNamespace(summary=None, message="2 trials", exit_code=0)


@pytest.mark.parametrize("quiet", [False, True])
def test_run_off_a_terminal_prints_one_line_per_finished_unit_unless_quiet(
    tmp_path, monkeypatch, quiet
):
    monkeypatch.setattr("lorelab.cli.eval_learning.run_learning", _fake_run)
    args = ["eval", "learning", "run", "--dataset", "default", "--agent", "fixture"]
    args += ["--output", str(tmp_path / "out"), *(["--quiet"] if quiet else [])]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    progress = [line for line in result.stderr.splitlines() if line.startswith("learning")]
    if quiet:
        assert progress == []
    else:
        assert [line.split(" (")[0] for line in progress] == [
            "learning evaluation 1/30: ground truth run normalize reference",
            "learning evaluation 2/30: trial 1/2 normalize r1 memory: qualified, 3/3 detected",
            "learning evaluation 3/30: trial 2/2 normalize r1 no-memory: qualified, 2/3 detected",
        ]
