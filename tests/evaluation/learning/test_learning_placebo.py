"""The placebo arm (``--control placebo``): its schedule, its lessons, and the second paired
comparison in the summary."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from lorelab.evaluation.learning import get_dataset
from lorelab.evaluation.learning._placebo import placebo_recall
from lorelab.evaluation.learning.records import LessonSeed
from lorelab.evaluation.learning.schedule import schedule
from lorelab.evaluation.learning.summary import build_summary
from lorelab.io import json_bytes
from lorelab.memory import LessonsRequest, open_store
from lorelab.testgen import HistoricalExample, lesson_request, recall_lessons
from tests.evaluation.learning.test_learning_summary import MANIFEST, SPECS, _settings, _trial

EVOLUTION = get_dataset("evolution")


def test_with_a_placebo_arm_each_arm_goes_first_second_and_third_once_per_specification():
    arms = ("memory", "no-memory", "placebo")
    plan = schedule(["a", "b", "c", "d"], 3, seed=11, arms=arms)
    assert len(plan) == 4 * 3 * 3
    for spec in "abcd":
        places = Counter()
        for rep in (1, 2, 3):
            order = [t.arm for t in plan if t.specification == spec and t.repetition == rep]
            assert sorted(order) == sorted(arms)
            places.update((arm, index) for index, arm in enumerate(order))
        assert set(places.values()) == {1}
        assert len(places) == 9


def test_two_arm_schedules_are_unchanged_by_the_placebo_option():
    assert schedule(["a", "b"], 3, 5) == schedule(["a", "b"], 3, 5, arms=("memory", "no-memory"))


def _evolution_store(tmp_path: Path):
    store = open_store(tmp_path / "home")
    for entry in EVOLUTION.history:
        example = HistoricalExample(
            id=entry.id,
            specification_id=entry.specification_id,
            requirements=entry.requirements,
            runner="pytest",
            files=entry.files,
            tests=entry.tests,
        )
        store.add_lesson(lesson_request(example, 2, {"reason": None}))
    return store


def test_every_evolution_specification_recalls_the_release_holding_its_earlier_version(tmp_path):
    store = _evolution_store(tmp_path)
    try:
        for fixture in EVOLUTION.fixtures:
            recalled = recall_lessons(store, fixture.requirements, runner="pytest").lessons
            own = [
                item.id
                for item in EVOLUTION.history
                if {e.path for e in item.files} & {e.path for e in fixture.files}
            ]
            assert len(own) == 1, fixture.id
            assert own[0] in [lesson.id for lesson in recalled], fixture.id
    finally:
        store.close()


def _size(lesson) -> int:
    return json_bytes(
        {"requirements": lesson.requirements, "tests": [t.model_dump() for t in lesson.tests]}
    )


def test_placebo_lessons_match_the_memory_recall_in_number_and_hold_none_of_its_history(
    tmp_path,
):
    store = _evolution_store(tmp_path)
    try:
        every = {lesson.id: lesson for lesson in store.list_lessons(LessonsRequest()).lessons}
        for fixture in EVOLUTION.fixtures:
            recall, stood_in_for = placebo_recall(store, fixture, "pytest")
            memory = recall_lessons(store, fixture.requirements, runner="pytest").lessons
            assert stood_in_for == [lesson.id for lesson in memory]
            assert len(recall.lessons) == len(memory)
            assert len({lesson.id for lesson in recall.lessons}) == len(recall.lessons)
            own = {entry.path for entry in fixture.files}
            candidates = [
                lesson for lesson in every.values() if not own & {e.path for e in lesson.files}
            ]
            for placebo in recall.lessons:
                assert not own & {entry.path for entry in every[placebo.id].files}, fixture.id
            # The first stands in for the first memory lesson: the nearest in size of all
            # the lessons that hold none of this history.
            first, target = recall.lessons[0], _size(memory[0])
            gaps = [abs(_size(candidate) - target) for candidate in candidates]
            assert abs(_size(every[first.id]) - target) == min(gaps), fixture.id
    finally:
        store.close()


def _three_arm_records(memory, plain, placebo):
    records = []
    for spec in SPECS:
        for rep in (1, 2, 3):
            for arm, detected in (("memory", memory), ("no-memory", plain), ("placebo", placebo)):
                trial = _trial(spec, rep, arm, detected)
                seed = LessonSeed(kept=2 if arm == "memory" else 0, dropped=1, reasons=[])
                records.append(trial.model_copy(update={"lesson_seed": seed}))
    return records


def test_the_summary_adds_the_placebo_arm_and_a_memory_against_placebo_sign_test():
    settings = _settings(3).model_copy(update={"control": "placebo"})
    records = _three_arm_records(3, 3, 1)
    summary = build_summary(MANIFEST, "0" * 64, "live", settings, records, frozen_lessons=2)
    assert set(summary.arms) == {"memory", "no-memory", "placebo"}
    assert summary.paired.label == "inconclusive"  # memory ties no-memory everywhere
    assert summary.paired_placebo is not None
    assert summary.paired_placebo.control == "placebo"
    assert summary.paired_placebo.sign_test["positive"] == 6
    assert summary.paired_placebo.label == "positive"
    assert summary.arms["memory"].trials_with_lesson_used == 18
    assert summary.arms["no-memory"].trials_with_lesson_used == 0
    assert summary.arms["placebo"].trials_reporting_lesson_use == 18


def test_without_the_placebo_arm_the_summary_has_no_second_comparison():
    records = [t for t in _three_arm_records(3, 1, 1) if t.arm != "placebo"]
    summary = build_summary(MANIFEST, "0" * 64, "live", _settings(3), records, frozen_lessons=2)
    assert summary.paired_placebo is None
    assert set(summary.arms) == {"memory", "no-memory"}


def test_only_re_escape_history_tests_behaviour_the_current_version_changed(tmp_path):
    from lorelab.runners import PytestRunner

    current = {entry.path: entry for f in EVOLUTION.fixtures for entry in f.files}
    runner = PytestRunner(plugin_autoload=False)
    failing: set[str] = set()
    for item in EVOLUTION.history:
        project = tmp_path / item.id
        for entry in [*(current[e.path] for e in item.files), *item.tests]:
            target = project / entry.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(entry.content, encoding="utf-8")
        execution = runner.run(project, timeout_s=120.0)
        assert execution.cases, item.id
        failing |= {case.id.split("::")[0] for case in execution.cases if case.status != "passed"}
    assert failing == {"tests/test_re_escape.py"}


def test_lesson_use_is_unknown_not_zero_when_no_author_reports_it():
    settings = _settings(3).model_copy(update={"control": "placebo"})
    records = [t.model_copy(update={"lesson_seed": None}) for t in _three_arm_records(3, 3, 1)]
    summary = build_summary(MANIFEST, "0" * 64, "live", settings, records, frozen_lessons=2)
    for arm in ("memory", "no-memory", "placebo"):
        assert summary.arms[arm].trials_reporting_lesson_use == 0
        assert summary.arms[arm].trials_with_lesson_used is None
        dumped = summary.arms[arm].model_dump(by_alias=True)
        assert dumped["trialsWithLessonUsed"] is None
