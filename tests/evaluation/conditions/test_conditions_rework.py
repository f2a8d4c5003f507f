"""The host is told the verify command (and, on attempt 1, the verification before any edit);
rework is the host's own meaningful edit-then-verify cycles after the first, unknown when the
host does not report them; lorelab's re-prompts are a separate count."""

import json
import shutil
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.evaluation.conditions import evaluate_file
from lorelab.evaluation.conditions._manifest import CONDITIONS, ConditionsManifest, load_manifest
from lorelab.evaluation.conditions._memory import LORELAB_PROFILE
from lorelab.evaluation.conditions._one_run import RunContext, one_run
from lorelab.evaluation.conditions._profiles import MemoryUnsupported
from lorelab.evaluation.conditions._rework import meaningful_cycles, rework_from_cycles
from lorelab.evaluation.conditions._snapshot import take_snapshot
from lorelab.evaluation.conditions._verify import command_env
from lorelab.evaluation.runlog import RunLog
from lorelab.testing.fixture_host import answer
from lorelab.testing.memcoder import check_memcoder_row
from lorelab.workers import bind_identity, validate_payload, validate_response
from tests.support.conditions import DATA, mini_manifest

CYCLE_HOST = DATA / "cycle_host.py"
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "conditions"
VERIFY = "python check.py h1"


def _cycle(edited, command=VERIFY, exit_code=1):
    return {"edited": edited, "verification": {"command": command, "exitCode": exit_code}}


def test_only_cycles_that_edited_and_ran_the_verify_command_are_meaningful():
    cycles = [
        _cycle(["a.py"]),
        _cycle(["a.py", "b.py"], command="  python   check.py  h1 "),
        _cycle([]),  # the tests run again without an edit
        _cycle(["a.py"], command="python check.py h2"),  # another command
        {"edited": ["a.py"]},  # no verify run
    ]
    assert meaningful_cycles(cycles, VERIFY) == 2
    assert [rework_from_cycles(n) for n in (None, 0, 1, 3)] == [None, 0, 0, 2]


def _run_one(tmp_path: Path, mini, script: list[dict], rework_budget: int = 2) -> dict:
    """One baseline run of holdout h1 of the mini project with the scripted host; its runs-file
    row (as written), its receipt and the payloads the host received."""
    project = mini()["project"]
    data = {**mini_manifest(project), "reworkBudget": rework_budget}
    manifest = ConditionsManifest.model_validate(data)
    (tmp_path / "script.json").write_text(json.dumps(script))
    log_path = tmp_path / "payloads.jsonl"
    env = {
        **command_env(),
        "CYCLE_HOST_LOG": str(log_path),
        "CYCLE_HOST_SCRIPT": str(tmp_path / "script.json"),
    }
    argv = [sys.executable, str(CYCLE_HOST)]
    root = tmp_path / "root"
    root.mkdir()
    snapshot = take_snapshot(project)
    shutil.copytree(project, root / "bind")
    identity = bind_identity(argv, cwd=root / "bind", operator_identity=None, env=env)
    log = RunLog.start(tmp_path / "out")
    log.group("runs")
    ctx = RunContext(
        manifest=manifest,
        manifest_sha256="0" * 64,
        snapshot=snapshot,
        root=root,
        argv=argv,
        identity=identity,
        env=env,
        log=log,
        verify_timeout_s=60,
        fixture=False,
    )
    record = anyio.run(one_run, ctx, manifest.task("h1"), "baseline")
    receipt = json.loads((tmp_path / "out" / "runs" / "h1--baseline.json").read_text())
    payloads = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert receipt["record"] == record.model_dump(mode="json")
    return {"row": receipt["record"], "receipt": receipt, "payloads": payloads}


def test_the_host_is_told_the_verify_command_and_the_verification_before_its_first_edit(
    tmp_path, mini
):
    seen = _run_one(tmp_path, mini, [{"write": True, "cycles": [_cycle(["done/h1"], "VERIFY", 0)]}])
    first = seen["payloads"][0]
    validate_payload("host", first)
    assert first["attempt"] == 1
    assert first["task"]["verify"] == VERIFY
    before = seen["receipt"]["verificationBefore"]
    assert before["exitCode"] == 1
    assert first["lastVerification"] == {
        "command": VERIFY,
        "exitCode": 1,
        "outputTail": before["outputTail"],
    }


