"""Recalling lessons: the store's hybrid ranking, then a documented floor.

The store ranks lessons as it ranks experiences for briefs: BM25 over requirements and test
names fused with the cosine similarity of the requirements' embeddings (reciprocal rank
fusion). Fused scores are ranks, not evidence, so the floor is lexical: a lesson is recalled
only when it shares at least ``MIN_SHARED_TERMS`` informative terms with the requirements
(terms as the store indexes them: lower-cased words, stemmed, stopwords removed, plus the
grammar words of docs/protocol.md). Below the floor nothing is returned: say nothing rather
than pad.
"""

from __future__ import annotations

import re
import time
from typing import Final

from lorelab.memory import LessonSearchRequest, MemoryStore, unique_terms
from lorelab.testgen._models import Recall, RecalledLesson
from lorelab.workspace import FileEntry

DEFAULT_K: Final = 3
MIN_SHARED_TERMS: Final = 3
# Words every requirements text written in lorelab's examples grammar carries; sharing them
# says nothing about whether two specifications are related.
GRAMMAR_TERMS: Final = frozenset(
    unique_terms("example examples edge case cases raises return returns value values")
)
_TEST_NAME: Final = re.compile(r"def\s+(test\w*)|(?<![\w$.])(?:test|it)\s*\(\s*[\"'`]([^\"'`]+)")


def test_names(content: str) -> list[str]:
    """The test function names (pytest) and test titles (node) found in a test file."""
    return [a or b for a, b in _TEST_NAME.findall(content)]


def _informative(text: str) -> set[str]:
    return set(unique_terms(text)) - GRAMMAR_TERMS


def lesson_runner(tests: list[FileEntry]) -> str | None:
    """The runner a lesson's tests are written for, from their paths (None if mixed)."""
    runners = {"node" if test.path.endswith(".js") else "pytest" for test in tests}
    return runners.pop() if len(runners) == 1 else None


def recall_lessons(
    store: MemoryStore, requirements: str, k: int = DEFAULT_K, *, runner: str | None = None
) -> Recall:
    """Rank lessons for ``requirements`` (hybrid) and keep the top ``k`` that clear the floor.

    With ``runner``, lessons whose tests are written for another runner are never recalled.
    """
    started = time.perf_counter()
    wanted = _informative(requirements)
    # Ask for more than k so lessons of another runner cannot crowd out the ones that fit.
    found = (
        store.search_lessons(
            LessonSearchRequest(text=requirements, k=k if runner is None else 4 * k)
        ).hits
        if wanted
        else []
    )
    ranked = [(hit.lesson, hit.score) for hit in found]
    if runner is not None:
        ranked = [(lesson, s) for lesson, s in ranked if lesson_runner(lesson.tests) == runner]
    ranked = ranked[:k]
    kept: list[RecalledLesson] = []
    below: list[str] = []
    for lesson, score in ranked:
        names = " ".join(name for test in lesson.tests for name in test_names(test.content))
        shared = sorted(wanted & _informative(f"{lesson.requirements} {names}"))
        if len(shared) < MIN_SHARED_TERMS:
            below.append(lesson.id)
            continue
        kept.append(
            RecalledLesson(
                id=lesson.id,
                specification_id=lesson.specification_id,
                score=score,
                shared_terms=shared,
                requirements=lesson.requirements,
                tests=lesson.tests,
            )
        )
    elapsed = int((time.perf_counter() - started) * 1000)
    return Recall(lessons=kept, below_floor=below, retrieval_ms=elapsed)
