"""Whole learning runs with the openai adapter against recorded replies of a real server:
a server that is down, a 500 mid-run, a model that changes between calls, a planted key."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from lorelab.evaluation.learning import get_dataset
from lorelab.evaluation.learning.controller import LearningRequest, run_learning
from lorelab.evaluation.learning.manifest import LearningManifest
from lorelab.testing.openai_server import ReplayServer, Reply
from lorelab.workers import WorkerBounds
from tests.support.openai import distinct_architect, exchange, openai_argv, with_content

PLANTED_KEY = "sk-planted-0123456789abcdefFEDCBA9876543210"
NORMALIZE_TEST = (
    "from src.normalize import normalize\n\n\n"
    "def test_collapses_spaces():\n"
    '    assert normalize("  Hello   World ") == "hello world"\n'
)


def _one_spec() -> LearningManifest:
    manifest = get_dataset("default")
    fixture = manifest.fixtures[0].model_copy(update={"defects": manifest.fixtures[0].defects[:1]})
    return manifest.model_copy(update={"fixtures": [fixture]})


def _request(base_url: str, *extra: str) -> LearningRequest:
    return LearningRequest(
        manifest=_one_spec(),
        dataset="test",
        agent=tuple(openai_argv(base_url, *extra)),
        repeat=1,
        seed=5,
        stability_runs=2,
        bounds=WorkerBounds(timeout_ms=30_000),
    )


def _trials(out: Path) -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted((out / "trials").iterdir())]


def _good_trial(model: str | None = None) -> list[Reply]:
    """Architect, author and reviewer replies: recorded ones, the author's with a real test."""
    author = json.dumps({"files": [{"path": "tests/test_normalize.py", "content": NORMALIZE_TEST}]})
    approve = json.dumps({"verdict": "approve", "reasons": []})
    return [
        distinct_architect(model)[0],
        with_content(exchange("author", "llama-cpp"), author, model=model),
        with_content(exchange("reviewer", "llama-cpp"), approve, model=model),
    ]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_server_that_is_down_stops_the_run_before_anything_with_one_line_and_exit_2(tmp_path):
    out = tmp_path / "out"
    base_url = f"http://127.0.0.1:{_closed_port()}/v1"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "lorelab",
            "eval",
            "learning",
            "run",
            "--dataset",
            "default",
            "--repeat",
            "1",
            "--agent",
            "openai",
            "--model",
            "m",
            "--base-url",
            base_url,
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert f"--base-url {base_url} cannot be reached" in lines[0]
    assert "Traceback" not in completed.stderr
    assert not out.exists()


def test_endpoint_options_for_a_worker_that_is_not_openai_are_refused(tmp_path):
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "lorelab",
            "eval",
            "learning",
            "run",
            "--dataset",
            "default",
            "--agent",
            "fixture",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--output",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 2
    assert "apply only to the openai adapter" in completed.stderr


def test_a_500_mid_run_fails_that_trial_and_keeps_it_in_the_record(tmp_path):
    refused = exchange("architect", "json_schema")
    replies = [*_good_trial(), distinct_architect()[0]]
    replies.append(Reply.recorded(refused))
    out = tmp_path / "out"
    with ReplayServer(replies) as server:
        outcome = run_learning(_request(server.base_url), out)
    trials = _trials(out)
    assert len(trials) == 2
    failed = [
        t
        for t in trials
        if any("HTTP 500" in (r["failureDetail"] or "") for r in t["generation"]["roles"])
    ]
    assert len(failed) == 1
    roles = failed[0]["generation"]["roles"]
    refused_call = next(r for r in roles if "HTTP 500" in (r["failureDetail"] or ""))
    assert refused_call["failure"] == "nonzero-exit"
    assert roles[0]["failure"] is None
    assert failed[0]["status"] == "failed"
    assert outcome.exit_code == 1


def test_a_model_that_changes_between_calls_makes_the_trial_identity_changed(tmp_path):
    replies = _good_trial()
    replies[2] = with_content(
        exchange("reviewer", "llama-cpp"),
        json.dumps({"verdict": "approve", "reasons": []}),
        model="another-model.gguf",
    )
    out = tmp_path / "out"
    with ReplayServer([*replies, *_good_trial()]) as server:
        run_learning(_request(server.base_url), out)
    trials = _trials(out)
    changed = [t for t in trials if t["status"] == "invalid"]
    assert len(changed) == 1
    assert changed[0]["reason"].startswith("identity-changed: reviewer: the server named model")
    assert "another-model.gguf" in changed[0]["reason"]
    assert any("another-model.gguf" in line for line in changed[0]["identityChecks"])
    untouched = next(t for t in trials if t is not changed[0])
    assert untouched["status"] != "invalid" or "identity" not in (untouched["reason"] or "")


def test_a_planted_key_reaches_no_receipt_log_or_error_message(tmp_path):
    out = tmp_path / "out"
    manifest = tmp_path / "one-spec.json"
    manifest.write_text(_one_spec().model_dump_json(by_alias=True))
    os.environ["OPENAI_API_KEY"] = PLANTED_KEY
    try:
        with ReplayServer([*_good_trial()[:1]], echo_authorization=True) as server:
            base_url = server.base_url
            completed = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "lorelab",
                    "eval",
                    "learning",
                    "run",
                    "--fixtures",
                    str(manifest),
                    "--repeat",
                    "1",
                    "--agent",
                    "openai",
                    "--model",
                    "smollm2-135m-instruct",
                    "--base-url",
                    base_url,
                    "--schema-dialect",
                    "llama-cpp",
                    "--output",
                    str(out),
                ],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            seen = server.requests
    finally:
        del os.environ["OPENAI_API_KEY"]
    # The key went to the server with the completions only, never with the preflight.
    assert seen[0].method == "GET"
    assert "Authorization" not in seen[0].headers
    assert any(r.headers.get("Authorization") == f"Bearer {PLANTED_KEY}" for r in seen[1:])
    # The server echoed it back in its error replies; nothing lorelab wrote holds it.
    assert completed.returncode == 1
    for text in (completed.stdout, completed.stderr):
        assert PLANTED_KEY not in text
        assert PLANTED_KEY[-8:] not in text
    written = [path for path in out.rglob("*") if path.is_file()]
    assert written
    for path in written:
        data = path.read_bytes()
        assert PLANTED_KEY.encode() not in data, path
        assert PLANTED_KEY[-8:].encode() not in data, path
    details = [
        role["failureDetail"]
        for trial in _trials(out)
        for role in trial["generation"]["roles"]
        if role["failureDetail"]
    ]
    assert any("rejected credentials Bearer [key]" in detail for detail in details)
