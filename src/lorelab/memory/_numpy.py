"""numpy, imported once with OpenBLAS on one thread unless the user chose a thread count.

On import, numpy's OpenBLAS starts a pool of worker threads, one per core, which costs a brief
more CPU time than the whole vector search it serves (the memory's math is table lookups,
means, norms, ``einsum`` and small matrix-vector products; none of it is split across
threads by OpenBLAS at these sizes). OpenBLAS reads its thread count once, when it is
loaded, so ``OPENBLAS_NUM_THREADS=1`` is set only around that import and removed right after:
processes lorelab starts later (the test runs, the workers) see the environment as it was.
A thread count the user set (``OPENBLAS_NUM_THREADS``, ``GOTO_NUM_THREADS`` or
``OMP_NUM_THREADS``) is left alone.
"""

from __future__ import annotations

import os
import sys
from typing import Final

THREAD_VARIABLES: Final = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def loaded() -> bool:
    """Whether this process has imported numpy (by this module or otherwise)."""
    return "numpy" in sys.modules


def load() -> None:
    """Import numpy (once per process) with OpenBLAS's thread pool limited as described."""
    if loaded():
        return
    chosen = any(name in os.environ for name in THREAD_VARIABLES)
    if not chosen:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        if not chosen:
            os.environ.pop("OPENBLAS_NUM_THREADS", None)
