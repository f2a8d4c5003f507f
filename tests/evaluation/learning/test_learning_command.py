"""The learning evaluation's schedule, what `eval learning` refuses before it starts, and the
command end to end on each dataset."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.evaluation.learning import get_dataset
from lorelab.evaluation.learning.schedule import schedule


def test_same_seed_gives_the_same_schedule_and_different_seeds_differ():
    specs = [f"s{i}" for i in range(6)]
    assert schedule(specs, 3, 5) == schedule(specs, 3, 5)
    orders = {
        tuple((e.specification, e.arm) for e in schedule(specs, 3, seed)) for seed in range(8)
    }
    assert len(orders) > 1


def test_schedule_is_counterbalanced_across_repetitions():
    entries = schedule(["a", "b", "c"], 4, 3)
    for spec in "abc":
        firsts = [
            next(e.arm for e in entries if e.specification == spec and e.repetition == r)
            for r in range(1, 5)
        ]
        assert firsts == [firsts[0], firsts[1], firsts[0], firsts[1]]
        assert firsts[0] != firsts[1]
        assert sum(1 for e in entries if e.specification == spec) == 8
    assert [e.position for e in entries] == list(range(1, 25))


def _cli(*args: str):
    return CliRunner().invoke(app, ["eval", "learning", "run", *args])


def test_existing_output_directory_is_refused_with_exit_2(tmp_path):
    (tmp_path / "out").mkdir()
    result = _cli("--output", str(tmp_path / "out"), "--agent", "fixture")
    assert result.exit_code == 2
    assert "already exists" in result.stderr
    assert list((tmp_path / "out").iterdir()) == []


def test_max_calls_that_do_not_cover_the_protocol_are_refused_before_starting(tmp_path):
    result = _cli("--output", str(tmp_path / "out"), "--agent", "fixture", "--max-calls", "10")
    assert result.exit_code == 2
    assert "does not cover" in result.stderr
    assert not (tmp_path / "out").exists()


def test_max_calls_above_360_are_refused(tmp_path):
    result = _cli("--output", str(tmp_path / "o"), "--agent", "fixture", "--max-calls", "361")
    assert result.exit_code == 2
    assert "at most 360" in result.stderr


def test_fixture_adapter_cannot_be_labelled_live(tmp_path):
    result = _cli("--output", str(tmp_path / "o"), "--agent", "fixture", "--evidence-kind", "live")
    assert result.exit_code == 2
    assert "always runs as protocol-fixture" in result.stderr


def test_manifest_with_overlapping_source_hashes_is_refused_with_exit_2(tmp_path):
    manifest = get_dataset("default")
    first = manifest.fixtures[0]
    clash = first.model_copy(
        update={
            "id": "normalize-again",
            "requirements": first.requirements + "\nThe same contract, stated twice.",
            "defects": [d.model_copy(update={"id": f"{d.id}-again"}) for d in first.defects],
        }
    )
    data = manifest.model_copy(update={"fixtures": [first, clash]}).model_dump(
        mode="json", by_alias=True
    )
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(data))
    result = _cli("--output", str(tmp_path / "o"), "--agent", "fixture", "--fixtures", str(path))
    assert result.exit_code == 2
    assert "'normalize'" in result.stderr
    assert "'normalize-again'" in result.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["default", "qualification"])
def test_cli_end_to_end_on_each_dataset_with_the_fixture(tmp_path, dataset):
    output = tmp_path / "out"
    result = _cli(
        "--output",
        str(output),
        "--agent",
        "fixture",
        "--dataset",
        dataset,
        "--repeat",
        "1",
        "--seed",
        "3",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["paired"]["label"] == "not-evidence"
    specs = len(get_dataset(dataset).fixtures)
    assert len(summary["paired"]["specs"]) == specs
    assert summary["arms"]["memory"]["trials"] == specs
    assert summary["arms"]["memory"]["detected"] > summary["arms"]["no-memory"]["detected"]
    assert summary["paired"]["signTest"]["negative"] == 0
