"""The learning evaluation's controller, end to end with real pytest runs and real workers."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.evaluation.learning import get_dataset
from lorelab.evaluation.learning._preparation import label_problem
from lorelab.evaluation.learning.controller import LearningRequest, run_learning
from lorelab.evaluation.learning.manifest import LearningManifest
from lorelab.io import json_bytes
from lorelab.runners import Case, Execution
from lorelab.workers import WorkerBounds, resolve_agent
from lorelab.workspace import FileEntry


def _one_spec(defects: int | None = None, fixture_id: str = "normalize") -> LearningManifest:
    """The default dataset cut to one specification (normalize unless named), for speed."""
    manifest = get_dataset("default")
    fixture = next(f for f in manifest.fixtures if f.id == fixture_id)
    if defects is not None:
        fixture = fixture.model_copy(update={"defects": fixture.defects[:defects]})
    return manifest.model_copy(update={"fixtures": [fixture]})


def _request(manifest: LearningManifest, agent: list[str], **overrides) -> LearningRequest:
    values = {
        "manifest": manifest,
        "dataset": "test",
        "agent": tuple(agent),
        "repeat": 1,
        "seed": 11,
        "stability_runs": 2,
        "bounds": WorkerBounds(timeout_ms=60_000),
    }
    values.update(overrides)
    return LearningRequest(**values)


RECORDING_WORKER = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from lorelab.testing.fixture import answer

    log = Path({log!r})
    raw = sys.stdin.read()
    payload = json.loads(raw)
    count = len(list(log.iterdir()))
    tree = {{}}
    for directory, _, files in os.walk("."):
        for name in files:
            path = os.path.join(directory, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            tree[path] = Path(path).read_text(errors="replace")
    (log / f"{{count:03d}}.json").write_text(json.dumps({{"payload": raw, "tree": tree}}))
    {extra}
    print(json.dumps(answer(payload)))
    """
)


def _recording_worker(tmp_path: Path, extra: str = "") -> tuple[list[str], Path]:
    log = tmp_path / "log"
    log.mkdir()
    script = tmp_path / "recording_worker.py"
    script.write_text(RECORDING_WORKER.format(log=str(log), extra=extra))
    return [sys.executable, str(script)], log


