import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.errors import SchemaError
from lorelab.evaluation.context import evaluate_fixtures, load_baseline
from tests.support.context_traces import ans, passing_trace


def run(*args: object):
    return CliRunner().invoke(app, ["eval", "context", "run", *map(str, args)])


def baseline_run(write_fixture, tmp_path: Path, **kwargs) -> Path:
    """Score one fixture into tmp_path/base and return its receipt path."""
    evaluate_fixtures([write_fixture(passing_trace(), **kwargs)], output=tmp_path / "base")
    return tmp_path / "base" / "context-receipt.json"


def rewrite(path: Path, change) -> Path:
    data = json.loads(path.read_text())
    change(data)
    target = path.parent.parent / f"edited-{path.parent.name}.json"
    target.write_text(json.dumps(data))
    return target


def test_a_comparable_baseline_reports_outcome_and_cost_deltas(write_fixture, tmp_path):
    base = baseline_run(write_fixture, tmp_path)
    # Same fixture bytes, scored again: a comparable rerun by another evaluator revision.
    fixture = tmp_path / "fixtures" / "fx.json"
    result = run(fixture, "--output", tmp_path / "now", "--baseline", base)
    assert result.exit_code == 0, result.output
    comparison = json.loads((tmp_path / "now" / "context-receipt.json").read_text())["comparison"]
    assert comparison["comparable"] is True
    assert comparison["reasons"] == []
    deltas = comparison["deltas"]
    assert deltas["passes"] == 0
    assert set(deltas["failures"].values()) == {0}
    assert deltas["cost"] == {"inputTokens": 0, "outputTokens": 0, "costUSD": 0.0, "wallMs": 0}


def test_deltas_follow_the_outcome_and_unknown_cost_stays_unknown(write_fixture, tmp_path):
    base = baseline_run(write_fixture, tmp_path)

    def improve(data: dict) -> None:
        # The baseline arm failed with a retry and spent more; its cost was not recorded.
        record = data["records"][0]
        record["verdict"], record["labelAgrees"] = "FAIL", False
        record["failures"]["forbiddenRetries"] = 2
        record["usage"]["costUSD"] = None
        record["usage"]["inputTokens"] = 1500
        data["summary"].update(passes=0, failures=1, labelDisagreements=1)
        data["summary"]["failureTotals"]["forbiddenRetries"] = 2
        data["summary"]["usageTotals"]["costUSD"] = None
        data["summary"]["usageTotals"]["inputTokens"] = 1500
        data["exitCode"] = 1

    edited = rewrite(base, improve)
    result = run(
        tmp_path / "fixtures" / "fx.json", "--output", tmp_path / "now", "--baseline", edited
    )
    assert result.exit_code == 0, result.output
    deltas = json.loads((tmp_path / "now" / "context-receipt.json").read_text())["comparison"][
        "deltas"
    ]
    assert deltas["passes"] == 1
    assert deltas["failures"]["forbiddenRetries"] == -2
    assert deltas["cost"]["costUSD"] is None
    assert deltas["cost"]["inputTokens"] == 1000 - 1500
    assert deltas["records"][0]["passes"] == 1


def _incomparable(write_fixture, tmp_path, base, **kwargs) -> dict:
    fixture = write_fixture(passing_trace(), name="now.json", **kwargs)
    result = run(fixture, "--output", tmp_path / "now", "--baseline", base)
    assert result.exit_code == 1, result.output
    assert "NOT comparable" in result.output
    comparison = json.loads((tmp_path / "now" / "context-receipt.json").read_text())["comparison"]
    assert comparison["comparable"] is False
    assert comparison["deltas"] is None
    return comparison


def test_a_changed_fixture_is_incomparable(write_fixture, tmp_path):
    base = baseline_run(write_fixture, tmp_path)
    comparison = _incomparable(write_fixture, tmp_path, base, usage={"inputTokens": 1, "wallMs": 2})
    assert any("fixture changed" in reason for reason in comparison["reasons"])


def test_a_different_model_is_incomparable(write_fixture, tmp_path):
    base = baseline_run(write_fixture, tmp_path)
    comparison = _incomparable(write_fixture, tmp_path, base, model="model-b")
    assert any("model differs ('model-a' -> 'model-b')" in r for r in comparison["reasons"])


