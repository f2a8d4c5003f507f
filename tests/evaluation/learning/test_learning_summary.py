"""The learning summary: arm totals, the paired sign test, and the label rule."""

from __future__ import annotations

import pytest

from lorelab.evaluation.learning import get_dataset
from lorelab.evaluation.learning.records import (
    RoleWorker,
    RoleWorkerBinding,
    Settings,
    TrialRecord,
)
from lorelab.evaluation.learning.roles import PerRole
from lorelab.evaluation.learning.summary import build_summary

MANIFEST = get_dataset("qualification")  # six specifications, three defects each
SPECS = [fixture.id for fixture in MANIFEST.fixtures]


WORKER = RoleWorker(argv=["worker"], kind="external")
BINDING = RoleWorkerBinding(argv=["worker"], identity_sha256="0" * 64)


def _settings(repeat: int, roles: PerRole[RoleWorker] | None = None) -> Settings:
    return Settings(
        agent=["worker"],
        roles=roles or PerRole[RoleWorker](architect=WORKER, author=WORKER, reviewer=WORKER),
        repeat=repeat,
        seed=1,
        seed_given=True,
        max_calls=360,
        required_calls=3 * len(SPECS) * repeat * 2,
        max_output_bytes=65536,
        timeout_ms=1000,
        stability_runs=2,
        test_timeout_s=60.0,
    )


def _trial(spec: str, rep: int, arm: str, detected: int, *, complete: bool = True) -> TrialRecord:
    return TrialRecord(
        position=1,
        specification=spec,
        repetition=rep,
        arm=arm,
        status="qualified",
        complete=complete,
        reason=None,
        identity_checks=[],
        role_workers=PerRole[RoleWorkerBinding](
            architect=BINDING, author=BINDING, reviewer=BINDING
        ),
        memory_store_sha256=None,
        lessons_recalled=[],
        lessons_below_floor=[],
        lessons_reached_author=[],
        generation=None,
        validation=None,
        generated_baseline_cases=[],
        passing_cases=1,
        defects=[],
        defects_total=3,
        detected=detected,
        recall=detected / 3,
        leak_scan=None,
        setup_ms=0,
        retrieval_ms=None,
        generation_ms=None,
        validation_ms=None,
        total_ms=0,
    )


def _records(memory: list[int], plain: list[int], specs=SPECS, repeat: int = 3, **kw):
    records = []
    for spec in specs:
        for rep in range(1, repeat + 1):
            records.append(_trial(spec, rep, "memory", memory[rep - 1], **kw))
            records.append(_trial(spec, rep, "no-memory", plain[rep - 1], **kw))
    return records


def _summary(records, repeat=3, kind="live", manifest=MANIFEST, lessons=2):
    return build_summary(
        manifest, "0" * 64, kind, _settings(repeat), records, frozen_lessons=lessons
    )


def test_six_unanimous_specifications_with_three_repetitions_are_positive():
    summary = _summary(_records([3, 3, 3], [1, 1, 1]))
    assert summary.paired.sign_test["positive"] == 6
    assert summary.paired.sign_test["pValue"] == pytest.approx(0.03125)
    assert summary.paired.label == "positive"


def test_six_unanimous_losses_are_negative():
    summary = _summary(_records([0, 0, 0], [2, 2, 2]))
    assert summary.paired.label == "negative"


def test_fewer_than_six_specifications_are_inconclusive():
    five = MANIFEST.model_copy(update={"fixtures": MANIFEST.fixtures[:5]})
    summary = _summary(_records([3, 3, 3], [1, 1, 1], specs=SPECS[:5]), manifest=five)
    assert summary.paired.label == "inconclusive"
    assert "at least 6" in summary.paired.label_reason


def test_fewer_than_three_repetitions_are_inconclusive():
    summary = _summary(_records([3, 3], [1, 1], repeat=2), repeat=2)
    assert summary.paired.label == "inconclusive"
    assert "repetitions" in summary.paired.label_reason


def test_an_incomplete_trial_makes_the_label_inconclusive():
    records = _records([3, 3, 3], [1, 1, 1])
    records[0] = _trial(SPECS[0], 1, "memory", 3, complete=False)
    summary = _summary(records)
    assert summary.paired.label == "inconclusive"
    assert "complete" in summary.paired.label_reason


def test_protocol_fixture_runs_are_never_evidence():
    summary = _summary(_records([3, 3, 3], [0, 0, 0]), kind="protocol-fixture")
    assert summary.paired.label == "not-evidence"


def test_equal_detections_in_a_different_order_are_an_exact_tie():
    # 1 + 3 + 3 and 3 + 3 + 1: the same mean; float sums in different orders must not differ.
    summary = _summary(_records([1, 3, 3], [3, 3, 1]))
    assert summary.paired.sign_test == {"positive": 0, "negative": 0, "ties": 6, "pValue": 1.0}
    assert all(pair.difference == 0 for pair in summary.paired.specs)


