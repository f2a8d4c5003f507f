"""Ground truth of the ``qualification-12``, ``stdlib``, ``evolution``,
``evolution-more-itertools`` and ``evolution-boltons`` datasets, proven with real pytest runs
through lorelab's runner, and how the protocol fixture meets their contracts.

``qualification-12`` extends ``qualification``, whose six contracts are proven by
``test_learning_datasets.py``; this module proves its six new contracts and every contract of
``stdlib``, ``evolution``, ``evolution-more-itertools`` and ``evolution-boltons``. Each source
variant (the reference, or the reference with one defect) runs in a disposable project holding
the reference tests and the fixture's tests of both arms, written with every history item of
the dataset as a lesson: the reference twice (ground truth must be stable), each defect once.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from lorelab.evaluation.learning import get_dataset
from lorelab.evaluation.learning.manifest import Fixture, LearningManifest, declared_cases
from lorelab.runners import (
    ExecutionJob,
    PytestRunner,
    Stability,
    StabilityJob,
    assess,
    detect,
    run_parallel,
)
from lorelab.testing.fixture import answer
from lorelab.workspace import FileEntry

NAMES = (
    "qualification-12",
    "stdlib",
    "evolution",
    "evolution-more-itertools",
    "evolution-boltons",
)
SPECIFICATIONS = {
    "qualification-12": 6,
    "stdlib": 6,
    "evolution": 12,
    "evolution-more-itertools": 12,
    "evolution-boltons": 12,
}
REFERENCE_RUNS = 2
PYTEST_TIMEOUT_S = 120.0
ARMS = ("no-memory", "memory")
CPYTHON = "3.11.7"

# How each planted defect meets the protocol fixture given every history item as a lesson:
# caught by the requirements' plain examples, only by an edge case whose tag is a case pattern
# of a lesson's test names, or by neither. Measured, not designed: the contracts were written
# first and these sets pinned afterwards.
DESIGN: dict[str, dict[str, str]] = {
    "qualification-12": {
        "roman-no-cm-pair": "examples",
        "roman-accepts-4000": "neither",
        "roman-zero-is-empty": "edge",
        "wrap-exclusive-width": "neither",
        "wrap-empty-line": "edge",
        "wrap-splits-on-spaces-only": "examples",
        "rle-drops-last-run": "examples",
        "rle-ignores-case": "neither",
        "rle-empty-crash": "edge",
        "slug-keeps-leading-hyphen": "neither",
        "slug-one-hyphen-per-character": "examples",
        "slug-keeps-word-characters": "neither",
        "size-kilobyte-is-1000": "examples",
        "size-unknown-unit-keyerror": "edge",
        "size-accepts-sign": "edge",
        "ranges-not-sorted": "examples",
        "ranges-adjacent-apart": "neither",
        "ranges-nested-shrinks": "neither",
    },
    "stdlib": {
        "quote-empty-unquoted": "edge",
        "quote-unicode-is-safe": "edge",
        "quote-backslash-escape": "neither",
        "escape-ampersand-kept": "examples",
        "escape-single-quote-kept": "neither",
        "escape-quote-flag-inverted": "examples",
        "indent-drops-line-endings": "examples",
        "indent-prefixes-blank-lines": "neither",
        "indent-ignores-predicate": "neither",
        "dedent-keeps-blank-whitespace": "neither",
        "dedent-shallower-line-ignored": "neither",
        "dedent-margin-one-too-long": "neither",
        "median-not-sorted": "examples",
        "median-floor-division": "edge",
        "median-empty-index-error": "edge",
        "hsv-hue-not-wrapped": "neither",
        "hsv-grey-divides-by-zero": "neither",
        "hsv-saturation-not-relative": "neither",
    },
    # re-escape's history (CPython 3.6's escape) tests behaviour that changed: no lesson
    # pattern reaches any of its defects.
    "evolution": {
        "bisect-left-finds-right": "examples",
        "bisect-left-negative-lo-clamped": "edge",
        "bisect-left-key-finds-right": "neither",
        "time-auto-keeps-zero-fraction": "examples",
        "time-milliseconds-rounded": "neither",
        "time-unknown-timespec-keyerror": "neither",
        "leap-century-rule-dropped": "edge",
        "leapdays-includes-end-year": "neither",
        "leapdays-400-rule-dropped": "examples",
        "quote-backslashes-after-quotes": "examples",
        "unquote-lone-quote-emptied": "edge",
        "unquote-angle-brackets-kept": "examples",
        "join-absolute-appended": "edge",
        "join-doubles-separator": "examples",
        "join-empty-part-dropped": "edge",
        "json-astral-not-split": "edge",
        "json-quote-not-escaped": "examples",
        "json-upper-case-hex": "edge",
        "dirname-root-stripped": "edge",
        "basename-keeps-separator": "examples",
        "dirname-one-slash-stripped": "edge",
        "escape-dash-kept": "neither",
        "escape-hash-kept": "neither",
        "escape-whitespace-kept": "neither",
        "normpath-dotdot-above-root-kept": "edge",
        "normpath-two-slashes-collapsed": "edge",
        "normpath-empty-is-empty": "edge",
        "glob-bracket-not-magic": "edge",
        "glob-escape-with-backslash": "examples",
        "glob-escape-first-only": "neither",
        "commonprefix-assumes-sorted": "examples",
        "commonprefix-empty-crash": "edge",
        "commonprefix-one-short": "examples",
        "ordinal-leap-day-from-february": "neither",
        "ordinal-day-not-bounded": "neither",
        "ordinal-century-years-leap": "examples",
    },
    # grouper's history (4.3.0, n first) tests behaviour that changed and never uses
    # `incomplete`: no lesson pattern reaches its defects.
    "evolution-more-itertools": {
        "grouper-ignore-fills": "neither",
        "grouper-fillvalue-dropped": "examples",
        "grouper-strict-truncates": "neither",
        "split-at-maxsplit-off-by-one": "neither",
        "split-at-separator-unwrapped": "edge",
        "split-at-drops-empty-tail": "examples",
        "windowed-short-not-padded": "examples",
        "windowed-step-tail-lost": "edge",
        "windowed-empty-gives-filler": "edge",
        "chunked-one-short": "examples",
        "chunked-strict-only-too-long": "edge",
        "chunked-strict-none-accepted": "edge",
        "collapse-bytes-flattened": "neither",
        "collapse-levels-off-by-one": "edge",
        "collapse-base-type-exact": "neither",
        "padded-zero-accepted": "edge",
        "padded-next-multiple-group-too-long": "examples",
        "padded-cuts-longer-input": "neither",
        "sliced-strict-only-too-long": "edge",
        "sliced-overlapping": "examples",
        "sliced-short-tail-dropped": "examples",
        "always-iterable-none-is-an-item": "edge",
        "always-iterable-bytes-iterated": "neither",
        "always-iterable-non-iterable-raises": "examples",
        "divide-remainder-at-the-end": "examples",
        "divide-zero-accepted": "edge",
        "divide-iterator-not-read": "neither",
        "split-after-trailing-empty-list": "examples",
        "split-after-rest-dropped": "neither",
        "split-after-maxsplit-empty-tail": "neither",
        "first-none-default-ignored": "neither",
        "last-sequence-gives-first": "examples",
        "last-reversible-gives-first": "neither",
        "unique-everseen-yields-the-key": "edge",
        "unique-everseen-unhashable-raises": "edge",
        "unique-everseen-unhashable-repeats": "edge",
    },
    # pairwise-windowed's history (16.1.1, pairwise was chunked(src, 2)) and strip-ansi's
    # (17.1.0, the text after the last sequence was dropped) test behaviour that changed: no
    # lesson pattern reaches their defects.
    "evolution-boltons": {
        "windowed-second-item-not-skipped": "examples",
        "pairwise-end-ignored": "neither",
        "windowed-fill-truncates": "neither",
        "strip-ansi-bytes-not-decoded": "neither",
        "strip-ansi-lowercase-final-kept": "examples",
        "strip-ansi-parameters-digits-only": "neither",
        "chunked-short-last-chunk-dropped": "examples",
        "chunked-fill-one-short": "edge",
        "chunked-count-off-by-one": "edge",
        "backoff-count-one-short": "examples",
        "backoff-zero-start-stuck": "edge",
        "backoff-stop-below-start-accepted": "edge",
        "camel2under-not-lowered": "examples",
        "camel2under-acronym-not-split": "edge",
        "under2camel-empty-word-dropped": "edge",
        "ordinalize-one-digit-gets-th": "examples",
        "ordinalize-teens-not-special": "edge",
        "ordinalize-ext-only-ignored": "edge",
        "bytes2human-unit-one-too-large": "examples",
        "bytes2human-sign-lost": "edge",
        "bytes2human-boundary-exclusive": "neither",
        "parse-int-list-range-end-excluded": "examples",
        "parse-int-list-range-order-assumed": "edge",
        "format-int-list-final-pair-lost": "neither",
        "split-none-grouping-inverted": "examples",
        "split-trailing-empty-list-dropped": "edge",
        "split-maxsplit-off-by-one": "edge",
        "frange-start-stop-not-swapped": "examples",
        "frange-count-truncated": "neither",
        "frange-zero-step-accepted": "edge",
        "clamp-lower-bound-ignored": "examples",
        "floor-exact-option-skipped": "edge",
        "ceil-options-assumed-sorted": "neither",
        "unique-item-checked-not-key": "edge",
        "first-default-ignored": "edge",
        "first-truth-not-tested": "examples",
    },
}
# The boltons contracts whose history tests behaviour that changed between the releases.
BOLTONS_CHANGED = {"pairwise-windowed", "strip-ansi"}


def _new_fixtures(name: str) -> list[Fixture]:
    manifest = get_dataset(name)
    if name == "qualification-12":
        old = {fixture.id for fixture in get_dataset("qualification").fixtures}
        return [fixture for fixture in manifest.fixtures if fixture.id not in old]
    return list(manifest.fixtures)


# --- the protocol fixture, called in-process --------------------------------------------------


def _generate(
    manifest: LearningManifest, fixture: Fixture, arm: str
) -> tuple[str, list[FileEntry]]:
    lessons = [
        {
            "id": item.id,
            "specificationId": item.specification_id,
            "requirements": item.requirements,
            "tests": [entry.model_dump() for entry in item.tests],
            "score": 1.0,
        }
        for item in manifest.history
        if arm == "memory"
    ]
    task = {
        "specificationId": fixture.id,
        "requirements": fixture.requirements,
        "runner": manifest.runner,
        "source": [entry.model_dump() for entry in fixture.files],
    }
    common: dict[str, Any] = {"protocol": "lorelab.worker/1", "task": task}
    plan = answer({**common, "role": "architect", "lessons": lessons, "limits": {"maxCases": 20}})
    written = answer(
        {
            **common,
            "role": "author",
            "lessons": lessons,
            "plan": {"cases": plan["cases"]},
            "limits": {"maxFiles": 4, "maxCases": 20},
        }
    )
    review = answer({**common, "role": "reviewer", "tests": written["files"]})
    return review["verdict"], [FileEntry.model_validate(entry) for entry in written["files"]]


# --- real pytest runs -------------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """Everything the tests below assert on, computed once per dataset."""

    name: str
    verdicts: dict[tuple[str, str], str]
    variants: dict[tuple[str, str | None], Stability]
    history: dict[str, Stability]


def _materialize(root: Path, entries: list[FileEntry]) -> Path:
    for entry in entries:
        target = root / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(entry.content.encode("utf-8"))
    return root


def _arm_copy(entry: FileEntry, arm: str) -> FileEntry:
    stem = entry.path.removesuffix(".py")
    return FileEntry(path=f"{stem}__{arm.replace('-', '_')}.py", content=entry.content)


def _variants(fixture: Fixture) -> Iterator[tuple[str | None, list[FileEntry]]]:
    yield None, list(fixture.files)
    for defect in fixture.defects:
        replaced = {entry.path: entry for entry in defect.files}
        yield defect.id, [replaced.get(entry.path, entry) for entry in fixture.files]


@pytest.fixture(scope="module", params=NAMES)
def evidence(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Evidence:
    name: str = request.param
    manifest = get_dataset(name)
    base = tmp_path_factory.mktemp(name)
    runner = PytestRunner(plugin_autoload=False)
    verdicts: dict[tuple[str, str], str] = {}
    keys: list[tuple[str, str | None]] = []
    jobs: list[StabilityJob | ExecutionJob] = []
    for fixture in _new_fixtures(name):
        generated: list[FileEntry] = []
        for arm in ARMS:
            verdicts[(fixture.id, arm)], written = _generate(manifest, fixture, arm)
            generated += [_arm_copy(entry, arm) for entry in written]
        for defect_id, source in _variants(fixture):
            project = _materialize(
                base / f"{fixture.id}-{defect_id or 'reference'}",
                [*source, *fixture.reference_tests, *generated],
            )
            keys.append((fixture.id, defect_id))
            if defect_id is None:
                jobs.append(StabilityJob(runner, project, REFERENCE_RUNS, PYTEST_TIMEOUT_S))
            else:
                jobs.append(ExecutionJob(runner, project, PYTEST_TIMEOUT_S))
    for item in manifest.history:
        project = _materialize(base / item.id, [*item.files, *item.tests])
        jobs.append(StabilityJob(runner, project, REFERENCE_RUNS, PYTEST_TIMEOUT_S))
    outcomes = run_parallel(jobs, max_workers=2)
    records = [r if isinstance(r, Stability) else assess([r]) for r in outcomes]
    variants = dict(zip(keys, records[: len(keys)], strict=True))
    history = {
        item.id: record for item, record in zip(manifest.history, records[len(keys) :], strict=True)
    }
    return Evidence(name, verdicts, variants, history)


def _reference_ids(fixture: Fixture) -> set[str]:
    declared = declared_cases(fixture.reference_tests, "pytest")
    return {f"{path}::{name}" for path, names in declared.items() for name in names}


def _arm_record(record: Stability, arm: str) -> Stability:
    marker = f"__{arm.replace('-', '_')}.py::"
    return assess(
        [
            run.model_copy(update={"cases": [c for c in run.cases if marker in c.id]})
            for run in record.runs
        ]
    )


def _detected(evidence: Evidence, name: str, arm: str) -> set[str]:
    found: set[str] = set()
    for fixture in _new_fixtures(name):
        baseline = _arm_record(evidence.variants[(fixture.id, None)], arm)
        for defect in fixture.defects:
            on_defect = _arm_record(evidence.variants[(fixture.id, defect.id)], arm)
            if detect(baseline, on_defect).status == "detected":
                found.add(defect.id)
    return found


# --- ground truth -----------------------------------------------------------------------------


def test_reference_tests_pass_stably_on_every_new_reference_source(evidence: Evidence):
    for fixture in _new_fixtures(evidence.name):
        record = evidence.variants[(fixture.id, None)]
        assert record.stable, (fixture.id, record.first_difference)
        assert record.classification == "passed", (fixture.id, record.runs[0].reason)
        assert len(record.runs) == REFERENCE_RUNS
        expected = _reference_ids(fixture)
        for run in record.runs:
            reference = {case.id: case.status for case in run.cases if case.id in expected}
            assert set(reference) == expected, fixture.id
            assert set(reference.values()) == {"passed"}, (fixture.id, reference)


def test_each_new_defect_fails_exactly_its_expected_cases(evidence: Evidence):
    for fixture in _new_fixtures(evidence.name):
        expected = _reference_ids(fixture)
        for defect in fixture.defects:
            (run,) = evidence.variants[(fixture.id, defect.id)].runs
            assert run.classification == "failed", (defect.id, run.reason)
            reference = {case.id: case.status for case in run.cases if case.id in expected}
            assert set(reference) == expected, defect.id
            failing = {case for case, status in reference.items() if status != "passed"}
            assert failing == set(defect.expected_failing_cases), defect.id
            assert {reference[case] for case in failing} == {"failed"}, defect.id


def test_history_tests_pass_stably_on_their_own_source(evidence: Evidence):
    manifest = get_dataset(evidence.name)
    for item in manifest.history:
        record = evidence.history[item.id]
        assert record.stable, (item.id, record.first_difference)
        assert record.classification == "passed", (item.id, record.runs[0].reason)


# --- the protocol fixture on the new contracts ------------------------------------------------


def test_fixture_tests_are_approved_and_pass_stably_on_every_new_reference(evidence: Evidence):
    assert set(evidence.verdicts.values()) == {"approve"}
    for fixture in _new_fixtures(evidence.name):
        for arm in ARMS:
            record = _arm_record(evidence.variants[(fixture.id, None)], arm)
            assert record.runs[0].cases, (fixture.id, arm)
            assert record.stable
            assert record.classification == "passed", (fixture.id, arm, record.runs[0].reason)


def test_fixture_detection_matches_the_measured_design(evidence: Evidence):
    name = evidence.name
    design = DESIGN[name]
    by_examples = {defect for defect, how in design.items() if how == "examples"}
    by_edges = {defect for defect, how in design.items() if how == "edge"}
    assert _detected(evidence, name, "no-memory") == by_examples
    assert _detected(evidence, name, "memory") == by_examples | by_edges


# --- the data itself (no pytest runs) ---------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_every_new_defect_is_labelled_and_named_in_the_design(name: str):
    defects = [defect for fixture in _new_fixtures(name) for defect in fixture.defects]
    assert all(defect.label for defect in defects)
    assert [defect.id for defect in defects] == list(DESIGN[name])
    assert len(_new_fixtures(name)) == SPECIFICATIONS[name]
    assert all(len(fixture.defects) == 3 for fixture in _new_fixtures(name))


def test_qualification_12_is_qualification_plus_six_contracts():
    base, extended = get_dataset("qualification"), get_dataset("qualification-12")
    assert extended.history == base.history
    assert extended.fixtures[:6] == base.fixtures
    assert len(extended.fixtures) == 12


def _code_lines(content: str) -> list[str]:
    """The lines of a source, without its module docstring's first line and without one-line
    function docstrings (defect files name their defect there instead)."""
    lines = content.splitlines()[1:]
    return [
        line
        for number, line in enumerate(lines)
        if not (
            number > 0
            and lines[number - 1].lstrip().startswith("def ")
            and line.strip().startswith('"""')
            and line.strip().endswith('"""')
            and len(line.strip()) > 6
        )
    ]


