"""``lorelab worker identity`` and ``lorelab worker call`` through the real command line."""

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from tests.support.workers import architect_payload, install_standin, write_script

ANSWER = {"cases": [{"name": "upper", "intent": "clamp(5, 0, 3) == 3"}]}


def _invoke(args, env=None):
    return CliRunner().invoke(app, ["worker", *args], env=env)


def _payload_file(tmp_path, payload=None):
    path = tmp_path / "payload.json"
    path.write_text(json.dumps(payload or architect_payload()))
    return path


def test_identity_prints_the_bound_record_without_running_the_worker(trial):
    ran = trial / "ran"
    write_script(trial / "worker.py", f"open({str(ran)!r}, 'w').write('x')\n")
    agent = json.dumps([sys.executable, "worker.py", "--model", "m-2"])
    result = _invoke(["identity", "--agent", agent, "--cwd", str(trial), "--identity", "ci-bot"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["declaredArgv"] == [sys.executable, "worker.py", "--model", "m-2"]
    assert record["boundFiles"][0]["kind"] == "script"
    assert record["model"] == {"requested": "m-2", "verified": None}
    assert record["operatorIdentity"] == "ci-bot"
    assert record["verificationScope"]["fullRuntimeAttestation"] is False
    assert "lorelab/workers/transport.py" in record["implementationHashes"]
    assert not ran.exists()


def test_identity_of_a_shipped_adapter_name(trial):
    result = _invoke(["identity", "--agent", "codex", "--cwd", str(trial)])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["declaredArgv"] == [sys.executable, "-m", "lorelab.workers.adapters.codex"]


@pytest.mark.parametrize(
    ("agent", "code", "message"),
    [
        (json.dumps([sys.executable, "-c", "pass", ".env"]), 2, "looks like a credential"),
        (json.dumps(["no-such-worker-xyz"]), 2, "not found on PATH"),
        (json.dumps([sys.executable, "absent.py"]), 3, "absent in the trial cwd"),
        ("python3 worker.py", 2, "neither a shipped adapter"),
    ],
)
def test_identity_refusals_are_one_line_with_their_exit_code(trial, agent, code, message):
    result = _invoke(["identity", "--agent", agent, "--cwd", str(trial)])
    assert result.exit_code == code
    assert result.stdout == ""
    assert result.stderr.startswith("lorelab: error: ")
    assert message in result.stderr
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_call_prints_the_receipt_and_exits_zero(trial, tmp_path):
    write_script(
        trial / "worker.py", f"import sys\nsys.stdin.read()\nprint({json.dumps(ANSWER)!r})\n"
    )
    out = tmp_path / "response.json"
    agent = json.dumps([sys.executable, "worker.py"])
    result = _invoke(
        [
            "call",
            "--agent",
            agent,
            "--role",
            "architect",
            "--payload",
            str(_payload_file(tmp_path)),
            "--cwd",
            str(trial),
            "--response-out",
            str(out),
        ]
    )
    assert result.exit_code == 0, result.output
    receipt = json.loads(result.stdout)
    assert receipt["failure"] is None
    assert receipt["role"] == "architect"
    assert receipt["usage"] is None
    assert json.loads(out.read_text()) == ANSWER
    assert out.stat().st_mode & 0o777 == 0o600


def test_a_failed_call_prints_its_receipt_and_exits_one(trial, tmp_path):
    write_script(trial / "worker.py", "print('not json')\n")
    agent = json.dumps([sys.executable, "worker.py"])
    payload = str(_payload_file(tmp_path))
    args = ["call", "--agent", agent, "--role", "architect", "--payload", payload]
    result = _invoke([*args, "--cwd", str(trial)])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["failure"] == "invalid-json"


def test_a_worker_rewriting_its_script_during_the_call_exits_three(trial, tmp_path):
    write_script(
        trial / "worker.py",
        "import sys\nsys.stdin.read()\nopen(__file__, 'a').write('#')\n"
        f"print({json.dumps(ANSWER)!r})\n",
    )
    agent = json.dumps([sys.executable, "worker.py"])
    payload = str(_payload_file(tmp_path))
    args = ["call", "--agent", agent, "--role", "architect", "--payload", payload]
    result = _invoke([*args, "--cwd", str(trial)])
    assert result.exit_code == 3
    receipt = json.loads(result.stdout)
    assert receipt["failure"] == "identity-changed"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--timeout-ms", "120001"], "between 1 and 120000"),
        (["--timeout-ms", "0"], "between 1 and 120000"),
        (["--max-output-bytes", "0"], "output bound"),
    ],
)
def test_call_refuses_bad_budgets_before_running_anything(trial, tmp_path, extra, message):
    ran = trial / "ran"
    write_script(trial / "worker.py", f"open({str(ran)!r}, 'w').write('x')\n")
    agent = json.dumps([sys.executable, "worker.py"])
    payload = str(_payload_file(tmp_path))
    args = ["call", "--agent", agent, "--role", "architect", "--payload", payload]
    result = _invoke([*args, "--cwd", str(trial), *extra])
    assert result.exit_code == 2
    assert message in result.stderr
    assert not ran.exists()


def test_call_refuses_an_invalid_payload_file(trial, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"protocol": "lorelab.worker/1", "role": "architect", "role": "author"}')
    args = ["call", "--agent", "fixture", "--role", "architect", "--payload", str(bad)]
    result = _invoke([*args, "--cwd", str(trial)])
    assert result.exit_code == 2
    assert "duplicate key" in result.stderr


def test_call_refuses_a_payload_for_another_role(trial, tmp_path):
    payload = str(_payload_file(tmp_path))
    args = ["call", "--agent", "fixture", "--role", "author", "--payload", payload]
    result = _invoke([*args, "--cwd", str(trial)])
    assert result.exit_code == 2
    assert "expected 'author'" in result.stderr


