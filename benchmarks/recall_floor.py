"""Choose TestLore's recall floor on the tuning datasets, then measure it on held-out ones.

Run:  python benchmarks/recall_floor.py

The floor (``lorelab.testgen._recall``) has two knobs: the fraction of specifications a term
must appear in to count as common (``COMMON_FRACTION``; common terms never count as shared
evidence) and the number of informative terms a lesson must share (``MIN_SHARED_TERMS``).

- **Tuning (dev)**: the 9 fixtures of the datasets ``qualification`` and ``default`` query a
  real memory store holding their 3 history items (``history-clamp``, ``history-chunking``,
  ``history-running-totals``), through :func:`recall_lessons` itself. Common terms are counted
  over the requirements of those 12 specifications only. One pair is labelled related
  (``interval-overlap`` / ``history-clamp``: both are about numeric ranges bounded by a low
  and a high end, with boundary and empty-range cases); the other 26 are unrelated. The chosen
  setting is the one that keeps every related dev pair and recalls the fewest unrelated ones
  (ties: the fewest common terms, then the smallest minimum).
- **Held out (test)**: the 12 specifications the tuning never saw (the 6 of ``stdlib`` and the
  6 that ``qualification-12`` adds) query a store holding the history of ``stdlib``
  (``history-bisect-right``, ``history-capwords``) and the 3 tuning history items. Labels were
  written before the floor was run on them: 3 pairs related, 4 ambiguous (not scored), the
  other 53 unrelated.

The labels are this project's own judgement, on a small set; the held-out figures are a
check, not a benchmark of relevance in general.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from lorelab.evaluation.learning.datasets import get_dataset
from lorelab.evaluation.learning.manifest import Fixture, HistoryEntry
from lorelab.memory import (
    AddLessonRequest,
    LessonSearchRequest,
    MemoryStore,
    open_store,
    unique_terms,
)
from lorelab.testgen._recall import (
    COMMON_FRACTION,
    GRAMMAR_TERMS,
    LOCATION_TERMS,
    MIN_SHARED_TERMS,
    RecallFloor,
    common_terms,
    recall_lessons,
    test_names,
)

TUNING_DATASETS = ("qualification", "default")
FRACTIONS = (1.01, 0.75, 0.5, 1 / 3, 0.25)
MINIMUMS = (2, 3, 4)
DEV_RELATED = {("interval-overlap", "history-clamp")}
HELD_OUT_RELATED = {
    # both rewrite the words of a string (letter case, separators between words)
    ("slugify", "history-capwords"),
    # both split text into words on runs of whitespace and join them with one space
    ("word-wrap", "history-capwords"),
    # both are about closed integer ranges from a low to a high end, a reversed one raising
    ("merge-ranges", "history-clamp"),
}
HELD_OUT_AMBIGUOUS = {
    ("statistics-median", "history-bisect-right"),  # both sort; different questions
    ("textwrap-dedent", "history-capwords"),  # both about whitespace in text
    ("textwrap-indent", "history-capwords"),
    ("run-length", "history-capwords"),  # runs of characters vs words
}


def tuning_texts() -> list[str]:
    """The requirements of every history item and fixture of the tuning datasets."""
    out: dict[str, str] = {}
    for name in TUNING_DATASETS:
        manifest = get_dataset(name)
        for item in [*manifest.history, *manifest.fixtures]:
            out[item.id] = item.requirements
    return list(out.values())


def _store(home: Path, history: Iterable[HistoryEntry]) -> MemoryStore:
    store = open_store(home)
    for item in history:
        store.add_lesson(
            AddLessonRequest(
                lesson_id=item.id,
                specification_id=item.specification_id,
                requirements=item.requirements,
                files=list(item.files),
                tests=list(item.tests),
                validation={"note": "stored unvalidated, for measuring recall only"},
            )
        )
    return store


def _history(names: Sequence[str]) -> list[HistoryEntry]:
    items = {h.id: h for name in names for h in get_dataset(name).history}
    return list(items.values())


def _fixtures(names: Sequence[str], exclude: Sequence[str] = ()) -> list[Fixture]:
    seen = {f.id for name in exclude for f in get_dataset(name).fixtures}
    items = {f.id: f for name in names for f in get_dataset(name).fixtures if f.id not in seen}
    return list(items.values())


def recalled_pairs(
    store: MemoryStore, fixtures: Sequence[Fixture], floor: RecallFloor
) -> dict[str, list[str]]:
    """Fixture id -> ids of the lessons recalled for it under ``floor``."""
    return {
        f.id: [lesson.id for lesson in recall_lessons(store, f.requirements, floor=floor).lessons]
        for f in fixtures
    }


def legacy_recalled_pairs(store: MemoryStore, fixtures: Sequence[Fixture]) -> dict[str, list[str]]:
    """The same, under the floor lorelab used before this one (for the before/after figures):
    3 shared terms, every term counting except ``example edge case raises return value``."""
    old_grammar = set(unique_terms("example examples edge case cases raises return returns"))
    old_grammar |= set(unique_terms("value values"))
    out: dict[str, list[str]] = {}
    for fixture in fixtures:
        wanted = set(unique_terms(fixture.requirements)) - old_grammar
        hits = store.search_lessons(LessonSearchRequest(text=fixture.requirements, k=12)).hits
        out[fixture.id] = []
        for hit in hits[:3]:
            names = " ".join(n for t in hit.lesson.tests for n in test_names(t.content))
            theirs = set(unique_terms(f"{hit.lesson.requirements} {names}")) - old_grammar
            if len(wanted & theirs) >= 3:
                out[fixture.id].append(hit.lesson.id)
    return out


def score(
    recalled: dict[str, list[str]],
    lessons: Sequence[str],
    related: set[tuple[str, str]],
    ambiguous: set[tuple[str, str]] = frozenset(),  # type: ignore[assignment]
) -> tuple[int, int, int, int]:
    """(related recalled, related pairs, unrelated recalled, unrelated pairs)."""
    hit = miss = wrong = right = 0
    for spec, lesson in itertools.product(recalled, lessons):
        if (spec, lesson) in ambiguous:
            continue
        got = lesson in recalled[spec]
        if (spec, lesson) in related:
            hit, miss = hit + got, miss + (not got)
        else:
            wrong, right = wrong + got, right + (not got)
    return hit, hit + miss, wrong, wrong + right


def main() -> None:
    texts = tuning_texts()
    dev_history = _history(TUNING_DATASETS)
    dev_fixtures = _fixtures(TUNING_DATASETS)
    held_history = [*_history(("stdlib",)), *dev_history]
    held_fixtures = _fixtures(("stdlib", "qualification-12"), exclude=TUNING_DATASETS)
    base = LOCATION_TERMS | GRAMMAR_TERMS
    with tempfile.TemporaryDirectory() as dev_home, tempfile.TemporaryDirectory() as held_home:
        dev = _store(Path(dev_home), dev_history)
        held = _store(Path(held_home), held_history)
        print(f"tuning: {len(dev_fixtures)} fixtures x {len(dev_history)} history items")
        print("fraction  min  common terms  dev related  dev unrelated recalled")
        rows = []
        for fraction, minimum in itertools.product(FRACTIONS, MINIMUMS):
            common = common_terms(texts, fraction)
            floor = RecallFloor(minimum, base | common)
            got = score(
                recalled_pairs(dev, dev_fixtures, floor), [h.id for h in dev_history], DEV_RELATED
            )
            rows.append((fraction, minimum, common, got))
            print(
                f"{fraction:8.2f}  {minimum:3d}  {len(common):12d}  {got[0]}/{got[1]}"
                f"{'':10s}{got[2]}/{got[3]}"
            )
        best = min(
            (r for r in rows if r[3][0] == r[3][1]), key=lambda r: (r[3][2], len(r[2]), r[1])
        )
        print(f"chosen on dev: fraction {best[0]:.2f}, min {best[1]}, common {sorted(best[2])}")
        print(f"shipped: fraction {COMMON_FRACTION}, min {MIN_SHARED_TERMS}")
        chosen = RecallFloor(best[1], base | best[2])
        got_held = recalled_pairs(held, held_fixtures, chosen)
        lessons = [h.id for h in held_history]
        h = score(got_held, lessons, HELD_OUT_RELATED, HELD_OUT_AMBIGUOUS)
        print(
            f"held out: {len(held_fixtures)} fixtures x {len(held_history)} history items: "
            f"related recalled {h[0]}/{h[1]}, unrelated recalled {h[2]}/{h[3]}"
        )
        before = legacy_recalled_pairs(held, held_fixtures)
        b = score(before, lessons, HELD_OUT_RELATED, HELD_OUT_AMBIGUOUS)
        print(
            f"held out, the floor before this one: related recalled {b[0]}/{b[1]}, "
            f"unrelated recalled {b[2]}/{b[3]}"
        )
        dev_before = score(
            legacy_recalled_pairs(dev, dev_fixtures), [h.id for h in dev_history], DEV_RELATED
        )
        print(
            f"dev, the floor before this one: related recalled {dev_before[0]}/{dev_before[1]}, "
            f"unrelated recalled {dev_before[2]}/{dev_before[3]}"
        )
        print("held out, lessons recalled per specification (now | before):")
        for spec, ids in got_held.items():
            print(f"  {spec:20s} {', '.join(ids) or '-'} | {', '.join(before[spec]) or '-'}")
        dev.close()
        held.close()


if __name__ == "__main__":
    main()
