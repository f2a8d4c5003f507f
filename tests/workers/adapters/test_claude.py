"""The Claude Code adapter against a stand-in ``claude`` that prints the published result object.

The stand-in imitates ``claude -p --output-format json``: one JSON object with ``type: result``,
``subtype``, ``is_error``, ``result`` (the answer text), ``total_cost_usd``, ``usage`` (Anthropic
API token fields) and ``modelUsage`` (per-model usage).
"""

import json

from lorelab.workers import WorkerBounds, adapter_argv, bind_identity, build_prompt, call_worker
from tests.support.agent_outputs import result_object
from tests.support.workers import (
    architect_payload,
    env_with_path,
    host_payload,
    install_standin,
    reviewer_payload,
)

ANSWER = {"cases": [{"name": "upper", "intent": "clamp(5, 0, 3) == 3"}]}


def _call(trial, tmp_path, payload, stdout, exit_code=0, argv_extra=(), env_extra=None):
    bin_dir = tmp_path / "bin"
    record = install_standin(bin_dir, "claude", stdout, exit_code)
    env = {**env_with_path(bin_dir), **(env_extra or {})}
    argv = [*adapter_argv("claude"), *argv_extra]
    call = call_worker(
        argv, payload["role"], payload, cwd=trial, env=env, bounds=WorkerBounds(timeout_ms=30_000)
    )
    return call, record


def test_claude_runs_headless_with_the_role_prompt_on_stdin(trial, tmp_path):
    payload = architect_payload()
    call, record = _call(trial, tmp_path, payload, result_object(json.dumps(ANSWER)))
    assert call.ok, call.receipt.failure_detail
    seen = json.loads(record.read_text())
    assert seen["argv"][:3] == ["-p", "--output-format", "json"]
    assert "--disallowedTools" in seen["argv"]
    # No MCP server from the user's configuration reaches the worker.
    assert "--strict-mcp-config" in seen["argv"]
    assert "--mcp-config" not in seen["argv"]
    assert seen["cwd"] == str(trial)
    budget = {"maxOutputBytes": 65_536, "timeoutMs": 30_000}
    assert seen["stdin"] == build_prompt("architect", {**payload, "transportBudget": budget})
    assert call.response is not None
    assert call.response["cases"] == ANSWER["cases"]


def test_claude_usage_cost_and_model_are_reported(trial, tmp_path):
    call, _ = _call(trial, tmp_path, architect_payload(), result_object(json.dumps(ANSWER)))
    receipt = call.receipt
    assert receipt.usage is not None
    assert receipt.usage.input_tokens == 12 + 3000 + 1200
    assert receipt.usage.output_tokens == 150
    assert receipt.usage.cost_usd == 0.0123
    assert receipt.model.claimed == "claude-sonnet-4-5-20250929"
    assert receipt.model.verified is None


def test_claude_usage_absent_from_the_result_stays_null(trial, tmp_path):
    stdout = result_object(json.dumps(ANSWER), usage=None, total_cost_usd=None, modelUsage=None)
    call, _ = _call(trial, tmp_path, architect_payload(), stdout)
    assert call.ok
    assert call.receipt.usage is None
    assert call.receipt.model.claimed is None


def test_an_absurd_cost_from_claude_is_unknown_and_the_answer_still_counts(trial, tmp_path):
    # An integer no float can hold: the adapter once crashed (OverflowError) on it.
    stdout = result_object(json.dumps(ANSWER)).replace(
        '"total_cost_usd": 0.0123', '"total_cost_usd": 1' + "0" * 400
    )
    call, _ = _call(trial, tmp_path, architect_payload(), stdout)
    assert call.ok, call.receipt.failure_detail
    assert call.receipt.usage is not None
    assert call.receipt.usage.cost_usd is None
    assert call.receipt.usage.output_tokens == 150


def test_claude_answer_in_a_json_fence_is_accepted(trial, tmp_path):
    text = "```json\n" + json.dumps(ANSWER) + "\n```"
    call, _ = _call(trial, tmp_path, architect_payload(), result_object(text))
    assert call.ok
    assert call.response is not None
    assert call.response["cases"] == ANSWER["cases"]


def test_claude_prose_answer_fails_but_keeps_the_usage(trial, tmp_path):
    call, _ = _call(
        trial, tmp_path, architect_payload(), result_object("I think we should test it.")
    )
    receipt = call.receipt
    assert receipt.failure == "nonzero-exit"
    assert "invalid-answer" in (receipt.failure_detail or "")
    assert receipt.usage is not None
    assert receipt.usage.cost_usd == 0.0123


