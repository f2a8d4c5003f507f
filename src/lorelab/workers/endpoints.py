"""Preflight of the OpenAI-compatible endpoints a run's workers call: reachable, or exit 2.

One connection per distinct endpoint, ``GET {base}/models`` with no key and no completion
(any HTTP status shows the server is there). An endpoint that cannot be reached stops the run
before any trial, with one line naming it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from lorelab.errors import UsageError
from lorelab.workers._tools import option_value
from lorelab.workers.adapters.openai._http import parse_base_url, unreachable

OPENAI_MODULE: Final = "lorelab.workers.adapters.openai"


def _base_url(argv: Sequence[str]) -> str | None:
    items = list(argv)
    for index, arg in enumerate(items[:-1]):
        if arg == "-m" and items[index + 1] == OPENAI_MODULE:
            return option_value(items[index + 2 :], "--base-url")
    return None


def check_endpoints(argvs: Iterable[Sequence[str]]) -> None:
    """Refuse (exit 2) when the endpoint of any openai worker argv cannot be reached."""
    seen: set[str] = set()
    for argv in argvs:
        base_url = _base_url(argv)
        if base_url is None or base_url in seen:
            continue
        seen.add(base_url)
        why = unreachable(parse_base_url(base_url))
        if why is not None:
            raise UsageError(f"--base-url {base_url} cannot be reached: {why}")
