"""The agent adapters answer the ``dreamer`` role read-only, with the shared role prompt.

Same stand-in approach as the adapters' own tests: an executable named like the agent CLI,
first on PATH, records its argv and stdin and prints what the real CLI prints.
"""

import json

from lorelab.workers import WorkerBounds, adapter_argv, bind_identity, build_prompt, call_worker
from tests.support.agent_outputs import jsonl, result_object
from tests.support.workers import dreamer_payload, env_with_path, install_standin

ANSWER = {
    "candidates": [
        {
            "name": "verify-pytest-q",
            "description": "Run the suite the two fixes shared.",
            "steps": ["ruff check .", "pytest -q"],
            "checks": [{"command": "pytest -q", "expectedExitCode": 0}],
            "sourceExperienceIds": ["exp-2", "exp-1"],
        }
    ]
}


def test_claude_answers_a_dreamer_without_edit_or_shell_tools(trial, tmp_path):
    bin_dir = tmp_path / "bin"
    record = install_standin(bin_dir, "claude", result_object(json.dumps(ANSWER)))
    env = env_with_path(bin_dir)
    argv = adapter_argv("claude")
    payload = dreamer_payload()
    identity = bind_identity(argv, cwd=trial, operator_identity=None, env=env)
    call = call_worker(
        argv,
        "dreamer",
        payload,
        cwd=trial,
        env=env,
        bounds=WorkerBounds(timeout_ms=30_000),
        identity=identity,
    )
    assert call.ok, call.receipt.failure_detail
    assert call.response is not None
    assert call.response["candidates"] == ANSWER["candidates"]
    assert call.receipt.model.claimed == "claude-sonnet-4-5-20250929"
    seen = json.loads(record.read_text())
    tools = seen["argv"][seen["argv"].index("--disallowedTools") + 1].split(",")
    assert {"Bash", "Edit", "Write"} <= set(tools)
    assert "--permission-mode" not in seen["argv"]
    budget = {"maxOutputBytes": 65_536, "timeoutMs": 30_000}
    assert seen["stdin"] == build_prompt("dreamer", {**payload, "transportBudget": budget})


def test_claude_dreamer_answer_over_max_candidates_is_an_invalid_response(trial, tmp_path):
    bin_dir = tmp_path / "bin"
    two = {"candidates": ANSWER["candidates"] * 2}
    install_standin(bin_dir, "claude", result_object(json.dumps(two)))
    call = call_worker(
        adapter_argv("claude"),
        "dreamer",
        dreamer_payload(max_candidates=1),
        cwd=trial,
        env=env_with_path(bin_dir),
        bounds=WorkerBounds(timeout_ms=30_000),
    )
    assert call.receipt.failure == "invalid-response"
    assert "maxCandidates 1" in (call.receipt.failure_detail or "")
    assert call.response is None


def test_codex_runs_a_dreamer_in_a_read_only_sandbox(trial, tmp_path):
    bin_dir = tmp_path / "bin"
    record = install_standin(bin_dir, "codex", jsonl(json.dumps(ANSWER)))
    call = call_worker(
        adapter_argv("codex"),
        "dreamer",
        dreamer_payload(),
        cwd=trial,
        env=env_with_path(bin_dir),
        bounds=WorkerBounds(timeout_ms=30_000),
    )
    assert call.ok, call.receipt.failure_detail
    argv = json.loads(record.read_text())["argv"]
    assert argv[argv.index("--sandbox") + 1] == "read-only"
    assert call.response is not None
    assert "commands" not in call.response
