"""Text that is safe to print to a terminal: control characters from input shown escaped.

Stored or received text (task ids, summaries, commands) may carry ESC sequences, BEL, other C0
and C1 control characters or bidirectional overrides; printed raw they can rewrite the screen
or reorder what a reader sees. Human-readable output escapes them; JSON output stays exact.
"""

from __future__ import annotations

import re
from typing import Final

# C0 controls except tab and newline (which lay text out), DEL, the C1 controls, and the
# bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) with the
# directional marks (U+200E, U+200F, U+061C).
_UNSAFE: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_control(text: str) -> str:
    """``text`` with every control and bidi-override character written as ``\\xNN``/``\\uNNNN``.

    Tabs and newlines are kept; a backslash is left as it is, so the output is for reading,
    not for decoding back.
    """
    return _UNSAFE.sub(_escaped, text)