@pytest.mark.parametrize("name", NAMES)
def test_every_new_defect_changes_the_code_at_one_site(name: str):
    for fixture in _new_fixtures(name):
        reference = {entry.path: _code_lines(entry.content) for entry in fixture.files}
        for defect in fixture.defects:
            (entry,) = defect.files
            matcher = difflib.SequenceMatcher(a=reference[entry.path], b=_code_lines(entry.content))
            changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
            assert len(changes) == 1, (defect.id, changes)


@dataclass(frozen=True)
class CopiedProject:
    """How a dataset's copied sources and README name the project they came from."""

    dataset: str
    release_word: str  # on each copied file's first line, with the release
    source_prefix: str  # the project's file on that line
    notice: str
    licence: str  # in each copied file
    licence_text: str  # a line of the licence reproduced in the README


COPIED = (
    CopiedProject(
        "evolution-more-itertools",
        " more-itertools ",
        ", more_itertools/",
        "Copyright (c) 2012 Erik Rose",
        "MIT License",
        "Permission is hereby granted, free of charge",
    ),
    CopiedProject(
        "evolution-boltons",
        " boltons ",
        ", boltons/",
        "Copyright (c) 2013, Mahmoud Hashemi",
        "BSD 3-Clause License",
        "Redistribution and use in source and binary forms",
    ),
)


