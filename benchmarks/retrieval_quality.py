"""Retrieval quality on the held-out set: hybrid ranking with abstention vs keyword-only.

Run:  python benchmarks/retrieval_quality.py [--split fresh4|fresh3|...|dev|both|all]
                                              [--json]
                                              [--no-project]
                                              [--model minilm|wordllama]
      python benchmarks/retrieval_quality.py --fit [--model ...] [--fit-on SPLIT ...]

``--model`` chooses the embedding model of the benchmark's stores (default: the default for a
new store, ``$LORELAB_EMBEDDING_MODEL`` or MiniLM); each model is graded by its own frozen rule.

The set (``benchmarks/data/retrieval_heldout.json``, schema lorelab.memory.retrieval-set/2)
is SYNTHETIC, written by hand and blind to the ranking code: 151 verified experiences over 9
projects, 80 paraphrased tasks, 26 hard negatives and 24 unrelated tasks, each task in the
``dev`` or ``test`` split, and three fresh splits, each written blind after the split before
it had been reported once: ``fresh`` and ``fresh2`` (65 tasks each), ``fresh3`` and
``fresh4`` (90 tasks each: 40 paraphrases, 26 hard negatives, 24 unrelated). The grading
rules' weights and thresholds are fitted with ``--fit`` on dev, test, fresh and fresh2; the
figures to quote are fresh3's and fresh4's (the default), two splits the frozen rules never
saw; the others are seen. Every task is
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
from lorelab.memory._embedders import EMBEDDERS, default_for_new_store, named

SET = Path(__file__).resolve().parent / "data" / "retrieval_heldout.json"
FRESH = SET.with_name("retrieval_fresh_tasks.json")
"""The ``fresh`` split: 65 more tasks over the same experiences, written after the ``test``
split had been reported once (benchmarks/data/README.md). Its figures are the ones to quote."""
FRESH2 = SET.with_name("retrieval_fresh2_tasks.json")
"""The ``fresh2`` split: 65 more, written after the ``fresh`` split had been reported once."""
FRESH3 = SET.with_name("retrieval_fresh3_tasks.json")
"""The ``fresh3`` split: 90 more, written after the ``fresh2`` split had been reported once."""
FRESH4 = SET.with_name("retrieval_fresh4_tasks.json")
"""The ``fresh4`` split: 90 more, written after the ``fresh3`` split had been reported once,
and reported for the same frozen rule: a second held-out run, not a refit."""
LABELS = {
    "fresh4": "FRESH4 (held out: the second split this frozen rule never saw)",
    "fresh3": "FRESH3 (held out, never seen before this rule was frozen)",
    "fresh2": "fresh2 (seen: reported once for the rule before; fitted on by this one)",
    "fresh": "fresh (seen: reported for an earlier rule; fitted on by this one)",
    "test": "test (seen: reported once for the first rule; fitted on by this one)",
    "dev": "dev (fitted on: not a result)",
}
FIT_ON = ("dev", "test", "fresh", "fresh2")
"""The splits the frozen rules were fitted on: every split that had been seen."""
# The operating point's stated utility per served item (docs/memory.md): (gain when the item
# addresses the task, cost when it does not). A wrong match is an instruction that misleads:
# it costs three times what a right one gains. A related item is context, one compact line
# marked as such: it gains half what a right match gains and a wrong one costs its reading,
# a tenth; the cost ratio is 3:1 for a match, 1:5 for related.
UTILITY = {"match": (1.0, 3.0), "related": (0.5, 0.1)}
# And per task: a brief that addresses a paraphrase (holds an item that solved its problem)
# gains 1 more, whatever the items' tiers. That is the seed protocol's unit: a run's guidance
# addressed the task or it did not (retrieval_relevant), and an empty brief did not; a task
# left unaddressed forgoes it. Without it, silence on a task the store could answer cost
# nothing, and the rule served little (recall@3 0.70 on the test split).
ADDRESSED = 1.0
# Constraints on the operating point, each the issue's target for the reported split. A point
# meets one when the target is at or below the one-sided 90% lower confidence bound (Wilson)
# of the figure on the fitted splits, not merely below the figure: the rule fitted on
# dev+test+fresh met unrelated silence 0.90 there by two tasks and missed it on fresh2.
SILENCE_UNRELATED = 0.90
NO_MATCH_UNRELATED = 0.95
NO_MATCH_HARD_NEGATIVES = 0.85
MATCH_PRECISION = 0.85
BOUND_Z = 1.2816
"""The standard normal quantile of a one-sided 90% bound."""


def lower_bound(successes: int, total: int, z: float = BOUND_Z) -> float:
    """The Wilson score lower confidence bound of a share (0 when there is nothing to count)."""
    if total == 0:
        return 0.0
    share = successes / total
    centre = share + z * z / (2 * total)
    spread = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total))
    return (centre - spread) / (1 + z * z / total)


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
class Graded:
    """One graded candidate (the first trusted ones of a task): its confidence and truth."""

    key: str
    relevant: bool
    confidence: float | None
    tier: str | None
    signals: dict[str, float]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One task: what its brief served (key, tier) in order, the ranking, the graded items."""

    task: dict[str, Any]
    served: list[tuple[str, str]]
    ranked: list[str]
    graded: list[Graded]
    best_semantic: float | None


