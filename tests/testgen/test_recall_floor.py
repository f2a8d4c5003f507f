"""The recall floor: words every specification shares are no evidence of relevance.

The floor's knobs were chosen on the tuning datasets (``qualification`` and ``default``, see
benchmarks/recall_floor.py); the recall tests below use specifications the tuning never saw:
the six of ``stdlib`` and the six that ``qualification-12`` adds to ``qualification``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lorelab.evaluation.learning.datasets import get_dataset
from lorelab.evaluation.learning.manifest import Fixture, HistoryEntry
from lorelab.memory import AddLessonRequest, MemoryStore, open_store
from lorelab.testgen import recall_lessons
from lorelab.testgen._recall import (
    COMMON_FRACTION,
    CORPUS_COMMON_TERMS,
    GENERIC_TERMS,
    MIN_SHARED_TERMS,
    common_terms,
    informative_terms,
)
from lorelab.workspace import FileEntry

TUNING = ("qualification", "default")


def _history(name: str, item_id: str) -> HistoryEntry:
    return next(h for h in get_dataset(name).history if h.id == item_id)


def _fixture(name: str, fixture_id: str) -> Fixture:
    return next(f for f in get_dataset(name).fixtures if f.id == fixture_id)


def _add(store: MemoryStore, lesson_id: str, requirements: str, tests: list[FileEntry]) -> None:
    store.add_lesson(
        AddLessonRequest(
            lesson_id=lesson_id,
            specification_id=lesson_id.removeprefix("history-"),
            requirements=requirements,
            files=[],
            tests=tests,
            validation={"runs": 1},
        )
    )


@pytest.fixture
def stdlib_store(tmp_path: Path) -> Iterator[MemoryStore]:
    """A real store holding the ``stdlib`` dataset's history (bisect-right, capwords)."""
    store = open_store(tmp_path / "home")
    for item in get_dataset("stdlib").history:
        _add(store, item.id, item.requirements, list(item.tests))
    try:
        yield store
    finally:
        store.close()


def test_held_out_colorsys_hsv_recalls_no_history_item_sharing_only_generic_words(
    stdlib_store: MemoryStore,
):
    # colorsys-hsv converts colours; capwords capitalises words and bisect-right searches a
    # sorted list. What they share is the module-path phrase "in module src/<name>.py" and
    # the grammar, which recalled both lessons before the floor discounted them.
    recall = recall_lessons(
        stdlib_store, _fixture("stdlib", "colorsys-hsv").requirements, runner="pytest"
    )
    assert recall.lessons == []
    assert sorted(recall.below_floor) == ["history-bisect-right", "history-capwords"]


def test_the_module_path_phrase_and_grammar_words_are_never_evidence():
    phrase = "rgb_to_hsv(r, g, b), in module src/colour_hsv.py.\n\nExamples:\nEdge cases:\n"
    assert informative_terms(phrase) == {"rgb", "hsv"}  # from the function name only
    assert informative_terms("in module src/capwords.py; see lib/x.js and tests/test_a.py") == {
        "see"
    }
    assert informative_terms("- f(10, 250) == 42\n- f(7) raises ValueError") == {"valueerror"}
    assert {"src", "py", "js", "modul", "test", "exampl", "edge", "case"} <= GENERIC_TERMS


def test_a_lesson_sharing_give_module_py_src_start_stays_below_the_floor(tmp_path: Path):
    # The shape of the reported case: a colour conversion and capwords sharing only
    # "give", "module", "py", "src" and "start".
    store = open_store(tmp_path / "home")
    try:
        _add(
            store,
            "history-capwords",
            "Capitalize the words of a string; each word starts with a capital.\n\n"
            "capwords(s) gives a str, in module src/capwords.py.",
            [FileEntry(path="tests/test_capwords.py", content="def test_capwords_hello(): ...")],
        )
        recall = recall_lessons(
            store,
            "Convert a colour from RGB to HSV: the hue starts at red and a grey gives hue 0.\n\n"
            "rgb_to_hsv(r, g, b), in module src/colour_hsv.py.",
        )
    finally:
        store.close()
    assert recall.lessons == []
    assert recall.below_floor == ["history-capwords"]


