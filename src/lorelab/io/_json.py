"""Strict JSON in, canonical JSON out, and the byte accounting built on the canonical form.

Canonical JSON (the one form lorelab hashes and counts) is UTF-8, no insignificant whitespace
(``,`` and ``:`` separators), keys in the order given, non-ASCII characters written as
themselves, and no NaN or Infinity.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

from pydantic import BaseModel

from lorelab.errors import JSONInputError

MAX_DEPTH: Final = 100


class _Duplicate(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Duplicate(key)
        result[key] = value
    return result


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:40]} is out of range for a 64-bit float")
    return value


def _position(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return f"line {line} column {column}"


# Strings (with their escapes) are skipped whole, so only structural brackets are seen. The
# loop is unrolled ("[^"\\]*" runs between escapes): a repeated alternation keeps state per
# character, gigabytes for one 30 MB string.
_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_STRUCTURE: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_NOT_BRACKET: Final = re.compile(r"[^\[\]{}]+")
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


def _too_deep(brackets: str, max_depth: int) -> bool:
    depth = 0
    for char in brackets:
        if char in "[{":
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False


def _check_depth(text: str, source: str, max_depth: int) -> None:
    # Fast path in C: drop strings, keep only the brackets, then walk those.
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if not _too_deep(brackets, max_depth):
        return
    depth = 0
    for match in _STRUCTURE.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            if depth > max_depth:
                raise JSONInputError(
                    f"{source}: nesting deeper than {max_depth} levels at "
                    f"{_position(text, match.start())}"
                )
        elif char in "]}":
            depth -= 1


def loads_strict(
    data: bytes, source: str, *, max_depth: int = MAX_DEPTH, control_in_strings: bool = False
) -> Any:
    """Parse ``data`` as strict JSON; any problem is a :class:`JSONInputError` naming ``source``.

    Refused: bytes that are not UTF-8 (a BOM included), NaN and Infinity, duplicate keys in an
    object, numbers beyond the float range, nesting deeper than ``max_depth``, lone surrogates,
    and anything ``json`` rejects. ``control_in_strings`` lets raw control characters (a raw
    newline) stand inside strings, as a model's grammar-constrained answer may have them.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JSONInputError(f"{source}: not valid UTF-8 at byte {exc.start}") from None
    if text.startswith("\ufeff"):
        raise JSONInputError(f"{source}: starts with a byte order mark; expected plain UTF-8")
    _check_depth(text, source, max_depth)
    try:
        value = json.loads(
            text,
            strict=not control_in_strings,
            object_pairs_hook=_pairs,
            parse_constant=_constant,
            parse_float=_finite,
        )
    except _Duplicate as exc:
        raise JSONInputError(f"{source}: duplicate key {json.dumps(str(exc))}") from None
    except json.JSONDecodeError as exc:
        raise JSONInputError(
            f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:
        raise JSONInputError(f"{source}: invalid JSON: {exc}") from None
    # Only a \uD800-\uDFFF escape can produce a lone surrogate; skip the check without one.
    if _SURROGATE_ESCAPE.search(text):
        try:
            canonical_bytes(value)
        except UnicodeEncodeError:
            raise JSONInputError(f"{source}: contains a lone surrogate escape") from None
    return value


def _plain(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json", by_alias=True)
    return obj


def canonical_json(obj: Any) -> str:
    """The canonical JSON text of ``obj`` (a JSON value or a pydantic model)."""
    return json.dumps(_plain(obj), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def canonical_bytes(obj: Any) -> bytes:
    """The UTF-8 bytes of :func:`canonical_json`."""
    return canonical_json(obj).encode("utf-8")


def json_bytes(obj: Any) -> int:
    """The number of UTF-8 bytes in the canonical JSON of ``obj``: lorelab's byte accounting."""
    return len(canonical_bytes(obj))


def pretty_json(obj: Any) -> str:
    """Indented JSON for people (receipts, ``--json`` output); same values as the canonical form."""
    return json.dumps(_plain(obj), ensure_ascii=False, indent=2, allow_nan=False) + "\n"
