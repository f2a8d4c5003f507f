import json
import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.context import CheckpointStore
from lorelab.errors import PreflightError, SchemaError, UsageError
from lorelab.evaluation.context import (
    FIXTURE_CONTEXT_AGENT,
    MessageEvent,
    evaluate_fixtures,
    load_baseline,
    load_fixture,
    run_trials,
    summarise_evidence,
)
from lorelab.io import canonical_bytes, sha256_bytes
from lorelab.workers import WorkerBounds
from tests.support.context_traces import ans, bnd, cmd, msg

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "context"
FIXTURE_MODULE = "lorelab.testing.fixture_context"


def source_trace() -> list[dict]:
    """A source trace with its own compaction and a child handoff, then an answer."""
    child = [msg(5, "child: port = 5432", "agent"), cmd(6, "make lint", 1)]
    return [
        msg(0, "What port does the database use?", "user"),
        msg(1, "db.conf: port = 5431"),
        cmd(2, "make test", 2),
        bnd(3, "compaction"),
        bnd(4, "child_handoff", child),
        msg(7, "correction: port = 5432"),
        ans(8, [("port", "5432", [7])], [("the child agreed", [5])]),
    ]


def write_source(write_fixture, **kwargs) -> Path:
    return write_fixture(
        source_trace(),
        expected=[{"id": "port", "value": "5432", "evidence": [5, 7]}],
        required=["compaction", "child_handoff"],
        **kwargs,
    )


def agent(*flags: str) -> str:
    return json.dumps([sys.executable, "-m", FIXTURE_MODULE, *flags])


def test_fixture_worker_trials_pass_and_are_labelled_synthetic_protocol_fixture(
    write_fixture, tmp_path
):
    result = run_trials(
        [write_source(write_fixture)], agent=FIXTURE_CONTEXT_AGENT, output=tmp_path / "o"
    )
    assert result.exit_code == 0
    assert [r.record_id for r in result.receipt.records] == ["fx#compaction", "fx#restart"]
    for record in result.receipt.records:
        assert record.verdict == "PASS", record.failures
        assert record.synthetic is True
        assert record.provenance.synthetic is True
        assert record.label is None
        assert record.label_agrees is None
        assert record.qualification.mode == "trial"
        assert record.qualification.evidence_kind == "protocol-fixture"
        assert record.trial is not None
        assert record.trial.evidence_kind == "protocol-fixture"
        assert record.provenance.source_revision == "rev-1"
    trials = sorted(p.name for p in (tmp_path / "o" / "trials").iterdir())
    assert trials == ["0001-compaction.json", "0002-restart.json"]
    written = json.loads((tmp_path / "o" / "context-receipt.json").read_text())
    assert "before transportBudget" in written["byteAccounting"]["inputBytes"]
    assert all(call["inputBytes"] > 0 for r in written["records"] for call in r["trial"]["calls"])


def test_payloads_on_the_wire_never_carry_labels_or_expected_facts(write_fixture, tmp_path):
    # The worker is a recorder around the fixture worker: it keeps the exact bytes it received.
    worker_dir = tmp_path / "worker"
    worker_dir.mkdir()
    recorder = worker_dir / "recorder.py"
    recorder.write_text(
        "import io, pathlib, sys\n"
        "from lorelab.testing import fixture_context\n"
        "data = sys.stdin.buffer.read()\n"
        "n = len(list(pathlib.Path.cwd().glob('payload-*.json')))\n"
        "pathlib.Path(f'payload-{n}.json').write_bytes(data)\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(data))\n"
        "sys.exit(fixture_context.main(sys.argv[1:]))\n"
    )
    canaries = {
        "expected value": "CANARY-EXPECTED-VALUE-71",
        "forbidden command": "CANARY-FORBIDDEN-COMMAND-72",
    }
    path = write_fixture(
        source_trace(),
        expected=[{"id": "port", "value": canaries["expected value"], "evidence": [7]}],
        forbidden=["make test", canaries["forbidden command"]],
        required=["compaction"],
        label="FAIL",
    )
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    log: list[dict] = []
    result = run_trials(
        [path],
        agent=json.dumps([sys.executable, str(recorder), "--retry-failed"]),
        output=tmp_path / "o",
        cwd=cwd,
        payload_log=log,
    )
    received = sorted(cwd.glob("payload-*.json"))
    assert len(received) == len(log) == 4  # two trials, two turns each (retry, then answer)
    for wire in received:
        text = wire.read_text()
        payload = json.loads(text)
        assert payload["role"] == "context"
        assert "transportBudget" in payload
        for canary in canaries.values():
            assert canary not in text
        for key in ('"labels"', '"expectedFacts"', '"forbiddenCommands"', '"expected"'):
            assert key not in text
        assert '"PASS"' not in text
        assert '"FAIL"' not in text
    # The canary expected value cannot be answered, so the trials fail on wrong facts.
    assert all(r.failures.wrong_facts == 1 for r in result.receipt.records)


