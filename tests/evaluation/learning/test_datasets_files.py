"""The shipped datasets as data files: exports identical to the golden exports taken from the
Python builders they replaced, the loader's refusals of broken dataset directories, and the
package's dataset directories holding exactly the files their manifests name."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.errors import SchemaError
from lorelab.evaluation.learning import DATASET_NAMES, get_dataset
from lorelab.evaluation.learning.datasets._files import load_dataset
from lorelab.evaluation.learning.manifest import LearningManifest

GOLDEN = Path(__file__).parent / "data" / "datasets"
GOLDEN_NAMES = ("default", "qualification")
PACKAGE = "lorelab.evaluation.learning.datasets"


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_export_dataset_is_byte_for_byte_the_export_of_the_former_python_builder(name: str):
    result = CliRunner().invoke(app, ["eval", "learning", "export-dataset", name])
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == (GOLDEN / f"{name}.json").read_bytes()


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_get_dataset_equals_the_manifest_of_the_former_python_builder(name: str):
    golden = LearningManifest.model_validate_json((GOLDEN / f"{name}.json").read_bytes())
    assert get_dataset(name) == golden


def test_dataset_names_keep_their_order_with_the_former_datasets_first():
    assert DATASET_NAMES[:2] == GOLDEN_NAMES


def _referenced(root: Path, data: dict[str, Any]) -> set[Path]:
    """Every file a dataset manifest names, as a path under the dataset directory ``root``."""
    wanted = {root / "manifest.json"}
    for item in data["history"]:
        base = root / "history" / item["id"]
        wanted.add(base / "requirements.md")
        wanted |= {base / f"{path}.txt" for path in [*item["files"], *item["tests"]]}
    for fixture in data["fixtures"]:
        base = root / "fixtures" / fixture["id"]
        wanted.add(base / "requirements.md")
        paths = [*fixture["files"], *fixture["referenceTests"]]
        wanted |= {base / f"{path}.txt" for path in paths}
        for defect in fixture["defects"]:
            where = base / "defects" / defect["id"]
            wanted |= {where / f"{path}.txt" for path in defect["files"]}
    return wanted


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_a_dataset_directory_holds_exactly_the_files_its_manifest_names(name: str):
    root = Path(str(files(PACKAGE) / name))
    data = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    present = {path for path in root.rglob("*") if path.is_file()}
    present.discard(root / "README.md")
    assert present == _referenced(root, data)


# --- the loader on broken directories ---------------------------------------------------------


def _write(root: Path, relative: str, content: str | bytes) -> None:
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_bytes(content.encode("utf-8"))


def _manifest(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "schemaVersion": 1,
        "id": "tiny-1",
        "runner": "pytest",
        "history": [],
        "fixtures": [
            {
                "id": "one",
                "files": ["src/one.py"],
                "referenceTests": ["tests/test_one.py"],
                "defects": [
                    {
                        "id": "one-wrong",
                        "label": "returns 2",
                        "files": ["src/one.py"],
                        "expectedFailingCases": ["tests/test_one.py::test_one"],
                    }
                ],
            }
        ],
    }
    data.update(changes)
    return data


def _tiny(root: Path, name: str = "tiny", **changes: Any) -> Path:
    _write(root / name, "manifest.json", json.dumps(_manifest(**changes)))
    _write(root / name, "fixtures/one/requirements.md", "one() -> int returns 1.\r\n")
    _write(root / name, "fixtures/one/src/one.py.txt", "def one():\r\n    return 1\n")
    _write(
        root / name,
        "fixtures/one/tests/test_one.py.txt",
        "from src.one import one\n\n\ndef test_one():\n    assert one() == 1\n",
    )
    _write(
        root / name, "fixtures/one/defects/one-wrong/src/one.py.txt", "def one():\n    return 2\n"
    )
    return root


def test_loader_keeps_file_contents_byte_for_byte_including_carriage_returns(tmp_path: Path):
    manifest = load_dataset(_tiny(tmp_path), "tiny")
    fixture = manifest.fixture("one")
    assert fixture.requirements == "one() -> int returns 1.\r\n"
    assert fixture.files[0].content == "def one():\r\n    return 1\n"
    assert fixture.defects[0].files[0].content == "def one():\n    return 2\n"


def test_loader_names_the_dataset_and_the_missing_file(tmp_path: Path):
    root = _tiny(tmp_path)
    (root / "tiny/fixtures/one/defects/one-wrong/src/one.py.txt").unlink()
    with pytest.raises(
        SchemaError, match=r"dataset 'tiny': .*defects/one-wrong/src/one\.py\.txt is missing"
    ):
        load_dataset(root, "tiny")


def test_loader_refuses_a_path_that_climbs_out_of_the_dataset_directory(tmp_path: Path):
    fixture = {**_manifest()["fixtures"][0], "files": ["../../secret.py"]}
    root = _tiny(tmp_path, fixtures=[fixture])
    _write(tmp_path, "secret.py.txt", "x = 1\n")
    with pytest.raises(SchemaError, match=r"dataset 'tiny': manifest\.json fixtures\.0\.files\.0"):
        load_dataset(root, "tiny")


def test_loader_refuses_a_file_that_is_not_utf8(tmp_path: Path):
    root = _tiny(tmp_path)
    _write(root / "tiny", "fixtures/one/src/one.py.txt", b"x = '\xff'\n")
    with pytest.raises(SchemaError, match=r"fixtures/one/src/one\.py\.txt is not UTF-8 text"):
        load_dataset(root, "tiny")


def test_loader_refuses_an_unknown_manifest_key(tmp_path: Path):
    root = _tiny(tmp_path, contents="inline")
    with pytest.raises(SchemaError, match=r"dataset 'tiny': manifest\.json contents"):
        load_dataset(root, "tiny")


def test_loader_refuses_a_manifest_that_is_not_json(tmp_path: Path):
    root = _tiny(tmp_path)
    _write(root / "tiny", "manifest.json", "{not json")
    with pytest.raises(SchemaError, match=r"dataset 'tiny': manifest\.json is not JSON"):
        load_dataset(root, "tiny")


def test_an_extending_dataset_puts_the_base_history_and_fixtures_first(tmp_path: Path):
    root = _tiny(tmp_path)
    fixture = {**_manifest()["fixtures"][0], "id": "two"}
    _tiny(root, "more", extends="tiny", id="more-1", fixtures=[fixture])
    for path in (root / "more/fixtures/one").rglob("*.txt"):
        _write(
            root / "more/fixtures/two",
            str(path.relative_to(root / "more/fixtures/one")),
            path.read_bytes(),
        )
    _write(root / "more", "fixtures/two/requirements.md", "two.\n")
    manifest = load_dataset(root, "more")
    assert manifest.id == "more-1"
    assert [fixture.id for fixture in manifest.fixtures] == ["one", "two"]


def test_an_extends_cycle_is_refused_naming_the_chain(tmp_path: Path):
    root = _tiny(tmp_path, "a", extends="b")
    _tiny(root, "b", extends="a")
    with pytest.raises(SchemaError, match=r"extends itself \(a -> b -> a\)"):
        load_dataset(root, "a")


def test_an_extending_dataset_must_use_the_runner_of_its_base(tmp_path: Path):
    root = _tiny(tmp_path, "base")
    _tiny(root, "child", extends="base", runner="node", fixtures=[])
    with pytest.raises(SchemaError, match=r"runner node differs .* 'base'"):
        load_dataset(root, "child")
