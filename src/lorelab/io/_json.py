"""Strict JSON in, canonical JSON out, and the byte accounting built on the canonical form.

Canonical JSON (the one form lorelab hashes and counts) is UTF-8, no insignificant whitespace
(``,`` and ``:`` separators), keys in the order given, non-ASCII characters written as
themselves, and no NaN or Infinity.
"""

from __future__ import annotations

import json
import math
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


def _check_depth(text: str, source: str, max_depth: int) -> None:
    depth = 0
    in_string = False
    escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > max_depth:
                raise JSONInputError(
                    f"{source}: nesting deeper than {max_depth} levels at {_position(text, index)}"
                )
        elif char in "]}":
            depth -= 1


def loads_strict(data: bytes, source: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse ``data`` as strict JSON; any problem is a :class:`JSONInputError` naming ``source``.

    Refused: bytes that are not UTF-8 (a BOM included), NaN and Infinity, duplicate keys in an
    object, numbers beyond the float range, nesting deeper than ``max_depth``, lone surrogates,
    and anything ``json`` rejects.
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
            text, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_finite
        )
    except _Duplicate as exc:
        raise JSONInputError(f"{source}: duplicate key {json.dumps(str(exc))}") from None
    except json.JSONDecodeError as exc:
        raise JSONInputError(
            f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:
        raise JSONInputError(f"{source}: invalid JSON: {exc}") from None
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