def test_trials_preserve_source_indices_authors_and_boundaries(write_fixture, tmp_path):
    path = write_source(write_fixture)
    log: list[dict] = []
    result = run_trials([path], agent=FIXTURE_CONTEXT_AGENT, output=tmp_path / "o", payload_log=log)
    first = log[0]
    assert first["trial"]["boundaryIndex"] == 9  # after the highest source index, 8
    assert first["request"]["index"] == 10
    assert first["request"]["sourceOwner"] == {
        "kind": "synthetic",
        "owner": "lorelab.eval-context",
        "requestIndex": 10,
    }
    recovered = first["recovered"]
    # The source answer (8) is not evidence; everything else keeps its index.
    assert recovered["sourceEventIndices"] == [0, 1, 2, 3, 4, 5, 6, 7]
    summary = recovered["summary"]
    assert "[0] user message: What port does the database use?" in summary
    assert "[3] system boundary: compaction" in summary
    assert "  [5] agent message: child: port = 5432" in summary
    assert "[8]" not in summary
    assert recovered["requestContext"]["messages"] == [
        {"index": 0, "author": "user", "text": "What port does the database use?"}
    ]
    assert [(f["command"], f["exitCode"], f["index"]) for f in recovered["failedCommands"]] == [
        ("make test", 2, 2),
        ("make lint", 1, 6),
    ]
    assert "do not repeat" in first["brief"]
    for record in result.receipt.records:
        managed = record.qualification.managed_boundary
        assert record.observed_boundaries == ["compaction", "child_handoff", managed]
        assert record.boundary_kinds == ["compaction", "child_handoff", managed]


def test_a_restart_trial_reads_its_checkpoint_back_from_the_store(write_fixture, tmp_path):
    result = run_trials(
        [write_source(write_fixture)],
        agent=FIXTURE_CONTEXT_AGENT,
        output=tmp_path / "o",
        boundaries=["restart"],
        checkpoint_home=tmp_path / "home",
    )
    trial = result.receipt.records[0].trial
    assert trial is not None
    stored = CheckpointStore(tmp_path / "home").get(trial.checkpoint_id)
    assert stored is not None
    assert stored.boundary == "restart"
    assert sha256_bytes(canonical_bytes(stored)) == trial.checkpoint_sha256


def test_turns_are_capped_and_unreported_usage_stays_unknown(write_fixture, tmp_path):
    result = run_trials(
        [write_source(write_fixture)],
        agent=agent("--never-answer"),
        output=tmp_path / "o",
        boundaries=["compaction"],
        max_turns=3,
    )
    record = result.receipt.records[0]
    assert record.trial is not None
    assert record.trial.turns_used == 3
    assert record.trial.turn_cap_reached is True
    assert record.trial.failure is None
    assert record.verdict == "FAIL"
    assert record.failures.incomplete_record == 1
    assert record.failures.missing_facts == 1
    assert (record.usage.input_tokens, record.usage.output_tokens, record.usage.cost_usd) == (
        None,
        None,
        None,
    )
    assert record.usage.wall_ms is not None  # measured by the transport, not reported
    assert all(call.usage.input_tokens is None for call in record.trial.calls)
    assert result.exit_code == 1


def test_reported_usage_is_summed_and_retried_failed_commands_are_forbidden_retries(
    write_fixture, tmp_path
):
    result = run_trials(
        [write_source(write_fixture)],
        agent=agent("--retry-failed", "--usage", "100,20,0.25", "--model", "m-1"),
        output=tmp_path / "o",
        boundaries=["compaction"],
    )
    record = result.receipt.records[0]
    assert record.trial is not None
    assert record.trial.turns_used == 2
    assert (record.usage.input_tokens, record.usage.output_tokens, record.usage.cost_usd) == (
        200,
        40,
        0.5,
    )
    assert record.provenance.model == "m-1"
    # make test is forbidden and rerun after the managed compaction; make lint is not forbidden.
    assert record.failures.forbidden_retries == 1
    assert record.verdict == "FAIL"