def _strings(value):
    """Every string in a decoded JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _trials(output: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((output / "trials").iterdir())]


def _trial_names(output: Path) -> list[str]:
    return sorted(p.name for p in (output / "trials").iterdir())


def test_fixture_run_on_one_spec_writes_every_receipt_and_memory_helps(tmp_path):
    # interval-overlap: the one default specification the clamp lesson is related to (both
    # are about ranges); the recall floor keeps it from normalize and dedupe.
    output = tmp_path / "out"
    manifest = _one_spec(fixture_id="interval-overlap")
    outcome = run_learning(_request(manifest, resolve_agent("fixture")), output)
    assert outcome.exit_code == 0, outcome.message
    summary = json.loads((output / "summary.json").read_text())
    assert summary["evidenceKind"] == "protocol-fixture"
    assert summary["paired"]["label"] == "not-evidence"
    memory, plain = summary["arms"]["memory"], summary["arms"]["no-memory"]
    assert memory["trials"] == plain["trials"] == 1
    assert memory["qualifiedTrials"] == plain["qualifiedTrials"] == 1
    assert memory["detected"] > plain["detected"]
    assert memory["calls"] == memory["attemptedCalls"] == memory["spawnedCalls"] == 3
    assert memory["billingUSD"] is None  # the fixture reports no cost
    trials = {t["arm"]: t for t in _trials(output)}
    assert trials["memory"]["lessonsReachedAuthor"] == ["history-clamp"]
    assert trials["no-memory"]["lessonsReachedAuthor"] == []
    assert trials["no-memory"]["retrievalMs"] is None
    assert (
        trials["memory"]["memoryStoreSha256"]
        == json.loads((output / "shared-preparation.json").read_text())["frozenStoreSha256"]
    )
    for key in ("setupMs", "generationMs", "validationMs", "totalMs"):
        assert isinstance(trials["memory"][key], int)
    manifest = json.loads((output / "manifest.json").read_text())
    assert manifest["verificationScope"]["fullRuntimeAttestation"] is False
    assert manifest["accountingVersion"] == 2
    assert manifest["orderSeed"] == 11
    assert "inputBytes" in manifest["byteAccounting"]
    assert manifest["workerIdentity"]["declaredArgv"] == resolve_agent("fixture")
    assert any(k.endswith("controller.py") for k in manifest["implementationHashes"])
    controller = json.loads((output / "controller.json").read_text())
    assert controller["outcome"] == "complete"
    assert all(
        controller[k] is not None for k in ("setupMs", "sharedPreparationMs", "groundTruthMs")
    )
    ground = sorted(p.name for p in (output / "ground-truth").iterdir())
    assert "interval-overlap.reference.run1.json" in ground
    assert len(ground) == 2 * (1 + 3)
    assert (output / "summary.md").read_text().startswith("# Learning evaluation summary")


def test_every_receipt_is_0600_and_every_directory_0700(tmp_path):
    old = os.umask(0)
    try:
        output = tmp_path / "out"
        run_learning(_request(_one_spec(defects=1), resolve_agent("fixture")), output)
    finally:
        os.umask(old)
    for directory, _dirs, files in os.walk(output):
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700, directory
        for name in files:
            assert stat.S_IMODE(os.stat(Path(directory, name)).st_mode) == 0o600, name


def test_reference_tests_and_defects_never_reach_payloads_trial_roots_or_memory(tmp_path):
    manifest = _one_spec()
    agent, log = _recording_worker(tmp_path)
    output = tmp_path / "out"
    outcome = run_learning(_request(manifest, agent), output)
    assert outcome.exit_code == 0, outcome.message
    records = [json.loads(p.read_text()) for p in sorted(log.iterdir())]
    assert len(records) == 6  # 3 calls x 2 arms
    forbidden = [t.content for f in manifest.fixtures for t in f.reference_tests]
    forbidden += [e.content for f in manifest.fixtures for d in f.defects for e in d.files]
    for record in records:
        strings = list(_strings(json.loads(record["payload"])))
        for text in forbidden:
            assert all(text not in string for string in strings)
            assert all(text not in content for content in record["tree"].values())
        assert "referenceTests" not in record["payload"]
        assert "expectedFailingCases" not in record["payload"]
    frozen = (output / "memory-frozen.sqlite").read_bytes()
    for text in forbidden:
        assert text.encode() not in frozen
    # A response that declares protocol-fixture evidence downgrades a live run's label.
    summary = json.loads((output / "summary.json").read_text())
    assert summary["evidenceKind"] == "protocol-fixture"


def test_a_reference_test_leaked_into_requirements_is_caught_before_any_call(tmp_path):
    manifest = _one_spec(defects=1)
    fixture = manifest.fixtures[0]
    leaked = fixture.model_copy(
        update={"requirements": fixture.requirements + "\n" + fixture.reference_tests[0].content}
    )
    agent, log = _recording_worker(tmp_path)
    output = tmp_path / "out"
    outcome = run_learning(
        _request(manifest.model_copy(update={"fixtures": [leaked]}), agent), output
    )
    assert outcome.exit_code == 3
    assert list(log.iterdir()) == []
    [trial] = _trials(output)
    assert trial["status"] == "invalid"
    assert trial["leakScan"]["payloadsClean"] is False
    assert trial["generation"]["roles"] == []
    assert json.loads((output / "controller.json").read_text())["outcome"] == "integrity-failed"


def test_a_lesson_holding_a_defect_payload_is_caught_before_any_call(tmp_path):
    manifest = _one_spec(defects=1)
    defect_source = manifest.fixtures[0].defects[0].files[0].content
    history = manifest.history[0]
    poisoned = history.model_copy(
        update={"requirements": history.requirements + "\n" + defect_source}
    )
    agent, log = _recording_worker(tmp_path)
    output = tmp_path / "out"
    outcome = run_learning(
        _request(manifest.model_copy(update={"history": [poisoned]}), agent, seed=4), output
    )
    assert outcome.exit_code == 3
    assert list(log.iterdir()) == []
    memory_trials = [t for t in _trials(output) if t["arm"] == "memory"]
    assert memory_trials[0]["leakScan"]["memoryClean"] is False


def test_author_whose_tests_fail_on_the_reference_is_invalid_and_counts_zero(tmp_path):
    script = tmp_path / "bad_author.py"
    script.write_text(
        textwrap.dedent(
            """
            import json, sys
            payload = json.loads(sys.stdin.read())
            role = payload["role"]
            if role == "architect":
                out = {"cases": [{"name": "wrong", "intent": "expects the wrong thing"}]}
            elif role == "author":
                out = {"files": [{"path": "tests/test_normalize.py", "content":
                    "from src.normalize import normalize\\n\\n"
                    "def test_wrong():\\n    assert normalize('A') == 'A'\\n"}]}
            else:
                out = {"verdict": "approve", "reasons": []}
            print(json.dumps(out))
            """
        )
    )
    output = tmp_path / "out"
    outcome = run_learning(_request(_one_spec(), [sys.executable, str(script)]), output)
    assert outcome.exit_code == 1  # no trial qualified: an outcome failed; nothing retried
    for trial in _trials(output):
        assert trial["status"] == "invalid"
        assert trial["detected"] == 0
        assert trial["recall"] == 0
        assert len(trial["generation"]["roles"]) == 3
    summary = json.loads((output / "summary.json").read_text())
    assert summary["arms"]["memory"]["qualifiedTrials"] == 0
    assert summary["arms"]["memory"]["defectRecall"] == 0
    assert summary["paired"]["label"] == "inconclusive"


def test_worker_that_times_out_fails_its_trials_without_retry(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text("import time\ntime.sleep(60)\n")
    output = tmp_path / "out"
    outcome = run_learning(
        _request(
            _one_spec(defects=1),
            [sys.executable, str(script)],
            bounds=WorkerBounds(timeout_ms=1500),
        ),
        output,
    )
    assert outcome.exit_code == 1
    for trial in _trials(output):
        assert trial["status"] == "failed"
        assert trial["complete"] is False
        assert [r["failure"] for r in trial["generation"]["roles"]] == ["timeout"]
    summary = json.loads((output / "summary.json").read_text())
    assert summary["arms"]["memory"]["attemptedCalls"] == 1
    assert summary["arms"]["memory"]["calls"] == 3


def _run_with_a_worker_that_edits_itself_on_its_author_call(tmp_path):
    """Two trials of one specification; the worker's script changes during the first trial."""
    agent, log = _recording_worker(
        tmp_path,
        extra=(
            "if payload['role'] == 'author':\n"
            "    with open(__file__, 'a') as handle:\n"
            "        handle.write('# changed\\n')"
        ),
    )
    output = tmp_path / "out"
    return output, run_learning(_request(_one_spec(defects=1), agent), output), log