def _share(count: int, total: int) -> float | None:
    return round(count / total, 4) if total else None


def _served_figures(outcomes: list[Outcome]) -> dict[str, Any]:
    """Item counts and precision per tier, and the stated utility (docs/memory.md)."""
    counts = {"match": [0, 0], "related": [0, 0]}
    for o in outcomes:
        for key, tier in o.served:
            counts[tier][0] += 1
            counts[tier][1] += key in o.task["relevant"]
    addressed = sum(
        any(key in o.task["relevant"] for key, _ in o.served)
        for o in outcomes
        if o.task["kind"] == "paraphrase"
    )
    utility = ADDRESSED * addressed + sum(
        UTILITY[tier][0] * right - UTILITY[tier][1] * (total - right)
        for tier, (total, right) in counts.items()
    )
    return {
        "match_items": counts["match"][0],
        "match_precision": _share(counts["match"][1], counts["match"][0]),
        "related_items": counts["related"][0],
        "related_precision": _share(counts["related"][1], counts["related"][0]),
        "utility": round(utility, 4),
    }


def _figures(outcomes: list[Outcome]) -> dict[str, Any]:
    para = [o for o in outcomes if o.task["kind"] == "paraphrase"]
    unrelated = [o for o in outcomes if o.task["kind"] == "unrelated"]
    hard = [o for o in outcomes if o.task["kind"] == "hard-negative"]
    negatives = unrelated + hard

    def first(keys: list[str], relevant: list[str]) -> int | None:
        return next((i for i, key in enumerate(keys) if key in relevant), None)

    def no_match(group: list[Outcome]) -> float | None:
        return _share(sum(all(t != "match" for _, t in o.served) for o in group), len(group))

    served_first = [first([k for k, _ in o.served], o.task["relevant"]) for o in para]
    match_first = [
        first([k for k, t in o.served if t == "match"], o.task["relevant"]) for o in para
    ]
    ranked_first = [first(o.ranked, o.task["relevant"]) for o in para]
    return {
        "paraphrases": len(para),
        "unrelated": len(unrelated),
        "hard_negatives": len(hard),
        "recall_at_1": _share(sum(r == 0 for r in served_first), len(para)),
        "recall_at_3": _share(sum(r is not None and r < 3 for r in served_first), len(para)),
        "match_recall_at_3": _share(sum(r is not None and r < 3 for r in match_first), len(para)),
        "mrr": _share(sum(0 if r is None else 1 / (r + 1) for r in served_first), len(para)),  # type: ignore[arg-type]
        "silence_unrelated": _share(sum(not o.served for o in unrelated), len(unrelated)),
        "silence_hard_negatives": _share(sum(not o.served for o in hard), len(hard)),
        "silence": _share(sum(not o.served for o in negatives), len(negatives)),
        "no_match_unrelated": no_match(unrelated),
        "no_match_hard_negatives": no_match(hard),
        **_served_figures(outcomes),
        "wrong_first": _share(
            sum(bool(o.served) and r != 0 for o, r in zip(para, served_first, strict=True)),
            len(para),
        ),
        "ranking_recall_at_3": _share(
            sum(r is not None and r < 3 for r in ranked_first), len(para)
        ),
        "ranking_mrr": _share(
            sum(0 if r is None else 1 / (r + 1) for r in ranked_first), len(para)
        ),  # type: ignore[arg-type]
        "false_briefs": [o.task["id"] for o in negatives if o.served],
        "matches_on_negatives": [
            o.task["id"] for o in negatives if any(t == "match" for _, t in o.served)
        ],
    }


