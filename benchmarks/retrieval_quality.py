"""Retrieval quality on the held-out set: hybrid ranking with abstention vs keyword-only.

Run:  python benchmarks/retrieval_quality.py [--split test|dev|both] [--json] [--no-project]
      python benchmarks/retrieval_quality.py --fit      (dev split only: fits the rule)

The set (``benchmarks/data/retrieval_heldout.json``, schema lorelab.memory.retrieval-set/2)
is SYNTHETIC, written by hand and blind to the ranking code: 151 verified experiences over 9
projects, 80 paraphrased tasks, 26 hard negatives and 24 unrelated tasks, each task in the
``dev`` or ``test`` split. The abstention rule's weights and threshold are fitted with
``--fit`` on the dev split only; the figures to quote are the test split's. Every task is
briefed with its project, as an agent's ``prepare`` would be (``--no-project`` briefs every
task against the whole store: a harder setting, reported separately).

Figures (over the split's tasks):
- recall@1 / recall@3: share of paraphrases whose brief has a relevant experience first /
  among its first three (an empty brief is a miss);
- MRR: mean reciprocal rank of the first relevant experience in the brief (0 if none);
- silence: share of hard negatives and unrelated tasks whose brief has no experience;
- wrong-first: share of paraphrases whose brief's first experience is not relevant;
- ranking recall@3 / MRR: the hybrid ranking before abstention (what ``explain`` lists).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lorelab.memory import (
    DEFAULT_POLICY,
    CommandRun,
    ExplainRequest,
    PrepareRequest,
    RecordManyRequest,
    RecordRequest,
    RelevancePolicy,
    SqliteMemoryStore,
    Verification,
)

SET = Path(__file__).resolve().parent / "data" / "retrieval_heldout.json"
SILENCE_TARGET = 0.95
WRONG_FIRST_TARGET = 0.02


def _record(item: dict[str, Any]) -> RecordRequest:
    return RecordRequest(
        task=item["task"],
        summary=item["summary"],
        outcome="passed",
        verification=Verification(**item["verification"]),
        commands=[CommandRun(**command) for command in item.get("commands", [])],
        files=item.get("files", []),
        project=item.get("project"),
        qa="approved",
    )


@dataclass(frozen=True, slots=True)
class Outcome:
    """One task: the keys its brief served, in order, and the explained ranking's keys."""

    task: dict[str, Any]
    served: list[str]
    ranked: list[str]
    top_signals: dict[str, float] | None


def _figures(outcomes: list[Outcome]) -> dict[str, Any]:
    para = [o for o in outcomes if o.task["kind"] == "paraphrase"]
    negatives = [o for o in outcomes if o.task["kind"] != "paraphrase"]

    def first(keys: list[str], relevant: list[str]) -> int | None:
        return next((i for i, key in enumerate(keys) if key in relevant), None)

    def share(count: int, total: int) -> float | None:
        return round(count / total, 4) if total else None

    served_first = [first(o.served, o.task["relevant"]) for o in para]
    ranked_first = [first(o.ranked, o.task["relevant"]) for o in para]
    return {
        "paraphrases": len(para),
        "negatives": len(negatives),
        "recall_at_1": share(sum(r == 0 for r in served_first), len(para)),
        "recall_at_3": share(sum(r is not None and r < 3 for r in served_first), len(para)),
        "mrr": share(sum(0 if r is None else 1 / (r + 1) for r in served_first), len(para)),  # type: ignore[arg-type]
        "silence": share(sum(not o.served for o in negatives), len(negatives)),
        "wrong_first": share(
            sum(bool(o.served) and r != 0 for o, r in zip(para, served_first, strict=True)),
            len(para),
        ),
        "ranking_recall_at_3": share(sum(r is not None and r < 3 for r in ranked_first), len(para)),
        "ranking_mrr": share(sum(0 if r is None else 1 / (r + 1) for r in ranked_first), len(para)),  # type: ignore[arg-type]
        "false_briefs": [o.task["id"] for o in negatives if o.served],
        "wrong_first_tasks": [
            o.task["id"] for o, r in zip(para, served_first, strict=True) if o.served and r != 0
        ],
    }


