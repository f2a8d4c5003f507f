"""The Codex adapter against a stand-in ``codex`` that prints ``codex exec --json`` JSONL events.

The stand-in imitates the published event stream of ``codex exec --json``: ``thread.started``,
``turn.started``, ``item.started``/``item.completed`` with ``reasoning``, ``command_execution``
and ``agent_message`` items, then ``turn.completed`` with ``usage {input_tokens,
cached_input_tokens, output_tokens}`` (or ``turn.failed`` / ``error``).
"""

import json

from lorelab.workers import WorkerBounds, adapter_argv, build_prompt, call_worker
from tests.support.agent_outputs import jsonl
from tests.support.workers import architect_payload, env_with_path, host_payload, install_standin

ANSWER = {"cases": [{"name": "upper", "intent": "clamp(5, 0, 3) == 3"}]}


def _call(trial, tmp_path, payload, stdout, exit_code=0):
    bin_dir = tmp_path / "bin"
    record = install_standin(bin_dir, "codex", stdout, exit_code)
    env = env_with_path(bin_dir)
    argv = adapter_argv("codex")
    call = call_worker(
        argv, payload["role"], payload, cwd=trial, env=env, bounds=WorkerBounds(timeout_ms=30_000)
    )
    return call, json.loads(record.read_text()) if record.exists() else None


def test_codex_exec_runs_json_read_only_in_the_trial_dir_with_the_prompt_on_stdin(trial, tmp_path):
    payload = architect_payload()
    call, seen = _call(trial, tmp_path, payload, jsonl(json.dumps(ANSWER)))
    assert call.ok, call.receipt.failure_detail
    assert seen["argv"] == [
        "exec",
        "--json",
        "--sandbox",
        "read-only",
        "-C",
        str(trial),
        "--skip-git-repo-check",
        "--ephemeral",
        "-",
    ]
    budget = {"maxOutputBytes": 65_536, "timeoutMs": 30_000}
    assert seen["stdin"] == build_prompt("architect", {**payload, "transportBudget": budget})
    assert call.response is not None
    assert call.response["cases"] == ANSWER["cases"]


def test_codex_answer_is_the_last_agent_message_and_usage_comes_from_turn_completed(
    trial, tmp_path
):
    call, _ = _call(trial, tmp_path, architect_payload(), jsonl(json.dumps(ANSWER)))
    receipt = call.receipt
    assert receipt.usage is not None
    assert receipt.usage.input_tokens == 24763
    assert receipt.usage.output_tokens == 122
    assert receipt.usage.cost_usd is None
    assert receipt.model.claimed is None


def test_codex_without_turn_completed_reports_no_usage(trial, tmp_path):
    call, _ = _call(trial, tmp_path, architect_payload(), jsonl(json.dumps(ANSWER), usage=False))
    assert call.ok
    assert call.receipt.usage is None


def test_codex_host_writes_in_the_trial_dir_and_reports_codex_own_commands(trial, tmp_path):
    answer = {"summary": "fixed it", "commands": [{"command": "rm -rf /", "exitCode": 0}]}
    call, seen = _call(trial, tmp_path, host_payload(), jsonl(json.dumps(answer)))
    assert call.ok, call.receipt.failure_detail
    assert seen["argv"][seen["argv"].index("--sandbox") + 1] == "workspace-write"
    assert call.response is not None
    assert call.response["commands"] == [{"command": "bash -lc 'pytest -q'", "exitCode": 0}]
    assert call.response["summary"] == "fixed it"


def test_codex_turn_failed_fails_the_call_with_its_message(trial, tmp_path):
    call, _ = _call(trial, tmp_path, architect_payload(), jsonl(json.dumps(ANSWER), failed=True), 1)
    assert call.receipt.failure == "nonzero-exit"
    assert "stream disconnected" in (call.receipt.failure_detail or "")


def test_codex_non_json_answer_fails_and_keeps_the_usage(trial, tmp_path):
    call, _ = _call(trial, tmp_path, architect_payload(), jsonl("Here are my cases: upper."))
    assert call.receipt.failure == "nonzero-exit"
    assert "invalid-answer" in (call.receipt.failure_detail or "")
    assert call.receipt.usage is not None
    assert call.receipt.usage.output_tokens == 122
