"""The placebo arm's lessons (``--control placebo``): as many lessons as the memory arm recalls
for the specification, each as close as possible in size to the one it stands in for, taken
from the frozen store's lessons that hold **none** of this specification's history.

A lesson holds a specification's history when it was recorded for that specification
(``specificationId``) or one of its source files has the path of one of the specification's
source files (the earlier version of the same module). The choice is deterministic: for each
memory lesson in recall order, the unused candidate whose size (UTF-8 bytes of the canonical
JSON of its requirements and tests, what reaches a worker) is nearest, ties broken by id. So
the placebo arm gets the same number of lessons, of about the same size, from the same frozen
store, under the same schedule and workers: it separates "relevant memory helps" from "any
extra input helps". When fewer candidates than memory lessons exist, it gets fewer, and the
receipt shows both lists.
"""

from __future__ import annotations

from lorelab.evaluation.learning.manifest import Fixture
from lorelab.io import json_bytes
from lorelab.memory import LessonsRequest, MemoryStore
from lorelab.testgen import Recall, recall_lessons
from lorelab.testgen._models import RecalledLesson


def _size(requirements: str, tests: object) -> int:
    return json_bytes({"requirements": requirements, "tests": tests})


def placebo_recall(store: MemoryStore, fixture: Fixture, runner: str) -> tuple[Recall, list[str]]:
    """The placebo arm's recall for ``fixture``, and the ids of the memory arm's recall it
    stands in for (in the same order)."""
    real = recall_lessons(store, fixture.requirements, runner=runner)
    own = {entry.path for entry in fixture.files}
    candidates = [
        lesson
        for lesson in store.list_lessons(LessonsRequest()).lessons
        if lesson.specification_id != fixture.id
        and not own & {entry.path for entry in lesson.files}
        and all(test.path.endswith(".py") == (runner == "pytest") for test in lesson.tests)
    ]
    sizes = {
        lesson.id: _size(lesson.requirements, [t.model_dump() for t in lesson.tests])
        for lesson in candidates
    }
    chosen: list[RecalledLesson] = []
    for lesson in real.lessons:
        left = [c for c in candidates if c.id not in {p.id for p in chosen}]
        if not left:
            break
        target = _size(lesson.requirements, [t.model_dump() for t in lesson.tests])
        pick = min(left, key=lambda c: (abs(sizes[c.id] - target), c.id))
        chosen.append(
            RecalledLesson(
                id=pick.id,
                specification_id=pick.specification_id,
                score=lesson.score,
                shared_terms=[],
                requirements=pick.requirements,
                tests=pick.tests,
            )
        )
    recall = Recall(lessons=chosen, below_floor=[], retrieval_ms=real.retrieval_ms)
    return recall, [lesson.id for lesson in real.lessons]


__all__ = ["placebo_recall"]
