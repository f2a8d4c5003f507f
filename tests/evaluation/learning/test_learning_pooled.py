"""``lorelab eval learning pool RUN...``: the pairs of several verified runs labelled together by
the summary's own rule; runs that do not verify or cannot be pooled are refused (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app


def _lorelab(*args: str):
    return CliRunner().invoke(app, ["eval", "learning", *args])


def _run(output: Path, dataset: str) -> Path:
    result = _lorelab(
        "run",
        "--output",
        str(output),
        "--agent",
        "fixture",
        "--dataset",
        dataset,
        "--repeat",
        "1",
        "--seed",
        "5",
        "--control",
        "placebo",
    )
    assert result.exit_code == 0, result.stderr
    return output


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("pool")
    return _run(root / "a", "default"), _run(root / "b", "qualification")


def test_two_runs_pool_their_specifications_into_one_sign_test(runs):
    result = _lorelab("pool", "--json", *map(str, runs))
    assert result.exit_code == 0, result.stderr
    pooled = json.loads(result.stdout)
    assert pooled["specifications"] == 9
    units = [pair["specification"] for pair in pooled["paired"]["specs"]]
    assert units[:3] == ["normalize", "dedupe", "interval-overlap"]
    assert len(set(units)) == 9
    per_run = [json.loads((run / "summary.json").read_text()) for run in runs]
    for comparison in ("paired", "pairedPlacebo"):
        test = pooled[comparison]["signTest"]
        counts = [summary[comparison]["signTest"] for summary in per_run]
        for key in ("positive", "negative", "ties"):
            assert test[key] == sum(count[key] for count in counts)
        assert pooled[comparison]["label"] == "not-evidence"  # fixture runs stay fixture runs
    assert [run["label"] for run in pooled["runs"]] == [
        summary["paired"]["label"] for summary in per_run
    ]


def test_a_run_that_does_not_verify_is_refused_naming_it(runs, tmp_path):
    changed = tmp_path / "b"
    shutil.copytree(runs[1], changed)
    trial = sorted((changed / "trials").iterdir())[0]
    trial.write_bytes(trial.read_bytes().replace(b'"repetition": 1', b'"repetition": 2', 1))
    result = _lorelab("pool", str(runs[0]), str(changed))
    assert result.exit_code == 2
    assert f"{changed}: does not verify (trials/{trial.name}: SHA-256" in result.stderr


def test_the_same_specification_in_two_runs_is_refused(runs):
    result = _lorelab("pool", str(runs[0]), str(runs[0]))
    assert result.exit_code == 2
    assert "specification 'normalize' is also in" in result.stderr


def test_one_run_is_not_a_pool(runs):
    result = _lorelab("pool", str(runs[0]))
    assert result.exit_code == 2
    assert "at least two run directories" in result.stderr
