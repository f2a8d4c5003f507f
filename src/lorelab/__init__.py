"""lorelab: verified memory for coding agents, memory-guided test generation, honest evaluations."""

from __future__ import annotations

from functools import cache

__all__ = ["__version__"]


@cache
def _installed_version() -> str:
    # Read on first use: importlib.metadata costs more than the rest of `lorelab --help`.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lorelab")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> str:
    if name == "__version__":
        return _installed_version()
    raise AttributeError(f"module 'lorelab' has no attribute {name!r}")