def test_worker_whose_script_changes_mid_run_is_invalid_and_never_retried(tmp_path):
    output, outcome, log = _run_with_a_worker_that_edits_itself_on_its_author_call(tmp_path)
    assert outcome.exit_code == 1
    first, second = _trials(output)
    assert first["status"] == "invalid"
    assert any("changed" in change for change in first["identityChecks"])
    assert [r["failure"] for r in first["generation"]["roles"]] == [None, "identity-changed"]
    assert second["status"] == "invalid"
    assert len(list(log.iterdir())) == 2  # architect + author once, nothing retried


def test_an_identity_drift_before_the_first_call_leaves_an_unlaunched_attempted_call(tmp_path):
    # The seed: a drift caught before a trial's first call still leaves a role receipt with
    # spawned: false, and it counts as an attempted call.
    output, outcome, log = _run_with_a_worker_that_edits_itself_on_its_author_call(tmp_path)
    assert outcome.exit_code == 1
    _, second = _trials(output)
    assert second["reason"].startswith("identity-changed before the trial; no call was made: ")
    (receipt,) = second["generation"]["roles"]
    assert receipt["role"] == "architect"
    assert receipt["spawned"] is False
    assert receipt["failure"] == "identity-changed"
    assert receipt["identityChanges"] == second["identityChecks"] != []
    assert receipt["inputBytes"] > 0
    assert second["lessonsReachedAuthor"] == []
    assert len(list(log.iterdir())) == 2  # nothing was launched for the second trial
    arm = json.loads((output / "summary.json").read_text())["arms"][second["arm"]]
    assert arm["attemptedCalls"] == 1
    assert arm["spawnedCalls"] == 0
    private = json.loads((output / "private" / _trial_names(output)[1]).read_text())
    assert [call["role"] for call in private["calls"]] == ["architect"]
    assert private["calls"][0]["response"] is None
    assert json_bytes(private["calls"][0]["payload"]) == receipt["inputBytes"]


