"""The tools' JSON schemas, generated from the request and result models and cached.

Generating 30 JSON schemas with pydantic is a tenth of the server's start-up, paid again by
every agent session, for schemas that change only when lorelab (or pydantic) does. They are
kept in the user cache directory (see ``lorelab._cache``) under a key that hashes the Python
and pydantic versions, the tools served, and the source of every lorelab module loaded when
the server is built (the models are defined there); any change gives a new key, so a stale
schema is never read. A cache entry that does not parse or names other tools is regenerated.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from lorelab._cache import cache_dir, write_atomically
from lorelab.memory import Operation

Schemas = dict[str, dict[str, dict[str, Any]]]
"""Tool name to ``{"input": schema, "output": schema}``."""


def generate(entries: list[Operation[Any, Any]]) -> Schemas:
    """The schemas of ``entries``, from their models."""
    return {
        str(entry.tool): {
            "input": entry.request.model_json_schema(),
            "output": entry.result.model_json_schema(),
        }
        for entry in entries
    }


def cache_key(entries: list[Operation[Any, Any]]) -> str:
    """What the schemas of ``entries`` depend on, hashed."""
    import pydantic
    import pydantic_core

    digest = hashlib.sha256()
    for part in (sys.version, pydantic.VERSION, pydantic_core.__version__):
        digest.update(part.encode() + b"\0")
    for entry in entries:
        digest.update(
            f"{entry.tool}:{entry.request.__qualname__}:{entry.result.__qualname__}\0".encode()
        )
    for name in sorted(name for name in sys.modules if name.split(".")[0] == "lorelab"):
        source = getattr(sys.modules[name], "__file__", None)
        if source:
            digest.update(name.encode() + b"\0" + Path(source).read_bytes() + b"\0")
    return digest.hexdigest()


def schemas(entries: list[Operation[Any, Any]]) -> Schemas:
    """The schemas of ``entries``: from the cache when it holds them for this exact code."""
    try:
        path = cache_dir() / f"mcp-tools-{cache_key(entries)}.json"
    except OSError:
        return generate(entries)
    cached = _read(path, {str(entry.tool) for entry in entries})
    if cached is not None:
        return cached
    fresh = generate(entries)
    with contextlib.suppress(OSError):
        write_atomically(path, json.dumps(fresh, sort_keys=True).encode())
    return fresh


def _read(path: Path, names: set[str]) -> Schemas | None:
    try:
        value = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(value, dict) or set(value) != names:
        return None
    for entry in value.values():
        if not isinstance(entry, dict) or set(entry) != {"input", "output"}:
            return None
        if not all(isinstance(schema, dict) for schema in entry.values()):
            return None
    return value