@pytest.mark.parametrize("project", COPIED, ids=lambda project: project.dataset)
def test_copied_sources_name_their_release_and_licence(project: CopiedProject) -> None:
    manifest = get_dataset(project.dataset)
    entries = [
        *(entry for fixture in manifest.fixtures for entry in fixture.files),
        *(entry for fixture in manifest.fixtures for d in fixture.defects for entry in d.files),
        *(entry for item in manifest.history for entry in item.files),
    ]
    for entry in entries:
        first = entry.content.splitlines()[0]
        assert project.release_word in first, entry.path
        assert project.source_prefix in first, entry.path
        assert project.notice in entry.content, entry.path
        assert project.licence in entry.content, entry.path


@pytest.mark.parametrize("project", COPIED, ids=lambda project: project.dataset)
def test_readme_carries_the_licence_and_names_every_source(project: CopiedProject) -> None:
    root = files("lorelab.evaluation.learning.datasets") / project.dataset
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert project.notice in readme
    assert project.licence_text in readme
    data = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    for fixture in data["fixtures"]:
        assert f"| `{fixture['id']}` |" in readme, fixture["id"]
        for path in fixture["files"]:
            assert f"`{path}`" in readme, path


def test_only_the_changed_boltons_contracts_have_history_failing_on_the_current_source(
    tmp_path: Path,
) -> None:
    manifest = get_dataset("evolution-boltons")
    current = {entry.path: (f.id, entry) for f in manifest.fixtures for entry in f.files}
    runner = PytestRunner(plugin_autoload=False)
    failing: set[str] = set()
    for item in manifest.history:
        sources = [current[entry.path][1] for entry in item.files]
        project = _materialize(tmp_path / item.id, [*sources, *item.tests])
        execution = runner.run(project, timeout_s=PYTEST_TIMEOUT_S)
        assert execution.cases, item.id
        by_test = {entry.path: current[entry.path][0] for entry in item.files}
        for case in execution.cases:
            if case.status != "passed":
                module = case.id.split("::")[0].removeprefix("tests/test_")
                failing |= {fid for path, fid in by_test.items() if path == f"src/{module}"}
    assert failing == BOLTONS_CHANGED


def test_stdlib_sources_name_their_cpython_file_and_licence():
    manifest = get_dataset("stdlib")
    entries = [
        *(entry for fixture in manifest.fixtures for entry in fixture.files),
        *(entry for fixture in manifest.fixtures for d in fixture.defects for entry in d.files),
        *(entry for item in manifest.history for entry in item.files),
    ]
    for entry in entries:
        first = entry.content.splitlines()[0]
        assert f" from CPython {CPYTHON}, Lib/" in first, entry.path
        assert "Python Software Foundation License Version 2" in entry.content, entry.path
        assert "Python Software Foundation;\nAll Rights Reserved" in entry.content, entry.path


def test_stdlib_readme_carries_the_psf_licence_and_names_every_source():
    root = files("lorelab.evaluation.learning.datasets") / "stdlib"
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert "PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2" in readme
    data = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    modules = [path for fixture in data["fixtures"] for path in fixture["files"]]
    modules += [path for item in data["history"] for path in item["files"]]
    for path in modules:
        assert f"`{path}`" in readme, path