def test_an_unknown_model_is_incomparable(write_fixture, tmp_path):
    base = baseline_run(write_fixture, tmp_path)
    comparison = _incomparable(write_fixture, tmp_path, base, model=None)
    assert any("model unknown" in r for r in comparison["reasons"])


def test_a_different_qualification_is_incomparable(write_fixture, tmp_path):
    base = baseline_run(write_fixture, tmp_path)
    comparison = _incomparable(write_fixture, tmp_path, base, synthetic=True)
    assert any(
        "qualification differs (synthetic False -> True)" in r for r in comparison["reasons"]
    )


def test_different_boundary_kinds_and_fixture_sets_are_incomparable(write_fixture, tmp_path):
    base = baseline_run(write_fixture, tmp_path)
    restart = write_fixture(
        [*passing_trace()[:3], {"index": 3, "author": "system", "kind": "boundary",
                                "boundary": "restart"}, *passing_trace()[4:]],
        name="now.json",
        required=["restart"],
    )  # fmt: skip
    other = write_fixture(passing_trace(), name="other.json", fixture_id="other")
    result = run(restart, other, "--output", tmp_path / "now", "--baseline", base)
    assert result.exit_code == 1
    reasons = json.loads((tmp_path / "now" / "context-receipt.json").read_text())["comparison"][
        "reasons"
    ]
    assert any("boundary kinds differ" in r for r in reasons)
    assert "record 'other' is not in the baseline" in reasons


def test_a_baseline_whose_verdict_contradicts_its_counts_is_refused(write_fixture, tmp_path):
    base = baseline_run(write_fixture, tmp_path)

    def contradict(data: dict) -> None:
        data["records"][0]["failures"]["wrongFacts"] = 1  # still says PASS

    edited = rewrite(base, contradict)
    result = run(
        tmp_path / "fixtures" / "fx.json", "--output", tmp_path / "now", "--baseline", edited
    )
    assert result.exit_code == 2
    assert "refused: record 'fx' says PASS but its failure counts total 1" in result.output
    assert not (tmp_path / "now").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["records"][0].update(labelAgrees=False), "labelAgrees is False"),
        (lambda d: d["records"][0].update(label="FAIL"), "labelAgrees is True"),
        (lambda d: d["summary"].update(passes=0), "summary does not match"),
        (
            lambda d: d["records"][0]["provenance"].update(sourceRevision=None),
            "no source provenance",
        ),
        (lambda d: d.update(evaluator={**d["evaluator"], "moduleHashes": {}}), "module hashes"),
        (lambda d: d.update(records=[]), "no records"),
        (lambda d: d.update(kind="something-else"), "kind"),
    ],
)
def test_untrustworthy_baselines_are_refused(write_fixture, tmp_path, change, message):
    edited = rewrite(baseline_run(write_fixture, tmp_path), change)
    with pytest.raises(SchemaError, match=message):
        load_baseline(edited)


def test_a_baseline_from_a_fixture_without_source_revision_is_refused(write_fixture, tmp_path):
    base = baseline_run(write_fixture, tmp_path, source_revision=None)
    result = run(
        tmp_path / "fixtures" / "fx.json", "--output", tmp_path / "now", "--baseline", base
    )
    assert result.exit_code == 2
    assert "no source provenance" in result.output


def test_a_failing_baseline_with_consistent_fields_is_accepted(write_fixture, tmp_path):
    trace = passing_trace()
    trace[-1] = ans(5, [("port", "1", [1])])
    evaluate_fixtures([write_fixture(trace, label="FAIL")], output=tmp_path / "base")
    baseline = load_baseline(tmp_path / "base" / "context-receipt.json")
    assert baseline.receipt.records[0].verdict == "FAIL"
    assert baseline.receipt.exit_code == 1


def _against(tmp_path: Path, baseline: Path):
    return run(
        tmp_path / "fixtures" / "fx.json", "--output", tmp_path / "now", "--baseline", baseline
    )


def _reasons_of(tmp_path: Path) -> list[str]:
    comparison = json.loads((tmp_path / "now" / "context-receipt.json").read_text())["comparison"]
    assert comparison["comparable"] is False
    assert comparison["deltas"] is None
    return comparison["reasons"]


