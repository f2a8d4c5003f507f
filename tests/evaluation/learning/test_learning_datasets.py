"""Ground truth of the shipped datasets, proven with real pytest runs, and the protocol
fixture's end-to-end demonstration on them (real worker subprocesses, real pytest).

Every source variant (a reference source, or a reference source with one defect applied) gets
one disposable project holding the reference tests and the fixture's tests of both arms, and is
run with ``python -m pytest --junitxml`` (reference sources twice, for stability; each defect
once); the JUnit XML gives case-level outcomes. The fixture answers the default dataset as a real
worker process (``python -m lorelab.workers.adapters.fixture``); for the qualification dataset
the same code is called in-process (``answer``) to keep the module fast.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lorelab.evaluation.learning import (
    DATASET_NAMES,
    Fixture,
    LearningManifest,
    declared_cases,
    get_dataset,
)
from lorelab.workers.adapters.fixture import answer
from lorelab.workspace import FileEntry

REFERENCE_RUNS = 2  # reference sources run twice: ground truth must be stable, not true once
PYTEST_TIMEOUT_S = 120
WORKER_TIMEOUT_S = 60
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


def _call_worker(payload: Mapping[str, Any], *, process: bool) -> dict[str, Any]:
    if not process:
        response = answer(json.loads(json.dumps(payload)))
        assert response["evidenceKind"] == "protocol-fixture"
        return response
    completed = subprocess.run(
        [sys.executable, "-m", "lorelab.workers.adapters.fixture"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=WORKER_TIMEOUT_S,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr.decode()
    response: dict[str, Any] = json.loads(completed.stdout)
    assert response["evidenceKind"] == "protocol-fixture"
    assert "usage" not in response
    assert "model" not in response
    return response


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


# --- real pytest runs -----------------------------------------------------------------------


def _pytest_env() -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "COV_", "COVERAGE_")) and key != "PYTHONPATH"
    }
    # The project's tests run without the host's pytest plugins, as a fresh project would.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _case_id(classname: str, name: str, paths: Sequence[str]) -> str:
    """``tests.test_x`` + ``test_y`` -> ``tests/test_x.py::test_y`` (classes keep ``::``)."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        path = "/".join(parts[:cut]) + ".py"
        if path in paths:
            return "::".join([path, *parts[cut:], name])
    raise AssertionError(f"JUnit classname {classname!r} names no test file")


def run_pytest(root: Path, xml_path: Path, paths: Sequence[str]) -> Outcomes:
    """Run the project at ``root`` with real pytest and read case outcomes from JUnit XML."""
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--rootdir={root}",
            f"--junitxml={xml_path}",
            "tests",
        ],
        cwd=root,
        env=_pytest_env(),
        capture_output=True,
        timeout=PYTEST_TIMEOUT_S,
        check=False,
    )
    assert completed.returncode in (0, 1), completed.stdout.decode() + completed.stderr.decode()
    outcomes: Outcomes = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        tags = {child.tag for child in case}
        status = next(
            (
                s
                for tag, s in (("error", "error"), ("failure", "failed"), ("skipped", "skipped"))
                if tag in tags
            ),
            "passed",
        )
        outcomes[_case_id(case.attrib["classname"], case.attrib["name"], paths)] = status
    return outcomes


def _materialize(root: Path, files: Sequence[FileEntry]) -> None:
    for entry in files:
        target = root / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(entry.content, encoding="utf-8")


def _run_variant(
    base: Path, key: str, files: Sequence[FileEntry], runs_wanted: int
) -> list[Outcomes]:
    runs: list[Outcomes] = []
    for attempt in range(runs_wanted):
        root = base / key / f"run{attempt}" / "project"
        root.mkdir(parents=True)
        _materialize(root, files)
        paths = [entry.path for entry in files]
        runs.append(run_pytest(root, root.parent / "junit.xml", paths))
    return runs


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
    fixture_runs: dict[tuple[str, str, str | None], list[Outcomes]]
    history_runs: dict[tuple[str, str], list[Outcomes]]


