"""The Gemini adapter against a stand-in ``gemini`` printing ``--output-format json`` output.

The stand-in imitates Gemini CLI's headless JSON output: one object with ``response`` (the
answer), ``stats`` (``models`` with per-model ``api`` and ``tokens {prompt, candidates, total,
cached, thoughts, tool}``, ``tools``, ``files``) and, when the request failed, ``error``.
"""

import json

from lorelab.workers import WorkerBounds, adapter_argv, build_prompt, call_worker
from tests.support.workers import architect_payload, env_with_path, host_payload, install_standin

ANSWER = {"cases": [{"name": "upper", "intent": "clamp(5, 0, 3) == 3"}]}
STATS = {
    "models": {
        "gemini-2.5-pro": {
            "api": {"totalRequests": 2, "totalErrors": 0, "totalLatencyMs": 5053},
            "tokens": {
                "prompt": 24939,
                "candidates": 20,
                "total": 25113,
                "cached": 21263,
                "thoughts": 154,
                "tool": 0,
            },
        },
        "gemini-2.5-flash": {
            "api": {"totalRequests": 1, "totalErrors": 0, "totalLatencyMs": 400},
            "tokens": {
                "prompt": 500,
                "candidates": 10,
                "total": 520,
                "cached": 0,
                "thoughts": 10,
                "tool": 0,
            },
        },
    },
    "tools": {
        "totalCalls": 0,
        "totalSuccess": 0,
        "totalFail": 0,
        "totalDurationMs": 0,
        "totalDecisions": {"accept": 0, "reject": 0, "modify": 0, "auto_accept": 0},
        "byName": {},
    },
    "files": {"totalLinesAdded": 0, "totalLinesRemoved": 0},
}


def _call(trial, tmp_path, payload, stdout, exit_code=0):
    bin_dir = tmp_path / "bin"
    record = install_standin(bin_dir, "gemini", stdout, exit_code)
    env = env_with_path(bin_dir)
    argv = adapter_argv("gemini")
    call = call_worker(
        argv, payload["role"], payload, cwd=trial, env=env, bounds=WorkerBounds(timeout_ms=30_000)
    )
    return call, json.loads(record.read_text())


def test_gemini_runs_headless_json_with_the_role_prompt_on_stdin(trial, tmp_path):
    payload = architect_payload()
    output = json.dumps({"response": json.dumps(ANSWER), "stats": STATS})
    call, seen = _call(trial, tmp_path, payload, output)
    assert call.ok, call.receipt.failure_detail
    assert seen["argv"][0] == "-p"
    assert seen["argv"][2:4] == ["--output-format", "json"]
    assert "--approval-mode" not in seen["argv"]
    # No configured MCP server or extension reaches the worker.
    names = seen["argv"].index("--allowed-mcp-server-names")
    assert seen["argv"][names + 1] == "lorelab-none"
    assert seen["argv"][seen["argv"].index("--extensions") + 1] == "none"
    budget = {"maxOutputBytes": 65_536, "timeoutMs": 30_000}
    assert seen["stdin"] == build_prompt("architect", {**payload, "transportBudget": budget})
    assert call.response is not None
    assert call.response["cases"] == ANSWER["cases"]


def test_gemini_tokens_are_summed_over_models_and_cost_stays_null(trial, tmp_path):
    output = json.dumps({"response": json.dumps(ANSWER), "stats": STATS})
    call, _ = _call(trial, tmp_path, architect_payload(), output)
    usage = call.receipt.usage
    assert usage is not None
    assert usage.input_tokens == 24939 + 500
    assert usage.output_tokens == 20 + 154 + 10 + 10
    assert usage.cost_usd is None
    assert call.receipt.model.claimed == "gemini-2.5-pro"


def test_gemini_without_stats_reports_no_usage(trial, tmp_path):
    call, _ = _call(
        trial, tmp_path, architect_payload(), json.dumps({"response": json.dumps(ANSWER)})
    )
    assert call.ok
    assert call.receipt.usage is None


def test_gemini_log_lines_before_the_json_are_tolerated(trial, tmp_path):
    output = "Loaded cached credentials.\n" + json.dumps(
        {"response": json.dumps(ANSWER), "stats": STATS}
    )
    call, _ = _call(trial, tmp_path, architect_payload(), output)
    assert call.ok


def test_gemini_error_object_fails_the_call(trial, tmp_path):
    output = json.dumps({"error": {"type": "ApiError", "message": "Quota exceeded", "code": 429}})
    call, _ = _call(trial, tmp_path, architect_payload(), output, exit_code=1)
    assert call.receipt.failure == "nonzero-exit"
    assert "Quota exceeded" in (call.receipt.failure_detail or "")


def test_gemini_host_may_edit_files_in_the_trial_dir(trial, tmp_path):
    answer = {"summary": "edited src/clamp.py", "commands": []}
    output = json.dumps({"response": json.dumps(answer), "stats": STATS})
    call, seen = _call(trial, tmp_path, host_payload(), output)
    assert call.ok
    assert seen["argv"][seen["argv"].index("--approval-mode") + 1] == "auto_edit"
