"""Ground truth of the shipped datasets, proven with real pytest runs, and the protocol
fixture's end-to-end demonstration on them (real worker processes, real pytest).

Every source variant (a reference source, or a reference source with one defect applied) gets
one disposable project holding the reference tests and the fixture's tests of both arms, and is
run by lorelab's pytest runner (real ``python -m pytest``, outcomes from JUnit XML), two at a
time: reference sources twice (ground truth must be stable), each defect once. Detection is
the runners' rule (``detect``) applied to one arm's cases at a time. The fixture answers the
default dataset as a real worker process called through the real transport (``call_worker``
with the shipped ``fixture`` adapter); for the qualification dataset the same code is called
in-process (``answer``) to keep the module fast.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lorelab.evaluation.learning import get_dataset
from lorelab.evaluation.learning.manifest import Fixture, LearningManifest, declared_cases
from lorelab.runners import (
    Execution,
    ExecutionJob,
    PytestRunner,
    Stability,
    StabilityJob,
    assess,
    detect,
    run_parallel,
)
from lorelab.testing.fixture import answer
from lorelab.workers import WorkerBounds, adapter_argv, call_worker
from lorelab.workspace import FileEntry

REFERENCE_RUNS = 2  # reference sources run twice: ground truth must be stable, not true once
PYTEST_TIMEOUT_S = 120.0
WORKER_TIMEOUT_MS = 60_000
ARMS = ("no-memory", "memory")

# How each planted defect is meant to meet the protocol fixture (the datasets' design, which
# the end-to-end test holds them to): caught by the plain examples, caught only by an edge case
# whose tag is a pattern of a lesson, or caught by neither.
DESIGN: dict[str, dict[str, str]] = {
    "default": {
        "normalize-keeps-case": "examples",
        "normalize-blank-crash": "edge",
        "normalize-lower-not-casefold": "neither",
        "dedupe-keeps-last": "examples",
        "dedupe-drops-falsy": "edge",
        "dedupe-empty-crash": "edge",
        "intervals-misses-containment": "examples",
        "intervals-touching-overlap": "edge",
        "intervals-accepts-reversed": "neither",
    },
    "qualification": {
        "csv-comma-ends-quoted-field": "examples",
        "csv-drops-trailing-field": "edge",
        "csv-keeps-doubled-quote": "neither",
        "durations-drops-days": "neither",
        "durations-zero-is-empty": "edge",
        "durations-keeps-zero-components": "examples",
        "search-returns-any-match": "examples",
        "search-empty-crash": "edge",
        "search-returns-insertion-point": "neither",
        "frequencies-merges-case": "examples",
        "frequencies-skips-falsy": "edge",
        "frequencies-orders-by-count": "edge",
        "prefix-first-two-only": "examples",
        "prefix-empty-crash": "edge",
        "prefix-single-word-empty": "edge",
        "versions-compare-as-strings": "examples",
        "versions-missing-is-smaller": "neither",
        "versions-empty-component-is-zero": "edge",
    },
}

# The datasets this module proves; qualification-12 (which extends qualification) and stdlib
# are proven in test_datasets_ground_truth.py.
DATASET_NAMES = tuple(DESIGN)

Outcomes = dict[str, str]  # case id -> passed | failed | error | skipped


@dataclass(frozen=True)
class Generated:
    """What the fixture worker produced for one fixture and arm."""

    verdict: str
    files: tuple[FileEntry, ...]


@dataclass(frozen=True)
class Variant:
    """One source variant of one fixture (``defect`` None: the reference source)."""

    dataset: str
    fixture: str
    defect: str | None
    files: tuple[FileEntry, ...]


# --- the protocol fixture, run as a real worker process -------------------------------------


def _call_worker(payload: dict[str, Any], *, process: bool) -> dict[str, Any]:
    if not process:
        response = answer(json.loads(json.dumps(payload)))
        assert response["evidenceKind"] == "protocol-fixture"
        return response
    with tempfile.TemporaryDirectory() as trial:
        call = call_worker(
            adapter_argv("fixture"),
            payload["role"],
            payload,
            cwd=Path(trial),
            bounds=WorkerBounds(timeout_ms=WORKER_TIMEOUT_MS),
        )
    assert call.ok, call.receipt.failure_detail
    assert call.receipt.evidence_kind == "protocol-fixture"
    assert call.receipt.usage is None
    assert call.receipt.model.claimed is None
    assert call.response is not None
    return call.response


def _lessons(manifest: LearningManifest) -> list[dict[str, Any]]:
    return [
        {
            "id": item.id,
            "specificationId": item.specification_id,
            "requirements": item.requirements,
            "tests": [entry.model_dump() for entry in item.tests],
            "score": 1.0,
        }
        for item in manifest.history
    ]


def _generate(manifest: LearningManifest, fixture: Fixture, arm: str, process: bool) -> Generated:
    task = {
        "specificationId": fixture.id,
        "requirements": fixture.requirements,
        "runner": manifest.runner,
        "source": [entry.model_dump() for entry in fixture.files],
    }
    lessons = _lessons(manifest) if arm == "memory" else []
    common = {"protocol": "lorelab.worker/1", "task": task}
    plan = _call_worker(
        {**common, "role": "architect", "lessons": lessons, "limits": {"maxCases": 20}},
        process=process,
    )
    written = _call_worker(
        {
            **common,
            "role": "author",
            "lessons": lessons,
            "plan": {"cases": plan["cases"]},
            "limits": {"maxFiles": 4, "maxCases": 20},
        },
        process=process,
    )
    review = _call_worker(
        {**common, "role": "reviewer", "tests": written["files"]}, process=process
    )
    files = tuple(FileEntry.model_validate(entry) for entry in written["files"])
    return Generated(review["verdict"], files)


# --- real pytest runs, through lorelab's runner ----------------------------------------------


def _materialize(root: Path, files: Sequence[FileEntry]) -> Path:
    for entry in files:
        target = root / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(entry.content, encoding="utf-8")
    return root


def _arm_copy(entry: FileEntry, arm: str) -> FileEntry:
    """The fixture's file under a per-arm name, so both arms run beside the reference tests."""
    stem = entry.path.removesuffix(".py")
    return FileEntry(path=f"{stem}__{arm.replace('-', '_')}.py", content=entry.content)