def test_held_out_slugify_still_recalls_the_related_capwords_lesson(stdlib_store: MemoryStore):
    # slugify (qualification-12) and capwords (stdlib history) both rewrite the words of a
    # string: letter case, separators, runs of spaces. The floor must not recall nothing.
    recall = recall_lessons(
        stdlib_store, _fixture("qualification-12", "slugify").requirements, runner="pytest"
    )
    assert [lesson.id for lesson in recall.lessons] == ["history-capwords"]
    shared = set(recall.lessons[0].shared_terms)
    assert {"lowercas", "separator", "letter", "character"} <= shared
    assert not shared & GENERIC_TERMS
    assert "history-bisect-right" in recall.below_floor


def test_held_out_word_wrap_still_recalls_capwords(stdlib_store: MemoryStore):
    # Both split text into words on runs of whitespace and join them with one space.
    recall = recall_lessons(
        stdlib_store, _fixture("qualification-12", "word-wrap").requirements, runner="pytest"
    )
    assert "history-capwords" in [lesson.id for lesson in recall.lessons]


def test_tuning_pair_interval_overlap_recalls_clamp_and_unrelated_default_specs_do_not(
    tmp_path: Path,
):
    store = open_store(tmp_path / "home")
    clamp = _history("default", "history-clamp")
    _add(store, clamp.id, clamp.requirements, list(clamp.tests))
    try:
        recalled = {
            fixture.id: [
                lesson.id for lesson in recall_lessons(store, fixture.requirements).lessons
            ]
            for fixture in get_dataset("default").fixtures
        }
    finally:
        store.close()
    assert recalled == {"interval-overlap": ["history-clamp"], "normalize": [], "dedupe": []}


def test_the_frozen_common_terms_are_what_the_tuning_datasets_give():
    texts = {
        item.id: item.requirements
        for name in TUNING
        for item in [*get_dataset(name).history, *get_dataset(name).fixtures]
    }
    assert common_terms(texts.values(), COMMON_FRACTION) == CORPUS_COMMON_TERMS
    # The held-out datasets played no part: adding them changes nothing the floor reads.
    assert not {f.id for f in get_dataset("stdlib").fixtures} & set(texts)


def test_common_terms_counts_documents_not_occurrences():
    texts = ["alpha alpha alpha beta", "beta gamma", "beta delta", "epsilon"]
    assert common_terms(texts, 0.75) == {"beta"}
    assert common_terms(texts, 0.25) == {"alpha", "beta", "gamma", "delta", "epsilon"}
    assert common_terms([], 0.5) == frozenset()


def test_floor_boundary_min_shared_terms_recalled_one_fewer_is_not(tmp_path: Path):
    words = ["saturation", "luminance", "chroma", "gamut", "palette", "spectrum"]
    lesson_words = " ".join(words[:MIN_SHARED_TERMS])
    store = open_store(tmp_path / "home")
    try:
        _add(store, "history-colour", f"Colour maths: {lesson_words}.", [])
        at = recall_lessons(store, " ".join(words[:MIN_SHARED_TERMS]))
        below = recall_lessons(store, " ".join(words[: MIN_SHARED_TERMS - 1]) + " unrelated")
    finally:
        store.close()
    assert [lesson.id for lesson in at.lessons] == ["history-colour"]
    assert below.lessons == []
    assert below.below_floor == ["history-colour"]


@pytest.mark.parametrize(
    "requirements",
    ["in module src/x.py", "Examples:\n- f(1) == 2\nEdge cases:\n- [empty] f() == 0", "", "  "],
)
def test_requirements_of_only_generic_words_recall_nothing(tmp_path: Path, requirements: str):
    store = open_store(tmp_path / "home")
    try:
        _add(store, "history-x", "f in module src/x.py returns a value; empty gives zero.", [])
        recall = recall_lessons(store, requirements)
    finally:
        store.close()
    assert recall.lessons == []
    assert recall.below_floor == []


def test_file_names_are_locations_even_before_sentence_punctuation():
    text = "See capwords.py. Then notes.md: and str.casefold, x.json; and run/it!"
    assert informative_terms(text) == {"see", "str", "casefold"}


def test_a_huge_word_is_read_once_not_rescanned_per_character():
    # 200,000 characters without a "/" and a path after them: a backtracking pattern over
    # "any run of non-space characters" would rescan the word from every offset.
    word = "saturation" + "x" * 200_000
    assert informative_terms(f"{word} src/colour.py hue") == {word, "hue"}
