"""Recalling lessons: the store's hybrid ranking, then a documented floor of shared evidence.

The store ranks lessons as it ranks experiences for briefs: BM25 over requirements and test
names fused with the cosine similarity of the requirements' embeddings (reciprocal rank
fusion). Fused scores are ranks, not evidence, so the floor is lexical: a lesson is recalled
only when it shares at least ``MIN_SHARED_TERMS`` **informative** terms with the requirements
(terms as the store indexes them: lower-cased words, stemmed, stopwords removed). A term is
not informative when every specification carries it, whatever it is about:

- where the code lives: words containing ``/`` or ending in a source-file suffix
  (``src/colorsys_hsv.py``) are dropped before terms are taken, and ``LOCATION_TERMS``
  (``src``, ``py``, ``module``, ``test``...) never count, so neither does the signature
  phrase "in module src/x.py";
- the requirements grammar of docs/protocol.md (``GRAMMAR_TERMS``: ``Examples:``,
  ``Edge cases:``, ``raises``, ``returns``, ``value``);
- numbers (example literals such as ``10`` say nothing about the subject);
- ``CORPUS_COMMON_TERMS``: the terms found in at least ``COMMON_FRACTION`` of the
  specifications of the tuning datasets (``qualification`` and ``default``), frozen here and
  re-derived by a test (see docs/testgen.md for how the fraction was chosen and what the floor
  was tested on).

The list is fixed rather than counted in the store: a store of one or two lessons (a fresh one,
or every shipped dataset) gives every term a document frequency of 1 or 1/2, and whether a
lesson is recalled should not depend on which unrelated lessons happen to be stored next to it.
Below the floor nothing is returned: say nothing rather than pad.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from lorelab.memory import LessonSearchRequest, MemoryStore, unique_terms
from lorelab.testgen._models import Recall, RecalledLesson
from lorelab.workspace import FileEntry

DEFAULT_K: Final = 3
MIN_SHARED_TERMS: Final = 4
# Where words end for the location check: whitespace, quotes, brackets, commas, semicolons.
_DELIMITERS: Final = re.compile(r"[\s\"'`()\[\]{},;]+")
# A word ending in a source or data file suffix (after sentence punctuation) names a file.
_FILE_WORD: Final = re.compile(r"\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|json|txt|md|toml|cfg|ini)$")
# Words that say where code is or how a test is named, not what it does.
LOCATION_TERMS: Final = frozenset(
    unique_terms("src lib test tests module modules file files py js mjs cjs ts")
)
# The words of the requirements grammar (docs/protocol.md): "Examples:", "Edge cases:",
# "- EXPR == EXPECTED", "- EXPR raises ERROR", the signature line "f(...) -> T, in module P",
# and the phrases the grammar's prose uses for results ("returns", "value").
GRAMMAR_TERMS: Final = frozenset(
    unique_terms("example examples edge case cases raises return returns value values")
)
# The fraction of tuning specifications a term must appear in to be "common" (chosen on the
# tuning datasets with benchmarks/recall_floor.py; see docs/testgen.md).
COMMON_FRACTION: Final = 0.75
# common_terms(requirements of every history item and fixture of the datasets "qualification"
# and "default", COMMON_FRACTION), frozen; tests/testgen/test_recall_floor.py re-derives it.
CORPUS_COMMON_TERMS: Final = frozenset(("empty",))
GENERIC_TERMS: Final = LOCATION_TERMS | GRAMMAR_TERMS | CORPUS_COMMON_TERMS
_TEST_NAME: Final = re.compile(r"def\s+(test\w*)|(?<![\w$.])(?:test|it)\s*\(\s*[\"'`]([^\"'`]+)")


@dataclass(frozen=True)
class RecallFloor:
    """What a lesson must share with the requirements to be recalled."""

    min_shared: int = MIN_SHARED_TERMS
    generic: frozenset[str] = GENERIC_TERMS


DEFAULT_FLOOR: Final = RecallFloor()


def test_names(content: str) -> list[str]:
    """The test function names (pytest) and test titles (node) found in a test file."""
    return [a or b for a, b in _TEST_NAME.findall(content)]


def _is_location(word: str) -> bool:
    return "/" in word or _FILE_WORD.search(word.rstrip(".:!?")) is not None


def without_locations(text: str) -> str:
    """``text`` without its words that name a location: a path (any word with ``/``) or a
    file name (``capwords.py``, ``notes.md``). Linear in the length of ``text``."""
    return " ".join(word for word in _DELIMITERS.split(text) if not _is_location(word))


def candidate_terms(text: str) -> set[str]:
    """The terms of ``text`` that could be evidence: location words, numbers, grammar gone."""
    kept = unique_terms(without_locations(text))
    return {term for term in kept if not term.isdigit()} - LOCATION_TERMS - GRAMMAR_TERMS


def common_terms(texts: Iterable[str], fraction: float) -> frozenset[str]:
    """The candidate terms found in at least ``fraction`` of ``texts`` (document frequency)."""
    documents = [candidate_terms(text) for text in texts]
    counts = Counter(term for document in documents for term in document)
    return frozenset(t for t, n in counts.items() if documents and n >= fraction * len(documents))


def informative_terms(text: str, generic: frozenset[str] = GENERIC_TERMS) -> set[str]:
    """The terms of ``text`` that count as evidence of relevance under the floor."""
    return candidate_terms(text) - generic


def lesson_runner(tests: list[FileEntry]) -> str | None:
    """The runner a lesson's tests are written for, from their paths (None if mixed)."""
    runners = {"node" if test.path.endswith(".js") else "pytest" for test in tests}
    return runners.pop() if len(runners) == 1 else None


def recall_lessons(
    store: MemoryStore,
    requirements: str,
    k: int = DEFAULT_K,
    *,
    runner: str | None = None,
    floor: RecallFloor = DEFAULT_FLOOR,
) -> Recall:
    """Rank lessons for ``requirements`` (hybrid) and keep the top ``k`` that clear the floor.

    With ``runner``, lessons whose tests are written for another runner are never recalled.
    ``floor`` is the documented default; other floors are for measuring it.
    """
    started = time.perf_counter()
    wanted = informative_terms(requirements, floor.generic)
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
        shared = sorted(wanted & informative_terms(f"{lesson.requirements} {names}", floor.generic))
        if len(shared) < floor.min_shared:
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