def test_a_worker_that_breaks_the_protocol_is_a_failed_trial_kept_in_the_record(
    write_fixture, tmp_path
):
    broken = json.dumps([sys.executable, "-c", "print('not json')"])
    result = run_trials(
        [write_source(write_fixture)],
        agent=broken,
        output=tmp_path / "o",
        boundaries=["compaction"],
        max_turns=4,
    )
    record = result.receipt.records[0]
    assert record.trial is not None
    assert record.trial.failure == "invalid-json"
    assert record.trial.turns_used == 1  # never retried
    assert record.trial.evidence_kind == "agent"
    assert record.verdict == "FAIL"
    assert record.failures.incomplete_record == 2  # truncated record, and no answer
    assert result.exit_code == 1
    assert (
        json.loads((tmp_path / "o" / "context-receipt.json").read_text())["summary"]["failures"]
        == 1
    )


def test_an_invalid_response_is_a_failed_trial(write_fixture, tmp_path):
    reply = json.dumps({"answer": {"facts": [{"id": "port", "value": 5432, "evidence": [7]}]}})
    worker = json.dumps([sys.executable, "-c", f"print({reply!r})"])
    result = run_trials(
        [write_source(write_fixture)], agent=worker, output=tmp_path / "o", boundaries=["restart"]
    )
    trial = result.receipt.records[0].trial
    assert trial is not None
    assert trial.failure == "invalid-response"


def test_comparable_trial_arms_report_outcome_and_cost_deltas(write_fixture, tmp_path):
    path = write_source(write_fixture)
    base = run_trials(
        [path],
        agent=agent("--retry-failed", "--usage", "100,20,0.25", "--model", "m-1"),
        output=tmp_path / "base",
        boundaries=["compaction"],
    )
    assert base.exit_code == 1
    now = run_trials(
        [path],
        agent=agent("--usage", "100,20,0.25", "--model", "m-1"),
        output=tmp_path / "now",
        boundaries=["compaction"],
        baseline=tmp_path / "base" / "context-receipt.json",
    )
    comparison = now.receipt.comparison
    assert comparison is not None
    assert comparison.comparable, comparison.reasons
    assert comparison.deltas is not None
    assert comparison.deltas.passes == 1
    assert comparison.deltas.failures.forbidden_retries == -1
    assert comparison.deltas.cost.input_tokens == -100
    assert comparison.deltas.cost.cost_usd == -0.25
    assert now.exit_code == 0


def test_trials_without_a_model_or_with_another_turn_cap_are_incomparable(write_fixture, tmp_path):
    path = write_source(write_fixture)
    run_trials(
        [path], agent=agent("--model", "m-1"), output=tmp_path / "base", boundaries=["compaction"]
    )
    now = run_trials(
        [path],
        agent=FIXTURE_CONTEXT_AGENT,
        output=tmp_path / "now",
        boundaries=["compaction"],
        max_turns=2,
        baseline=tmp_path / "base" / "context-receipt.json",
    )
    comparison = now.receipt.comparison
    assert comparison is not None
    assert not comparison.comparable
    assert comparison.deltas is None
    assert any("model unknown" in r for r in comparison.reasons)
    assert any("maxTurns 4 -> 2" in r for r in comparison.reasons)
    assert now.exit_code == 1


def test_a_fixture_baseline_is_incomparable_with_trials(write_fixture, tmp_path):
    path = write_source(write_fixture)
    CliRunner().invoke(
        app, ["eval", "context", "run", str(path), "--output", str(tmp_path / "base")]
    )
    now = run_trials(
        [path],
        agent=agent("--model", "model-a"),
        output=tmp_path / "now",
        boundaries=["compaction"],
        baseline=tmp_path / "base" / "context-receipt.json",
    )
    assert now.receipt.comparison is not None
    assert "the baseline ran in fixture mode, this run in trial mode" in (
        now.receipt.comparison.reasons
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"max_turns": 0}, UsageError, "--max-turns 0"),
        ({"max_turns": 21}, UsageError, "--max-turns 21"),
        ({"boundaries": ["child_handoff"]}, UsageError, "only compaction and restart"),
        ({"bounds": WorkerBounds(timeout_ms=120_001)}, UsageError, "timeout"),
        ({"agent": "echo hi"}, UsageError, "neither a shipped adapter"),
        ({"agent": json.dumps(["python3", "missing-worker.py"])}, PreflightError, "missing"),
    ],
)
def test_bad_trial_settings_are_refused_before_anything_is_written(
    write_fixture, tmp_path, kwargs, error, message
):
    settings = {"agent": FIXTURE_CONTEXT_AGENT, **kwargs}
    with pytest.raises(error, match=message):
        run_trials([write_source(write_fixture)], output=tmp_path / "o", **settings)
    assert not (tmp_path / "o").exists()


