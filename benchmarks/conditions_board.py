"""Pool the three boards of the conditions board set into one table.

Run:  python benchmarks/conditions_board.py BOARD_BILLING BOARD_ROTA BOARD_LENDING [--json]

Each BOARD is the output directory of ``lorelab eval conditions leaderboard`` over the runs of
one manifest of ``benchmarks/data/conditions-board/`` (one board per project, so that each
board's runs differ only in the memory: the leaderboard refuses anything else). A memory is
pooled only when it is on every board given. Pooled per memory, over all the holdouts:

- pass-rate delta: (sum of per-board delta x holdouts) / total holdouts;
- sign test: the per-board +, -, = counts added, and the exact two-sided p of the sum
  (``lorelab.evaluation.stats.sign_test_p_value``);
- irrelevance, pollution, guidance tokens and items served per holdout task: holdout-weighted;
- rank: by pooled pass-rate delta, then fewer guidance tokens (the leaderboard's own rule).

It then says whether lorelab ranks first and, if so, whether its guidance tokens per task are
at most a third of the best other memory's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from lorelab.evaluation.stats import sign_test_p_value


def pool(boards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = [{row["memory"] for row in board["rows"]} for board in boards]
    common = set.intersection(*names) if names else set()
    pooled = []
    for memory in sorted(common):
        rows = [next(r for r in board["rows"] if r["memory"] == memory) for board in boards]
        holdouts = sum(r["holdouts"] for r in rows)

        def weighted(field: str, rows: list[dict[str, Any]] = rows, n: int = holdouts) -> Any:
            if any(r[field] is None for r in rows):
                return None
            return sum(r[field] * r["holdouts"] for r in rows) / n

        plus = sum(r["signTest"]["positive"] for r in rows)
        minus = sum(r["signTest"]["negative"] for r in rows)
        ties = sum(r["signTest"]["ties"] for r in rows)
        pooled.append(
            {
                "memory": memory,
                "server": rows[0].get("serverInfo"),
                "holdouts": holdouts,
                "passRateDelta": weighted("passRateDelta"),
                "perBoardDelta": [r["passRateDelta"] for r in rows],
                "signTest": {
                    "positive": plus,
                    "negative": minus,
                    "ties": ties,
                    "pValue": sign_test_p_value(plus, minus),
                },
                "irrelevanceRate": weighted("irrelevanceRate"),
                "pollutionRate": weighted("pollutionRate"),
                "guidanceTokensPerTask": weighted("guidanceTokensPerTask"),
                "perBoardTokens": [r["guidanceTokensPerTask"] for r in rows],
                "itemsServedPerTask": weighted("itemsServedPerTask"),
                "conditionsNotApplicable": sorted(rows[0]["conditionsNotApplicable"]),
            }
        )
    pooled.sort(key=lambda r: (-(r["passRateDelta"] or 0.0), r["guidanceTokensPerTask"] or 0.0))
    return pooled


def verdict(rows: list[dict[str, Any]], ours: str = "lorelab") -> str:
    if not rows or all(r["memory"] != ours for r in rows):
        return f"{ours} is not on every board"
    first = rows[0]
    peers = [r for r in rows if r["memory"] != ours]
    if not peers:
        return "no peer to compare with"
    best = peers[0]
    mine = next(r for r in rows if r["memory"] == ours)
    tokens, best_tokens = mine["guidanceTokensPerTask"], best["guidanceTokensPerTask"]
    ratio = None if not best_tokens else tokens / best_tokens
    ranked_first = first["memory"] == ours and mine["passRateDelta"] > best["passRateDelta"]
    third = ratio is not None and ratio <= 1 / 3
    text = (
        f"{ours}: pooled delta {mine['passRateDelta']:+.3f}, {tokens:.1f} tokens/task; best "
        f"peer {best['memory']}: {best['passRateDelta']:+.3f}, {best_tokens:.1f} tokens/task; "
        f"token ratio {'n/a' if ratio is None else f'{ratio:.3f}'}. "
    )
    if ranked_first and third:
        return text + "Ranks first at no more than a third of the best peer's tokens: yes."
    return text + (
        f"Ranks first (strictly): {'yes' if ranked_first else 'no'}; at most a third of the "
        f"best peer's tokens: {'yes' if third else 'no'}."
    )


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| rank | memory | holdouts | pass-rate delta (per board) | sign test +/-/= (p) | "
        "irrelevance | pollution | guidance tokens / task (per board) | items / task |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for rank, r in enumerate(rows, 1):
        s = r["signTest"]
        per = ", ".join(f"{d:+.2f}" for d in r["perBoardDelta"])
        tok = ", ".join(f"{t:.0f}" for t in r["perBoardTokens"])
        lines.append(
            f"| {rank} | {r['memory']} | {r['holdouts']} | {r['passRateDelta']:+.3f} ({per}) | "
            f"{s['positive']}/{s['negative']}/{s['ties']} ({s['pValue']:.3g}) | "
            f"{r['irrelevanceRate']:.3f} | {r['pollutionRate']:.3f} | "
            f"{r['guidanceTokensPerTask']:.1f} ({tok}) | {r['itemsServedPerTask']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Pool the board set's three leaderboards.")
    parser.add_argument("boards", nargs="+", type=Path)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    boards = [
        json.loads((path / "leaderboard.json").read_text(encoding="utf-8"))
        for path in options.boards
    ]
    labels = {board["label"] for board in boards}
    rows = pool(boards)
    if options.json:
        print(json.dumps({"labels": sorted(labels), "rows": rows, "verdict": verdict(rows)}))
    else:
        print(f"label: {', '.join(sorted(labels))}")
        print(table(rows))
        print(verdict(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
