"""A small, deterministic SVG builder and the four chart shapes reports use.

Charts are drawn on the server, with no dependency and nothing fetched when the page is viewed:
bars, paired dots, a matrix of states and a slope chart. Coordinates are rounded to two
decimals so the same receipts always give the same bytes. Colour is never the only carrier of
meaning: every mark has a ``<title>`` with its value, and signs and states are also written as
symbols.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from lorelab.report._html import Html, esc, tag

WIDTH: Final = 640
LABEL_W: Final = 190
ROW_H: Final = 24
FONT: Final = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"

MEMORY: Final = "#1f62c4"
NO_MEMORY: Final = "#d9730d"
POSITIVE: Final = "#1a7f37"
NEGATIVE: Final = "#c62828"
NEUTRAL: Final = "#6b7280"
GRID: Final = "#d7dbe0"

SIGN_COLOR: Final = {1: POSITIVE, -1: NEGATIVE, 0: NEUTRAL}
SIGN_SYMBOL: Final = {1: "+", -1: "\u2212", 0: "="}


def _n(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


@dataclass(slots=True)
class Svg:
    """An ``<svg>`` under construction; ``render`` gives its markup."""

    width: float
    height: float
    title: str
    parts: list[str] = field(default_factory=list)

    def add(self, element: str, tooltip: str | None = None, **attrs: object) -> None:
        """Add ``<element attrs>`` (with a ``<title>`` tooltip when given)."""
        rendered = "".join(
            f' {k.rstrip("_").replace("_", "-")}="{_n(v) if isinstance(v, float) else esc(v)}"'
            for k, v in attrs.items()
            if v is not None
        )
        inner = f"<title>{esc(tooltip)}</title>" if tooltip else ""
        self.parts.append(f"<{element}{rendered}>{inner}</{element}>")

    def text(
        self,
        x: float,
        y: float,
        value: str,
        *,
        anchor: str = "start",
        size: int = 12,
        **extra: object,
    ) -> None:
        """A text label."""
        attrs = "".join(
            f' {k.replace("_", "-")}="{esc(v)}"' for k, v in extra.items() if v is not None
        )
        self.parts.append(
            f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}" font-size="{size}"{attrs}>'
            f"{esc(value)}</text>"
        )

    def render(self) -> Html:
        """The complete ``<svg>``: scalable, with an accessible name."""
        body = "".join(self.parts)
        return Html(
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_n(self.width)} '
            f'{_n(self.height)}" width="{_n(self.width)}" height="{_n(self.height)}" '
            f'role="img" aria-label="{esc(self.title)}" font-family="{esc(FONT)}" '
            f'fill="#1f2328"><title>{esc(self.title)}</title>{body}</svg>'
        )


def _label(svg: Svg, y: float, text: str) -> None:
    shown = text if len(text) <= 26 else text[:25] + "\u2026"
    svg.text(LABEL_W - 8, y + 4, shown, anchor="end")


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar: its label, value (null: not recorded), the text shown and its colour."""

    label: str
    value: float | None
    text: str
    color: str = MEMORY


def bar_chart(
    title: str, bars: Sequence[Bar], *, domain: tuple[float, float] | None = None
) -> Html:
    """Horizontal bars, one per row, negative values to the left of a zero line."""
    known = [b.value for b in bars if b.value is not None]
    lo = min([0.0, *known]) if domain is None else domain[0]
    hi = max([0.0, *known]) if domain is None else domain[1]
    if hi == lo:
        hi = lo + 1.0
    left, right = LABEL_W, WIDTH - 110
    scale = (right - left) / (hi - lo)
    zero = left + (0 - lo) * scale
    svg = Svg(WIDTH, 16 + ROW_H * max(len(bars), 1), title)
    svg.add("line", x1=zero, y1=6.0, x2=zero, y2=svg.height - 4, stroke=NEUTRAL)
    for index, bar in enumerate(bars):
        y = 12 + index * ROW_H
        _label(svg, y + 6, bar.label)
        if bar.value is None:
            svg.text(zero + 6, y + 10, bar.text, fill=NEUTRAL, font_style="italic")
            continue
        start, end = sorted((zero, zero + bar.value * scale))
        svg.add(
            "rect",
            f"{bar.label}: {bar.text}",
            x=start,
            y=float(y),
            width=max(end - start, 1.0),
            height=float(ROW_H - 8),
            fill=bar.color,
            rx="2",
        )
        svg.text(max(end, zero) + 6, y + 12, bar.text)
    return svg.render()