def test_defect_that_passes_its_expected_case_fails_ground_truth_and_no_worker_runs(tmp_path):
    manifest = _one_spec()
    fixture = manifest.fixtures[0]
    harmless = fixture.defects[0].model_copy(
        update={
            "files": [
                FileEntry(path=e.path, content=e.content + "\n# harmless\n") for e in fixture.files
            ]
        }
    )
    broken = fixture.model_copy(update={"defects": [harmless, *fixture.defects[1:]]})
    manifest = manifest.model_copy(update={"fixtures": [broken]})
    marker = tmp_path / "worker-ran"
    script = tmp_path / "marker_worker.py"
    script.write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n")
    output = tmp_path / "out"
    outcome = run_learning(_request(manifest, [sys.executable, str(script)]), output)
    assert outcome.exit_code == 1
    assert "ground truth failed" in outcome.message
    assert not marker.exists()
    labels = json.loads((output / "labels-normalize.json").read_text())
    assert harmless.id in labels["reason"]
    assert labels["executions"]["reference"]
    assert not (output / "trials").exists()
    assert json.loads((output / "controller.json").read_text())["outcome"] == "ground-truth-failed"


def test_unresolvable_worker_fails_preflight_with_exit_2_and_receipts(tmp_path):
    output = tmp_path / "out"
    outcome = run_learning(_request(_one_spec(), ["no-such-worker-binary-xyz"]), output)
    assert outcome.exit_code == 2
    preflight = json.loads((output / "preflight.json").read_text())
    assert preflight["ok"] is False
    controller = json.loads((output / "controller.json").read_text())
    assert controller["groundTruthMs"] is None
    assert controller["sharedPreparationMs"] is None
    assert not (output / "trials").exists()


def _execution(cases: list[tuple[str, str, str | None]], classification: str) -> Execution:
    return Execution(
        runner="pytest",
        argv=["pytest"],
        exit_code=0 if classification == "passed" else 1,
        duration_ms=1,
        cases=[Case(id=i, status=s, failure_kind=k) for i, s, k in cases],
        classification=classification,
        reason="",
        reverse=False,
        processes=[],
        output_tail="",
    )


def test_ground_truth_refuses_a_defect_whose_expected_case_fails_only_to_import():
    fixture = _one_spec(defects=1).fixtures[0]
    defect = fixture.defects[0]
    ids = [f"tests/test_normalize.py::t{i}" for i in range(3)] + defect.expected_failing_cases
    reference = _execution([(i, "passed", None) for i in ids], "passed")
    broken = _execution(
        [
            (i, "failed", "import") if i in defect.expected_failing_cases else (i, "passed", None)
            for i in ids
        ],
        "failed",
    )
    behaving = _execution(
        [
            (i, "failed", "other") if i in defect.expected_failing_cases else (i, "passed", None)
            for i in ids
        ],
        "failed",
    )
    assert label_problem(fixture, [(None, [reference] * 2), (defect.id, [behaving] * 2)]) is None
    problem = label_problem(fixture, [(None, [reference] * 2), (defect.id, [broken] * 2)])
    assert "only to import" in problem


def test_files_a_worker_leaves_behind_cannot_crash_or_hang_the_leak_scan(tmp_path):
    extra = (
        "if payload['role'] == 'architect':\n"
        "    os.symlink('/nonexistent/target', 'dangling')\n"
        "    os.mkfifo('pipe')\n"
        "    os.symlink('/etc', 'linked-dir')"
    )
    agent, _log = _recording_worker(tmp_path, extra=extra)
    output = tmp_path / "out"
    outcome = run_learning(_request(_one_spec(defects=1), agent), output)
    assert outcome.exit_code == 0, outcome.message
    assert all(t["leakScan"]["trialRootClean"] for t in _trials(output))


