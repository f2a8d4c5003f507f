"""Secrets out of what a worker's provider answered: the known key, and bearer-token shapes.

A provider's answer is untrusted text: a careless endpoint may echo the ``Authorization``
header in any field (the reply's ``model``, an error message, the answer itself). Whatever is
recorded from it passes through :func:`redact_secrets` (strings) or :func:`redact_value` (JSON
values) first.
"""

from __future__ import annotations

import re
from typing import Any, Final

MARK: Final = "[key]"
# "Bearer <token>" (an echoed Authorization header), and the key shapes providers issue.
_SHAPES: Final = (
    re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=:-]{8,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),
)


def redact_secrets(text: str, key: str | None = None) -> str:
    """``text`` with ``key`` (and its last 8 characters, as providers echo them) and every
    bearer-token shape replaced by ``[key]``."""
    if key:
        text = text.replace(key, MARK)
        if len(key) >= 12:
            text = text.replace(key[-8:], MARK)
    text = _SHAPES[0].sub(lambda m: f"{m.group(1)}{m.group(2)}{MARK}", text)
    return _SHAPES[1].sub(MARK, text)


def redact_value(value: Any, key: str | None = None) -> Any:
    """A JSON value with :func:`redact_secrets` applied to every string in it, keys included."""
    if isinstance(value, str):
        return redact_secrets(value, key)
    if isinstance(value, list):
        return [redact_value(item, key) for item in value]
    if isinstance(value, dict):
        return {redact_secrets(str(k), key): redact_value(v, key) for k, v in value.items()}
    return value