@dataclass(frozen=True, slots=True)
class PairRow:
    """One paired unit: the two values (0..1) and the sign of right minus left."""

    label: str
    left: float | None
    right: float | None
    sign: int | None
    tooltip: str


def paired_chart(title: str, rows: Sequence[PairRow], *, left: str, right: str) -> Html:
    """Two dots per row on a 0..1 scale, joined by a line coloured by the sign of the change."""
    x0, x1 = LABEL_W, WIDTH - 70
    svg = Svg(WIDTH, 58 + ROW_H * max(len(rows), 1), title)
    svg.add("circle", cx=float(x0), cy=12.0, r="5", fill=NO_MEMORY)
    svg.text(x0 + 10, 16, left)
    svg.add("circle", cx=float(x0 + 130), cy=12.0, r="5", fill=MEMORY)
    svg.text(x0 + 140, 16, right)
    top = 30
    bottom = top + ROW_H * max(len(rows), 1)
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = x0 + tick * (x1 - x0)
        svg.add("line", x1=x, y1=float(top), x2=x, y2=float(bottom), stroke=GRID)
        svg.text(x, bottom + 16, f"{tick:g}", anchor="middle", size=11)
    for index, row in enumerate(rows):
        y = top + index * ROW_H + ROW_H / 2
        _label(svg, y, row.label)
        sign = row.sign if row.sign is not None else 0
        points = [
            (value, color)
            for value, color in ((row.left, NO_MEMORY), (row.right, MEMORY))
            if value is not None
        ]
        if row.left is not None and row.right is not None:
            svg.add(
                "line",
                x1=x0 + row.left * (x1 - x0),
                y1=y,
                x2=x0 + row.right * (x1 - x0),
                y2=y,
                stroke=SIGN_COLOR[sign],
                stroke_width="3",
            )
        for value, color in points:
            svg.add("circle", row.tooltip, cx=x0 + value * (x1 - x0), cy=y, r="6", fill=color)
        mark = SIGN_SYMBOL[sign] if row.sign is not None else "?"
        svg.text(x1 + 30, y + 5, mark, anchor="middle", size=15, fill=SIGN_COLOR[sign])
    return svg.render()


@dataclass(frozen=True, slots=True)
class MatrixCell:
    """One cell of a matrix: its fill colour, the symbol written in it, and its tooltip."""

    color: str
    symbol: str
    tooltip: str


CELL: Final = 24


