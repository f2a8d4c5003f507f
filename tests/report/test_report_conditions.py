"""``lorelab report`` on a four-condition output directory: the decision, every figure, numbers
equal to what ``lorelab evaluate`` reports on the same runs file, and aborted or broken runs."""

import json

import pytest

from lorelab.evaluation.conditions import ManifestReceipt, RunAborted, evaluate, read_runs
from lorelab.io import read_model
from tests.support.report_page import lorelab, lorelab_process, parse

SECTIONS = [
    "decision",
    "pass-rate",
    "paired",
    "rework",
    "guidance",
    "transfer",
    "review",
    "memory-failures",
    "runs",
    "run",
]
FIGURES = ["pass-rate", "paired", "rework", "guidance", "transfer"]


@pytest.fixture
def page(conditions_dir):
    done = lorelab("report", str(conditions_dir))
    assert done.returncode == 0, done.stderr
    return parse(conditions_dir / "report.html")


@pytest.fixture
def evaluated(conditions_dir):
    """What ``lorelab evaluate --json`` prints for the run's runs file (no manifest)."""
    done = lorelab(
        "eval", "conditions", "decide", "--input", str(conditions_dir / "beta2_runs.json"), "--json"
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_every_conditions_section_and_figure_is_present_each_figure_with_an_svg(page):
    assert page.sections == SECTIONS
    assert set(page.figures) == set(FIGURES)
    assert all(count == 1 for count in page.figures.values())


def test_the_decision_banner_shows_the_verdict_and_reasons_of_the_manifests_thresholds(
    page, conditions_dir
):
    manifest = read_model(conditions_dir / "manifest.json", ManifestReceipt, "fixture")
    runs = read_runs(conditions_dir / "beta2_runs.json")
    assert runs.manifest_sha256 == manifest.sha256
    report = evaluate(runs, manifest.manifest, manifest_checked=True)
    assert f"{report.decision.condition}: {report.decision.verdict}" in page.text
    for reason in report.decision.reasons:
        assert reason in page.text
    overview = page.table("overview").by("what")
    assert overview["manifest checked"]["value"].text == "yes"
    assert overview["thresholds"]["value"].text == "manifest"


def test_pass_rate_per_condition_equals_lorelab_evaluate(page, evaluated):
    rows = page.table("pass-rate").by("condition")
    assert list(rows) == [c["condition"] for c in evaluated["conditions"]]
    for condition in evaluated["conditions"]:
        row = rows[condition["condition"]]
        assert row["pass rate"].number() == condition["passRate"]
        assert row["passed"].number() == condition["passed"]
        assert row["mean rework"].number() == condition["meanRework"]
        assert row["mean guidance tokens"].number() == condition["meanGuidanceTokens"]
        assert row["relevance rate"].number() == condition["retrievalRelevanceRate"]


def test_every_holdout_pair_equals_lorelab_evaluate_and_links_both_run_receipts(page, evaluated):
    table = page.table("paired")
    rows = {(r[0].text, r[1].text): dict(zip(table.headers, r, strict=True)) for r in table.rows}
    expected = [(p["condition"], t) for p in evaluated["paired"] for t in p["tasks"]]
    assert len(rows) == len(expected) == 3 * len(evaluated["holdouts"])
    for condition, task in expected:
        row = rows[(condition, task["taskId"])]
        assert row["difference"].number() == task["difference"]
        assert row["baseline rework"].number() == task["baselineRework"]
        assert row["condition passed"].text == ("yes" if task["conditionPassed"] else "no")
        assert page.resolve(row["task"].hrefs[0]).name == f"{task['taskId']}--{condition}.json"
        assert page.resolve(row["baseline receipt"].hrefs[0]).name.endswith("--baseline.json")


def test_paired_summary_rework_tokens_and_transfer_equal_lorelab_evaluate(page, evaluated):
    summary = page.table("paired-summary").by("condition")
    transfer = page.table("transfer").by("condition")
    tokens = page.table("guidance").by("condition")
    for paired in evaluated["paired"]:
        name = paired["condition"]
        assert summary[name]["pass-rate delta"].number() == paired["passRateDelta"]
        assert summary[name]["rework delta"].number() == paired["reworkDelta"]
        assert summary[name]["p"].number() == paired["signTest"]["pValue"]
        assert transfer[name]["negative transfer"].number() == len(paired["negativeTransfer"])
        assert transfer[name]["polluted"].number() == len(paired["polluted"])
        assert transfer[name]["pollution rate"].number() == paired["pollutionRate"]
        cost = paired["tokenCost"]
        assert tokens[name]["mean"].number() == cost["meanGuidanceTokens"]
        assert tokens[name]["total"].number() == cost["totalGuidanceTokens"]


def test_review_required_skills_equal_lorelab_evaluate(page, evaluated):
    table = page.table("review")
    assert [r[0].text for r in table.rows] == [r["skillId"] for r in evaluated["reviewRequired"]]
    assert table.empty == (not evaluated["reviewRequired"])


def test_every_run_receipt_is_listed_and_every_link_resolves(page, conditions_dir):
    receipts = sorted((conditions_dir / "runs").iterdir())
    listed = [page.resolve(r[0].hrefs[0]) for r in page.table("runs").rows]
    assert sorted(listed) == [p.resolve() for p in receipts]
    for href in page.receipt_links():
        assert page.resolve(href).is_file(), href


def test_unsupported_operations_not_recorded_by_the_run_say_so(page):
    assert "Unsupported operations: not recorded." in page.text


def test_an_aborted_run_gives_a_report_that_says_it_stopped_with_exit_1(aborted_dir):
    aborted = read_model(aborted_dir / "aborted.json", RunAborted, "fixture")
    done = lorelab_process("report", str(aborted_dir))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert f"the run stopped after {aborted.runs_completed} runs" in done.stderr
    page = parse(aborted_dir / "report.html")
    assert page.sections[:2] == ["problems", "decision"]
    assert "No decision" in page.text
    assert len(page.table("runs").rows) == len(list((aborted_dir / "runs").iterdir()))
    assert page.table("overview").by("what")["run status"]["value"].text == "aborted"


def test_a_missing_runs_file_is_named_and_the_runs_are_still_listed(conditions_dir):
    (conditions_dir / "beta2_runs.json").unlink()
    done = lorelab("report", str(conditions_dir))
    assert done.returncode == 1
    page = parse(conditions_dir / "report.html")
    assert "beta2_runs.json: missing" in page.text
    assert len(page.table("runs").rows) == 52


def test_a_malformed_runs_file_is_named_without_a_traceback(conditions_dir):
    (conditions_dir / "beta2_runs.json").write_text('{"runs": [{"task_id": ')
    done = lorelab_process("report", str(conditions_dir))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "beta2_runs.json: cannot be evaluated" in parse(conditions_dir / "report.html").text


def test_a_runs_file_made_under_another_manifest_is_evaluated_with_defaults_and_said(
    conditions_dir,
):
    path = conditions_dir / "beta2_runs.json"
    data = json.loads(path.read_text())
    data["manifest_sha256"] = "0" * 64
    path.write_text(json.dumps(data))
    done = lorelab("report", str(conditions_dir))
    assert done.returncode == 1
    page = parse(conditions_dir / "report.html")
    assert f"made under manifest {'0' * 64}" in page.text
    assert page.table("overview").by("what")["thresholds"]["value"].text == "defaults"
