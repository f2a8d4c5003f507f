"""What a learning run's directory holds for a reader who has nothing else: the summary's
controller record, identity, scope and implementation hashes (repeated from manifest.json),
per-arm times and stable-trial counts, byte accounting in every trial, the frozen manifest,
and each role's payload and parsed response kept privately per trial.

One real run (the fixture worker, one specification, one defect, real pytest) is shared by
the tests of this module.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from statistics import median

import pytest

from lorelab.evaluation.learning import get_dataset
from lorelab.evaluation.learning.controller import (
    LearningRequest,
    manifest_digest,
    read_manifest_input,
    run_learning,
)
from lorelab.evaluation.learning.manifest import LearningManifest
from lorelab.evaluation.learning.records import (
    BYTE_ACCOUNTING,
    ManifestReceipt,
    Summary,
    TrialRecord,
)
from lorelab.io import json_bytes
from lorelab.workers import WorkerBounds, resolve_agent


def _one_spec() -> LearningManifest:
    manifest = get_dataset("default")
    fixture = manifest.fixtures[0]
    fixture = fixture.model_copy(update={"defects": fixture.defects[:1]})
    return manifest.model_copy(update={"fixtures": [fixture]})


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("receipts") / "out"
    request = LearningRequest(
        manifest=_one_spec(),
        dataset="test",
        agent=tuple(resolve_agent("fixture")),
        repeat=1,
        seed=11,
        stability_runs=2,
        bounds=WorkerBounds(timeout_ms=60_000),
    )
    outcome = run_learning(request, output)
    assert outcome.exit_code == 0, outcome.message
    return output


def _read(path: Path) -> dict:
    return json.loads(path.read_text())


def _trials(output: Path) -> list[dict]:
    return [_read(path) for path in sorted((output / "trials").iterdir())]


def test_the_summary_repeats_identity_scope_and_hashes_from_the_manifest_receipt(run):
    summary, manifest = _read(run / "summary.json"), _read(run / "manifest.json")
    assert summary["workerIdentity"] == manifest["workerIdentity"]
    assert summary["workerIdentity"]["declaredArgv"]
    assert summary["verificationScope"] == manifest["verificationScope"]
    assert summary["verificationScope"]["fullRuntimeAttestation"] is False
    assert summary["implementationHashes"] == manifest["implementationHashes"]
    assert summary["implementationHashes"]


def test_the_summary_names_the_controller_that_ran_it_with_the_manifests_settings(run):
    summary, manifest = _read(run / "summary.json"), _read(run / "manifest.json")
    controller = summary["controller"]
    assert controller["program"] == "lorelab eval learning"
    assert controller["module"] == "lorelab.evaluation.learning.controller"
    assert controller["lorelabVersion"] == manifest["lorelabVersion"]
    assert controller["settings"] == manifest["settings"]
    assert controller["dataset"] == manifest["dataset"] == "test"
    assert controller["pythonVersion"]
    phases = ("setupMs", "sharedPreparationMs", "groundTruthMs", "trialsMs")
    assert all(isinstance(controller[key], int) for key in phases)
    assert controller["elapsedMs"] >= sum(controller[key] for key in phases)
    # controller.json is written after the summary: its clock has run on, never back.
    assert _read(run / "controller.json")["elapsedMs"] >= controller["elapsedMs"]


def test_each_arm_sums_and_medians_its_trials_times_and_counts_stable_trials(run):
    arms = _read(run / "summary.json")["arms"]
    for arm in ("memory", "no-memory"):
        trials = [t for t in _trials(run) if t["arm"] == arm]
        summary = arms[arm]
        for key in ("setupMs", "totalMs"):
            values = [t[key] for t in trials]
            assert summary[key] == sum(values)
            assert summary[f"{key}Median"] == median(values)
        assert summary["stableTrials"] == 1
        assert summary["unstableTrials"] == 0
    memory = [t for t in _trials(run) if t["arm"] == "memory"]
    assert arms["memory"]["retrievalMs"] == sum(t["retrievalMs"] for t in memory)
    assert arms["no-memory"]["retrievalMs"] is None
    assert arms["no-memory"]["retrievalMsMedian"] is None


def test_every_trial_receipt_declares_the_byte_accounting_of_the_manifest_and_summary(run):
    manifest, summary = _read(run / "manifest.json"), _read(run / "summary.json")
    assert manifest["byteAccounting"] == summary["byteAccounting"] == BYTE_ACCOUNTING
    trials = _trials(run)
    assert len(trials) == 2
    assert all(trial["byteAccounting"] == BYTE_ACCOUNTING for trial in trials)


def test_the_manifest_receipt_holds_the_frozen_manifest_that_hashes_to_its_digest(run):
    written = _read(run / "manifest.json")
    frozen = LearningManifest.model_validate(written["manifest"])
    assert frozen == _one_spec()
    assert manifest_digest(frozen) == written["manifestSha256"]
    assert ManifestReceipt.model_validate(written).manifest == frozen


def test_each_trial_keeps_every_role_payload_and_parsed_response_privately(run):
    private = run / "private"
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    names = sorted(path.name for path in (run / "trials").iterdir())
    assert sorted(path.name for path in private.iterdir()) == names
    for name, trial in zip(names, _trials(run), strict=True):
        path = private / name
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        kept = _read(path)
        assert kept["position"] == trial["position"]
        roles = trial["generation"]["roles"]
        assert [call["role"] for call in kept["calls"]] == ["architect", "author", "reviewer"]
        for call, receipt in zip(kept["calls"], roles, strict=True):
            assert call["role"] == receipt["role"]
            assert json_bytes(call["payload"]) == receipt["inputBytes"]
            assert json_bytes(call["response"]) == receipt["outputBytes"]
        assert kept["calls"][2]["response"]["verdict"] == "approve"
        # The trial receipt itself holds no payload or response.
        assert "exchanges" not in trial
        assert "payload" not in json.dumps(trial["generation"]["roles"])


def test_older_receipts_without_the_new_keys_still_read_with_null(run):
    summary = _read(run / "summary.json")
    for key in ("controller", "workerIdentity", "verificationScope", "implementationHashes"):
        del summary[key]
    new_arm_keys = [
        "setupMs", "setupMsMedian", "retrievalMs", "retrievalMsMedian", "totalMs",
        "totalMsMedian", "stableTrials", "unstableTrials",
    ]  # fmt: skip
    for arm in summary["arms"].values():
        for key in new_arm_keys:
            del arm[key]
    old = Summary.model_validate(summary)
    assert old.controller is None
    assert old.worker_identity is None
    assert old.arms["memory"].stable_trials is None
    assert old.arms["memory"].total_ms is None
    trial = _trials(run)[0]
    del trial["byteAccounting"]
    assert TrialRecord.model_validate(trial).byte_accounting is None
    manifest = _read(run / "manifest.json")
    del manifest["manifest"]
    assert ManifestReceipt.model_validate(manifest).manifest is None


def test_a_manifest_file_is_recorded_by_its_name_never_its_absolute_path(tmp_path):
    path = tmp_path / "deep" / "my-manifest.json"
    path.parent.mkdir()
    path.write_text(_one_spec().model_dump_json(by_alias=True))
    manifest, label = read_manifest_input(str(path.resolve()), None)
    assert label == "manifest:my-manifest.json"
    assert str(tmp_path) not in label
    assert manifest == _one_spec()


def test_the_documented_trial_receipt_schema_names_every_key_a_trial_receipt_has():
    import re

    from pydantic.alias_generators import to_camel

    docs = Path(__file__).parents[3] / "docs" / "learning.md"
    section = docs.read_text().split("### Per-trial receipt", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`([A-Za-z0-9]+)`", section))
    written = {
        field.alias or to_camel(name)
        for name, field in TrialRecord.model_fields.items()
        if not field.exclude
    }
    assert written - documented == set()
