"""Runs files both tools read: ``lorelab evaluate`` reads a runs file as MemCoder users write it
(no holdout flag, perhaps no dreaming rows), and lorelab's rows pass MemCoder's own row checks."""

import json

from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.evaluation.conditions import evaluate, read_runs
from lorelab.testing.memcoder import check_memcoder_row


def _row(task: str, condition: str, passed: bool) -> dict:
    row = {"task_id": task, "condition": condition, "passed": passed, "rework_count": 0}
    if condition != "baseline":
        row["retrieval_relevant"] = True
        row["guidance_tokens"] = 120
    return row


def _memcoder_file(tasks: int, conditions: tuple[str, ...]) -> dict:
    """A MemCoder user's runs file: no holdout field, no lorelab-only keys."""
    return {
        "runs": [
            _row(f"t{n}", condition, condition != "baseline")
            for n in range(1, tasks + 1)
            for condition in conditions
        ]
    }


THREE = ("baseline", "memory_guided", "skill_planned")
FOUR = (*THREE, "dreaming")


def _evaluate_cli(write_json, data: dict, *extra: str):
    return CliRunner().invoke(
        app, ["eval", "conditions", "decide", "--input", str(write_json(data)), "--json", *extra]
    )


def test_a_memcoder_runs_file_passes_memcoders_row_checks_as_written(write_json):
    data = _memcoder_file(3, THREE)
    for row in data["runs"]:
        check_memcoder_row(row)
    assert len(read_runs(write_json(data)).runs) == 9


def test_without_dreaming_rows_the_three_conditions_are_reported_and_the_decision_is_incomplete(
    write_json,
):
    holdouts = "t1,t2,t3,t4,t5,t6"
    result = _evaluate_cli(write_json, _memcoder_file(10, THREE), "--holdouts", holdouts)
    # No decision was made: the report is printed, and the exit code says so.
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert [c["condition"] for c in report["conditions"]] == list(THREE)
    assert [p["condition"] for p in report["paired"]] == ["memory_guided", "skill_planned"]
    assert report["decision"]["verdict"] == "incomplete"
    assert len(report["decision"]["reasons"]) == 1
    assert "no dreaming runs" in report["decision"]["reasons"][0]
    assert report["holdouts"] == holdouts.split(",")
    assert report["holdoutSource"] == "option"


def test_incomplete_also_names_what_is_insufficient(write_json):
    result = _evaluate_cli(write_json, _memcoder_file(6, THREE), "--holdouts", "t1,t2,t3,t4")
    assert result.exit_code == 1, result.output
    decision = json.loads(result.output)["decision"]
    assert decision["verdict"] == "incomplete"
    assert decision["reasons"][1:] == [
        "6 task(s); the protocol needs at least 10",
        "4 holdout task(s); the protocol needs at least 6",
    ]


def test_memory_failures_make_a_file_without_dreaming_rows_invalid_not_incomplete(write_json):
    data = _memcoder_file(10, THREE)
    data["runs"][1]["memory_calls_failed"] = ["prepare"]
    result = _evaluate_cli(write_json, data, "--holdouts", "t1,t2,t3,t4,t5,t6")
    assert result.exit_code == 1, result.output
    assert json.loads(result.output)["decision"]["verdict"] == "invalid"


def test_dreaming_rows_missing_for_some_tasks_only_are_still_refused(write_json):
    data = _memcoder_file(3, FOUR)
    data["runs"] = [r for r in data["runs"] if (r["task_id"], r["condition"]) != ("t2", "dreaming")]
    result = _evaluate_cli(write_json, data)
    assert result.exit_code == 2
    assert "missing task x condition: t2 x dreaming" in result.output


def test_without_holdout_flags_holdouts_come_from_the_holdouts_option(write_json):
    data = _memcoder_file(10, FOUR)
    unknown = _evaluate_cli(write_json, data)
    assert unknown.exit_code == 1, unknown.output
    insufficient = json.loads(unknown.output)
    assert insufficient["decision"]["verdict"] == "insufficient"
    assert insufficient["holdoutSource"] == "all-tasks"
    assert "holdouts are not known" in insufficient["decision"]["reasons"][0]
    given = _evaluate_cli(write_json, data, "--holdouts", "t3,t4,t5,t6,t7,t8")
    assert given.exit_code == 0, given.output
    decided = json.loads(given.output)
    assert decided["holdoutSource"] == "option"
    assert decided["holdouts"] == ["t3", "t4", "t5", "t6", "t7", "t8"]
    assert decided["decision"]["verdict"] in ("advance", "do-not-advance", "inconclusive")
    dreaming = next(p for p in decided["paired"] if p["condition"] == "dreaming")
    assert dreaming["holdouts"] == 6


def test_a_holdouts_option_naming_an_unknown_task_is_refused_in_one_line(write_json):
    result = _evaluate_cli(write_json, _memcoder_file(3, FOUR), "--holdouts", "t1,t9")
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "t9" in result.output


def test_a_holdouts_option_that_names_nothing_is_refused(write_json):
    result = _evaluate_cli(write_json, _memcoder_file(3, FOUR), "--holdouts", " , ")
    assert result.exit_code == 2
    assert "names no task id" in result.output


def test_holdouts_and_a_manifest_together_are_refused(write_json, example_manifest_data):
    manifest = write_json(example_manifest_data, "manifest.json")
    result = _evaluate_cli(
        write_json, _memcoder_file(3, FOUR), "--holdouts", "t1", "--manifest", str(manifest)
    )
    assert result.exit_code == 2
    assert "not both" in result.output


def test_holdout_flags_that_disagree_with_the_holdouts_option_are_refused(write_json):
    data = _memcoder_file(3, FOUR)
    for row in data["runs"]:
        row["holdout"] = row["task_id"] == "t1"
    result = _evaluate_cli(write_json, data, "--holdouts", "t2")
    assert result.exit_code == 2
    assert "disagree with --holdouts" in result.output


def test_evaluate_reports_the_same_with_the_holdouts_option_as_with_flags(write_json):
    flagged = _memcoder_file(8, FOUR)
    for row in flagged["runs"]:
        row["holdout"] = row["task_id"] in ("t3", "t4", "t5", "t6")
    by_flags = evaluate(read_runs(write_json(flagged)))
    by_option = evaluate(
        read_runs(write_json(_memcoder_file(8, FOUR))), holdouts_given=["t3", "t4", "t5", "t6"]
    )
    assert by_option.decision.verdict == by_flags.decision.verdict
    assert by_option.paired == by_flags.paired


def test_the_readable_report_of_a_file_without_dreaming_rows_says_incomplete(write_json):
    path = write_json(_memcoder_file(10, THREE))
    result = CliRunner().invoke(
        app,
        ["eval", "conditions", "decide", "--input", str(path), "--holdouts", "t1,t2,t3,t4,t5,t6"],
    )
    assert result.exit_code == 1, result.output
    assert "decision for dreaming: incomplete" in result.output
    assert "no dreaming runs" in result.output
    assert "skill_planned" in result.output