def test_rework_counts_the_hosts_own_cycles_and_reprompts_are_counted_apart(tmp_path, mini):
    script = [
        # Attempt 1: two real edit-then-verify cycles, a re-run without an edit and an edit
        # checked with another command (neither is rework); the marker is never written.
        {
            "cycles": [
                _cycle(["check_notes.txt"], "VERIFY"),
                _cycle(["check_notes.txt"], "VERIFY"),
                _cycle([], "VERIFY"),
                _cycle(["check_notes.txt"], "python check.py h2", 0),
            ]
        },
        # Attempt 2 (lorelab's re-prompt): the host writes the marker and verifies.
        {"write": True, "cycles": [_cycle(["done/h1"], "VERIFY", 0)]},
    ]
    seen = _run_one(tmp_path, mini, script)
    row = seen["row"]
    assert row["passed"] is True
    assert row["host_calls"] == 2
    assert row["reprompt_count"] == 1
    assert row["host_cycles"] == 3
    assert row["rework_count"] == 2
    attempts = seen["receipt"]["attempts"]
    assert [len(a["response"]["cycles"]) for a in attempts] == [4, 1]
    assert seen["receipt"]["record"]["rework_count"] == 2
    # The second attempt is told what the first attempt's verification said.
    assert seen["payloads"][1]["lastVerification"]["exitCode"] == 1


def test_a_host_that_reports_no_cycles_leaves_rework_unknown_never_zero(tmp_path, mini):
    seen = _run_one(tmp_path, mini, [{"write": True}])
    row = seen["row"]
    assert row["passed"] is True
    assert row["reprompt_count"] == 0
    assert row["host_cycles"] is None
    # Left out of the row (MemCoder's evaluate refuses a null count, and reads absent as
    # unknown), so the runs file stays readable by both tools.
    assert "rework_count" not in row
    check_memcoder_row(row)
    assert seen["receipt"]["attempts"][0]["response"]["cycles"] is None


def test_one_call_without_cycles_makes_the_whole_runs_rework_unknown(tmp_path, mini):
    script = [{"cycles": [_cycle(["x.txt"], "VERIFY")]}, {"write": True}]
    row = _run_one(tmp_path, mini, script)["row"]
    assert row["passed"] is True
    assert row["reprompt_count"] == 1
    assert row["host_cycles"] is None
    assert "rework_count" not in row


def test_a_plan_outcome_without_a_rework_count_is_unsupported_not_sent_as_zero():
    with pytest.raises(MemoryUnsupported, match="rework is unknown"):
        LORELAB_PROFILE.request(
            "report_outcome", {"plan_id": "plan-1", "passed": True, "rework_count": None}
        )
    sent = LORELAB_PROFILE.request(
        "report_outcome", {"plan_id": "plan-1", "passed": True, "rework_count": 1}
    )
    assert sent["rework_count"] == 1


# ---------------------------------------------------------------- the fixture host's cycles


@pytest.fixture
def example_project(tmp_path):
    copy = tmp_path / "project"
    shutil.copytree(EXAMPLE / "project", copy)
    return copy


def _payload(task_id, verify, guidance=None, attempt=1):
    return {
        "protocol": "lorelab.worker/1",
        "role": "host",
        "task": {"id": task_id, "prompt": "do it", "verify": verify},
        "guidance": None if guidance is None else {"kind": "brief", "text": guidance},
        "attempt": attempt,
        "lastVerification": None,
    }