def calibration(outcomes: list[Outcome], served_only: bool = False) -> dict[str, Any]:
    """Reliability table (10 bins of width 0.1) and expected calibration error of the
    confidence over the graded items (or only the served ones)."""
    items = [
        g
        for o in outcomes
        for g in o.graded
        if g.confidence is not None and (g.tier is not None or not served_only)
    ]
    rows = []
    error = 0.0
    for low in range(10):
        inside = [
            g
            for g in items
            if low / 10 <= g.confidence < (low + 1) / 10 or (low == 9 and g.confidence == 1.0)  # type: ignore[operator]
        ]
        if not inside:
            rows.append(
                {
                    "bin": f"{low / 10:.1f}-{(low + 1) / 10:.1f}",
                    "items": 0,
                    "mean_confidence": None,
                    "share_relevant": None,
                }
            )
            continue
        mean = sum(g.confidence for g in inside) / len(inside)  # type: ignore[misc]
        share = sum(g.relevant for g in inside) / len(inside)
        error += len(inside) / len(items) * abs(mean - share)
        rows.append(
            {
                "bin": f"{low / 10:.1f}-{(low + 1) / 10:.1f}",
                "items": len(inside),
                "mean_confidence": round(mean, 3),
                "share_relevant": round(share, 3),
            }
        )
    return {"items": len(items), "ece": round(error, 4) if items else None, "bins": rows}


