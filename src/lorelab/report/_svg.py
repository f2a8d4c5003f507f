"""A small, deterministic SVG builder and the four chart shapes reports use.

Charts are drawn on the server, with no dependency and nothing fetched when the page is viewed:
bars, paired dots, a matrix of states and a slope chart. Coordinates are rounded to two
decimals so the same receipts always give the same bytes. Colour is never the only carrier of
meaning: every mark has a ``<title>`` with its value, and signs and states are also written as
symbols.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from lorelab.report._html import Html, esc, tag

WIDTH: Final = 1120
"""Width of a chart's coordinate system: drawn at the width of its column, it is about 1:1 in
a 1,400 px window."""
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

_NARROW: Final = frozenset(" .,:;'|!ilIjtf()[]")
_WIDE: Final = frozenset("mwMW@%")


def _n(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def text_width(text: str, size: float = 12) -> float:
    """A generous estimate of the drawn width of ``text`` at ``size`` px in a sans-serif face.

    The page has no script and the server no fonts, so room for labels is reserved from this
    estimate (wider than DejaVu Sans and the usual system faces draw); the browser test checks
    that no label leaves its figure or meets another."""
    return size * sum(_em(c) for c in text)


def _em(char: str) -> float:
    if char in _NARROW:
        return 0.36
    if char in _WIDE:
        return 0.92
    if char.isdigit():
        return 0.64
    return 0.72 if char.isupper() else 0.6


def fit(text: str, room: float, size: float = 12) -> str:
    """``text`` shortened with an ellipsis to fit ``room`` px (whole when it fits)."""
    if text_width(text, size) <= room:
        return text
    while text and text_width(text + "\u2026", size) > room:
        text = text[:-1]
    return text + "\u2026"


@dataclass(slots=True)
class Svg:
    """An ``<svg>`` under construction; ``render`` gives its markup. A ``stretch`` chart is
    drawn at the width of its column; otherwise at its own width (at most the column's)."""

    width: float
    height: float
    title: str
    stretch: bool = True
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
        tooltip: str | None = None,
        **extra: object,
    ) -> None:
        """A text label (with a ``<title>``, e.g. the whole of a shortened label)."""
        attrs = "".join(
            f' {k.replace("_", "-")}="{esc(v)}"' for k, v in extra.items() if v is not None
        )
        inner = f"<title>{esc(tooltip)}</title>" if tooltip else ""
        self.parts.append(
            f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}" font-size="{size}"{attrs}>'
            f"{inner}{esc(value)}</text>"
        )

    def label(self, x: float, y: float, text: str, room: float, size: int = 12) -> None:
        """A right-aligned row label ending at ``x``, shortened (whole in its tooltip) only when
        it is wider than ``room``."""
        shown = fit(text, room, size)
        self.text(x, y, shown, anchor="end", size=size, tooltip=text if shown != text else None)

    def render(self) -> Html:
        """The complete ``<svg>``: scalable, with an accessible name."""
        body = "".join(self.parts)
        # A stretched chart's size is the stylesheet's (``svg.wide``: its column's width).
        size = (
            'class="wide"'
            if self.stretch
            else f'width="{_n(self.width)}" height="{_n(self.height)}"'
        )
        return Html(
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_n(self.width)} '
            f'{_n(self.height)}" {size} role="img" aria-label="{esc(self.title)}" '
            f'font-family="{esc(FONT)}" fill="#1f2328"><title>{esc(self.title)}</title>'
            f"{body}</svg>"
        )


def _label_room(labels: Sequence[str], size: int = 12, *, most: float = 0.4 * WIDTH) -> float:
    """Width of the label column: the widest label plus a margin, within bounds."""
    widest = max((text_width(t, size) for t in labels), default=0.0)
    return min(max(widest + 18, 60.0), most)