def _variants(
    name: str, manifest: LearningManifest, generated: Mapping[tuple[str, str, str], Generated]
) -> Iterator[Variant]:
    for fixture in manifest.fixtures:
        extra = [
            _arm_copy(entry, arm)
            for arm in ARMS
            for entry in generated[(name, fixture.id, arm)].files
        ]
        base = [*fixture.reference_tests, *extra]
        yield Variant(name, fixture.id, None, (*fixture.files, *base))
        for defect in fixture.defects:
            replaced = {entry.path: entry for entry in defect.files}
            source = [replaced.get(entry.path, entry) for entry in fixture.files]
            yield Variant(name, fixture.id, defect.id, (*source, *base))


@dataclass(frozen=True)
class Evidence:
    """Everything the tests below assert on, computed once for the module."""

    manifests: dict[str, LearningManifest]
    generated: dict[tuple[str, str, str], Generated]
    fixture_runs: dict[tuple[str, str, str | None], Stability]
    history_runs: dict[tuple[str, str], Stability]


@pytest.fixture(scope="module")
def evidence(tmp_path_factory: pytest.TempPathFactory) -> Evidence:
    base = tmp_path_factory.mktemp("ground-truth")
    manifests = {name: get_dataset(name) for name in DATASET_NAMES}
    calls = [
        (name, fixture, arm)
        for name, manifest in manifests.items()
        for fixture in manifest.fixtures
        for arm in ARMS
    ]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(
            lambda call: _generate(manifests[call[0]], call[1], call[2], call[0] == "default"),
            calls,
        )
        generated = {
            (n, f.id, arm): result for (n, f, arm), result in zip(calls, results, strict=True)
        }
    variants = [v for n, m in manifests.items() for v in _variants(n, m, generated)]
    histories = [(n, item) for n, m in manifests.items() for item in m.history]
    runner = PytestRunner(plugin_autoload=False)
    jobs: list[StabilityJob | ExecutionJob] = []
    for v in variants:
        project = _materialize(base / f"{v.dataset}-{v.fixture}-{v.defect or 'reference'}", v.files)
        if v.defect is None:
            jobs.append(StabilityJob(runner, project, REFERENCE_RUNS, PYTEST_TIMEOUT_S))
        else:
            jobs.append(ExecutionJob(runner, project, PYTEST_TIMEOUT_S))
    for n, item in histories:
        project = _materialize(base / f"{n}-{item.id}", [*item.files, *item.tests])
        jobs.append(StabilityJob(runner, project, REFERENCE_RUNS, PYTEST_TIMEOUT_S))
    outcomes = run_parallel(jobs, max_workers=2)
    # A defect runs once; its one execution is judged as a one-run stability record.
    records = [r if isinstance(r, Stability) else assess([r]) for r in outcomes]
    fixture_runs = {
        (v.dataset, v.fixture, v.defect): record
        for v, record in zip(variants, records[: len(variants)], strict=True)
    }
    history_runs = {
        (n, item.id): record
        for (n, item), record in zip(histories, records[len(variants) :], strict=True)
    }
    return Evidence(manifests, generated, fixture_runs, history_runs)