def _run(
    data: dict[str, Any],
    policy: RelevancePolicy,
    splits: set[str],
    use_project: bool,
    model: str,
) -> list[Outcome]:
    with (
        tempfile.TemporaryDirectory(prefix="lorelab-heldout-") as tmp,
        SqliteMemoryStore(Path(tmp) / "memory.db", policy=policy, embedding_model=model) as store,
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
            trusted = [c for c in explained.candidates if c.validity == "trusted"]
            graded = [
                Graded(
                    key=key_of[c.id],
                    relevant=key_of[c.id] in task["relevant"],
                    confidence=c.confidence,
                    tier=c.tier,
                    signals={
                        "semantic": c.semantic or 0.0,
                        "lexical": c.lexical,
                        "agreement": c.agreement or 0.0,
                        "margin": c.margin or 0.0,
                        "first": 1.0 if position == 0 else 0.0,
                    },
                )
                for position, c in enumerate(trusted[: policy.served])
            ]
            semantics = [c.semantic for c in trusted if c.semantic is not None]
            outcomes.append(
                Outcome(
                    task=task,
                    served=[(key_of[e.id], e.tier) for e in brief.experiences],
                    ranked=[key_of[c.id] for c in explained.candidates],
                    graded=graded,
                    best_semantic=max(semantics) if semantics else None,
                )
            )
    return outcomes


# ---------------------------------------------------------------------------- fitting on dev

FEATURES = ("semantic", "lexical", "agreement", "margin", "first")


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


def _simulate(
    outcomes: list[Outcome], weights: list[float], bias: float, point: tuple[float, float, float]
) -> list[Outcome]:
    """The outcomes as the rule (weights, bias) would serve them at (gate, related, match)."""
    gate, related, match = point
    simulated = []
    for o in outcomes:
        graded = []
        for g in o.graded:
            value = bias + sum(w * g.signals[n] for w, n in zip(weights, FEATURES, strict=True))
            confidence = 1 / (1 + math.exp(-value))
            open_ = o.best_semantic is not None and o.best_semantic >= gate
            tier = None
            if open_ and confidence >= related:
                tier = "match" if confidence >= match else "related"
            graded.append(replace(g, confidence=confidence, tier=tier))
        served = sorted(
            ((g.key, g.tier, g.confidence) for g in graded if g.tier),
            key=lambda item: (item[1] != "match", -(item[2] or 0.0)),
        )
        simulated.append(replace(o, graded=graded, served=[(k, t) for k, t, _ in served]))  # type: ignore[misc]
    return simulated


def _bound(figures: dict[str, Any], share: str, count: str) -> float:
    """The lower confidence bound of ``figures[share]``, a share of ``figures[count]`` items."""
    total = figures[count]
    return lower_bound(round((figures[share] or 0.0) * total), total)


def _meets(figures: dict[str, Any]) -> bool:
    """Whether the no-match and match-precision constraints hold at their bounds."""
    if _bound(figures, "no_match_unrelated", "unrelated") < NO_MATCH_UNRELATED:
        return False
    if _bound(figures, "no_match_hard_negatives", "hard_negatives") < NO_MATCH_HARD_NEGATIVES:
        return False
    if not figures["match_items"]:
        return True
    return _bound(figures, "match_precision", "match_items") >= MATCH_PRECISION


def fit(
    data: dict[str, Any], use_project: bool, model: str, splits: tuple[str, ...] = FIT_ON
) -> dict[str, Any]:
    """Fit the confidence on ``splits`` (never a split to be reported), and choose the
    operating point there."""
    outcomes = _run(data, DEFAULT_POLICY, set(splits), use_project, model)
    items = [g for o in outcomes for g in o.graded]
    weights, bias = _logistic(
        [[g.signals[name] for name in FEATURES] for g in items], [int(g.relevant) for g in items]
    )
    gates = sorted({round(o.best_semantic, 2) for o in outcomes if o.best_semantic is not None})
    steps = [round(0.025 * i, 3) for i in range(1, 40)]
    # A match must be near-certain: above 0.9 the match threshold moves in steps of 0.005.
    match_steps = sorted({*steps, *(round(0.9 + 0.005 * i, 3) for i in range(20))})
    best: tuple[tuple[float, ...], tuple[float, float, float], dict[str, Any]] | None = None
    for gate in [0.0, *gates]:
        for related in steps:
            for match in [s for s in match_steps if s >= related] + [1.01]:
                figures = _figures(_simulate(outcomes, weights, bias, (gate, related, match)))
                if _bound(figures, "silence_unrelated", "unrelated") < SILENCE_UNRELATED:
                    break
                if not _meets(figures):
                    continue
                # Ties on dev (the same utility and recall) go to the most conservative point:
                # the highest similarity floor, then the highest match and related thresholds.
                # Dev cannot tell them apart, and a small store has fewer rivals than dev's.
                score = (figures["utility"], figures["recall_at_3"], gate, match, related)
                if best is None or score > best[0]:
                    best = (score, (gate, related, match), figures)
    if best is None:
        raise SystemExit("no operating point meets the dev constraints")
    (gate, related, match), chosen = best[1], best[2]
    simulated = _simulate(outcomes, weights, bias, best[1])
    return {
        "split": list(splits),
        "model": named(model).model_id,
        "weights": dict(zip(FEATURES, [round(w, 4) for w in weights], strict=True)),
        "bias": round(bias, 4),
        "utility": {
            **{tier: {"right": g, "wrong": -c} for tier, (g, c) in UTILITY.items()},
            "addressed": ADDRESSED,
        },
        "rule": (
            f"highest utility on {'+'.join(splits)} with, at the one-sided 90% lower bound "
            f"there, unrelated silence >= {SILENCE_UNRELATED}, no match on >= "
            f"{NO_MATCH_UNRELATED} of unrelated tasks and >= {NO_MATCH_HARD_NEGATIVES} of hard "
            f"negatives, match precision >= {MATCH_PRECISION}"
        ),
        "min_similarity": gate,
        "related": related,
        "match": match,
        "dev_at_point": {k: chosen[k] for k in REPORTED},
        "dev_calibration": calibration(simulated),
    }


# ---------------------------------------------------------------------------- report

REPORTED = (
    "recall_at_1",
    "recall_at_3",
    "match_recall_at_3",
    "mrr",
    "silence_unrelated",
    "silence_hard_negatives",
    "no_match_unrelated",
    "no_match_hard_negatives",
    "match_items",
    "match_precision",
    "related_items",
    "related_precision",
    "utility",
    "wrong_first",
    "ranking_recall_at_3",
    "ranking_mrr",
)


def report(
    data: dict[str, Any], splits: list[str], use_project: bool, model: str
) -> dict[str, Any]:
    g = DEFAULT_POLICY.grading_for(named(model).model_id)
    figures: dict[str, Any] = {
        "set": str(SET.relative_to(SET.parent.parent.parent)),
        "model": named(model).model_id,
        "synthetic": "written by hand for this benchmark, blind to the ranking code",
        "briefed_with_project": use_project,
        "tuned_on": list(FIT_ON),
        "grading": {
            name: getattr(g, name)
            for name in (*FEATURES, "bias", "min_similarity", "related", "match")
        },
    }
    keyword = replace(DEFAULT_POLICY, hybrid=False)
    for split in splits:
        outcomes = _run(data, DEFAULT_POLICY, {split}, use_project, model)
        figures[split] = {
            "hybrid": _figures(outcomes),
            "keyword_only": _figures(_run(data, keyword, {split}, use_project, model)),
            "calibration": calibration(outcomes),
            "calibration_served": calibration(outcomes, served_only=True),
        }
    return figures


def _print(figures: dict[str, Any], splits: list[str]) -> None:
    scope = "with each task's project" if figures["briefed_with_project"] else "whole store"
    print(
        f"held-out set (synthetic), briefed {scope}; model {figures['model']}; rule fitted on "
        f"{'+'.join(figures['tuned_on'])}"
    )
    for split in splits:
        label = LABELS[split]
        h, k = figures[split]["hybrid"], figures[split]["keyword_only"]
        print(
            f"\n{label}: {h['paraphrases']} paraphrases, {h['hard_negatives']} hard negatives, "
            f"{h['unrelated']} unrelated tasks"
        )
        print(f"{'figure':<26}{'graded':>10}{'keyword-only':>14}")
        for row in REPORTED:
            print(f"{row:<26}{h[row]!s:>10}{k[row]!s:>14}")
        print(f"briefs on must-be-silent tasks: {h['false_briefs']}")
        print(f"match items on must-be-silent tasks: {h['matches_on_negatives']}")
        for name in ("calibration", "calibration_served"):
            cal = figures[split][name]
            print(f"\n{name} ({cal['items']} items): ECE {cal['ece']}")
            print(f"{'confidence':<12}{'items':>6}{'mean conf':>11}{'relevant':>10}")
            for b in cal["bins"]:
                print(
                    f"{b['bin']:<12}{b['items']:>6}{b['mean_confidence']!s:>11}{b['share_relevant']!s:>10}"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--split",
        choices=[*LABELS, "both", "all"],
        default="fresh4",
    )
    parser.add_argument("--fit", action="store_true", help="fit the rule and print it")
    parser.add_argument(
        "--fit-on",
        nargs="+",
        choices=["dev", "test", "fresh", "fresh2", "fresh3"],
        default=list(FIT_ON),
        help="with --fit: the splits to fit on (the rules were fitted on dev test fresh "
        "fresh2; fresh3 and fresh4 are reported, never fitted on)",
    )
    parser.add_argument("--no-project", action="store_true", help="brief against the whole store")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--model",
        choices=sorted(EMBEDDERS),
        default=None,
        help="the embedding model of the stores (default: a new store's default)",
    )
    args = parser.parse_args()
    model = args.model or default_for_new_store().name
    data = json.loads(SET.read_text(encoding="utf-8"))
    for extra in (FRESH, FRESH2, FRESH3, FRESH4):
        if extra.exists():
            data["tasks"] += json.loads(extra.read_text(encoding="utf-8"))["tasks"]
    use_project = not args.no_project
    if args.fit:
        print(json.dumps(fit(data, use_project, model, tuple(args.fit_on)), indent=2))
        return
    splits = {"both": ["test", "dev"], "all": list(LABELS)}.get(args.split, [args.split])
    figures = report(data, splits, use_project, model)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        _print(figures, splits)


if __name__ == "__main__":
    main()
