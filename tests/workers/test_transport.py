import json
import os
import select
import sys
from pathlib import Path

import pytest

from lorelab.errors import SchemaError, UsageError
from lorelab.io import json_bytes
from lorelab.workers import WorkerBounds, bind_identity, call_worker
from lorelab.workers.transport import RAW_RESPONSE_CAP, STDERR_TAIL_CAP
from tests.support.workers import PLAN, architect_payload, write_script

ANSWER = {"cases": [{"name": "upper", "intent": "clamp(5, 0, 3) == 3"}]}


def _worker(trial: Path, body: str, name: str = "worker.py") -> list[str]:
    script = write_script(trial / name, "import json, os, sys\n" + body)
    return [sys.executable, str(script)]


def _answer_body(extra: str = "") -> str:
    return f"payload = json.load(sys.stdin)\n{extra}\nprint(json.dumps({ANSWER!r}))\n"


def _gone_within(pid: int, seconds: float) -> bool:
    """Whether ``pid`` is dead (reaped or a zombie) within ``seconds``, waiting on a pidfd."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], seconds)
        return bool(readable)
    finally:
        os.close(fd)


def test_a_worker_that_answers_gets_a_receipt_with_byte_accounting(trial):
    seen = trial / "seen.json"
    argv = _worker(
        trial,
        f"payload = json.load(sys.stdin)\nopen({str(seen)!r}, 'w').write(json.dumps(payload))\n"
        f"print(json.dumps({ANSWER!r}))\n",
    )
    payload = architect_payload()
    call = call_worker(
        argv, "architect", payload, cwd=trial, bounds=WorkerBounds(timeout_ms=20_000)
    )
    receipt = call.receipt
    assert call.ok
    assert call.response == ANSWER
    received = json.loads(seen.read_text())
    assert received == {
        **payload,
        "transportBudget": {"maxOutputBytes": 65_536, "timeoutMs": 20_000},
    }
    assert receipt.input_bytes == json_bytes(payload)
    assert receipt.output_bytes == json_bytes(ANSWER)
    assert receipt.spawned
    assert receipt.exit_code == 0
    assert receipt.failure is None
    assert receipt.raw_response is None
    assert receipt.model.verified is None


def test_usage_absent_stays_null_never_zero(trial):
    argv = _worker(trial, _answer_body())
    receipt = call_worker(argv, "architect", architect_payload(), cwd=trial).receipt
    assert receipt.usage is None
    assert receipt.model.claimed is None
    dumped = receipt.model_dump(mode="json", by_alias=True)
    assert dumped["usage"] is None


def test_partial_usage_keeps_the_unreported_fields_null(trial):
    answer = {**ANSWER, "usage": {"inputTokens": 12}, "model": "model-x"}
    argv = _worker(trial, f"sys.stdin.read()\nprint(json.dumps({answer!r}))\n")
    receipt = call_worker(argv, "architect", architect_payload(), cwd=trial).receipt
    assert receipt.failure is None
    assert receipt.usage is not None
    assert receipt.usage.model_dump(by_alias=True) == {
        "inputTokens": 12,
        "outputTokens": None,
        "costUSD": None,
    }
    assert receipt.model.claimed == "model-x"
    assert receipt.model.verified is None


@pytest.mark.parametrize("blank", ["", "   ", "\t\n"])
def test_a_blank_model_claim_is_recorded_as_unknown_not_as_an_empty_name(trial, blank):
    answer = {**ANSWER, "model": blank}
    argv = _worker(trial, f"sys.stdin.read()\nprint(json.dumps({answer!r}))\n")
    receipt = call_worker(argv, "architect", architect_payload(), cwd=trial).receipt
    assert receipt.failure is None
    assert receipt.model.claimed is None
    assert receipt.model_dump(mode="json", by_alias=True)["model"] == {
        "claimed": None,
        "verified": None,
    }


def test_the_timeout_kills_the_worker_and_its_grandchildren(trial):
    pid_file = trial / "grandchild.pid"
    argv = _worker(
        trial,
        "import subprocess, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(120)\n",
    )
    call = call_worker(
        argv, "architect", architect_payload(), cwd=trial, bounds=WorkerBounds(timeout_ms=1_500)
    )
    receipt = call.receipt
    assert receipt.failure == "timeout"
    assert receipt.signal == 9
    assert receipt.exit_code is None
    assert call.response is None
    grandchild = int(pid_file.read_text())
    assert _gone_within(grandchild, 5.0)


def test_a_grandchild_left_behind_after_the_answer_is_killed_too(trial):
    pid_file = trial / "straggler.pid"
    argv = _worker(
        trial,
        "import subprocess\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n" + _answer_body(),
    )
    call = call_worker(
        argv, "architect", architect_payload(), cwd=trial, bounds=WorkerBounds(timeout_ms=20_000)
    )
    assert call.ok
    assert _gone_within(int(pid_file.read_text()), 5.0)


def test_one_byte_over_the_bound_fails_without_reading_the_rest(trial):
    finished = trial / "finished"
    bound = 1_000
    argv = _worker(
        trial,
        f"sys.stdout.write('x' * {bound + 1})\nsys.stdout.flush()\n"
        "for _ in range(200):\n    sys.stdout.write('y' * 65536)\n    sys.stdout.flush()\n"
        f"open({str(finished)!r}, 'w').write('done')\n",
    )
    call = call_worker(
        argv,
        "architect",
        architect_payload(),
        cwd=trial,
        bounds=WorkerBounds(timeout_ms=20_000, max_output_bytes=bound),
    )
    receipt = call.receipt
    assert receipt.failure == "output-too-large"
    assert receipt.stdout_bytes == bound + 1
    assert receipt.signal == 9
    assert not finished.exists()
    assert receipt.raw_response is not None
    assert len(receipt.raw_response) <= RAW_RESPONSE_CAP


def test_an_answer_of_exactly_the_bound_is_accepted(trial):
    text = json.dumps(ANSWER)
    bound = len(text) + 1  # the newline print adds
    argv = _worker(trial, f"sys.stdin.read()\nprint({text!r})\n")
    call = call_worker(
        argv,
        "architect",
        architect_payload(),
        cwd=trial,
        bounds=WorkerBounds(max_output_bytes=bound),
    )
    assert call.ok
    assert call.receipt.stdout_bytes == bound


@pytest.mark.parametrize(
    ("output", "failure"),
    [
        ("print('Sure! Here is the plan.')", "invalid-json"),
        ("print('[1, 2]')", "invalid-json"),
        ("print('{\"cases\": NaN}')", "invalid-json"),
        ('print(\'{"a": 1, "a": 2}\')', "invalid-json"),
        ('print(\'{"a": 1} {"b": 2}\')', "multiple-json"),
        ("print('{\"a\": 1}')\nprint('{\"b\": 2}')", "multiple-json"),
        ("pass", "empty-output"),
        ("print('   ')", "empty-output"),
        ("sys.stdout.buffer.write(b'\\xff\\xfe{}')", "invalid-json"),
    ],
)
def test_output_that_is_not_exactly_one_json_object_is_rejected(trial, output, failure):
    argv = _worker(trial, f"sys.stdin.read()\n{output}\n")
    call = call_worker(argv, "architect", architect_payload(), cwd=trial)
    assert call.receipt.failure == failure
    assert call.response is None
    assert call.receipt.output_bytes is None
    if failure != "empty-output":
        assert call.receipt.raw_response


def test_a_response_of_the_wrong_shape_is_an_invalid_response(trial):
    answer = {"cases": [], "notes": "extra"}
    argv = _worker(trial, f"sys.stdin.read()\nprint(json.dumps({answer!r}))\n")
    call = call_worker(argv, "architect", architect_payload(), cwd=trial)
    assert call.receipt.failure == "invalid-response"
    assert "architect response" in (call.receipt.failure_detail or "")
    assert json.loads(call.receipt.raw_response or "") == answer
    assert call.response is None


def test_more_cases_than_the_limit_is_an_invalid_response(trial):
    answer = {"cases": [{"name": f"c{i}", "intent": "x"} for i in range(6)]}
    argv = _worker(trial, f"sys.stdin.read()\nprint(json.dumps({answer!r}))\n")
    call = call_worker(argv, "architect", architect_payload(), cwd=trial)
    assert call.receipt.failure == "invalid-response"
    assert "maxCases 5" in (call.receipt.failure_detail or "")


def test_a_stderr_flood_is_drained_and_only_its_tail_kept(trial):
    flood = 20 * 1024 * 1024
    argv = _worker(
        trial,
        "sys.stdin.read()\n"
        f"for _ in range({flood // 65536}):\n    sys.stderr.write('e' * 65535 + '\\n')\n"
        "sys.stderr.write('LAST LINE')\n"
        f"print(json.dumps({ANSWER!r}))\n",
    )
    call = call_worker(
        argv, "architect", architect_payload(), cwd=trial, bounds=WorkerBounds(timeout_ms=60_000)
    )
    receipt = call.receipt
    assert call.ok
    assert receipt.stderr_bytes == flood + len("LAST LINE")
    assert len(receipt.stderr_tail.encode()) <= STDERR_TAIL_CAP
    assert receipt.stderr_tail.endswith("LAST LINE")


def test_a_worker_that_never_reads_a_large_payload_still_answers(trial):
    payload = architect_payload()
    payload["task"]["requirements"] = "r" * (2 * 1024 * 1024)
    argv = _worker(trial, f"print(json.dumps({ANSWER!r}))\n")
    call = call_worker(
        argv, "architect", payload, cwd=trial, bounds=WorkerBounds(timeout_ms=20_000)
    )
    assert call.ok
    assert call.receipt.input_bytes > 2 * 1024 * 1024


def test_a_nonzero_exit_fails_and_keeps_the_adapter_reason_and_usage(trial):
    report = {
        "error": {"kind": "agent-error", "message": "rate limited"},
        "usage": {"outputTokens": 7},
    }
    argv = _worker(trial, f"sys.stdin.read()\nprint(json.dumps({report!r}))\nsys.exit(3)\n")
    call = call_worker(argv, "architect", architect_payload(), cwd=trial)
    receipt = call.receipt
    assert receipt.failure == "nonzero-exit"
    assert receipt.exit_code == 3
    assert "agent-error: rate limited" in (receipt.failure_detail or "")
    assert receipt.usage is not None
    assert receipt.usage.output_tokens == 7
    assert receipt.usage.input_tokens is None


def test_a_failed_call_is_never_retried(trial):
    runs = trial / "runs.log"
    argv = _worker(trial, f"open({str(runs)!r}, 'a').write('run\\n')\nsys.exit(1)\n")
    call = call_worker(argv, "architect", architect_payload(), cwd=trial, attempt=1)
    assert call.receipt.failure == "nonzero-exit"
    assert call.receipt.attempt == 1
    assert runs.read_text() == "run\n"


def test_a_launcher_that_cannot_start_is_a_spawn_failure(trial):
    call = call_worker([str(trial / "missing-worker")], "architect", architect_payload(), cwd=trial)
    assert call.receipt.failure == "spawn-failed"
    assert call.receipt.spawned is False
    assert call.receipt.exit_code is None


def test_the_script_rewritten_during_the_call_is_rejected_after_the_response(trial):
    argv = _worker(
        trial,
        "sys.stdin.read()\n"
        "with open(__file__, 'a') as handle:\n    handle.write('# rewritten\\n')\n"
        f"print(json.dumps({ANSWER!r}))\n",
    )
    identity = bind_identity(argv, cwd=trial, operator_identity=None)
    call = call_worker(argv, "architect", architect_payload(), cwd=trial, identity=identity)
    receipt = call.receipt
    assert receipt.spawned
    assert receipt.failure == "identity-changed"
    assert any(
        "script" in change and "content changed" in change for change in receipt.identity_changes
    )
    assert call.response is None
    assert json.loads(receipt.raw_response or "") == ANSWER


def test_an_identity_change_before_launch_means_the_worker_is_never_spawned(trial):
    ran = trial / "ran"
    argv = _worker(trial, f"open({str(ran)!r}, 'w').write('x')\n" + _answer_body())
    identity = bind_identity(argv, cwd=trial, operator_identity=None)
    script = Path(argv[1])
    script.chmod(0o700)
    call = call_worker(argv, "architect", architect_payload(), cwd=trial, identity=identity)
    receipt = call.receipt
    assert receipt.spawned is False
    assert receipt.failure == "identity-changed"
    assert any("permission bits changed" in change for change in receipt.identity_changes)
    assert not ran.exists()


def test_the_bound_launcher_runs_even_when_the_call_env_would_find_another(trial, tmp_path):
    first, second = tmp_path / "bin1", tmp_path / "bin2"
    write_script(first / "lw", "import json, sys\n" + _answer_body())
    write_script(second / "lw", "import sys\nsys.exit(9)\n")
    bind_env = {**os.environ, "PATH": f"{first}{os.pathsep}{os.environ['PATH']}"}
    call_env = {**os.environ, "PATH": f"{second}{os.pathsep}{first}"}
    identity = bind_identity(["lw"], cwd=trial, operator_identity=None, env=bind_env)
    assert identity.launcher.path == str(first / "lw")
    call = call_worker(
        ["lw"], "architect", architect_payload(), cwd=trial, identity=identity, env=call_env
    )
    assert call.ok


def test_a_relative_launcher_runs_from_the_trial_cwd(trial, tmp_path, monkeypatch):
    write_script(trial / "bin" / "worker", "import json, sys\n" + _answer_body())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    argv = ["bin/worker"]
    identity = bind_identity(argv, cwd=trial, operator_identity=None)
    call = call_worker(argv, "architect", architect_payload(), cwd=trial, identity=identity)
    assert call.ok


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bounds": WorkerBounds(timeout_ms=120_001)}, "between 1 and 120000"),
        ({"bounds": WorkerBounds(timeout_ms=0)}, "between 1 and 120000"),
        ({"bounds": WorkerBounds(timeout_ms=-5)}, "between 1 and 120000"),
        ({"bounds": WorkerBounds(max_output_bytes=0)}, "output bound"),
        ({"attempt": 0}, "attempt"),
    ],
)
def test_bounds_outside_the_limits_are_refused_before_anything_runs(trial, kwargs, message):
    ran = trial / "ran"
    argv = _worker(trial, f"open({str(ran)!r}, 'w').write('x')\n")
    with pytest.raises(UsageError, match=message):
        call_worker(argv, "architect", architect_payload(), cwd=trial, **kwargs)
    assert not ran.exists()


def test_a_payload_that_already_carries_a_budget_is_refused(trial):
    payload = {**architect_payload(), "transportBudget": {"maxOutputBytes": 1, "timeoutMs": 1}}
    with pytest.raises(UsageError, match="transportBudget"):
        call_worker([sys.executable, "-c", "pass"], "architect", payload, cwd=trial)


def test_a_payload_for_another_role_is_a_schema_error(trial):
    with pytest.raises(SchemaError, match="expected 'author'"):
        call_worker([sys.executable, "-c", "pass"], "author", architect_payload(), cwd=trial)


def test_an_argv_other_than_the_bound_one_is_refused(trial):
    argv = _worker(trial, _answer_body())
    identity = bind_identity(argv, cwd=trial, operator_identity=None)
    with pytest.raises(UsageError, match="differs"):
        call_worker(
            [*argv, "--extra"], "architect", architect_payload(), cwd=trial, identity=identity
        )


def test_an_author_answer_is_checked_against_the_runner_and_limits(trial):
    payload = {
        "protocol": "lorelab.worker/1",
        "role": "author",
        "task": architect_payload()["task"],
        "lessons": [],
        "plan": PLAN,
        "limits": {"maxFiles": 1, "maxCases": 1},
    }
    answer = {"files": [{"path": "test/clamp.test.js", "content": "test('a', () => {});\n"}]}
    argv = _worker(trial, f"sys.stdin.read()\nprint(json.dumps({answer!r}))\n")
    call = call_worker(argv, "author", payload, cwd=trial)
    assert call.receipt.failure == "invalid-response"
    assert "not a pytest test path" in (call.receipt.failure_detail or "")


def test_a_large_answer_written_just_before_exit_is_read_whole(trial):
    payload = {
        "protocol": "lorelab.worker/1",
        "role": "author",
        "task": architect_payload()["task"],
        "lessons": [],
        "plan": PLAN,
        "limits": {"maxFiles": 1, "maxCases": 1},
    }
    content = "def test_upper():\n    assert True\n" + "# padding\n" * 5_200
    answer = {"files": [{"path": "tests/test_clamp.py", "content": content}]}
    argv = _worker(trial, f"sys.stdin.read()\nsys.stdout.write(json.dumps({answer!r}))\n")
    call = call_worker(argv, "author", payload, cwd=trial, bounds=WorkerBounds(timeout_ms=20_000))
    assert call.ok, call.receipt.failure_detail
    assert call.response == answer
    assert call.receipt.stdout_bytes == len(json.dumps(answer))
    assert call.receipt.stdout_bytes > 57_000


@pytest.mark.parametrize(
    ("usage", "kept", "rejected"),
    [
        (
            {"inputTokens": 5, "cacheTokens": 3},
            {"inputTokens": 5, "outputTokens": None, "costUSD": None},
            ["cacheTokens: not a usage field (3 ignored)"],
        ),
        ({"inputTokens": "5"}, None, ['inputTokens: "5" is not a non-negative integer']),
        (
            {"inputTokens": 5.0, "outputTokens": 7},
            {"inputTokens": None, "outputTokens": 7, "costUSD": None},
            ["inputTokens: 5.0 is not a non-negative integer"],
        ),
        (5.0, None, ["usage: 5.0 is not an object"]),
        (
            {"costUSD": -1, "outputTokens": True, "inputTokens": 2},
            {"inputTokens": 2, "outputTokens": None, "costUSD": None},
            [
                "costUSD: -1 is not a non-negative number",
                "outputTokens: true is not a non-negative integer",
            ],
        ),
    ],
)
def test_reported_usage_keeps_valid_fields_and_records_what_it_rejected(
    trial, usage, kept, rejected
):
    answer = {**ANSWER, "usage": usage}
    argv = _worker(trial, f"sys.stdin.read()\nprint(json.dumps({answer!r}))\n")
    receipt = call_worker(argv, "architect", architect_payload(), cwd=trial).receipt
    # The protocol's response model is strict, so the call itself is rejected...
    assert receipt.failure == "invalid-response"
    # ...but what the worker reported is never silently turned into unknown.
    dumped = receipt.model_dump(mode="json", by_alias=True)
    assert dumped["usage"] == kept
    assert dumped["usageRejected"] == rejected


def test_valid_usage_leaves_nothing_rejected(trial):
    answer = {**ANSWER, "usage": {"inputTokens": 5, "outputTokens": 2, "costUSD": 0.25}}
    argv = _worker(trial, f"sys.stdin.read()\nprint(json.dumps({answer!r}))\n")
    receipt = call_worker(argv, "architect", architect_payload(), cwd=trial).receipt
    assert receipt.failure is None
    assert receipt.usage is not None
    assert receipt.usage.cost_usd == 0.25
    assert receipt.usage_rejected == []


def test_a_number_beyond_the_float_range_is_invalid_json_with_a_receipt(trial):
    argv = _worker(trial, 'sys.stdin.read()\nprint(\'{"cases": [], "score": 1e999}\')\n')
    call = call_worker(argv, "architect", architect_payload(), cwd=trial)
    assert call.receipt.spawned
    assert call.receipt.exit_code == 0
    assert call.receipt.failure == "invalid-json"
    assert "1e999 is out of range" in (call.receipt.failure_detail or "")
    assert "1e999" in (call.receipt.raw_response or "")
    assert call.response is None


def test_a_response_under_the_bound_on_stdout_but_over_it_as_canonical_json_fails(trial):
    # 400 numbers written as "1e9" (3 bytes each) are "1000000000.0" (12 bytes) once parsed:
    # the bound applies to what is kept and counted, the canonical JSON.
    numbers = ",".join(["1e9"] * 400)
    raw = '{"cases": [{"name": "upper", "intent": "clamp(5, 0, 3) == 3"}], "n": [' + numbers + "]}"
    bound = len(raw) + 100
    argv = _worker(trial, f"sys.stdout.write({raw!r})\n")
    call = call_worker(
        argv,
        "architect",
        architect_payload(),
        cwd=trial,
        bounds=WorkerBounds(timeout_ms=20_000, max_output_bytes=bound),
    )
    receipt = call.receipt
    assert receipt.stdout_bytes == len(raw) < bound
    assert receipt.output_bytes is not None
    assert receipt.output_bytes > bound
    assert receipt.failure == "output-too-large"
    assert "canonical JSON" in (receipt.failure_detail or "")
    assert not call.ok