def _outcomes(execution: Execution) -> Outcomes:
    return {case.id: case.status for case in execution.cases}


def _reference_ids(manifest: LearningManifest, fixture: Fixture) -> set[str]:
    declared = declared_cases(fixture.reference_tests, manifest.runner)
    return {f"{path}::{name}" for path, names in declared.items() for name in names}


def _split(execution: Execution, reference_ids: set[str]) -> tuple[Outcomes, Outcomes]:
    outcomes = _outcomes(execution)
    reference = {case: status for case, status in outcomes.items() if case in reference_ids}
    generated = {case: status for case, status in outcomes.items() if case not in reference_ids}
    return reference, generated


def _marker(arm: str) -> str:
    return f"__{arm.replace('-', '_')}.py::"


def _arm_cases(outcomes: Outcomes, arm: str) -> Outcomes:
    return {case: status for case, status in outcomes.items() if _marker(arm) in case}


def _arm_record(record: Stability, arm: str) -> Stability:
    """The record restricted to one arm's cases (the runs themselves were complete)."""
    runs = [
        run.model_copy(update={"cases": [c for c in run.cases if _marker(arm) in c.id]})
        for run in record.runs
    ]
    return assess(runs)


def _detected(evidence: Evidence, name: str, arm: str) -> set[str]:
    """Defects the arm's tests detect, by the runners' detection rule (``detect``)."""
    found: set[str] = set()
    for fixture in evidence.manifests[name].fixtures:
        baseline = _arm_record(evidence.fixture_runs[(name, fixture.id, None)], arm)
        for defect in fixture.defects:
            on_defect = _arm_record(evidence.fixture_runs[(name, fixture.id, defect.id)], arm)
            if detect(baseline, on_defect).status == "detected":
                found.add(defect.id)
    return found


