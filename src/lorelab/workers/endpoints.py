"""Preflight of the OpenAI-compatible endpoints a run's workers call: reachable and serving
the declared model, or exit 2.

``GET {base}/models`` with no key and no completion (any HTTP status shows the server is
there), within a total deadline. An endpoint that cannot be reached stops the run before any
trial, with one line naming it; so does a ``--model`` the server does not list, or an absolute
``--model-file`` that is not the file the server says it loaded (:mod:`.identity._served`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from lorelab.errors import UsageError
from lorelab.workers._tools import option_value
from lorelab.workers.adapters.openai._http import parse_base_url, unreachable
from lorelab.workers.identity._cache import file_sha256
from lorelab.workers.identity._endpoint import MODEL_HASH_CAP
from lorelab.workers.identity._served import ask_served, check_served

OPENAI_MODULE: Final = "lorelab.workers.adapters.openai"


def _program_args(argv: Sequence[str]) -> list[str] | None:
    items = list(argv)
    for index, arg in enumerate(items[:-1]):
        if arg == "-m" and items[index + 1] == OPENAI_MODULE:
            return items[index + 2 :]
    return None


def _model_file(args: Sequence[str]) -> tuple[Path, str] | None:
    named = option_value(args, "--model-file")
    # A relative file is the trial cwd's: the binding checks it there.
    if not named or not os.path.isabs(named) or not os.path.isfile(named):
        return None
    return Path(named), file_sha256(named, cap=MODEL_HASH_CAP)


def check_endpoints(argvs: Iterable[Sequence[str]]) -> None:
    """Refuse (exit 2) when the endpoint of any openai worker argv cannot be reached, or does
    not serve the model the argv declares."""
    seen: set[tuple[str, ...]] = set()
    for argv in argvs:
        args = _program_args(argv)
        base_url = option_value(args, "--base-url") if args is not None else None
        if args is None or base_url is None or tuple(args) in seen:
            continue
        seen.add(tuple(args))
        endpoint = parse_base_url(base_url)
        why = unreachable(endpoint)
        if why is not None:
            raise UsageError(f"--base-url {base_url} cannot be reached: {why}")
        model = option_value(args, "--model") or option_value(args, "-m")
        if model:
            check_served(ask_served(endpoint), base_url, model, _model_file(args), MODEL_HASH_CAP)
