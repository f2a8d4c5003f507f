"""Retrieval quality on a labelled set: recall@3 for related tasks, empty briefs for unrelated ones.

A benchmark and test helper, shipped as a documented test double (it builds its own throwaway
store); nothing in lorelab's commands uses it.

A labelled set (``tests/memory/data/retrieval_set.json``) holds experiences with keys,
queries naming the keys they should retrieve, and unrelated tasks. Every experience is
recorded as verified into a fresh store; each query is briefed with ``prepare`` and counts as
a hit when one of its relevant experiences is among the first three in the brief; each
unrelated task counts when its brief is empty.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lorelab.io import read_json
from lorelab.memory import (
    DEFAULT_POLICY,
    CommandRun,
    PrepareRequest,
    RecordManyRequest,
    RecordRequest,
    RelevancePolicy,
    SqliteMemoryStore,
    Verification,
)


@dataclass(frozen=True, slots=True)
class RetrievalQuality:
    """The figures of one evaluation of a policy on a labelled set."""

    queries: int
    hits_at_3: int
    unrelated: int
    unrelated_empty: int
    misses: tuple[str, ...]
    false_briefs: tuple[str, ...]

    @property
    def recall_at_3(self) -> float:
        return self.hits_at_3 / self.queries if self.queries else 0.0

    @property
    def unrelated_empty_rate(self) -> float:
        return self.unrelated_empty / self.unrelated if self.unrelated else 0.0


def _record(item: dict[str, Any]) -> RecordRequest:
    return RecordRequest(
        task=item["task"],
        summary=item["summary"],
        outcome="passed",
        verification=Verification(
            command=item["verification"]["command"],
            exit_code=item["verification"]["exit_code"],
        ),
        commands=[CommandRun(**command) for command in item.get("commands", [])],
        files=item.get("files", []),
        project=item.get("project"),
        qa="approved",
    )


def evaluate_retrieval(
    set_path: str | os.PathLike[str], policy: RelevancePolicy = DEFAULT_POLICY
) -> RetrievalQuality:
    """Evaluate ``policy`` on the labelled set at ``set_path`` in a fresh temporary store."""
    data = read_json(set_path, "fixture")
    with (
        tempfile.TemporaryDirectory(prefix="lorelab-quality-") as tmp,
        SqliteMemoryStore(Path(tmp) / "memory.db", policy=policy) as store,
    ):
        results = store.record_many(
            RecordManyRequest(experiences=[_record(item) for item in data["experiences"]])
        ).results
        key_of = {
            result.id: item["key"]
            for result, item in zip(results, data["experiences"], strict=True)
        }
        hits = 0
        misses: list[str] = []
        for query in data["queries"]:
            brief = store.prepare(PrepareRequest(task=query["task"], project=query.get("project")))
            top = [key_of[item.id] for item in brief.experiences[:3]]
            if set(top) & set(query["relevant"]):
                hits += 1
            else:
                misses.append(f"{query['task']!r} -> {top}")
        empty = 0
        false_briefs: list[str] = []
        for task in data["unrelated"]:
            brief = store.prepare(PrepareRequest(task=task["task"], project=task.get("project")))
            if brief.empty:
                empty += 1
            else:
                shown = [key_of[item.id] for item in brief.experiences]
                false_briefs.append(f"{task['task']!r} -> {shown}")
    return RetrievalQuality(
        queries=len(data["queries"]),
        hits_at_3=hits,
        unrelated=len(data["unrelated"]),
        unrelated_empty=empty,
        misses=tuple(misses),
        false_briefs=tuple(false_briefs),
    )