def matrix_chart(
    title: str,
    rows: Sequence[str],
    columns: Sequence[tuple[str, str]],
    cells: Sequence[Sequence[MatrixCell]],
    legend: Sequence[tuple[str, str, str]],
) -> Html:
    """A grid of states: ``columns`` are (label, colour of its header mark); ``legend`` is
    (colour, symbol, meaning)."""
    left = 250
    top = 46
    width = max(WIDTH, left + CELL * len(columns) + 10)
    height = top + CELL * max(len(rows), 1) + 16 + 18 * ((len(legend) + 2) // 3)
    svg = Svg(width, height, title)
    for col, (label, color) in enumerate(columns):
        x = left + col * CELL + CELL / 2
        svg.add("rect", x=x - 9, y=8.0, width=18.0, height=6.0, fill=color)
        svg.text(x, 34, label, anchor="middle", size=10)
    for r, label in enumerate(rows):
        y = top + r * CELL
        shown = label if len(label) <= 38 else label[:37] + "\u2026"
        svg.text(left - 8, y + CELL / 2 + 4, shown, anchor="end", size=11)
        for c, cell in enumerate(cells[r]):
            svg.add(
                "rect",
                cell.tooltip,
                x=float(left + c * CELL + 1),
                y=float(y + 1),
                width=float(CELL - 2),
                height=float(CELL - 2),
                fill=cell.color,
            )
            if cell.symbol:
                svg.text(
                    left + c * CELL + CELL / 2,
                    y + CELL / 2 + 4,
                    cell.symbol,
                    anchor="middle",
                    size=11,
                    fill="#ffffff",
                )
    base = top + CELL * max(len(rows), 1) + 14
    for index, (color, symbol, meaning) in enumerate(legend):
        x = 10 + (index % 3) * 210
        y = base + (index // 3) * 18
        svg.add("rect", x=float(x), y=float(y), width=14.0, height=14.0, fill=color)
        svg.text(x + 7, y + 11, symbol, anchor="middle", size=10, fill="#ffffff")
        svg.text(x + 20, y + 11, meaning, size=11)
    return svg.render()


@dataclass(frozen=True, slots=True)
class SlopeLine:
    """One unit from the left level to the right level, coloured by its sign."""

    left: int
    right: int
    sign: int
    tooltip: str


@dataclass(frozen=True, slots=True)
class SlopePanel:
    """One panel: its title, the right-hand column's name and its lines."""

    title: str
    right: str
    lines: Sequence[SlopeLine]


def slope_chart(
    title: str, panels: Sequence[SlopePanel], levels: Sequence[str], *, left: str
) -> Html:
    """Panels of slopes from ``left`` to each panel's condition on an ordinal scale
    (``levels[0]`` at the top is the best outcome)."""
    label_w, panel_w, top, step = 130, 210, 44, 40
    height = top + step * max(len(levels) - 1, 1) + 36
    svg = Svg(label_w + panel_w * len(panels) + 10, height, title)
    for i, level in enumerate(levels):
        y = top + i * step
        svg.text(label_w - 8, y + 4, level, anchor="end", size=11)
        svg.add("line", x1=float(label_w), y1=float(y), x2=svg.width - 10, y2=float(y), stroke=GRID)
    for p, panel in enumerate(panels):
        xa = label_w + p * panel_w + 40
        xb = label_w + (p + 1) * panel_w - 40
        svg.text((xa + xb) / 2, 16, panel.title, anchor="middle", size=12, font_weight="600")
        svg.text(xa, height - 12, left, anchor="middle", size=10)
        svg.text(xb, height - 12, panel.right, anchor="middle", size=10)
        count = len(panel.lines)
        for i, line in enumerate(panel.lines):
            nudge = (i - (count - 1) / 2) * 2.5
            ya = top + line.left * step + nudge
            yb = top + line.right * step + nudge
            color = SIGN_COLOR[line.sign]
            svg.add(
                "line",
                line.tooltip,
                x1=float(xa),
                y1=ya,
                x2=float(xb),
                y2=yb,
                stroke=color,
                stroke_width="2.5",
                stroke_opacity="0.8",
            )
            svg.add("circle", line.tooltip, cx=float(xa), cy=ya, r="4", fill=color)
            svg.add("circle", line.tooltip, cx=float(xb), cy=yb, r="4", fill=color)
    return svg.render()


def legend_note(entries: Sequence[tuple[str, str]]) -> Html:
    """A small HTML legend: (colour, meaning) pairs."""
    return tag(
        "p",
        Html(
            " ".join(
                f'<span class="swatch" style="background:{esc(c)}"></span>{esc(m)}'
                for c, m in entries
            )
        ),
        class_="legend",
    )
