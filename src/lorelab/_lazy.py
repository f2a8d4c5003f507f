"""Packages whose public names load on first use (PEP 562), so a command imports what it uses.

A package lists where each lazy name lives and installs the two module hooks::

    _WHERE = {"run_process": "lorelab.io._process", ...}
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _WHERE)

Static type checkers see the names through ``if typing.TYPE_CHECKING:`` imports of the same
modules; at run time the first access imports the module and caches the value in the package.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_exports(
    package: str, namespace: MutableMapping[str, Any], where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` for the names in ``where``."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # __import__ rather than importlib.import_module: the same import, but through the
        # interpreter's own path, so `python -X importtime` shows the module under its caller.
        __import__(module)
        value = getattr(sys.modules[module], name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*namespace, *where])

    return __getattr__, __dir__
