"""What an OpenAI-compatible server says it serves, asked at every binding of an openai argv.

Three published answers are read, none with a key and none asking for a completion:

- ``GET {base}/models`` (every OpenAI-compatible server): ``data[].id``; vLLM adds ``root``
  (the model path or repository it loaded; vLLM's ``ModelCard``), llama.cpp's own server adds
  ``meta`` (``n_params``, ``size``, ``n_vocab``...: the loaded GGUF's figures; llama.cpp
  ``tools/server/README.md``). llama-cpp-python's server lists its ``--model_alias``, or the
  model path when no alias is given.
- ``GET /props`` at the server's root (llama.cpp's own server): ``model_path``, the file it
  loaded. Other servers answer 404 and the path stays unknown.

A server that cannot be reached is recorded as not asked (``unasked``), never as serving
nothing; a server that answers but lists nothing usable (a 401 without the key, a body that is
not the list) has ``listed`` null with the reason.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from lorelab.errors import UsageError
from lorelab.workers.adapters.openai._http import Endpoint, HttpFailure, request
from lorelab.workers.identity._cache import file_sha256
from lorelab.workers.identity._models import ServedEntry, ServedModel

ASK_TIMEOUT_S: Final = 10.0
ANSWER_LIMIT: Final = 256 * 1024
META_KEYS: Final = ("n_params", "size", "n_vocab", "n_ctx_train", "n_embd", "vocab_type")


def _get_json(endpoint: Endpoint, suffix: str) -> tuple[int, Any]:
    reply = request(
        endpoint, "GET", suffix, body=None, key=None, timeout_s=ASK_TIMEOUT_S, limit=ANSWER_LIMIT
    )
    if reply.status != 200 or reply.overflow:
        return reply.status, None
    try:
        return reply.status, json.loads(reply.body.decode("utf-8"))
    except ValueError:
        return reply.status, None


def _entry(item: Any) -> ServedEntry | None:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
        return None
    root = item.get("root")
    meta = item.get("meta")
    kept = (
        {key: meta[key] for key in META_KEYS if isinstance(meta.get(key), int | str)}
        if isinstance(meta, dict)
        else None
    )
    return ServedEntry(id=item["id"], root=root if isinstance(root, str) else None, meta=kept)


def ask_served(endpoint: Endpoint) -> ServedModel:
    """Ask the server at ``endpoint`` what it serves (see the module docstring)."""
    try:
        status, listing = _get_json(endpoint, "/models")
    except HttpFailure as failure:
        return ServedModel(listed=None, model_path=None, unasked=failure.message)
    data = listing.get("data") if isinstance(listing, dict) else None
    entries = [e for e in (_entry(item) for item in data) if e] if isinstance(data, list) else None
    why = None if entries is not None else f"GET /models answered HTTP {status} with no list"
    root = replace(endpoint, path=endpoint.path.removesuffix("/v1"))
    model_path: str | None = None
    try:
        _, props = _get_json(root, "/props")
    except HttpFailure:
        props = None
    if isinstance(props, dict) and isinstance(props.get("model_path"), str):
        model_path = props["model_path"]
    return ServedModel(listed=entries, model_path=model_path, unasked=None, not_listed=why)


def _served_paths(served: ServedModel, model: str) -> list[str]:
    """The model files the server names for ``model``: /props, vLLM's root, or a path id."""
    paths = [served.model_path] if served.model_path else []
    for entry in served.listed or []:
        if entry.id == model:
            paths += [name for name in (entry.root, entry.id) if name]
    return [p for p in dict.fromkeys(paths) if p.endswith(".gguf") or os.path.isfile(p)]


def _same_file(served_path: str, bound: Path, bound_sha256: str, cap: int) -> bool:
    candidate = Path(served_path)
    if candidate.is_file():
        if os.path.realpath(candidate) == os.path.realpath(bound):
            return True
        return file_sha256(candidate, cap=cap) == bound_sha256
    # A path on another machine: only its name can be compared.
    return candidate.name == bound.name


def check_served(
    served: ServedModel,
    base_url: str,
    model: str,
    model_file: tuple[Path, str] | None,
    cap: int,
) -> None:
    """Refuse (:class:`UsageError`) a ``--model`` the server does not list, or a bound model
    file that is not the file the server says it loaded."""
    if served.listed is not None:
        ids = [entry.id for entry in served.listed]
        if model not in ids:
            shown = ", ".join(repr(i) for i in ids[:5]) or "nothing"
            raise UsageError(f"--model {model!r} is not served by {base_url} (it serves {shown})")
    if model_file is None:
        return
    path, sha256 = model_file
    named = _served_paths(served, model)
    if named and not any(_same_file(p, path, sha256, cap) for p in named):
        raise UsageError(f"--model-file {path} is not the model {base_url} loaded ({named[0]})")


def compare_served(old: ServedModel | None, new: ServedModel | None) -> list[str]:
    """Every change in what the server serves; a server that cannot be asked now is no change
    (the call itself fails), one that answers differently is."""
    if old is None or new is None or old.unasked is not None or new.unasked is not None:
        return []
    changes: list[str] = []
    before = {e.id: e for e in old.listed or []}
    after = {e.id: e for e in new.listed or []}
    if (old.listed is None) != (new.listed is None):
        state = "no longer lists" if new.listed is None else "now lists"
        changes.append(f"served model: the server {state} its models")
    elif sorted(before) != sorted(after):
        changes.append(
            f"served model: /models ids changed from {sorted(before)} to {sorted(after)}"
        )
    for key in sorted(before.keys() & after.keys()):
        if before[key].root != after[key].root:
            changes.append(
                f"served model {key!r}: root changed from {before[key].root} to {after[key].root}"
            )
        if before[key].meta != after[key].meta:
            changes.append(
                f"served model {key!r}: metadata changed ({before[key].meta} -> {after[key].meta})"
            )
    if old.model_path != new.model_path:
        changes.append(
            f"served model: the loaded file changed from {old.model_path} to {new.model_path}"
        )
    return changes
