"""Source text split into code, string literals and comments: what the fixture's brace, quote
and ``==`` checks of JavaScript and Python expressions step over."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Literal

QUOTES: Final = "'\"`"
CLOSING: Final = {")": "(", "]": "[", "}": "{"}
"""Each closing bracket and the opening one it closes."""


@dataclass(frozen=True, slots=True)
class Piece:
    """``text[start:end]`` of one kind; a string or comment that runs to the end is unclosed."""

    kind: Literal["code", "string", "comment"]
    start: int
    end: int
    closed: bool = True
    newline: int | None = None
    """Where a ``'`` or ``"`` string first holds a raw newline (JavaScript allows none)."""


def _string(text: str, start: int) -> Piece:
    quote = text[start]
    newline = None
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == quote:
            return Piece("string", start, index + 1, newline=newline)
        if char == "\n" and quote != "`" and newline is None:
            newline = index
        index += 1
    return Piece("string", start, len(text), closed=False, newline=newline)


def _comment(text: str, start: int) -> Piece | None:
    if text.startswith("//", start):
        end = text.find("\n", start)
        return Piece("comment", start, len(text) if end < 0 else end)
    if text.startswith("/*", start):
        end = text.find("*/", start + 2)
        return (
            Piece("comment", start, len(text), closed=False)
            if end < 0
            else (Piece("comment", start, end + 2))
        )
    return None


def pieces(text: str, *, comments: bool = False) -> Iterator[Piece]:
    """``text`` in order as code, strings (quotes included; a backslash escapes the next
    character) and, when ``comments``, ``//`` and ``/* */`` comments."""
    start = index = 0
    while index < len(text):
        found = _comment(text, index) if comments else None
        if found is None and text[index] in QUOTES:
            found = _string(text, index)
        if found is None:
            index += 1
            continue
        if start < index:
            yield Piece("code", start, index)
        yield found
        start = index = found.end
    if start < len(text):
        yield Piece("code", start, len(text))