def test_a_defect_that_is_a_prefix_of_its_own_source_is_not_a_leak(tmp_path):
    manifest = _one_spec(defects=1)
    fixture = manifest.fixtures[0]
    source = fixture.files[0]
    # A defect made by cutting the end off the reference: its text stands inside the source.
    cut = source.content.rstrip().rsplit("\n", 1)[0] + "\n"
    defect = fixture.defects[0].model_copy(
        update={"files": [FileEntry(path=source.path, content=cut)]}
    )
    from lorelab.evaluation.learning._trial import forbidden_texts

    changed = manifest.model_copy(
        update={"fixtures": [fixture.model_copy(update={"defects": [defect]})]}
    )
    assert cut not in forbidden_texts(changed)
    assert fixture.reference_tests[0].content in forbidden_texts(changed)


FLIPPING_TEST = """

def test_flips_on_one_defect():
    import hashlib
    import pathlib

    source = pathlib.Path(__file__).resolve().parents[1] / {path!r}
    if hashlib.sha256(source.read_bytes()).hexdigest() == {digest!r}:
        # Inside the project copy: a sandboxed run may write nowhere else.
        counter = source.parents[1] / "flip-counter"
        count = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(count + 1))
        assert count % 2 == 0
"""


def test_a_defect_whose_generated_test_outcome_flips_invalidates_the_trial(tmp_path):
    import hashlib

    manifest = _one_spec(defects=1)
    defect_file = manifest.fixtures[0].defects[0].files[0]
    flip = FLIPPING_TEST.format(
        path=defect_file.path,
        digest=hashlib.sha256(defect_file.content.encode()).hexdigest(),
    )
    script = tmp_path / "flipping_worker.py"
    script.write_text(
        "import json, sys\n"
        "from lorelab.testing.fixture import answer\n"
        "payload = json.loads(sys.stdin.read())\n"
        "out = answer(payload)\n"
        "if payload['role'] == 'author':\n"
        f"    out['files'][0]['content'] += {flip!r}\n"
        "print(json.dumps(out))\n"
    )
    output = tmp_path / "out"
    outcome = run_learning(_request(manifest, [sys.executable, str(script)]), output)
    assert outcome.exit_code == 1
    for trial in _trials(output):
        assert trial["status"] == "unstable", trial["reason"]
        assert "changed between stability runs" in trial["reason"]
        assert trial["detected"] == 0
        assert trial["recall"] == 0
        # The raw outcome stays in the receipt.
        assert trial["defects"][0]["stability"]["stable"] is False


@pytest.mark.parametrize("value", [17_000_000, 0])
def test_a_byte_bound_the_transport_cannot_hold_is_refused_before_anything_is_written(
    tmp_path, value
):
    output = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "eval", "learning", "run", "--dataset", "default", "--agent", "fixture",
            "--max-output-bytes", str(value), "--output", str(output),
        ],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "--max-output-bytes" in result.output
    assert result.output.count("\n") == 1
    assert not output.exists()


def test_the_controllers_elapsed_time_counts_from_the_commands_entry(tmp_path):
    import time

    entered = time.perf_counter() - 3600  # an hour spent before the run began
    output = tmp_path / "out"
    request = _request(_one_spec(), ["no-such-worker-binary-xyz"], started=entered)
    assert run_learning(request, output).exit_code == 2
    controller = json.loads((output / "controller.json").read_text())
    assert controller["elapsedMs"] >= 3_600_000


def test_receipts_name_no_temporary_workspace_or_runner_directory(tmp_path, monkeypatch):
    # The seed: "Workspace paths are normalized". A run's disposable directories and a test
    # runner's per-execution directories appear as $WORKSPACE, $PRIVATE and $RUNNER_TMP.
    import re
    import tempfile

    output = tmp_path / "out"
    outcome = run_learning(_request(_one_spec(defects=1), resolve_agent("fixture")), output)
    assert outcome.exit_code == 0, outcome.message
    raw = re.compile(re.escape(tempfile.gettempdir()) + r"/lorelab-(learning|pytest|node)-")
    texts = {path.relative_to(output): path.read_text() for path in output.rglob("*.json")}
    leaking = sorted(str(name) for name, text in texts.items() if raw.search(text))
    assert leaking == []
    joined = "\n".join(texts.values())
    assert "$WORKSPACE/" in joined
    assert "$RUNNER_TMP/" in joined
