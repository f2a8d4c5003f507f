"""HTML building blocks of a report: escaping, tables with exact values, links, sections, figures.

Every string that came from a receipt goes through :func:`esc` (escaped, and bounded in length);
only :class:`Html` values are written as they are. Numbers shown rounded carry their exact
receipt value in ``data-value``.
"""

from __future__ import annotations

import html
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

NOT_RECORDED: Final = "not recorded"
SHOWN_CHARACTERS: Final = 2000
"""The most characters a page shows of any one string from a receipt."""


class Html(str):
    """Markup that is already safe to write as it is."""

    __slots__ = ()

    def __add__(self, other: str) -> Html:
        """Concatenation stays markup; a plain ``str`` operand is escaped first."""
        return Html(str.__add__(self, esc(other)))


def esc(value: object) -> Html:
    """``value`` as text, escaped for an element or an attribute value, and cut after
    :data:`SHOWN_CHARACTERS` characters (saying how many more there were): a receipt may hold
    a string of any length, and a page shows the first of them; the receipt keeps them all."""
    if isinstance(value, Html):
        return value
    text = str(value)
    if len(text) <= SHOWN_CHARACTERS:
        return Html(html.escape(text, quote=True))
    more = len(text) - SHOWN_CHARACTERS
    shown = html.escape(text[:SHOWN_CHARACTERS], quote=True)
    return Html(f"{shown}\u2026 [{more} more characters not shown; see the receipt]")


def join(parts: Iterable[Html], sep: str = "") -> Html:
    """Concatenate markup."""
    return Html(sep.join(parts))


def tag(name: str, content: object = "", **attrs: object) -> Html:
    """``<name attrs>content</name>``; ``class_`` is ``class``, ``data_x`` is ``data-x``."""
    rendered = "".join(
        f' {key.rstrip("_").replace("_", "-")}="{esc(value)}"'
        for key, value in attrs.items()
        if value is not None
    )
    return Html(f"<{name}{rendered}>{esc(content)}</{name}>")


def fmt(value: float | None, digits: int = 3, *, signed: bool = False) -> str:
    """A number as shown: fixed decimals (``+`` when ``signed``); ``not recorded`` for null."""
    if value is None:
        return NOT_RECORDED
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:+d}" if signed and value else str(value)
    if not math.isfinite(value):
        return str(value)
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def duration(ms: float | None) -> str:
    """A time as people read it: ``850 ms`` under a second, ``27.1 s`` from one second on."""
    if ms is None:
        return NOT_RECORDED
    if ms < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.1f} s"


@dataclass(frozen=True, slots=True)
class Value:
    """A table cell holding a number: shown rounded, the exact value kept in ``data-value``."""

    raw: float | int | bool | None
    digits: int = 3
    signed: bool = False
    unknown: str = NOT_RECORDED
    """What a null is shown as: ``not recorded``, or why the value cannot exist."""
    milliseconds: bool = False
    """A time in ms, shown by :func:`duration` (``27.1 s``); ``data-value`` keeps the ms."""

    def render(self) -> Html:
        """The ``<td>``."""
        if isinstance(self.raw, bool):
            return _cell(self.raw)
        exact = "null" if self.raw is None else repr(self.raw)
        text = (
            self.unknown
            if self.raw is None
            else (
                duration(self.raw)
                if self.milliseconds
                else fmt(self.raw, self.digits, signed=self.signed)
            )
        )
        cls = "num unknown" if self.raw is None else "num"
        return tag("td", text, class_=cls, data_value=exact)


Cell = str | Html | Value | int | float | None


def _cell(value: Cell) -> Html:
    if isinstance(value, Value):
        return value.render()
    if isinstance(value, bool):
        return tag("td", "yes" if value else "no", data_value=str(value).lower())
    if isinstance(value, int | float):
        return Value(value).render()
    if value is None:
        return tag("td", NOT_RECORDED, class_="unknown", data_value="null")
    return tag("td", esc(value))


def table(name: str, caption: str, headers: Sequence[str], rows: Sequence[Sequence[Cell]]) -> Html:
    """A data table named ``name`` (``data-table``) with a caption and one row per receipt."""
    head = tag("tr", join(tag("th", h, scope="col") for h in headers))
    body = (
        join(tag("tr", join(_cell(c) for c in row)) for row in rows)
        if rows
        else tag("tr", tag("td", "none", colspan=str(len(headers)), class_="empty"))
    )
    return tag(
        "table",
        join([tag("caption", caption), tag("thead", head), tag("tbody", body)]),
        data_table=name,
    )


def link(text: object, href: str | None) -> Html:
    """A link to a receipt by its path relative to the report; plain text when there is none."""
    if href is None:
        return esc(text)
    return tag("a", text, href=href, class_="receipt")


def figure(name: str, svg: Html, caption: str, data: Html) -> Html:
    """A figure named ``name`` with its table of the same numbers next to it."""
    fig = tag("figure", join([svg, tag("figcaption", caption)]), data_figure=name)
    return tag("div", join([fig, tag("div", data, class_="data")]), class_="figure-block")


def paragraph(text: object, cls: str | None = None) -> Html:
    """A ``<p>``."""
    return tag("p", text, class_=cls)


def items(values: Iterable[object], cls: str | None = None) -> Html:
    """An unordered list."""
    return tag("ul", join(tag("li", v) for v in values), class_=cls)


@dataclass(frozen=True, slots=True)
class Section:
    """One section of a report: its id (also ``data-section``), title and body."""

    id: str
    title: str
    body: Html

    def render(self, suffix: str = "") -> Html:
        """The ``<section>``; ``suffix`` keeps ids unique when two reports sit side by side."""
        return tag(
            "section",
            join([tag("h2", self.title), self.body]),
            id=self.id + suffix,
            data_section=self.id,
        )


def banner(state: str, title: str, lines: Sequence[object]) -> Html:
    """A prominent statement (label, decision, refusal) with its reasons."""
    body = [tag("p", title, class_="banner-title")]
    if lines:
        body.append(items(lines))
    return tag("div", join(body), class_=f"banner banner-{state}", role="status")


def cause_lines(causes: Sequence[str], shown: int = 5) -> list[str]:
    """The causes of failed units (one entry per unit) as banner lines: one line when they
    share one cause, else the ``shown`` most common with their counts."""
    counted = Counter(causes)
    if len(counted) == 1:
        return [f"one cause, in every one of them: {causes[0]}"]
    lines = [f"{n} \u00d7 {cause}" for cause, n in counted.most_common(shown)]
    if len(counted) > shown:
        lines.append(f"and {len(counted) - shown} more causes (see the table below)")
    return lines
