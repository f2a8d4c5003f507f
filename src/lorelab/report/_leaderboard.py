"""The memory leaderboard (``leaderboard.json`` of ``lorelab eval conditions leaderboard``)
as report sections: one row per memory, every column of the board, and what was shared."""

from __future__ import annotations

from lorelab.evaluation.conditions._leaderboard import LEADERBOARD_FILE, Leaderboard
from lorelab.report._html import Section, banner, esc, items, join, paragraph, table
from lorelab.report._load import Receipts
from lorelab.report._page import Column

_HEADERS = (
    "rank",
    "memory",
    "server",
    "holdouts",
    "pass-rate delta",
    "sign test +/-/=",
    "p (two-sided)",
    "irrelevance rate",
    "pollution rate",
    "guidance tokens / task",
    "items served / task",
    "prepare p50 s",
    "prepare p95 s",
    "record p50 s",
    "record p95 s",
    "not applicable",
    "run's decision",
)


def leaderboard_column(receipts: Receipts, source: str) -> Column:
    """The page's one column: the board, or the problem that kept it from being read."""
    board = receipts.read(LEADERBOARD_FILE, Leaderboard, missing="not a leaderboard")
    if board is None:
        return Column("memory leaderboard", source, list(receipts.problems), [])
    rows = []
    for rank, row in enumerate(board.rows, start=1):
        sign = row.sign_test
        server = row.server_info or {}
        rows.append(
            [
                rank,
                row.memory,
                f"{server.get('name')} {server.get('version')}" if server else None,
                row.holdouts,
                row.pass_rate_delta,
                f"{sign.get('positive')}/{sign.get('negative')}/{sign.get('ties')}"
                if sign
                else None,
                sign.get("pValue"),
                row.irrelevance_rate,
                row.pollution_rate,
                row.guidance_tokens_per_task,
                row.items_served_per_task,
                row.prepare_latency.p50_s,
                row.prepare_latency.p95_s,
                row.record_latency.p50_s,
                row.record_latency.p95_s,
                "; ".join(f"{c}: {r}" for c, r in row.conditions_not_applicable.items()) or "none",
                f"{row.decision.get('verdict')} ({row.decision.get('condition')})",
            ]
        )
    parts = []
    if board.label:
        parts.append(
            banner(
                "fixture",
                f"{board.label}: not evidence",
                ["A deterministic fixture host ran the tasks; the board exercises the protocol."],
            )
        )
    parts += [
        table("leaderboard", f"memories on {board.condition} vs baseline", _HEADERS, rows),
        paragraph(board.reading),
    ]
    shared = items(esc(f"{name}: {value}") for name, value in board.shared.items())
    sections = [
        Section("board", "Leaderboard", join(parts)),
        Section("shared", "What every run shared", shared),
    ]
    title = f"memory leaderboard ({len(board.rows)} memories)"
    return Column(title, source, list(receipts.problems), sections)
