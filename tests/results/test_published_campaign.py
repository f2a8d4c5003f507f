"""The published `evolution` campaign (results/evolution-2026-12-04, docs/learning.md): each run,
as committed (one gzipped tar per run), verifies from its receipts alone; one changed byte of
one receipt is named with exit 1; and pooling the three runs gives the labels and sign tests
the committed ``pooled.json`` records."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app

CAMPAIGN = Path(__file__).resolve().parents[2] / "results" / "evolution-2026-12-04"
RUNS = ("evolution", "evolution-more-itertools", "evolution-boltons")


def _learning(*args: str):
    return CliRunner().invoke(app, ["eval", "learning", *args])


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> Path:
    """The three committed runs, unpacked as a reader would (``tar xzf``)."""
    root = tmp_path_factory.mktemp("campaign")
    for name in RUNS:
        with tarfile.open(CAMPAIGN / f"{name}.tar.gz") as archive:
            archive.extractall(root, filter="data")
    return root


@pytest.mark.parametrize("name", RUNS)
def test_each_published_run_verifies_from_its_receipts_alone(unpacked: Path, name: str):
    result = _learning("verify", str(unpacked / name))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("verified: ")


def test_one_changed_byte_of_one_published_receipt_is_named_with_exit_1(tmp_path: Path):
    with tarfile.open(CAMPAIGN / "evolution-boltons.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    run = tmp_path / "evolution-boltons"
    receipt = sorted((run / "trials").glob("*-memory.json"))[0]
    data = receipt.read_bytes()
    index = data.index(b'"detected"')
    receipt.write_bytes(data[:index] + b'"Detected"' + data[index + len(b'"detected"') :])
    result = _learning("verify", str(run))
    assert result.exit_code == 1
    assert f"trials/{receipt.name}" in result.stderr


def test_the_pooled_labels_are_the_committed_ones(unpacked: Path):
    committed = json.loads((CAMPAIGN / "pooled.json").read_text())
    result = _learning("pool", *(str(unpacked / name) for name in RUNS), "--json")
    assert result.exit_code == 0, result.stderr
    pooled = json.loads(result.stdout)
    assert pooled["specifications"] == committed["specifications"] == 36
    for comparison in ("paired", "pairedPlacebo"):
        assert pooled[comparison]["label"] == committed[comparison]["label"]
        assert pooled[comparison]["signTest"] == committed[comparison]["signTest"]
        assert pooled[comparison]["effect"] == committed[comparison]["effect"]