def test_the_cli_runs_trials_and_refuses_trials_without_an_agent(tmp_path):
    example = EXAMPLES / "pass-compaction-test-database.json"
    runner = CliRunner()
    ok = runner.invoke(
        app,
        ["eval", "context", "run", "--trials", "--agent", "fixture-context",
         "--boundary", "restart", "--output", str(tmp_path / "o"), str(example)],
    )  # fmt: skip
    assert ok.exit_code == 0, ok.output
    assert "PASS pass-compaction-test-database#restart [no label]" in ok.output
    missing = runner.invoke(
        app, ["eval", "context", "run", "--trials", "--output", str(tmp_path / "p"), str(example)]
    )
    assert missing.exit_code == 2
    assert "--trials needs --agent" in missing.output


def test_the_summary_keeps_the_newest_evidence_within_its_budget():
    fixture = load_fixture(EXAMPLES / "pass-compaction-test-database.json").fixture
    many = [MessageEvent.model_validate(msg(i, "x" * 1500)) for i in range(100)]
    summary = summarise_evidence(many)
    assert len(summary.encode()) <= 64 * 1024 + 100
    assert summary.startswith("[... ")
    assert "[99] tool message:" in summary
    assert "[0] tool message:" not in summary
    assert "[4] tool message: POSTGRES_PORT=55432" in summarise_evidence(fixture.trace)


def unrequired_compaction_trace() -> list[dict]:
    """Requires only the restart: `make test` after the unrequired compaction is history."""
    return [
        msg(0, "What port does the database use?", "user"),
        msg(1, "db.conf: port = 5432"),
        bnd(2, "compaction"),
        cmd(3, "make test", 2),
        bnd(4, "restart"),
        ans(5, [("port", "5432", [1])]),
    ]


def test_a_trial_opens_the_window_where_its_fixture_does_not_at_an_unrequired_boundary(
    write_fixture, tmp_path
):
    path = write_fixture(unrequired_compaction_trace(), required=["restart"])
    alone = evaluate_fixtures([path], output=tmp_path / "fixture-mode")
    assert alone.receipt.records[0].verdict == "PASS"
    result = run_trials([path], agent=FIXTURE_CONTEXT_AGENT, output=tmp_path / "o")
    for record in result.receipt.records:
        assert record.failures.forbidden_retries == 0, record.record_id
        assert record.verdict == "PASS", (record.record_id, record.failures)
    # A worker that does rerun the failed command is still caught after the managed boundary.
    retried = run_trials(
        [path], agent=agent("--retry-failed"), output=tmp_path / "r", boundaries=["compaction"]
    )
    assert retried.receipt.records[0].failures.forbidden_retries == 1


def test_without_a_required_compaction_or_restart_the_window_opens_at_the_managed_boundary(
    write_fixture, tmp_path
):
    trace = [
        msg(0, "What port does the database use?", "user"),
        msg(1, "db.conf: port = 5432"),
        cmd(2, "make test", 2),
        ans(3, [("port", "5432", [1])]),
    ]
    path = write_fixture(trace, required=[])
    clean = run_trials([path], agent=FIXTURE_CONTEXT_AGENT, output=tmp_path / "o")
    assert [r.failures.forbidden_retries for r in clean.receipt.records] == [0, 0]
    retried = run_trials([path], agent=agent("--retry-failed"), output=tmp_path / "r")
    assert [r.failures.forbidden_retries for r in retried.receipt.records] == [1, 1]


def test_trial_receipts_are_private_metrics_without_checkpoint_text(
    write_fixture, tmp_path, monkeypatch
):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    canaries = ["CANARY-MESSAGE-TEXT-81", "CANARY-TOOL-OUTPUT-82", "CANARY-COMMAND-83"]
    trace = [
        msg(0, f"What port does the database use? {canaries[0]}", "user"),
        msg(1, f"db.conf: port = 5432 {canaries[1]}"),
        cmd(2, f"make test {canaries[2]}", 2),
        bnd(3, "compaction"),
        ans(4, [("port", "5432", [1])]),
    ]
    path = write_fixture(trace)
    previous = os.umask(0o022)
    try:
        result = run_trials([path], agent=FIXTURE_CONTEXT_AGENT, output=tmp_path / "a" / "o")
    finally:
        os.umask(previous)
    out = tmp_path / "a" / "o"
    assert sorted(p.name for p in out.iterdir()) == [
        "context-receipt.json",
        "context-receipt.md",
        "trials",
    ]
    for found in [out, *out.rglob("*")]:
        mode = stat.S_IMODE(os.lstat(found).st_mode)
        assert mode == (0o700 if found.is_dir() else 0o600), (found, oct(mode))
        if found.is_file():
            text = found.read_text()
            for canary in canaries:
                assert canary not in text, (found, canary)
    # The receipts still bind each trial's checkpoint by id and digest.
    for record in result.receipt.records:
        assert record.trial is not None
        assert record.trial.checkpoint_id.startswith("ckpt-")
        assert len(record.trial.checkpoint_sha256) == 64
    # The private temporary checkpoint home (and every trial directory) is gone after the run.
    assert list(temporary.iterdir()) == []


