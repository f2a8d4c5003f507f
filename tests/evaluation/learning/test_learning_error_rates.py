"""The label's error rates, proven by simulation through the real summary code
(``benchmarks/null_campaigns.py`` runs the full version)."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

from lorelab.evaluation.learning import get_dataset
from lorelab.evaluation.learning.records import RoleWorker, Settings
from lorelab.evaluation.learning.roles import PerRole
from lorelab.evaluation.learning.summary import build_summary

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "null_campaigns.py"


def _load():
    spec = importlib.util.spec_from_file_location("null_campaigns", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["null_campaigns"] = module
    spec.loader.exec_module(module)
    return module


CAMPAIGNS = _load()


@pytest.mark.parametrize(("specifications", "campaigns"), [(6, 1500), (12, 600)])
def test_under_the_null_neither_label_is_reached_in_more_than_5_percent_of_campaigns(
    specifications, campaigns
):
    rates = CAMPAIGNS.simulate(specifications, 3, campaigns, seed=specifications)
    assert rates.positive <= 0.05
    assert rates.negative <= 0.05


def test_a_planted_effect_is_found_more_often_with_more_specifications():
    six = CAMPAIGNS.simulate(6, 3, 300, q=0.9, seed=1)
    twelve = CAMPAIGNS.simulate(12, 3, 300, q=0.9, seed=1)
    assert six.negative == 0
    assert twelve.negative == 0
    assert 0 < six.positive < twelve.positive


def test_the_simulation_labels_exactly_as_a_run_summary_does():
    manifest = get_dataset("qualification")
    specs = [fixture.id for fixture in manifest.fixtures]
    rng = random.Random(3)
    for q in (None, 0.95):
        for _ in range(20):
            records = CAMPAIGNS.campaign_records(rng, specs, 3, q)
            worker = RoleWorker(argv=["w"], kind="external")
            settings = Settings(
                agent=["w"],
                roles=PerRole[RoleWorker](architect=worker, author=worker, reviewer=worker),
                repeat=3,
                seed=1,
                seed_given=True,
                max_calls=360,
                required_calls=108,
                max_output_bytes=1,
                timeout_ms=1,
                stability_runs=2,
                test_timeout_s=1.0,
            )
            summary = build_summary(manifest, "0" * 64, "live", settings, records, frozen_lessons=1)
            assert CAMPAIGNS.label_of(records, specs, 3) == summary.paired.label


@pytest.mark.parametrize(("specifications", "campaigns"), [(6, 800), (12, 400)])
def test_with_a_placebo_arm_no_comparison_is_labelled_in_over_5_percent_under_the_null(
    specifications, campaigns
):
    against_no_memory, against_placebo = CAMPAIGNS.simulate_placebo(
        specifications, 3, campaigns, seed=specifications
    )
    for rates in (against_no_memory, against_placebo):
        assert rates.positive <= 0.05
        assert rates.negative <= 0.05


def test_the_pooled_label_of_three_manifests_stays_within_5_percent_under_the_null():
    no_memory, placebo = CAMPAIGNS.simulate_pooled_null(36, 3, 200, seed=36)
    for rates in (no_memory, placebo):
        assert rates.positive <= 0.05
        assert rates.negative <= 0.05


def test_pooled_specification_ids_name_their_manifest_and_never_collide():
    ids = CAMPAIGNS.pooled_specifications(30)
    assert len(set(ids)) == 30
    assert ids[0] == "m1-spec-0"
    assert ids[12] == "m2-spec-0"
    assert ids[-1] == "m3-spec-5"
