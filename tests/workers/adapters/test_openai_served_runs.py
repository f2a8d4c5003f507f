"""Whole runs against a server whose served model is not the one declared: refused at
preflight in one line (exit 2, nothing written), or, when it changes mid-run, the trial is
``identity-changed`` with the reason, never an invalid answer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lorelab.evaluation.learning.controller import run_learning
from lorelab.testing.openai_server import ReplayServer
from tests.workers.adapters.test_openai_runs import _good_trial, _request, _trials

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "conditions"
RENAMED = "smollm2-RENAMED"


def _lorelab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lorelab", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _endpoint(base_url: str) -> list[str]:
    return ["--model", RENAMED, "--base-url", base_url, "--schema-dialect", "llama-cpp"]


def test_a_renamed_model_is_refused_before_a_learning_run_in_one_line(tmp_path):
    out = tmp_path / "out"
    with ReplayServer([]) as server:
        done = _lorelab(
            "eval", "learning", "run", "--dataset", "default", "--repeat", "1",
            "--agent", "openai", *_endpoint(server.base_url), "--output", str(out),
        )  # fmt: skip
        completions = server.completions
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"--model {RENAMED!r} is not served by" in lines[0]
    assert "smollm2-135m-instruct" in lines[0]
    assert not out.exists()
    assert completions == []


def test_a_renamed_model_is_refused_before_a_conditions_run_in_one_line(tmp_path):
    out = tmp_path / "out"
    with ReplayServer([]) as server:
        done = _lorelab(
            "eval", "conditions", "run", "--manifest", str(EXAMPLE / "conditions.json"),
            "--host", "openai", *_endpoint(server.base_url), "--output", str(out),
            "--home", str(tmp_path / "home"),
            "--seed-memory", str(EXAMPLE / "memory_seed.json"),
        )  # fmt: skip
        completions = server.completions
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"--model {RENAMED!r} is not served by" in lines[0]
    assert not out.exists()
    assert completions == []


def test_a_server_restarted_with_another_model_mid_run_makes_the_trial_identity_changed(
    tmp_path,
):
    # After the first answer the server lists another model (a restart without the alias):
    # llama-cpp-python still echoes the requested name, so only the binding can see it.
    restarted = {"object": "list", "data": [{"id": "/models/gemma-3-270m.gguf"}]}
    out = tmp_path / "out"
    with ReplayServer([*_good_trial(), *_good_trial()], restart=(1, restarted, None)) as server:
        outcome = run_learning(_request(server.base_url), out)
    trials = _trials(out)
    assert {t["status"] for t in trials} == {"invalid"}
    for trial in trials:
        assert trial["reason"].startswith("identity-changed"), trial["reason"]
        assert "invalid answer" not in trial["reason"]
    assert any("is not served" in line for t in trials for line in t["identityChecks"])
    assert outcome.exit_code == 1
    assert f"{len(trials)} refused (identity-changed: " in outcome.message
