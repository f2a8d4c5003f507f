"""Refused runs say why: a conditions run that exits non-zero prints one line with the cause and
the count, and a report over refused runs says so and does not decide."""

import json
from dataclasses import replace

from click.testing import CliRunner

import lorelab.cli.eval_conditions as command
from lorelab.cli.main import app
from lorelab.evaluation.conditions import evaluate_file
from tests.evaluation.conditions.test_conditions_next_hint import _finished_run

CHANGE = (
    "the bound identity changed before launch; not launched: model '/models/smollm2.gguf': "
    "content changed (sha256 3f1c0a9e2b7d -> 9b2e77c1d0aa)"
)


def _run_cli(tmp_path, monkeypatch, write_json, manifest_data, summary):
    manifest = write_json(manifest_data, "conditions.json")
    monkeypatch.setattr(command, "run_conditions", lambda _options: summary)
    return CliRunner().invoke(
        app,
        [
            "eval", "conditions", "run", "--manifest", str(manifest), "--host", "fixture-host",
            "--output", str(tmp_path / "unused"), "--home", str(tmp_path / "home"),
            "--json",
        ],
    )  # fmt: skip


def test_exit_3_for_changed_identities_prints_the_cause_and_the_count_in_one_line(
    tmp_path, monkeypatch, write_json, example_manifest_data
):
    manifest = write_json(example_manifest_data, "m.json")
    finished = _finished_run(tmp_path, manifest, example_manifest_data)
    summary = replace(
        finished, identity_changes=38, host_failures=38, exit_code=3, identity_change=CHANGE
    )
    result = _run_cli(tmp_path, monkeypatch, write_json, example_manifest_data, summary)
    assert result.exit_code == 3
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"38 of {summary.runs} runs refused: ")
    assert "model '/models/smollm2.gguf': content changed" in lines[0]
    assert f"see {summary.output / 'runs'}" in lines[0]
    json.loads(result.stdout)  # stdout stays the JSON summary


def test_exit_1_names_the_failures_and_their_counts(
    tmp_path, monkeypatch, write_json, example_manifest_data
):
    manifest = write_json(example_manifest_data, "m.json")
    finished = _finished_run(tmp_path, manifest, example_manifest_data)
    summary = replace(finished, host_failures=3, memory_failures=1, exit_code=1)
    result = _run_cli(tmp_path, monkeypatch, write_json, example_manifest_data, summary)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "3 host call failure(s), 1 memory failure(s)" in lines[0]


def test_a_report_over_refused_runs_says_so_and_does_not_decide(
    tmp_path, write_json, example_manifest_data
):
    manifest = write_json(example_manifest_data, "m.json")
    summary = _finished_run(tmp_path, manifest, example_manifest_data)
    path = summary.output / "beta2_runs.json"
    document = json.loads(path.read_text())
    refused = 0
    for run in document["runs"]:
        if run["condition"] in ("dreaming", "skill_planned"):
            run.update(passed=False, host_failure="identity-changed")
            refused += 1
    path.write_text(json.dumps(document))
    report = evaluate_file(path, manifest)
    assert report.decision.verdict == "invalid"
    assert report.exit_code() == 1
    assert report.decision.reasons[0].startswith(
        f"{refused} of {len(document['runs'])} runs refused"
    )
    assert any("no decision is made" in reason for reason in report.decision.reasons)
    shown = CliRunner().invoke(
        app, ["eval", "conditions", "report", "--input", str(path), "--manifest", str(manifest)]
    )
    assert shown.exit_code == 1
    assert "runs refused" in shown.output
    assert "do-not-advance" not in shown.output