def _run(
    data: dict[str, Any], policy: RelevancePolicy, splits: set[str], use_project: bool
) -> list[Outcome]:
    with (
        tempfile.TemporaryDirectory(prefix="lorelab-heldout-") as tmp,
        SqliteMemoryStore(Path(tmp) / "memory.db", policy=policy) as store,
    ):
        results = store.record_many(
            RecordManyRequest(experiences=[_record(e) for e in data["experiences"]])
        ).results
        key_of = {r.id: e["key"] for r, e in zip(results, data["experiences"], strict=True)}
        outcomes: list[Outcome] = []
        for task in data["tasks"]:
            if task["split"] not in splits:
                continue
            project = task["project"] if use_project else None
            brief = store.prepare(PrepareRequest(task=task["text"], project=project))
            explained = store.explain(ExplainRequest(task=task["text"], project=project))
            top = next((c for c in explained.candidates if c.validity == "trusted"), None)
            signals = None
            if top is not None and top.semantic is not None:
                signals = {
                    "semantic": top.semantic,
                    "lexical": top.lexical,
                    "agreement": top.agreement or 0.0,
                    "margin": top.margin or 0.0,
                }
            outcomes.append(
                Outcome(
                    task=task,
                    served=[key_of[e.id] for e in brief.experiences],
                    ranked=[key_of[c.id] for c in explained.candidates],
                    top_signals=signals,
                )
            )
    return outcomes


# ---------------------------------------------------------------------------- fitting on dev

FEATURES = ("semantic", "lexical", "agreement", "margin")


def _logistic(rows: list[list[float]], labels: list[int]) -> tuple[list[float], float]:
    """Raw-scale weights and bias of an L2-regularised logistic regression (fixed, untuned).

    The weights are kept non-negative (projected gradient): more evidence of any kind never
    lowers the confidence, whatever a small dev split happens to suggest.
    """
    import numpy as np

    x = np.array(rows, dtype=float)
    y = np.array(labels, dtype=float)
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[std == 0] = 1.0
    z = np.c_[np.ones(len(x)), (x - mean) / std]
    w = np.zeros(z.shape[1])
    for _ in range(20000):
        p = 1 / (1 + np.exp(-z @ w))
        grad = z.T @ (p - y) / len(y) + 0.01 * np.r_[0.0, w[1:]]
        w -= 0.5 * grad
        w[1:] = np.maximum(w[1:], 0.0)
    raw = w[1:] / std
    bias = w[0] - float((w[1:] * mean / std).sum())
    return [float(v) for v in raw], float(bias)


def _confidence(weights: list[float], bias: float, signals: dict[str, float]) -> float:
    value = bias + sum(w * signals[name] for w, name in zip(weights, FEATURES, strict=True))
    return 1 / (1 + math.exp(-value))


def _at_threshold(
    outcomes: list[Outcome], confidence: Callable[[Outcome], float | None], threshold: float
) -> dict[str, Any]:
    served = []
    for o in outcomes:
        c = confidence(o)
        keep = c is not None and c >= threshold
        served.append(replace(o, served=o.ranked[:3] if keep else []))
    return _figures(served)