def test_the_fixture_host_reports_each_edit_then_verify_cycle_it_ran(example_project, monkeypatch):
    # ``python`` in the verify command is lorelab's interpreter, as in a run.
    monkeypatch.setenv("PATH", command_env()["PATH"])
    verify = load_manifest(EXAMPLE / "conditions.json").task("h-tax-region-case").verify
    wrong = answer(_payload("h-tax-region-case", verify), example_project)
    validate_response("host", wrong)
    assert wrong["cycles"] == [
        {"edited": ["shop/tax.py"], "verification": {"command": verify, "exitCode": 1}}
    ]
    assert wrong["commands"] == [{"command": verify, "exitCode": 1}]
    # The same wrong edit again changes nothing: no cycle, no verify run.
    again = answer(_payload("h-tax-region-case", verify, attempt=2), example_project)
    assert again["cycles"] == []
    solved = answer(
        _payload("h-tax-region-case", verify, guidance="see shop/tax.py", attempt=3),
        example_project,
    )
    assert solved["cycles"] == [
        {"edited": ["shop/tax.py"], "verification": {"command": verify, "exitCode": 0}}
    ]


# ---------------------------------------------------------------- lorelab evaluate


def _row(task, condition, passed, rework=0, **extra):
    row = {
        "task_id": task,
        "condition": condition,
        "passed": passed,
        "guidance_tokens": 0 if condition == "baseline" else 50,
        "notes": "",
        "holdout": task.startswith("h"),
        **extra,
    }
    if condition != "baseline":
        row["retrieval_relevant"] = True
    if rework is not None:
        row["rework_count"] = rework
    return row


def _file(tmp_path, rows):
    path = tmp_path / "beta2_runs.json"
    path.write_text(json.dumps({"runs": rows}))
    return path


def _all_passed(rework_of):
    """10 tasks (h1-h6 holdouts), every run passed; ``rework_of(task, condition)``."""
    tasks = [f"h{i}" for i in range(1, 7)] + [f"n{i}" for i in range(1, 5)]
    return [
        _row(task, condition, True, rework_of(task, condition))
        for task in tasks
        for condition in CONDITIONS
    ]


def test_runs_without_a_rework_count_are_read_and_their_rework_stays_unknown(tmp_path):
    # Baseline needed one cycle of rework everywhere; dreaming's rework is known on h1 only.
    def rework(task, condition):
        if condition == "baseline":
            return 1
        return 0 if task == "h1" or condition != "dreaming" else None

    report = evaluate_file(_file(tmp_path, _all_passed(rework)))
    by_name = {c.condition: c for c in report.conditions}
    assert by_name["dreaming"].rework_known == 1
    assert by_name["dreaming"].mean_rework == 0.0
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    assert dreaming.rework_known == 1
    assert dreaming.rework_delta == -1.0
    assert dreaming.rework_delta_both_passed == -1.0
    # Both passed with an unknown count is a tie: only h1 can show less rework.
    assert (dreaming.sign_test.positive, dreaming.sign_test.ties) == (1, 5)
    assert [t.condition_rework for t in dreaming.tasks][:2] == [0, None]
    assert report.decision.verdict == "inconclusive"


def test_a_runs_file_with_no_rework_at_all_is_decided_on_pass_rate_not_invalid(tmp_path):
    report = evaluate_file(_file(tmp_path, _all_passed(lambda task, condition: None)))
    dreaming = next(p for p in report.paired if p.condition == "dreaming")
    assert dreaming.rework_delta is None
    assert dreaming.rework_known == 0
    assert report.decision.verdict == "do-not-advance"
    assert "rework delta unknown" in report.decision.reasons[0]


def test_the_report_says_what_rework_counts(tmp_path):
    def rework(task, condition):
        return 0

    hand = _all_passed(rework)
    older = [{**row, "host_calls": 1} for row in hand]
    newer = [{**row, "host_calls": 1, "reprompt_count": 0, "host_cycles": 1} for row in hand]
    sources = []
    for name, rows in (("hand", hand), ("older", older), ("newer", newer)):
        base = tmp_path / name
        base.mkdir()
        path = _file(base, rows)
        sources.append(evaluate_file(path).rework_source)
        done = CliRunner().invoke(app, ["eval", "conditions", "decide", "--input", str(path)])
        assert f"rework ({sources[-1]}):" in done.output
    assert sources == ["as-written", "reprompts", "host-cycles"]