def test_a_checkpoint_home_inside_the_output_is_refused(write_fixture, tmp_path):
    with pytest.raises(UsageError, match="inside the output directory"):
        run_trials(
            [write_source(write_fixture)],
            agent=FIXTURE_CONTEXT_AGENT,
            output=tmp_path / "o",
            checkpoint_home=tmp_path / "o" / "home",
        )
    assert not (tmp_path / "o").exists()


def test_reported_usage_beyond_the_maxima_stays_unknown_and_is_named(write_fixture, tmp_path):
    # Two turns each report 1e308 USD (the sum overflows) and 10^13 input tokens.
    result = run_trials(
        [write_source(write_fixture)],
        agent=agent("--retry-failed", "--usage", "10000000000000,20,1e308"),
        output=tmp_path / "o",
        boundaries=["compaction"],
    )
    record = result.receipt.records[0]
    assert record.trial is not None
    assert record.trial.turns_used == 2
    assert record.usage.cost_usd is None
    assert record.usage.input_tokens is None
    assert record.usage.output_tokens == 40
    assert record.trial.usage_out_of_range == ["costUSD", "inputTokens"]
    assert [call.usage.cost_usd for call in record.trial.calls] == [1e308, 1e308]
    written = json.loads((tmp_path / "o" / "context-receipt.json").read_text())
    assert written["summary"]["usageTotals"]["costUSD"] is None
    assert written["records"][0]["trial"]["usageOutOfRange"] == ["costUSD", "inputTokens"]


def test_a_fixture_whose_checkpoint_would_outgrow_the_store_is_refused_before_output(
    write_fixture, tmp_path
):
    # The summary is budgeted, but the request is kept whole: 1.1 MB of request text.
    trace = source_trace()
    trace[0] = msg(0, "What port? " + "x" * 1_100_000, "user")
    path = write_fixture(trace, required=["compaction", "child_handoff"])
    with pytest.raises(UsageError, match=r"checkpoint of trial fx#compaction would be \d+ bytes"):
        run_trials([path], agent=FIXTURE_CONTEXT_AGENT, output=tmp_path / "o")
    assert not (tmp_path / "o").exists()


def test_a_worker_directory_holding_a_fixture_is_refused(write_fixture, tmp_path):
    path = write_source(write_fixture)
    with pytest.raises(UsageError, match="worker must never see"):
        run_trials(
            [path], agent=FIXTURE_CONTEXT_AGENT, output=tmp_path / "o", cwd=path.parent.parent
        )
    assert not (tmp_path / "o").exists()


def test_a_worker_directory_holding_the_output_directory_is_refused(write_fixture, tmp_path):
    path = write_source(write_fixture)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    with pytest.raises(
        UsageError, match=r"contains the output directory .* must not read or alter"
    ):
        run_trials([path], agent=FIXTURE_CONTEXT_AGENT, output=cwd / "o", cwd=cwd)
    assert not (cwd / "o").exists()


def _edited_trial_receipt(receipt: Path, change) -> Path:
    data = json.loads(receipt.read_text())
    change(data["records"][0])
    edited = receipt.parent.parent / "edited.json"
    edited.write_text(json.dumps(data))
    return edited


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda r: r["trial"].update(managedBoundary="restart"),
            "do not name the same trial",
        ),
        (lambda r: r.update(label="PASS", labelAgrees=True), "a trial record with a label"),
        (
            lambda r: (
                r.update(synthetic=False),
                r["provenance"].update(synthetic=False),
                r["qualification"].update(synthetic=False),
            ),
            "a trial record not labelled synthetic",
        ),
        (lambda r: r.update(trial=None), "a trial record without trial details"),
    ],
)
def test_a_trial_baseline_whose_record_identity_contradicts_itself_is_refused(
    write_fixture, tmp_path, change, message
):
    run_trials(
        [write_source(write_fixture, model="m")],
        agent=agent("--model", "m"),
        output=tmp_path / "o",
        boundaries=["compaction"],
    )
    receipt = tmp_path / "o" / "context-receipt.json"
    assert load_baseline(receipt).receipt.mode == "trial"  # the unedited receipt is accepted
    with pytest.raises(SchemaError, match=message):
        load_baseline(_edited_trial_receipt(receipt, change))