def test_call_with_an_adapter_name_uses_the_shipped_adapter(trial, tmp_path):
    bin_dir = tmp_path / "bin"
    output = json.dumps({"response": json.dumps(ANSWER)})
    record = install_standin(bin_dir, "gemini", output)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    payload = str(_payload_file(tmp_path))
    args = ["call", "--agent", "gemini", "--role", "architect", "--payload", payload]
    result = _invoke([*args, "--cwd", str(trial)], env=env)
    assert result.exit_code == 0, result.output
    assert record.exists()


def test_the_installed_program_runs_worker_call(trial, tmp_path):
    write_script(
        trial / "worker.py", f"import sys\nsys.stdin.read()\nprint({json.dumps(ANSWER)!r})\n"
    )
    lorelab = os.path.join(os.path.dirname(sys.executable), "lorelab")
    agent = json.dumps([sys.executable, "worker.py"])
    payload = str(_payload_file(tmp_path))
    args = ["call", "--agent", agent, "--role", "architect", "--payload", payload]
    completed = subprocess.run(
        [lorelab, "worker", *args, "--cwd", str(trial), "--timeout-ms", "30000"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["timeoutMs"] == 30000


@pytest.mark.parametrize("where", ["missing", "file"])
def test_response_out_in_a_missing_directory_is_refused_before_the_call(trial, tmp_path, where):
    ran = trial / "ran"
    write_script(
        trial / "worker.py",
        f"import sys\nsys.stdin.read()\nopen({str(ran)!r}, 'w').write('x')\n"
        f"print({json.dumps(ANSWER)!r})\n",
    )
    parent = tmp_path / "no-such-dir"
    if where == "file":
        parent.write_text("a file, not a directory")
    out = parent / "response.json"
    agent = json.dumps([sys.executable, "worker.py"])
    payload = str(_payload_file(tmp_path))
    args = ["call", "--agent", agent, "--role", "architect", "--payload", payload]
    result = _invoke([*args, "--cwd", str(trial), "--response-out", str(out)])
    assert result.exit_code == 2
    assert result.stdout == ""
    expected = "does not exist" if where == "missing" else "is not a directory"
    assert f"its directory {parent} {expected}" in result.stderr
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
    assert not ran.exists()


def test_a_response_file_that_cannot_be_written_after_the_call_keeps_the_receipt(trial, tmp_path):
    out = tmp_path / "response.json"
    # The worker itself creates the response file, so writing it after the call must fail.
    write_script(
        trial / "worker.py",
        f"import sys\nsys.stdin.read()\nopen({str(out)!r}, 'w').write('mine')\n"
        f"print({json.dumps(ANSWER)!r})\n",
    )
    agent = json.dumps([sys.executable, "worker.py"])
    payload = str(_payload_file(tmp_path))
    args = ["call", "--agent", agent, "--role", "architect", "--payload", payload]
    result = _invoke([*args, "--cwd", str(trial), "--response-out", str(out)])
    assert result.exit_code == 2
    receipt = json.loads(result.stdout)
    assert receipt["failure"] is None
    assert receipt["spawned"] is True
    assert "already exists" in result.stderr
    assert "Traceback" not in result.stderr
    assert out.read_text() == "mine"


def test_a_shell_worker_rewriting_its_script_during_the_call_exits_three(trial, tmp_path):
    (trial / "run2.sh").write_text(
        f"cat > /dev/null\necho '# appended' >> \"$0\"\necho '{json.dumps(ANSWER)}'\n"
    )
    payload = str(_payload_file(tmp_path))
    args = ["call", "--agent", '["bash", "run2.sh"]', "--role", "architect", "--payload", payload]
    result = _invoke([*args, "--cwd", str(trial)])
    receipt = json.loads(result.stdout)
    assert receipt["spawned"] is True
    assert receipt["exitCode"] == 0
    assert receipt["failure"] == "identity-changed"
    assert any("script 'run2.sh': content changed" in c for c in receipt["identityChanges"])
    assert result.exit_code == 3
    assert "# appended" in (trial / "run2.sh").read_text()


def test_identity_of_a_shell_worker_binds_its_script(trial):
    (trial / "run.sh").write_text("echo '{}'\n")
    result = _invoke(["identity", "--agent", '["bash", "run.sh"]', "--cwd", str(trial)])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert [(f["kind"], f["declared"]) for f in record["boundFiles"]] == [("script", "run.sh")]
    absent = _invoke(["identity", "--agent", '["bash", "absent.sh"]', "--cwd", str(trial)])
    assert absent.exit_code == 3
    assert "'absent.sh' is absent in the trial cwd" in absent.stderr


def test_identity_of_an_agent_adapter_binds_its_cli_or_says_it_is_not_bound(trial, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {"PATH": str(empty), "LORELAB_CODEX_BIN": ""}
    missing = _invoke(["identity", "--agent", "codex", "--cwd", str(trial)], env=env)
    assert missing.exit_code == 0, missing.output
    record = json.loads(missing.stdout)
    assert record["tool"]["bound"] is False
    assert any("codex executable" in item for item in record["verificationScope"]["notBound"])
    install_standin(tmp_path / "bin", "codex", "")
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}", "LORELAB_CODEX_BIN": ""}
    found = _invoke(["identity", "--agent", "codex", "--cwd", str(trial)], env=env)
    record = json.loads(found.stdout)
    assert record["tool"]["bound"] is True
    assert ("tool", "codex") in [(f["kind"], f["declared"]) for f in record["boundFiles"]]