def fit(data: dict[str, Any], use_project: bool) -> dict[str, Any]:
    """Fit the abstention rule on the dev split only, and choose its threshold there."""
    outcomes = _run(data, DEFAULT_POLICY, {"dev"}, use_project)
    usable = [o for o in outcomes if o.top_signals is not None]
    rows = [[o.top_signals[name] for name in FEATURES] for o in usable]  # type: ignore[index]
    labels = [
        int(o.task["kind"] == "paraphrase" and o.ranked[0] in o.task["relevant"]) for o in usable
    ]
    weights, bias = _logistic(rows, labels)

    def confidence(o: Outcome) -> float | None:
        return None if o.top_signals is None else _confidence(weights, bias, o.top_signals)

    grid = sorted({round(c, 4) for o in usable if (c := confidence(o)) is not None})
    sweep = [{"threshold": t, **_at_threshold(outcomes, confidence, t)} for t in grid]
    feasible = [
        p
        for p in sweep
        if p["silence"] >= SILENCE_TARGET and p["wrong_first"] <= WRONG_FIRST_TARGET
    ]
    rule = "highest dev recall@3 with dev silence >= 0.95 and wrong-first <= 0.02"
    if not feasible:
        feasible = [p for p in sweep if p["silence"] >= SILENCE_TARGET]
        rule = "highest dev recall@3 with dev silence >= 0.95 (wrong-first target not reachable)"
    chosen = max(feasible, key=lambda p: (p["recall_at_3"], -p["threshold"]))
    negatives = [o.top_signals for o in usable if o.task["kind"] != "paraphrase"]
    return {
        # Strictly above every must-be-silent dev task's best candidate, rounded up.
        "strong_semantic": math.floor(max(s["semantic"] for s in negatives) * 100 + 1) / 100,  # type: ignore[index]
        "strong_lexical": math.floor(max(s["lexical"] for s in negatives) * 100 + 1) / 100,  # type: ignore[index]
        "split": "dev",
        "weights": dict(zip(FEATURES, [round(w, 4) for w in weights], strict=True)),
        "bias": round(bias, 4),
        "threshold_rule": rule,
        "threshold": chosen["threshold"],
        "dev_at_threshold": {k: v for k, v in chosen.items() if k != "threshold"},
        "dev_sweep": [
            {k: p[k] for k in ("threshold", "recall_at_3", "silence", "wrong_first")} for p in sweep
        ],
    }


# ---------------------------------------------------------------------------- report


def report(data: dict[str, Any], splits: list[str], use_project: bool) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "set": str(SET.relative_to(SET.parent.parent.parent)),
        "synthetic": "written by hand for this benchmark, blind to the ranking code",
        "briefed_with_project": use_project,
        "tuned_on": "dev",
        "abstention": {
            "semantic": DEFAULT_POLICY.abstention.semantic,
            "lexical": DEFAULT_POLICY.abstention.lexical,
            "agreement": DEFAULT_POLICY.abstention.agreement,
            "margin": DEFAULT_POLICY.abstention.margin,
            "bias": DEFAULT_POLICY.abstention.bias,
            "threshold": DEFAULT_POLICY.abstention.threshold,
            "strong_semantic": DEFAULT_POLICY.abstention.strong_semantic,
            "strong_lexical": DEFAULT_POLICY.abstention.strong_lexical,
        },
    }
    keyword = replace(DEFAULT_POLICY, hybrid=False)
    for split in splits:
        hybrid = _figures(_run(data, DEFAULT_POLICY, {split}, use_project))
        lexical = _figures(_run(data, keyword, {split}, use_project))
        figures[split] = {"hybrid": hybrid, "keyword_only": lexical}
    return figures


_ROWS = (
    "recall_at_1",
    "recall_at_3",
    "mrr",
    "silence",
    "wrong_first",
    "ranking_recall_at_3",
    "ranking_mrr",
)


def _print(figures: dict[str, Any], splits: list[str]) -> None:
    scope = "with each task's project" if figures["briefed_with_project"] else "whole store"
    print(f"held-out set (synthetic), briefed {scope}; rule fitted on dev")
    for split in splits:
        label = "TEST (report these)" if split == "test" else "dev (tuned on: not a result)"
        h, k = figures[split]["hybrid"], figures[split]["keyword_only"]
        print(f"\n{label}: {h['paraphrases']} paraphrases, {h['negatives']} must-be-silent tasks")
        print(f"{'figure':<22}{'hybrid':>10}{'keyword-only':>14}")
        for row in _ROWS:
            print(f"{row:<22}{h[row]!s:>10}{k[row]!s:>14}")
        print(f"false briefs (hybrid): {h['false_briefs']}")
        print(f"wrong first (hybrid): {h['wrong_first_tasks']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["test", "dev", "both"], default="both")
    parser.add_argument("--fit", action="store_true", help="fit the rule on dev and print it")
    parser.add_argument("--no-project", action="store_true", help="brief against the whole store")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    data = json.loads(SET.read_text(encoding="utf-8"))
    use_project = not args.no_project
    if args.fit:
        print(json.dumps(fit(data, use_project), indent=2))
        return
    splits = ["test", "dev"] if args.split == "both" else [args.split]
    figures = report(data, splits, use_project)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        _print(figures, splits)


if __name__ == "__main__":
    main()
