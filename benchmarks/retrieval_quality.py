"""Retrieval quality of the memory on the authored, labelled set.

Run:  python benchmarks/retrieval_quality.py [--sweep] [--json]

The set (``tests/memory/data/retrieval_set.json``) holds 60 realistic experiences across six
projects, one later task per experience that should retrieve it, and 50 tasks no stored
experience is relevant to. It is authored by hand (labelled synthetic), not collected from
real agent runs. Reported: recall@3 (a relevant experience among the first three of the
brief) and the share of unrelated tasks that get an empty brief. ``--sweep`` shows how both
move with the two knobs of the relevance floor, which is how the defaults were chosen.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lorelab.memory import DEFAULT_POLICY, RelevancePolicy
from lorelab.testing.quality import evaluate_retrieval

SET = Path(__file__).resolve().parent.parent / "tests" / "memory" / "data" / "retrieval_set.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=SET, help="labelled set (JSON)")
    parser.add_argument("--sweep", action="store_true", help="also sweep the floor's knobs")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    quality = evaluate_retrieval(args.set, DEFAULT_POLICY)
    figures: dict[str, object] = {
        "set": str(args.set),
        "synthetic": "authored by hand for this benchmark",
        "policy": {
            "min_coverage": DEFAULT_POLICY.min_coverage,
            "min_matched_terms": DEFAULT_POLICY.min_matched_terms,
        },
        "queries": quality.queries,
        "recall_at_3": round(quality.recall_at_3, 4),
        "unrelated": quality.unrelated,
        "unrelated_empty_rate": round(quality.unrelated_empty_rate, 4),
        "misses": list(quality.misses),
        "false_briefs": list(quality.false_briefs),
    }
    if args.sweep:
        grid = []
        for matched in (1, 2, 3, 4):
            for coverage in (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5):
                point = evaluate_retrieval(
                    args.set, RelevancePolicy(min_coverage=coverage, min_matched_terms=matched)
                )
                grid.append(
                    {
                        "min_matched_terms": matched,
                        "min_coverage": coverage,
                        "recall_at_3": round(point.recall_at_3, 4),
                        "unrelated_empty_rate": round(point.unrelated_empty_rate, 4),
                    }
                )
        figures["sweep"] = grid
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(
        f"recall@3 = {figures['recall_at_3']} over {quality.queries} related tasks; "
        f"empty brief for {figures['unrelated_empty_rate']} of {quality.unrelated} unrelated tasks "
        f"(floor: score >= {DEFAULT_POLICY.min_coverage}, "
        f">= {DEFAULT_POLICY.min_matched_terms} matched terms)"
    )
    for miss in quality.misses:
        print(f"  missed: {miss}")
    for brief in quality.false_briefs:
        print(f"  non-empty for an unrelated task: {brief}")
    if args.sweep:
        print(f"{'matched':>7} {'score':>6} {'recall@3':>9} {'empty':>6}")
        for point in figures["sweep"]:  # type: ignore[attr-defined]
            print(
                f"{point['min_matched_terms']:>7} {point['min_coverage']:>6} "
                f"{point['recall_at_3']:>9} {point['unrelated_empty_rate']:>6}"
            )


if __name__ == "__main__":
    main()