def _axis(svg: Svg, x0: float, x1: float, y: float, ticks: Sequence[float], title: str) -> None:
    """Tick labels at ``y`` under a horizontal scale from ``x0`` (ticks[0]) to ``x1``, and the
    axis title under them."""
    lo, hi = ticks[0], ticks[-1]
    for tick in ticks:
        x = x0 + (tick - lo) / (hi - lo) * (x1 - x0)
        svg.text(x, y, f"{tick:g}", anchor="middle", size=11)
    svg.text((x0 + x1) / 2, y + 18, title, anchor="middle", size=12, font_weight="600")


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar: its label, value (null: not recorded), the text shown and its colour."""

    label: str
    value: float | None
    text: str
    color: str = MEMORY


def bar_chart(
    title: str,
    bars: Sequence[Bar],
    *,
    domain: tuple[float, float] | None = None,
    axis: str | None = None,
) -> Html:
    """Horizontal bars, one per row, negative values to the left of a zero line; with ``axis``
    (and a ``domain``), a scale with ticks and that title under the bars."""
    known = [b.value for b in bars if b.value is not None]
    lo = min([0.0, *known]) if domain is None else domain[0]
    hi = max([0.0, *known]) if domain is None else domain[1]
    if hi == lo:
        hi = lo + 1.0
    label_w = _label_room([b.label for b in bars])
    # Room for the value labels right of the longest bar (or of the zero line).
    room = max((text_width(b.text) for b in bars), default=0.0) + 16
    left, right = label_w, WIDTH - room
    scale = (right - left) / (hi - lo)
    zero = left + (0 - lo) * scale
    rows_h = 16 + ROW_H * max(len(bars), 1)
    scaled = axis is not None and domain is not None
    svg = Svg(WIDTH, rows_h + (40 if scaled else 0), title)
    svg.add("line", x1=zero, y1=6.0, x2=zero, y2=rows_h - 4.0, stroke=NEUTRAL)
    if scaled and axis is not None:
        ticks = [lo + (hi - lo) * i / 4 for i in range(5)]
        for tick in ticks:
            x = left + (tick - lo) * scale
            svg.add("line", x1=x, y1=6.0, x2=x, y2=rows_h - 4.0, stroke=GRID)
        _axis(svg, left, right, rows_h + 10, ticks, axis)
    for index, bar in enumerate(bars):
        y = 12 + index * ROW_H
        svg.label(label_w - 8, y + 12, bar.label, label_w - 12)
        if bar.value is None:
            # A white halo keeps the grid lines from striking the words through.
            svg.text(zero + 6, y + 12, bar.text, fill=NEUTRAL, font_style="italic",
                     stroke="#ffffff", stroke_width="4", paint_order="stroke")  # fmt: skip
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
    """One paired unit: the two values (0..1) and the sign of right minus left; a side that is
    ``void`` did not qualify (its value is the score it counts, not a measurement)."""

    label: str
    left: float | None
    right: float | None
    sign: int | None
    tooltip: str
    left_void: bool = False
    right_void: bool = False


DOT_R: Final = 5.0
PAIR_ROW_H: Final = 30
VOID: Final = "did not qualify: counts 0"


def _legend_row(svg: Svg, x: float, y: float, entries: Sequence[tuple[str, str, bool]]) -> None:
    """Dots with their meanings in one row from ``x``: (colour, meaning, hollow)."""
    for color, meaning, hollow in entries:
        fill, stroke = ("#ffffff", color) if hollow else (color, None)
        svg.add("circle", cx=x + DOT_R, cy=y, r=_n(DOT_R), fill=fill, stroke=stroke,
                stroke_width="2" if hollow else None)  # fmt: skip
        svg.text(x + 2 * DOT_R + 5, y + 4, meaning)
        x += 2 * DOT_R + 5 + text_width(meaning) + 22


def paired_chart(title: str, rows: Sequence[PairRow], *, left: str, right: str, axis: str) -> Html:
    """Two dots per row on a 0..1 scale (titled ``axis``), joined by a line coloured by the sign
    of the change. Two equal values sit one above the other, so that both show; a side that did
    not qualify is a hollow dot and its line is dashed."""
    label_w = _label_room([r.label for r in rows])
    x0, x1 = label_w + 12, WIDTH - 70
    count = max(len(rows), 1)
    svg = Svg(WIDTH, 74 + PAIR_ROW_H * count, title)
    legend = [(NO_MEMORY, left, False), (MEMORY, right, False)]
    if any(r.left_void or r.right_void for r in rows):
        legend.append((NEUTRAL, VOID, True))
    _legend_row(svg, x0, 12.0, legend)
    top = 30
    bottom = top + PAIR_ROW_H * count
    ticks = (0.0, 0.25, 0.5, 0.75, 1.0)
    for tick in ticks:
        x = x0 + tick * (x1 - x0)
        svg.add("line", x1=x, y1=float(top), x2=x, y2=float(bottom), stroke=GRID)
    _axis(svg, x0, x1, bottom + 16, ticks, axis)
    for index, row in enumerate(rows):
        y = top + index * PAIR_ROW_H + PAIR_ROW_H / 2
        svg.label(label_w - 8, y + 4, row.label, label_w - 12)
        sign = row.sign if row.sign is not None else 0
        xl = x0 + row.left * (x1 - x0) if row.left is not None else None
        xr = x0 + row.right * (x1 - x0) if row.right is not None else None
        # Dots closer than a diameter would hide each other: one goes above, one below.
        close = xl is not None and xr is not None and abs(xl - xr) < 2 * DOT_R
        apart = DOT_R + 0.5 if close else 0.0
        if xl is not None and xr is not None:
            dashed = row.left_void or row.right_void
            svg.add("line", x1=xl, y1=y - apart, x2=xr, y2=y + apart, stroke=SIGN_COLOR[sign],
                    stroke_width="3", stroke_dasharray="4 3" if dashed else None)  # fmt: skip
        for at, dy, color, void in ((xl, -apart, NO_MEMORY, row.left_void),
                                    (xr, apart, MEMORY, row.right_void)):  # fmt: skip
            if at is None:
                continue
            svg.add("circle", row.tooltip, cx=at, cy=y + dy, r=_n(DOT_R),
                    fill="#ffffff" if void else color, stroke=color if void else None,
                    stroke_width="2" if void else None)  # fmt: skip
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
    (colour, symbol, meaning). Drawn at its own width: as wide as its labels and columns need."""
    left = _label_room(rows, 11, most=0.55 * WIDTH)
    top = 46
    entries = [text_width(meaning, 11) + 44 for _, _, meaning in legend]
    width = max(left + CELL * len(columns) + 10, min(sum(entries) + 10, 700.0))
    lines = _flow(entries, width - 10)
    height = top + CELL * max(len(rows), 1) + 16 + 18 * (max(lines) + 1 if lines else 0)
    svg = Svg(width, height, title, stretch=False)
    for col, (label, color) in enumerate(columns):
        x = left + col * CELL + CELL / 2
        svg.add("rect", x=x - 9, y=8.0, width=18.0, height=6.0, fill=color)
        svg.text(x, 34, label, anchor="middle", size=10)
    for r, label in enumerate(rows):
        y = top + r * CELL
        svg.label(left - 8, y + CELL / 2 + 4, label, left - 12, size=11)
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
    x, line = 10.0, 0
    for (color, symbol, meaning), step, row in zip(legend, entries, lines, strict=True):
        if row != line:
            x, line = 10.0, row
        y = base + row * 18
        svg.add("rect", x=x, y=float(y), width=14.0, height=14.0, fill=color)
        svg.text(x + 7, y + 11, symbol, anchor="middle", size=10, fill="#ffffff")
        svg.text(x + 20, y + 11, meaning, size=11)
        x += step
    return svg.render()


