import copy
import json
from pathlib import Path

import pytest

from tests.support.conditions import mini_manifest, mini_seed

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


@pytest.fixture
def mini(tmp_path):
    """A mini project, its manifest and seed file, written under tmp_path."""
    project = tmp_path / "mini-project"
    (project / "done").mkdir(parents=True)
    (project / "done" / "README").write_text("markers of done tasks\n")
    (project / "check.py").write_text(
        "import pathlib, sys\n"
        "raise SystemExit(0 if pathlib.Path('done', sys.argv[1]).is_file() else 1)\n"
    )

    def write(manifest: dict | None = None, seed: dict | None = None) -> dict[str, Path]:
        manifest_path = tmp_path / "mini-conditions.json"
        manifest_path.write_text(json.dumps(manifest or mini_manifest(project)))
        seed_path = tmp_path / "mini-seed.json"
        seed_path.write_text(json.dumps(seed or mini_seed()))
        return {"manifest": manifest_path, "seed": seed_path, "project": project}

    return write
