"""The hint ``eval conditions run`` prints, followed as written, gives the README's decision."""

import json
import shlex

from click.testing import CliRunner

import lorelab.cli.eval_conditions as command
from lorelab.cli.main import app
from lorelab.evaluation.conditions import RunSummary, evaluate_file
from lorelab.evaluation.conditions._manifest import CONDITIONS
from lorelab.io import SCRIPT_HASH_CAP, sha256_file


def _finished_run(tmp_path, manifest_path, manifest_data):
    output = tmp_path / "out"
    output.mkdir()
    holdouts = {task["id"] for task in manifest_data["tasks"] if task["holdout"]}
    runs = []
    for task in manifest_data["tasks"]:
        for condition in CONDITIONS:
            passed = condition != "baseline"
            runs.append(
                {
                    "task_id": task["id"],
                    "condition": condition,
                    "passed": passed,
                    "rework_count": 0 if passed else 2,
                    "retrieval_relevant": None if condition == "baseline" else True,
                    "guidance_tokens": 0 if condition == "baseline" else 100,
                    "notes": "",
                    "holdout": task["id"] in holdouts,
                }
            )
    document = {
        "runs": runs,
        "manifest_sha256": sha256_file(manifest_path, cap=SCRIPT_HASH_CAP),
    }
    (output / "beta2_runs.json").write_text(json.dumps(document))
    return RunSummary(
        output=output,
        runs=len(runs),
        passed=sum(run["passed"] for run in runs),
        host_failures=0,
        identity_changes=0,
        evidence_kind=None,
        exit_code=0,
    )


def test_the_next_hint_names_the_manifest_and_following_it_gives_the_readmes_decision(
    tmp_path, monkeypatch, write_json, example_manifest_data
):
    manifest = write_json(example_manifest_data, "conditions.json")
    summary = _finished_run(tmp_path, manifest, example_manifest_data)
    monkeypatch.setattr(command, "run_conditions", lambda _options: summary)
    result = CliRunner().invoke(
        app,
        [
            "eval", "conditions", "run", "--manifest", str(manifest), "--host", "fixture-host",
            "--output", str(tmp_path / "unused"), "--home", str(tmp_path / "home"),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    hint = next(line for line in result.output.splitlines() if line.startswith("next: "))
    argv = shlex.split(hint.removeprefix("next: "))
    assert argv[:4] == ["lorelab", "eval", "conditions", "decide"]
    assert argv[argv.index("--manifest") + 1] == str(manifest)
    followed = CliRunner().invoke(app, [*argv[1:], "--json"])
    readme = evaluate_file(summary.output / "beta2_runs.json", manifest)
    assert json.loads(followed.output)["decision"]["verdict"] == readme.decision.verdict
    assert readme.decision.verdict == "advance"