def _flow(widths: Sequence[float], room: float) -> list[int]:
    """The line each of a row of items of ``widths`` goes on, wrapped at ``room``."""
    lines: list[int] = []
    line, used = 0, 0.0
    for width in widths:
        if used and used + width > room:
            line, used = line + 1, 0.0
        lines.append(line)
        used += width
    return lines


@dataclass(frozen=True, slots=True)
class SlopeLine:
    """One unit (``label``: its task id) from the left level to the right level, coloured by
    its sign."""

    label: str
    left: int
    right: int
    sign: int
    tooltip: str
    left_void: bool = False
    right_void: bool = False
    """A side that has no real outcome (its host failed): drawn as a hollow dot."""


@dataclass(frozen=True, slots=True)
class SlopePanel:
    """One panel: its title, the right-hand column's name and its lines."""

    title: str
    right: str
    lines: Sequence[SlopeLine]


SLOPE_ROW: Final = 16
"""Vertical distance between two dots of one side: an 11 px label's box (about 13 px) and a
gap, so that the label beside each dot meets no other."""
SLOPE_LABEL: Final = 11


def _offsets(lines: Sequence[SlopeLine], side: str) -> list[float]:
    """Each line's dot on ``side`` (``"left"`` or ``"right"``): its distance from the centre of
    its level, a row of its own among the level's dots. They are ordered by the level at the
    other end (then by label), so that lines cross as little as they can."""
    other = "right" if side == "left" else "left"
    order = sorted(
        range(len(lines)),
        key=lambda i: (getattr(lines[i], side), getattr(lines[i], other), lines[i].label, i),
    )
    count = Counter(getattr(line, side) for line in lines)
    offsets = [0.0] * len(lines)
    taken: Counter[int] = Counter()
    for i in order:
        level = getattr(lines[i], side)
        offsets[i] = (taken[level] - (count[level] - 1) / 2) * SLOPE_ROW
        taken[level] += 1
    return offsets


