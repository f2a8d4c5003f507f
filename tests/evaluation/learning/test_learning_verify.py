"""``lorelab eval learning verify DIR``: every hash and every label recomputed from the receipts
alone; exit 0 when they match the summary, 1 naming the file when one byte of a receipt changed,
2 for a directory that is not a run with recorded hashes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app


def _lorelab(*args: str):
    return CliRunner().invoke(app, ["eval", "learning", *args])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A fresh fixture-worker run of the default dataset with a placebo arm."""
    output = tmp_path_factory.mktemp("verify") / "run"
    result = _lorelab(
        "run",
        "--output",
        str(output),
        "--agent",
        "fixture",
        "--repeat",
        "1",
        "--seed",
        "3",
        "--control",
        "placebo",
    )
    assert result.exit_code == 0, result.stderr
    return output


@pytest.fixture
def run(recorded, tmp_path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(recorded, copy)
    return copy


def _flip_one_byte(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert len(old) == len(new) == 1 or len(old) == len(new)
    index = data.index(old)
    path.write_bytes(data[:index] + new + data[index + len(old) :])


def test_an_untouched_run_verifies_with_exit_0_and_names_its_recomputed_labels(run):
    result = _lorelab("verify", str(run))
    assert result.exit_code == 0, result.stderr
    summary = json.loads((run / "summary.json").read_text())
    hashed = len(summary["receiptHashes"])
    assert hashed > 10
    assert any(name.startswith("trials/") for name in summary["receiptHashes"])
    assert any(name.startswith("ground-truth/") for name in summary["receiptHashes"])
    assert result.stdout.strip() == (
        f"verified: {hashed} receipts match their hashes; labels recomputed: paired "
        f"{summary['paired']['label']}, pairedPlacebo {summary['pairedPlacebo']['label']}"
    )


def test_one_changed_byte_of_a_trial_receipt_exits_1_naming_the_file(run):
    trial = sorted((run / "trials").iterdir())[0]
    _flip_one_byte(trial, b'"repetition": 1', b'"repetition": 2')
    result = _lorelab("verify", str(run))
    assert result.exit_code == 1
    assert f"trials/{trial.name}: SHA-256" in result.stderr
    assert "(the file was changed)" in result.stderr


def test_one_changed_byte_of_a_ground_truth_receipt_exits_1_naming_the_file(run):
    receipt = sorted((run / "ground-truth").iterdir())[0]
    data = receipt.read_bytes()
    receipt.write_bytes(data[:-2] + bytes([data[-2] ^ 0x01]) + data[-1:])
    result = _lorelab("verify", str(run))
    assert result.exit_code == 1
    assert f"ground-truth/{receipt.name}: SHA-256" in result.stderr


def test_a_changed_summary_figure_exits_1_naming_summary_json(run):
    summary = run / "summary.json"
    text = summary.read_text()
    label = json.loads(text)["paired"]["label"]
    other = "positive" if label != "positive" else "negative"
    summary.write_text(text.replace(f'"label": "{label}"', f'"label": "{other}"', 1))
    result = _lorelab("verify", str(run))
    assert result.exit_code == 1
    assert "summary.json: differs from the summary recomputed from the receipts" in result.stderr


def test_a_changed_hash_in_the_summary_exits_1_naming_the_receipt(run):
    summary = run / "summary.json"
    data = json.loads(summary.read_text())
    name, digest = next(iter(data["receiptHashes"].items()))
    flipped = ("0" if digest[0] != "0" else "1") + digest[1:]
    summary.write_text(summary.read_text().replace(digest, flipped, 1))
    result = _lorelab("verify", str(run))
    assert result.exit_code == 1
    assert f"{name}: SHA-256" in result.stderr


def test_a_removed_or_added_receipt_exits_1_naming_it(run):
    trial = sorted((run / "trials").iterdir())[-1]
    trial.unlink()
    (run / "trials" / "extra.json").write_text("{}")
    result = _lorelab("verify", str(run))
    assert result.exit_code == 1
    assert f"trials/{trial.name}: missing" in result.stderr
    assert "trials/extra.json: not among the receipts summary.json records" in result.stderr


def test_a_directory_that_is_not_a_run_exits_2_with_one_line(tmp_path):
    result = _lorelab("verify", str(tmp_path))
    assert result.exit_code == 2
    assert "not a completed learning run" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert _lorelab("verify", str(tmp_path / "absent")).exit_code == 2


def test_a_summary_without_recorded_hashes_exits_2(run):
    summary = run / "summary.json"
    data = json.loads(summary.read_text())
    data.pop("receiptHashes")
    summary.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    result = _lorelab("verify", str(run))
    assert result.exit_code == 2
    assert "records no receipt hashes" in result.stderr