def test_rejected_trials_count_zero_in_the_arm_totals():
    records = _records([3, 3, 3], [1, 1, 1])
    summary = _summary(records)
    assert summary.arms["memory"].detected == 6 * 9
    assert summary.arms["memory"].defects == 6 * 9
    assert summary.arms["memory"].defect_recall == 1.0
    assert summary.arms["memory"].billing_usd is None


def test_without_a_single_lesson_in_memory_the_label_is_inconclusive():
    summary = _summary(_records([3, 3, 3], [1, 1, 1]), lessons=0)
    assert summary.paired.label == "inconclusive"
    assert "no lesson" in summary.paired.label_reason
    assert summary.frozen_lessons == 0


def test_every_summary_reports_the_mean_per_specification_difference_with_a_95_interval():
    records = _records([3, 2, 3], [1, 1, 2])
    summary = _summary(records)
    effect = summary.paired.effect
    assert effect.mean_difference == pytest.approx((8 - 4) / 9)
    assert effect.ci95_low <= effect.mean_difference <= effect.ci95_high
    assert effect.clustered_by == "specification"
    assert "bootstrap" in effect.method
    on_disk = summary.to_json()["paired"]["effect"]
    assert set(on_disk) >= {"meanDifference", "ci95Low", "ci95High", "clusteredBy"}


def test_the_interval_resamples_specifications_not_trials():
    # Every specification has the same mean difference (+4/9, from trials differing by 2, 0
    # and 2): resampling whole specifications can only give that value; resampling single
    # trials would spread it between 0 and 2/3.
    summary = _summary(_records([3, 1, 3], [1, 1, 1]))
    effect = summary.paired.effect
    assert effect.mean_difference == pytest.approx(4 / 9)
    assert effect.ci95_low == pytest.approx(4 / 9)
    assert effect.ci95_high == pytest.approx(4 / 9)


def test_an_interval_that_excludes_zero_never_changes_the_label():
    # Five better specifications and one tie: p = 0.0625, so the label stays inconclusive even
    # though the whole interval lies above zero.
    records = _records([3, 3, 3], [1, 1, 1], specs=SPECS[:5]) + _records(
        [2, 2, 2], [2, 2, 2], specs=SPECS[5:]
    )
    summary = _summary(records)
    assert summary.paired.effect.ci95_low > 0
    assert summary.paired.label == "inconclusive"
    assert summary.paired.effect.changes_label is False


def test_the_markdown_summary_shows_the_effect_size():
    from lorelab.evaluation.learning.summary import summary_markdown

    text = summary_markdown(_summary(_records([3, 3, 3], [1, 1, 1])))
    assert "Effect size: mean per-specification recall difference +0.667" in text
    assert "95% interval [+0.667, +0.667]" in text


def test_a_fixture_role_makes_a_run_declared_live_not_evidence_and_is_named():
    fixture = RoleWorker(argv=["python", "-m", "lorelab.testing.fixture"], kind="protocol-fixture")
    static = RoleWorker(argv=["python", "-m", "lorelab.workers.adapters.static"], kind="rule-based")
    roles = PerRole[RoleWorker](architect=static, author=fixture, reviewer=static)
    summary = build_summary(
        MANIFEST,
        "0" * 64,
        "live",
        _settings(3, roles),
        _records([3, 3, 3], [0, 0, 0]),
        frozen_lessons=1,
    )
    assert summary.evidence_kind == "protocol-fixture"
    assert summary.fixture_roles == ["author"]
    assert summary.paired.label == "not-evidence"
    assert "(the protocol fixture plays the author role)" in summary.paired.label_reason


def test_the_markdown_summary_names_each_roles_worker_and_kind():
    from lorelab.evaluation.learning.summary import summary_markdown

    static = RoleWorker(argv=["static-worker"], kind="rule-based")
    pynguin = RoleWorker(argv=["pynguin-worker"], kind="search-based")
    roles = PerRole[RoleWorker](architect=static, author=pynguin, reviewer=static)
    summary = build_summary(
        MANIFEST,
        "0" * 64,
        "live",
        _settings(3, roles),
        _records([3, 3, 3], [1, 1, 1]),
        frozen_lessons=1,
    )
    text = summary_markdown(summary)
    assert (
        "- roles: architect `static-worker` (rule-based); author `pynguin-worker` "
        "(search-based); reviewer `static-worker` (rule-based)"
    ) in text
    assert "plays the" not in text
    assert summary.to_json()["roles"]["author"] == {
        "argv": ["pynguin-worker"],
        "kind": "search-based",
    }