# --- ground truth -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_reference_tests_pass_stably_on_every_reference_source(evidence: Evidence, name: str):
    manifest = evidence.manifests[name]
    for fixture in manifest.fixtures:
        expected = _reference_ids(manifest, fixture)
        record = evidence.fixture_runs[(name, fixture.id, None)]
        assert record.stable, (fixture.id, record.first_difference)
        assert record.classification == "passed", (fixture.id, record.runs[0].reason)
        assert len(record.runs) == REFERENCE_RUNS
        for run in record.runs:
            reference, _ = _split(run, expected)
            assert set(reference) == expected, fixture.id
            assert set(reference.values()) == {"passed"}, (fixture.id, reference)


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_each_defect_fails_exactly_its_expected_cases(evidence: Evidence, name: str):
    manifest = evidence.manifests[name]
    for fixture in manifest.fixtures:
        expected_ids = _reference_ids(manifest, fixture)
        for defect in fixture.defects:
            for run in evidence.fixture_runs[(name, fixture.id, defect.id)].runs:
                assert run.classification == "failed", (defect.id, run.reason)
                reference, _ = _split(run, expected_ids)
                assert set(reference) == expected_ids, defect.id
                failing = {case for case, status in reference.items() if status != "passed"}
                assert failing == set(defect.expected_failing_cases), defect.id
                assert {reference[case] for case in failing} == {"failed"}, defect.id


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_history_tests_pass_stably_on_their_own_source(evidence: Evidence, name: str):
    manifest = evidence.manifests[name]
    for item in manifest.history:
        declared = declared_cases(item.tests, manifest.runner)
        expected = {f"{path}::{test}" for path, names in declared.items() for test in names}
        record = evidence.history_runs[(name, item.id)]
        assert record.stable, (item.id, record.first_difference)
        assert record.classification == "passed", (item.id, record.runs[0].reason)
        for run in record.runs:
            assert set(_outcomes(run)) == expected, item.id


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_every_defect_has_a_label_and_the_design_names_every_defect(evidence: Evidence, name: str):
    defects = [d for fixture in evidence.manifests[name].fixtures for d in fixture.defects]
    assert all(defect.label for defect in defects)
    assert {defect.id for defect in defects} == set(DESIGN[name])


# --- the protocol fixture, end to end ---------------------------------------------------------


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_fixture_tests_are_approved_and_pass_stably_on_every_reference_source(
    evidence: Evidence, name: str
):
    manifest = evidence.manifests[name]
    for fixture in manifest.fixtures:
        for arm in ARMS:
            assert evidence.generated[(name, fixture.id, arm)].verdict == "approve"
        for run in evidence.fixture_runs[(name, fixture.id, None)].runs:
            _, generated = _split(run, _reference_ids(manifest, fixture))
            for arm in ARMS:
                cases = _arm_cases(generated, arm)
                assert cases, (fixture.id, arm)
                assert set(cases.values()) == {"passed"}, (fixture.id, arm, cases)


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_lessons_add_edge_case_tests_to_every_specification_that_has_matching_tags(
    evidence: Evidence, name: str
):
    for fixture in evidence.manifests[name].fixtures:
        outcomes = _outcomes(evidence.fixture_runs[(name, fixture.id, None)].runs[0])
        without = _arm_cases(outcomes, "no-memory")
        with_memory = _arm_cases(outcomes, "memory")
        assert len(with_memory) > len(without), fixture.id
        assert not any("::test_edge_" in case for case in without)


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_fixture_detects_examples_defects_without_lessons_and_edge_defects_only_with_them(
    evidence: Evidence, name: str
):
    design = DESIGN[name]
    by_examples = {defect for defect, how in design.items() if how == "examples"}
    by_edges = {defect for defect, how in design.items() if how == "edge"}
    assert _detected(evidence, name, "no-memory") == by_examples
    assert _detected(evidence, name, "memory") == by_examples | by_edges


def test_default_dataset_fixture_detects_more_defects_with_lessons_than_without(
    evidence: Evidence,
):
    without = _detected(evidence, "default", "no-memory")
    with_memory = _detected(evidence, "default", "memory")
    assert (len(without), len(with_memory)) == (3, 7)
    assert without < with_memory


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_some_defects_stay_undetected_even_with_lessons(evidence: Evidence, name: str):
    missed = {
        d
        for fixture in evidence.manifests[name].fixtures
        for d in (defect.id for defect in fixture.defects)
    } - _detected(evidence, name, "memory")
    assert missed
    assert missed == {defect for defect, how in DESIGN[name].items() if how == "neither"}