def test_claude_error_result_fails_the_call(trial, tmp_path):
    stdout = result_object("API Error: overloaded", subtype="error_during_execution", is_error=True)
    call, _ = _call(trial, tmp_path, architect_payload(), stdout, exit_code=1)
    assert call.receipt.failure == "nonzero-exit"
    assert "agent-error" in (call.receipt.failure_detail or "")
    assert "overloaded" in (call.receipt.failure_detail or "")


def test_claude_model_claims_in_the_answer_are_dropped(trial, tmp_path):
    text = json.dumps({**ANSWER, "model": "gpt-9", "evidenceKind": "protocol-fixture"})
    call, _ = _call(trial, tmp_path, architect_payload(), result_object(text))
    assert call.ok
    assert call.receipt.model.claimed == "claude-sonnet-4-5-20250929"
    assert call.receipt.evidence_kind is None


def test_claude_host_may_edit_and_run_commands(trial, tmp_path):
    answer = {"summary": "fixed", "commands": [{"command": "pytest -q", "exitCode": 0}]}
    call, record = _call(trial, tmp_path, host_payload(), result_object(json.dumps(answer)))
    assert call.ok
    argv = json.loads(record.read_text())["argv"]
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"


def test_claude_model_option_is_passed_and_recorded_as_requested(trial, tmp_path):
    answer = {"verdict": "approve", "reasons": []}
    call, record = _call(
        trial,
        tmp_path,
        reviewer_payload(),
        result_object(json.dumps(answer)),
        argv_extra=("--model", "opus"),
    )
    assert call.ok
    argv = json.loads(record.read_text())["argv"]
    assert argv[argv.index("--model") + 1] == "opus"


def test_claude_executable_can_come_from_the_environment_variable(trial, tmp_path):
    other = tmp_path / "elsewhere"
    record = install_standin(other, "claude-custom", result_object(json.dumps(ANSWER)))
    call, default_record = _call(
        trial,
        tmp_path,
        architect_payload(),
        "not used",
        env_extra={"LORELAB_CLAUDE_BIN": str(other / "claude-custom")},
    )
    assert call.ok
    assert record.exists()
    assert not default_record.exists()


def test_a_missing_claude_cli_fails_with_a_clear_reason(trial, tmp_path):
    call, _ = _call(
        trial,
        tmp_path,
        architect_payload(),
        "",
        env_extra={"LORELAB_CLAUDE_BIN": str(tmp_path / "no-such-claude")},
    )
    assert call.receipt.failure == "nonzero-exit"
    assert "tool-missing" in (call.receipt.failure_detail or "")
    assert "LORELAB_CLAUDE_BIN" in (call.receipt.failure_detail or "")


def test_a_claude_cli_changed_during_the_call_is_caught_by_the_identity(trial, tmp_path):
    bin_dir = tmp_path / "bin"
    install_standin(bin_dir, "claude", result_object(json.dumps(ANSWER)))
    standin = bin_dir / "claude"
    # The stand-in rewrites itself after answering, as an auto-updating CLI might.
    standin.write_text(
        standin.read_text().replace("sys.exit(", "open(__file__, 'a').write('#')\nsys.exit(")
    )
    env = env_with_path(bin_dir)
    env.pop("LORELAB_CLAUDE_BIN", None)
    argv = adapter_argv("claude")
    identity = bind_identity(argv, cwd=trial, operator_identity=None, env=env)
    assert identity.tool is not None
    assert identity.tool.path == str(standin)
    call = call_worker(
        argv,
        "architect",
        architect_payload(),
        cwd=trial,
        env=env,
        identity=identity,
        bounds=WorkerBounds(timeout_ms=30_000),
    )
    assert call.receipt.failure == "identity-changed"
    assert "tool 'claude': content changed" in " ".join(call.receipt.identity_changes)


def test_the_adapter_runs_the_claude_the_identity_bound(trial, tmp_path):
    bound = install_standin(tmp_path / "bin", "claude", result_object(json.dumps(ANSWER)))
    # A relative --bin resolves against the trial cwd, for the binder and the adapter alike.
    local = install_standin(trial / "tools", "claude", result_object(json.dumps(ANSWER)))
    env = env_with_path(tmp_path / "bin")
    env.pop("LORELAB_CLAUDE_BIN", None)
    argv = [*adapter_argv("claude"), "--bin", "tools/claude"]
    identity = bind_identity(argv, cwd=trial, operator_identity=None, env=env)
    assert identity.tool is not None
    assert identity.tool.path == str(trial / "tools" / "claude")
    call = call_worker(
        argv,
        "architect",
        architect_payload(),
        cwd=trial,
        env=env,
        identity=identity,
        bounds=WorkerBounds(timeout_ms=30_000),
    )
    assert call.ok, call.receipt.failure_detail
    assert local.exists()
    assert not bound.exists()
