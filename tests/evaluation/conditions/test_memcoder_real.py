"""Opt-in: the same whole run as the stand-in's, against a real MemCoder install.

Skipped unless ``LORELAB_MEMCODER_PYTHON`` names the interpreter of a MemCoder install
(``memcoder==0.3.3b1``; its server is ``python -m adapters.mcp.server``). MemCoder loads its
embedding model ``BAAI/bge-small-en-v1.5`` through Hugging Face: the test runs it with
``HF_HUB_OFFLINE=1`` and passes ``HF_HOME`` on when set, so the model must be in that cache.
Each run gets its own fresh ``MEMCODER_DB_PATH``. CI does not set the variable.
"""

import json
import os
from pathlib import Path

import pytest

from lorelab.testing.memcoder import check_memcoder_row
from tests.support.conditions import run_mini

PYTHON = os.environ.get("LORELAB_MEMCODER_PYTHON")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not PYTHON, reason="LORELAB_MEMCODER_PYTHON names no MemCoder install"),
]


def _memcoder_argv(base: Path) -> list[str]:
    env = ["HF_HUB_OFFLINE=1", f"MEMCODER_DB_PATH={base / 'memcoder-home' / 'chroma_db'}"]
    if os.environ.get("HF_HOME"):
        env.append(f"HF_HOME={os.environ['HF_HOME']}")
    return ["env", *env, str(PYTHON), "-m", "adapters.mcp.server"]


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("memcoder-real")
    return run_mini(base, _memcoder_argv(base))


def _read(run, name):
    return json.loads((run["output"] / name).read_text())


def test_a_real_memcoder_run_completes_with_no_memory_failure(real_run):
    assert real_run["run"].exit_code == 0, real_run["run"].output
    assert _read(real_run, "run.json")["memoryFailures"] == 0
    runs = _read(real_run, "beta2_runs.json")["runs"]
    assert len(runs) == 40
    assert all(
        run["plan_id"].startswith("plan_") for run in runs if run["condition"] == "skill_planned"
    )
    for run in runs:
        check_memcoder_row(run)


def test_real_memcoder_seeding_captures_its_ids(real_run):
    ids = _read(real_run, "preflight.json")["seeding"]["ids"]
    assert set(ids) == {"exp-1", "exp-2", "skill-1"}
    assert all(value.startswith("mem_") for value in ids.values())


def test_real_memcoder_dreams_are_checked_by_the_runner(real_run):
    dream = _read(real_run, "dream.json")
    assert dream["toolErrors"] == 0
    for check in dream["checks"]:
        assert check.get("error") or check["results"]


def test_real_memcoder_finalize_and_evaluate(real_run):
    assert real_run["finalize"].exit_code == 0, real_run["finalize"].output
    finalize = _read(real_run, "finalize.json")
    assert finalize["errors"] == []
    assert finalize["unsupportedOperations"]
    report = json.loads(real_run["evaluate"].output)
    assert report["decision"]["verdict"]
