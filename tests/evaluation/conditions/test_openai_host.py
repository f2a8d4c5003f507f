"""The openai adapter as a conditions host: search/replace edits applied in the copy, the verify
command run after each edit, its output fed back, the cycles reported; replayed replies of a
real llama-cpp-python server (the recorded host exchange) with the answers scripted."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from lorelab.evaluation.conditions._one_run import _Attempts, _model_switched
from lorelab.testing.openai_server import ReplayServer, Reply
from lorelab.workers import EndpointOptions, adapter_argv, with_endpoint
from lorelab.workers.adapters.openai._host import relevant_files
from tests.support.openai import answer_text, call, exchange, openai_argv, with_content

BUGGY = "def clamp(x, lo, hi):\n    return max(lo, x)\n"
TEST = "from src.clamp import clamp\n\n\ndef test_upper():\n    assert clamp(5, 0, 3) == 3\n"
VERIFY = f"{sys.executable} -m pytest -q -p no:cacheprovider tests/test_clamp.py"
FIX = {
    "path": "src/clamp.py",
    "search": "return max(lo, x)",
    "replace": "return max(lo, min(x, hi))",
}
WRONG = {"path": "src/clamp.py", "search": "return max(lo, x)", "replace": "return min(lo, x)"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "copy"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "clamp.py").write_text(BUGGY)
    (root / "tests" / "test_clamp.py").write_text(TEST)
    (root / ".lorelab").mkdir()
    (root / ".lorelab" / "memory.txt").write_text("a memory the baseline must not see")
    return root


def _payload(guidance: dict | None = None) -> dict:
    return {
        "protocol": "lorelab.worker/1",
        "role": "host",
        "task": {
            "id": "clamp-upper",
            "prompt": "clamp in src/clamp.py ignores hi.",
            "verify": VERIFY,
        },
        "guidance": guidance,
        "attempt": 1,
        "lastVerification": {"command": VERIFY, "exitCode": 1, "outputTail": "1 failed"},
    }


def _edits(*edits: dict, model: str | None = None) -> Reply:
    content = json.dumps({"summary": "clamp the upper bound", "edits": list(edits)})
    return with_content(exchange("host", "llama-cpp"), content, model=model)


def test_the_host_applies_an_edit_runs_verify_and_reports_the_cycle(project):
    with ReplayServer([_edits(FIX)]) as server:
        result = call(openai_argv(server.base_url), _payload(), project)
        prompt = server.completions[-1].body["messages"][1]["content"]
    assert result.ok, result.receipt.failure_detail
    assert (project / "src" / "clamp.py").read_text() == BUGGY.replace(
        "max(lo, x)", "max(lo, min(x, hi))"
    )
    assert result.response["cycles"] == [
        {"edited": ["src/clamp.py"], "verification": {"command": VERIFY, "exitCode": 0}}
    ]
    assert result.response["commands"] == [{"command": VERIFY, "exitCode": 0}]
    assert "File src/clamp.py:" in prompt
    assert "memory the baseline must not see" not in prompt
    assert result.receipt.usage is not None


def test_a_failed_verify_is_fed_back_and_the_next_round_edits_again(project):
    undo = {
        "path": "src/clamp.py",
        "search": "return min(lo, x)",
        "replace": "return max(lo, min(x, hi))",
    }
    with ReplayServer([_edits(WRONG), _edits(undo)]) as server:
        result = call(openai_argv(server.base_url, "--host-attempts", "2"), _payload(), project)
        prompts = [r.body["messages"][1]["content"] for r in server.requests if r.method == "POST"]
    assert result.ok, result.receipt.failure_detail
    cycles = result.response["cycles"]
    assert [c["verification"]["exitCode"] for c in cycles] == [1, 0]
    assert "return min(lo, x)" in prompts[1]
    assert "assert" in prompts[1].split("Verification output")[1]


def test_an_edit_that_does_not_fit_is_refused_and_no_cycle_is_reported(project):
    absent = {"path": "src/clamp.py", "search": "return lo", "replace": "return hi"}
    outside = {"path": "../escape.py", "search": "", "replace": "x = 1"}
    with ReplayServer([_edits(absent, outside)]) as server:
        result = call(openai_argv(server.base_url, "--host-attempts", "1"), _payload(), project)
    assert result.ok, result.receipt.failure_detail
    assert result.response["cycles"] == []
    assert "occurs 0 times" in result.response["summary"]
    assert "not a file path inside the project" in result.response["summary"]
    assert (project / "src" / "clamp.py").read_text() == BUGGY
    assert not (project.parent / "escape.py").exists()


def test_the_baseline_prompt_carries_no_memory_and_a_memory_condition_its_guidance(project):
    brief = {"kind": "brief", "text": "Use min(x, hi) inside max."}
    with ReplayServer([_edits(FIX), _edits(FIX)]) as server:
        call(openai_argv(server.base_url), _payload(), project)
        (project / "src" / "clamp.py").write_text(BUGGY)
        call(openai_argv(server.base_url), _payload(brief), project)
        baseline, guided = [
            r.body["messages"][1]["content"] for r in server.requests if r.method == "POST"
        ]
    assert "Guidance from memory" not in baseline
    assert "Guidance from memory (brief):\nUse min(x, hi) inside max." in guided


def test_a_model_change_between_host_rounds_fails_the_call_as_identity_changed(project):
    with ReplayServer([_edits(WRONG, model="a.gguf"), _edits(FIX, model="b.gguf")]) as server:
        result = call(openai_argv(server.base_url, "--host-attempts", "2"), _payload(), project)
    assert result.receipt.failure == "nonzero-exit"
    assert "identity-changed" in result.receipt.failure_detail
    assert result.receipt.model.claimed == "a.gguf"


def test_a_runner_that_sees_a_second_model_marks_the_run_identity_changed():
    attempts = _Attempts()
    assert not _model_switched(attempts, "a.gguf")
    assert not _model_switched(attempts, "a.gguf")
    assert _model_switched(attempts, "b.gguf")
    assert attempts.failure == "identity-changed"
    assert "b.gguf" in attempts.failure_detail


def test_the_verify_command_the_host_runs_does_not_get_the_key(project):
    check = "import os, sys; sys.exit(1 if 'OPENAI_API_KEY' in os.environ else 0)"
    probe = f'{sys.executable} -c "{check}"'
    payload = _payload()
    payload["task"]["verify"] = probe
    env = {**os.environ, "OPENAI_API_KEY": "sk-planted-for-the-verify-probe"}
    with ReplayServer([_edits(FIX)]) as server:
        result = call(openai_argv(server.base_url), payload, project, env=env)
        sent = server.completions[-1]
    assert sent.headers["Authorization"] == "Bearer sk-planted-for-the-verify-probe"
    assert result.response["cycles"][0]["verification"]["exitCode"] == 0


def test_the_real_servers_placeholder_edit_is_refused_and_the_copy_left_as_it_was(project):
    item = exchange("host", "llama-cpp")
    # The grammar let a raw newline into a string; the 135M model copied the prompt's
    # placeholder edit, whose path names no file: refused, the copy left as it was.
    recorded = json.loads(answer_text(item), strict=False)
    assert [edit["path"] for edit in recorded["edits"]] == ["<file>"]
    with ReplayServer([Reply.recorded(item)]) as server:
        result = call(openai_argv(server.base_url, "--host-attempts", "1"), _payload(), project)
    assert result.ok, result.receipt.failure_detail
    assert "edit 1: <file> is not a text file of the project" in result.response["summary"]
    assert result.response["cycles"] == []
    assert (
        result.response["usage"]["inputTokens"]
        == item["response"]["body"]["usage"]["prompt_tokens"]
    )
    assert (project / "src" / "clamp.py").read_text() == BUGGY


def test_relevant_files_are_the_named_ones_best_first_within_the_byte_bound(project):
    (project / "src" / "other.py").write_text("x = 1\n" * 10)
    texts = ["fix clamp", "FAILED tests/test_clamp.py::test_upper - src/clamp.py:2"]
    files = relevant_files(project, texts, max_files=8, max_bytes=len(BUGGY) + len(TEST))
    assert [f.path for f in files] == ["src/clamp.py", "tests/test_clamp.py"]
    assert relevant_files(project, texts, max_files=8, max_bytes=len(BUGGY)) == files[:1]
    unnamed = relevant_files(project, ["nothing named"], max_files=8, max_bytes=10_000)
    assert [f.path for f in unnamed] == ["src/clamp.py", "src/other.py", "tests/test_clamp.py"]


def test_host_endpoint_options_are_appended_to_the_openai_argv_only():
    endpoint = EndpointOptions(model="m", base_url="http://127.0.0.1:8000/v1")
    assert with_endpoint(adapter_argv("openai"), endpoint)[-4:] == [
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:8000/v1",
    ]
    assert with_endpoint(adapter_argv("fixture-host"), endpoint) == adapter_argv("fixture-host")
