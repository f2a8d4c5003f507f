"""The evaluations that run untrusted code (the learning evaluation's reference suites and
generated tests, the conditions runner's verify commands) refuse to start without a working
sandbox, unless ``--allow-unsandboxed`` is given, and ``manifest.json`` records which (issue 40).

Each command runs as its own process, so the sandbox is probed afresh with bubblewrap hidden
(``LORELAB_BWRAP`` empty, the variable lorelab honours) or present (CI installs it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lorelab.evaluation.learning import get_dataset
from lorelab.io import pretty_json, probe_sandbox
from lorelab.io._sandbox import BWRAP_ENV
from tests.support.conditions import write_mini

TIMEOUT_S = 600
# A memory server that exits at once: the conditions run stops at its preflight (exit 3), after
# manifest.json was written and before any verify command ran.
DEAD_MEMORY = json.dumps([sys.executable, "-c", "raise SystemExit(1)"])


def _lorelab(*args: str, bwrap: str | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop(BWRAP_ENV, None)
    if bwrap is not None:
        env[BWRAP_ENV] = bwrap
    return subprocess.run(
        [sys.executable, "-m", "lorelab", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        check=False,
    )


def _one_spec(tmp_path: Path) -> Path:
    manifest = get_dataset("default")
    fixture = manifest.fixtures[0].model_copy(update={"defects": manifest.fixtures[0].defects[:1]})
    path = tmp_path / "one-spec.json"
    path.write_text(pretty_json(manifest.model_copy(update={"fixtures": [fixture]})))
    return path


def _learning(tmp_path: Path, output: Path, *extra: str, bwrap: str | None):
    return _lorelab(
        "eval", "learning", "run", "--agent", "fixture", "--output", str(output),
        "--fixtures", str(_one_spec(tmp_path)), "--repeat", "1", "--seed", "3",
        "--stability-runs", "2", *extra,
        bwrap=bwrap,
    )  # fmt: skip


def _conditions(tmp_path: Path, output: Path, *extra: str, bwrap: str | None):
    mini = write_mini(tmp_path)
    return _lorelab(
        "eval", "conditions", "run", "--manifest", str(mini["manifest"]),
        "--host", "fixture-host", "--output", str(output), "--memory-argv", DEAD_MEMORY, *extra,
        bwrap=bwrap,
    )  # fmt: skip


def _refused_in_one_line(done: subprocess.CompletedProcess[str], program: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"lorelab: error: {program}: no working sandbox on this machine")
    assert "apt-get install bubblewrap" in line
    assert "--allow-unsandboxed" in line


def test_the_learning_evaluation_without_a_sandbox_is_refused_and_writes_nothing(tmp_path):
    output = tmp_path / "out"
    done = _learning(tmp_path, output, bwrap="")
    _refused_in_one_line(done, "lorelab eval learning")
    assert not output.exists()


def test_the_conditions_runner_without_a_sandbox_is_refused_and_writes_nothing(tmp_path):
    output = tmp_path / "out"
    done = _conditions(tmp_path, output, bwrap="")
    _refused_in_one_line(done, "lorelab eval conditions run")
    assert not output.exists()


def test_allow_unsandboxed_runs_the_learning_evaluation_and_its_receipts_say_so(tmp_path):
    output = tmp_path / "out"
    done = _learning(tmp_path, output, "--allow-unsandboxed", bwrap="")
    assert done.returncode in (0, 1), done.stderr
    expected = {
        "sandbox": "none",
        "detail": "bubblewrap not found",
        "allowUnsandboxed": True,
        "unconfinedBecause": None,
    }
    manifest = json.loads((output / "manifest.json").read_text())
    assert manifest["settings"]["confinement"] == expected
    summary = json.loads((output / "summary.json").read_text())
    assert summary["controller"]["settings"]["confinement"] == expected
    trial = json.loads(next((output / "trials").glob("*.json")).read_text())
    runs = trial["validation"]["stability"]["runs"]
    assert runs
    assert {run["sandbox"] for run in runs} == {"none"}


def test_the_main_job_all_shipped_runs_without_a_sandbox_and_its_receipt_says_why(tmp_path):
    # Every role is the shipped protocol fixture and the dataset ships with lorelab: nothing
    # untrusted runs, so the README's main job works on a machine without bubblewrap.
    output = tmp_path / "out"
    done = _lorelab(
        "eval", "learning", "run", "--agent", "fixture", "--output", str(output),
        "--dataset", "default", "--repeat", "1", "--seed", "3", "--stability-runs", "2",
        bwrap="",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    confinement = json.loads((output / "manifest.json").read_text())["settings"]["confinement"]
    assert confinement["sandbox"] == "none"
    assert confinement["allowUnsandboxed"] is False
    assert "shipped protocol fixture" in confinement["unconfinedBecause"]
    assert "dataset default ships with lorelab" in confinement["unconfinedBecause"]


def test_a_shipped_dataset_with_another_worker_still_needs_a_sandbox(tmp_path):
    # The static reviewer is shipped, but the author is not the fixture: its tests are untrusted.
    author = json.dumps([sys.executable, "-c", "raise SystemExit(1)"])
    done = _lorelab(
        "eval", "learning", "run", "--agent", "fixture", "--author-agent", author,
        "--output", str(tmp_path / "out"), "--dataset", "default", "--repeat", "1",
        bwrap="",
    )  # fmt: skip
    _refused_in_one_line(done, "lorelab eval learning")
    assert not (tmp_path / "out").exists()


def test_allow_unsandboxed_lets_the_conditions_runner_start_and_manifest_json_says_so(tmp_path):
    output = tmp_path / "out"
    done = _conditions(tmp_path, output, "--allow-unsandboxed", bwrap="")
    assert done.returncode == 3, done.stderr  # the dead memory stops it at preflight
    confinement = json.loads((output / "manifest.json").read_text())["confinement"]
    assert confinement == {
        "sandbox": "none",
        "detail": "bubblewrap not found",
        "allowUnsandboxed": True,
        "unconfinedBecause": None,
    }


@pytest.mark.skipif(
    probe_sandbox().kind == "none",
    reason=f"no sandbox on this machine ({probe_sandbox().detail}); "
    "install it with: apt-get install bubblewrap",
)
def test_with_a_working_sandbox_the_receipt_records_it_and_no_allowance(tmp_path):
    output = tmp_path / "out"
    done = _conditions(tmp_path, output, bwrap=None)
    assert done.returncode == 3, done.stderr
    confinement = json.loads((output / "manifest.json").read_text())["confinement"]
    assert confinement["sandbox"] == probe_sandbox().kind
    assert confinement["allowUnsandboxed"] is False
