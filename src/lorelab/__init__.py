"""lorelab: verified memory for coding agents, memory-guided test generation, honest evaluations."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("lorelab")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