@pytest.fixture(scope="module")
def evidence(tmp_path_factory: pytest.TempPathFactory) -> Evidence:
    base = tmp_path_factory.mktemp("ground-truth")
    manifests = {name: get_dataset(name) for name in DATASET_NAMES}
    jobs = [
        (name, fixture, arm)
        for name, manifest in manifests.items()
        for fixture in manifest.fixtures
        for arm in ARMS
    ]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(
            lambda job: _generate(manifests[job[0]], job[1], job[2], job[0] == "default"), jobs
        )
        generated = {
            (n, f.id, arm): result for (n, f, arm), result in zip(jobs, results, strict=True)
        }
        variants = [v for n, m in manifests.items() for v in _variants(n, m, generated)]
        histories = [(n, item) for n, m in manifests.items() for item in m.history]
        variant_runs = pool.map(
            lambda v: _run_variant(
                base,
                f"{v.dataset}-{v.fixture}-{v.defect or 'reference'}",
                v.files,
                REFERENCE_RUNS if v.defect is None else 1,
            ),
            variants,
        )
        fixture_runs = {
            (v.dataset, v.fixture, v.defect): runs
            for v, runs in zip(variants, variant_runs, strict=True)
        }
        history_results = pool.map(
            lambda job: _run_variant(
                base, f"{job[0]}-{job[1].id}", [*job[1].files, *job[1].tests], REFERENCE_RUNS
            ),
            histories,
        )
        history_runs = {
            (n, item.id): runs for (n, item), runs in zip(histories, history_results, strict=True)
        }
    return Evidence(manifests, generated, fixture_runs, history_runs)


def _reference_ids(manifest: LearningManifest, fixture: Fixture) -> set[str]:
    declared = declared_cases(fixture.reference_tests, manifest.runner)
    return {f"{path}::{name}" for path, names in declared.items() for name in names}


def _split(outcomes: Outcomes, reference_ids: set[str]) -> tuple[Outcomes, Outcomes]:
    reference = {case: status for case, status in outcomes.items() if case in reference_ids}
    generated = {case: status for case, status in outcomes.items() if case not in reference_ids}
    return reference, generated


def _arm_cases(outcomes: Outcomes, arm: str) -> Outcomes:
    marker = f"__{arm.replace('-', '_')}.py::"
    return {case: status for case, status in outcomes.items() if marker in case}


def _detected(evidence: Evidence, name: str, arm: str) -> set[str]:
    """Defects the arm's tests detect: a case that passed on the reference, in every run,
    fails or errors on the defect in every run."""
    found: set[str] = set()
    for fixture in evidence.manifests[name].fixtures:
        baseline_runs = [
            _arm_cases(run, arm) for run in evidence.fixture_runs[(name, fixture.id, None)]
        ]
        passing = set.intersection(
            *({case for case, status in run.items() if status == "passed"} for run in baseline_runs)
        )
        for defect in fixture.defects:
            runs = [
                _arm_cases(run, arm) for run in evidence.fixture_runs[(name, fixture.id, defect.id)]
            ]
            if any(all(run.get(case) in ("failed", "error") for run in runs) for case in passing):
                found.add(defect.id)
    return found


# --- ground truth -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_reference_tests_pass_stably_on_every_reference_source(evidence: Evidence, name: str):
    manifest = evidence.manifests[name]
    for fixture in manifest.fixtures:
        expected = _reference_ids(manifest, fixture)
        for run in evidence.fixture_runs[(name, fixture.id, None)]:
            reference, _ = _split(run, expected)
            assert set(reference) == expected, fixture.id
            assert set(reference.values()) == {"passed"}, (fixture.id, reference)


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_each_defect_fails_exactly_its_expected_cases(evidence: Evidence, name: str):
    manifest = evidence.manifests[name]
    for fixture in manifest.fixtures:
        expected_ids = _reference_ids(manifest, fixture)
        for defect in fixture.defects:
            for run in evidence.fixture_runs[(name, fixture.id, defect.id)]:
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
        for run in evidence.history_runs[(name, item.id)]:
            assert set(run) == expected, item.id
            assert set(run.values()) == {"passed"}, (item.id, run)


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
        for run in evidence.fixture_runs[(name, fixture.id, None)]:
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
        runs = evidence.fixture_runs[(name, fixture.id, None)][0]
        without = _arm_cases(runs, "no-memory")
        with_memory = _arm_cases(runs, "memory")
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
