"""Read a shipped dataset from its directory of data files into a :class:`LearningManifest`.

A dataset directory holds ``manifest.json`` (the manifest's shape, with file paths where the
manifest has contents) and the contents as plain files at fixed places::

    manifest.json
    history/<history id>/requirements.md
    history/<history id>/<path>.txt                       source and test files of the item
    fixtures/<fixture id>/requirements.md
    fixtures/<fixture id>/<path>.txt                      reference source and reference tests
    fixtures/<fixture id>/defects/<defect id>/<path>.txt  the defect's replacement source

``<path>`` is the file's path in the manifest (``src/clamp.py``); the ``.txt`` suffix keeps
linters, type checkers and test collectors from treating dataset contents as project code.
Every file is read as bytes and decoded as UTF-8, so contents reach the manifest unchanged.
``extends`` names another dataset of the same directory whose history and fixtures come first.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib.resources.abc import Traversable
from typing import Annotated, Final

from pydantic import AfterValidator, Field, ValidationError

from lorelab._model import RecordModel, RunnerName
from lorelab.errors import PathError, SchemaError
from lorelab.evaluation.learning.manifest import (
    ID_PATTERN,
    Defect,
    Fixture,
    HistoryEntry,
    LearningManifest,
)
from lorelab.workspace import FileEntry, canonical_path

MANIFEST_FILE: Final = "manifest.json"
REQUIREMENTS_FILE: Final = "requirements.md"
CONTENT_SUFFIX: Final = ".txt"
_MAX_FILE_BYTES: Final = 1 << 20


def _canonical(path: str) -> str:
    try:
        return canonical_path(path)
    except PathError as exc:
        raise ValueError(str(exc)) from None


# A file's path in the manifest; it also names where its contents are, so it must be canonical.
_Path = Annotated[str, AfterValidator(_canonical)]


class _DefectData(RecordModel):
    id: str = Field(pattern=ID_PATTERN)
    label: str | None = None
    files: list[_Path] = Field(min_length=1)
    expected_failing_cases: list[str] = Field(min_length=1)


class _FixtureData(RecordModel):
    id: str = Field(pattern=ID_PATTERN)
    files: list[_Path] = Field(min_length=1)
    reference_tests: list[_Path] = Field(min_length=1)
    defects: list[_DefectData] = Field(min_length=1)


class _HistoryData(RecordModel):
    id: str = Field(pattern=ID_PATTERN)
    specification_id: str = Field(pattern=ID_PATTERN)
    files: list[_Path] = Field(min_length=1)
    tests: list[_Path] = Field(min_length=1)


class _DatasetData(RecordModel):
    schema_version: int
    id: str
    runner: RunnerName
    extends: str | None = Field(default=None, pattern=ID_PATTERN)
    history: list[_HistoryData] = Field(default_factory=list)
    fixtures: list[_FixtureData] = Field(default_factory=list)


def load_dataset(root: Traversable, name: str) -> LearningManifest:
    """The dataset in directory ``root / name``, as a manifest (its rules are not checked here).

    A missing or unreadable file, a manifest of the wrong shape, or an ``extends`` cycle is a
    :class:`SchemaError` naming the dataset and the file.
    """
    return _load(root, name, ())


def _load(root: Traversable, name: str, chain: tuple[str, ...]) -> LearningManifest:
    if name in chain:
        raise SchemaError(f"dataset {name!r}: extends itself ({' -> '.join((*chain, name))})")
    directory = root / name
    read = _reader(directory, name)
    try:
        data = _DatasetData.model_validate(json.loads(read(MANIFEST_FILE)))
    except json.JSONDecodeError as exc:
        raise SchemaError(f"dataset {name!r}: {MANIFEST_FILE} is not JSON ({exc})") from None
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise SchemaError(f"dataset {name!r}: {MANIFEST_FILE} {where}: {problem['msg']}") from None
    history = [_history(read, item) for item in data.history]
    fixtures = [_fixture(read, item) for item in data.fixtures]
    if data.extends is not None:
        base = _load(root, data.extends, (*chain, name))
        if base.runner != data.runner:
            raise SchemaError(
                f"dataset {name!r}: runner {data.runner} differs from the runner "
                f"{base.runner} of the dataset it extends, {data.extends!r}"
            )
        history = [*base.history, *history]
        fixtures = [*base.fixtures, *fixtures]
    try:
        return LearningManifest.model_validate(
            {
                "schema_version": data.schema_version,
                "id": data.id,
                "runner": data.runner,
                "history": history,
                "fixtures": fixtures,
            }
        )
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise SchemaError(f"dataset {name!r}: {where}: {problem['msg']}") from None


def _reader(directory: Traversable, name: str) -> Callable[[str], str]:
    def read(relative: str) -> str:
        node = directory
        for segment in relative.split("/"):
            node = node / segment
        if not node.is_file():
            raise SchemaError(f"dataset {name!r}: {relative} is missing")
        data = node.read_bytes()
        if len(data) > _MAX_FILE_BYTES:
            raise SchemaError(f"dataset {name!r}: {relative} is larger than 1 MiB")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise SchemaError(f"dataset {name!r}: {relative} is not UTF-8 text") from None

    return read


def _entries(read: Callable[[str], str], base: str, paths: list[str]) -> list[FileEntry]:
    return [FileEntry(path=path, content=read(f"{base}/{path}{CONTENT_SUFFIX}")) for path in paths]


def _history(read: Callable[[str], str], item: _HistoryData) -> HistoryEntry:
    base = f"history/{item.id}"
    return HistoryEntry(
        id=item.id,
        specification_id=item.specification_id,
        requirements=read(f"{base}/{REQUIREMENTS_FILE}"),
        files=_entries(read, base, item.files),
        tests=_entries(read, base, item.tests),
    )


def _fixture(read: Callable[[str], str], item: _FixtureData) -> Fixture:
    base = f"fixtures/{item.id}"
    return Fixture(
        id=item.id,
        requirements=read(f"{base}/{REQUIREMENTS_FILE}"),
        files=_entries(read, base, item.files),
        reference_tests=_entries(read, base, item.reference_tests),
        defects=[
            Defect(
                id=defect.id,
                label=defect.label,
                files=_entries(read, f"{base}/defects/{defect.id}", defect.files),
                expected_failing_cases=defect.expected_failing_cases,
            )
            for defect in item.defects
        ],
    )