def slope_chart(
    title: str, panels: Sequence[SlopePanel], levels: Sequence[str], *, left: str
) -> Html:
    """Panels of slopes from ``left`` to each panel's condition on an ordinal scale
    (``levels[0]`` at the top is the best outcome), one panel under another. Within a level
    every dot of a side has its own row, with its unit's label beside it (left of a left dot,
    right of a right dot), so that every dot shows and is named and no two labels meet."""
    label_w = _label_room(levels, SLOPE_LABEL)
    names = [line.label for panel in panels for line in panel.lines]
    name_w = _label_room(names, SLOPE_LABEL, most=0.28 * WIDTH) - 12
    xa = label_w + name_w + 16
    xb = WIDTH - name_w - 18
    dots: list[tuple[str, float, float, str, bool]] = []
    svg = Svg(WIDTH, 0.0, title)
    y = 0.0
    for panel in panels:
        lines = panel.lines
        left_at, right_at = _offsets(lines, "left"), _offsets(lines, "right")
        left_n = Counter(line.left for line in lines)
        right_n = Counter(line.right for line in lines)
        svg.text((xa + xb) / 2, y + 18, panel.title, anchor="middle", size=12, font_weight="600")
        svg.text(xa, y + 36, left, anchor="middle", size=SLOPE_LABEL, font_weight="600")
        svg.text(xb, y + 36, panel.right, anchor="middle", size=SLOPE_LABEL, font_weight="600")
        band_top = y + 44
        centres: list[float] = []
        for i, level in enumerate(levels):
            # A level is as tall as the more crowded of its two sides.
            band = float(max(left_n[i], right_n[i], 1) * SLOPE_ROW + 8)
            if i % 2 == 0:  # every other level shaded, so that the bands read apart
                svg.add("rect", x=float(label_w), y=band_top, width=WIDTH - label_w - 10,
                        height=band, fill="#f6f8fa")  # fmt: skip
            centres.append(band_top + band / 2)
            svg.label(label_w - 8, centres[i] + 4, level, label_w - 12, size=SLOPE_LABEL)
            band_top += band
        for i, line in enumerate(lines):
            ya = centres[line.left] + left_at[i]
            yb = centres[line.right] + right_at[i]
            color = SIGN_COLOR[line.sign]
            svg.add("line", line.tooltip, x1=xa, y1=ya, x2=xb, y2=yb, stroke=color,
                    stroke_width="2.5", stroke_opacity="0.8")  # fmt: skip
            dots += [(line.tooltip, xa, ya, color, line.left_void),
                     (line.tooltip, xb, yb, color, line.right_void)]  # fmt: skip
            svg.label(xa - 10, ya + 4, line.label, name_w, size=SLOPE_LABEL)
            shown = fit(line.label, name_w, SLOPE_LABEL)
            svg.text(xb + 10, yb + 4, shown, size=SLOPE_LABEL,
                     tooltip=line.label if shown != line.label else None)  # fmt: skip
        y = band_top + 14
    svg.height = max(y, 40.0)
    # The dots after every line, so that no later line covers an earlier dot.
    for tooltip, cx, cy, color, void in dots:
        svg.add("circle", tooltip, cx=cx, cy=cy, r="4", fill="#ffffff" if void else color,
                stroke=color if void else None, stroke_width="1.5" if void else None)  # fmt: skip
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