def test_a_synthetic_baseline_is_not_comparable_with_a_live_run_of_the_same_fixture(
    write_fixture, tmp_path
):
    base = baseline_run(write_fixture, tmp_path)

    def make_synthetic(data: dict) -> None:
        record = data["records"][0]
        record["synthetic"] = True
        record["provenance"]["synthetic"] = True
        record["qualification"]["synthetic"] = True

    result = _against(tmp_path, rewrite(base, make_synthetic))
    assert result.exit_code == 1, result.output
    expected = (
        "record 'fx': synthetic flag differs (the baseline is synthetic, this run is live "
        "(not synthetic))"
    )
    assert expected in result.output
    assert expected in _reasons_of(tmp_path)


def test_a_live_baseline_is_not_comparable_with_a_synthetic_run(write_fixture, tmp_path):
    base = baseline_run(write_fixture, tmp_path)
    synthetic = write_fixture(passing_trace(), name="now.json", synthetic=True)
    result = run(synthetic, "--output", tmp_path / "now", "--baseline", base)
    assert result.exit_code == 1, result.output
    assert (
        "record 'fx': synthetic flag differs (the baseline is live (not synthetic), this run is "
        "synthetic)" in _reasons_of(tmp_path)
    )


def test_a_baseline_whose_synthetic_flags_contradict_each_other_is_refused(write_fixture, tmp_path):
    base = baseline_run(write_fixture, tmp_path)

    def half_synthetic(data: dict) -> None:
        # The record says synthetic, its qualification says live: it cannot be trusted either way.
        data["records"][0]["synthetic"] = True
        data["records"][0]["provenance"]["synthetic"] = True

    result = _against(tmp_path, rewrite(base, half_synthetic))
    assert result.exit_code == 2, result.output
    assert "refused: record 'fx': its synthetic flags contradict each other" in result.output
    assert not (tmp_path / "now").exists()


def test_a_changed_label_with_the_same_fixture_digest_is_not_comparable(write_fixture, tmp_path):
    base = baseline_run(write_fixture, tmp_path)

    def relabel(data: dict) -> None:
        # Internally consistent: label FAIL, verdict PASS, so the label disagrees and exit is 1.
        data["records"][0].update(label="FAIL", labelAgrees=False)
        data["summary"]["labelDisagreements"] = 1
        data["exitCode"] = 1

    result = _against(tmp_path, rewrite(base, relabel))
    assert result.exit_code == 1, result.output
    assert (
        "record 'fx': label differs ('FAIL' -> 'PASS') although the fixture digest is the same"
        in _reasons_of(tmp_path)
    )


def test_a_changed_source_revision_with_the_same_fixture_digest_is_not_comparable(
    write_fixture, tmp_path
):
    base = baseline_run(write_fixture, tmp_path)
    edited = rewrite(base, lambda d: d["records"][0]["provenance"].update(sourceRevision="rev-0"))
    result = _against(tmp_path, edited)
    assert result.exit_code == 1, result.output
    assert (
        "record 'fx': provenance.sourceRevision differs ('rev-0' -> 'rev-1') although the "
        "fixture digest is the same" in _reasons_of(tmp_path)
    )


def _duplicate_record(data: dict) -> None:
    # The summary is made to match, so only the duplicate id is wrong.
    data["records"] = [data["records"][0], data["records"][0]]
    summary = data["summary"]
    summary.update(records=2, passes=2)
    summary["usageTotals"] = {key: value * 2 for key, value in summary["usageTotals"].items()}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["records"][0].update(fixtureId="other"), "id differs from its fixtureId"),
        (lambda d: d["records"][0].update(label=None, labelAgrees=None), "without its label"),
        (
            lambda d: d["records"][0]["qualification"].update(mode="trial"),
            "qualification.mode is trial in a fixture-mode receipt",
        ),
        (_duplicate_record, "record id 'fx' appears more than once"),
        (
            lambda d: (
                d.update(mode="trial"),
                d["records"][0]["qualification"].update(mode="trial"),
            ),
            "a trial record without trial details",
        ),
    ],
)
def test_baselines_whose_record_identity_contradicts_itself_are_refused(
    write_fixture, tmp_path, change, message
):
    edited = rewrite(baseline_run(write_fixture, tmp_path), change)
    with pytest.raises(SchemaError, match=message):
        load_baseline(edited)
