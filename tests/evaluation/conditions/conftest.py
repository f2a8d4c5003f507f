import copy
import json
from pathlib import Path

import pytest

EXAMPLE_DIR = Path(__file__).resolve().parents[3] / "examples" / "conditions"
EXAMPLE_MANIFEST = EXAMPLE_DIR / "conditions.json"


@pytest.fixture
def example_manifest_data() -> dict:
    """A fresh, mutable copy of the example manifest's JSON."""
    return copy.deepcopy(json.loads(EXAMPLE_MANIFEST.read_text(encoding="utf-8")))


@pytest.fixture
def write_json(tmp_path):
    """Write a JSON value to a new file under tmp_path and return its path."""
    counter = {"n": 0}

    def write(value, name=None) -> Path:
        counter["n"] += 1
        path = tmp_path / (name or f"input-{counter['n']}.json")
        path.write_text(json.dumps(value, indent=2), encoding="utf-8")
        return path

    return write
