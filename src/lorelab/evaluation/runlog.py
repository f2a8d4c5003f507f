"""The typed run log every evaluation writes its receipts through.

A run log owns one fresh output directory (0700; it must not exist) and writes each receipt
the moment it is known: 0600, atomically, never replacing one (built on :mod:`lorelab.io`
receipts). Every receipt is a pydantic model, so camelCase keys and the schema version come
from :mod:`lorelab._model`, never from a hand-built dict.

The API, in the order a run uses it::

    log = RunLog.start(output)            # create the fresh directory
    log.write("manifest.json", receipt)   # a receipt of the run as a whole
    log.unit("trials", name, receipt)     # one unit (trial, run) as it ends, in a subdirectory
    log.finish("summary.json", receipt)   # the run completed
    log.abort("aborted.json", exc, build) # the run stopped: build(RunError) is its receipt

Workspace paths are normalized: ``log.normalize_paths({workspace: "$WORKSPACE"})`` makes
every receipt written afterwards say ``$WORKSPACE/...`` where the run's disposable directories
would leave a random temporary name, and a test runner's per-execution temporary directory
is written ``$RUNNER_TMP`` (see :data:`RUNNER_TMP`). A run is then compared with another by
its receipts, not by the names its temporary directories happened to get.

``finish`` and ``abort`` each end the log; after either, nothing more is written. An aborted
run is the same log ended with a :class:`RunError` (how it stopped and why), so whatever
receipts it had written stay as they are, next to the one that says it did not complete.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel

from lorelab.errors import LorelabError
from lorelab.io import ReceiptDir, create_output_dir, pretty_json

Outcome = Literal["interrupted", "failed", "crashed"]
"""How a run stopped: Ctrl-C or SIGTERM, a lorelab or OS error, or anything else (a bug)."""

STARTED: Final = "started"
FINISHED: Final = "finished"
ABORTED: Final = "aborted"

RUNNER_TMP: Final = "$RUNNER_TMP"
"""How a test runner's per-execution temporary directory (``lorelab-pytest-*``, ...) is written."""
_RUNNER_TMP_DIR: Final = re.compile(
    re.escape(tempfile.gettempdir().rstrip("/")) + r"/lorelab-(?:pytest|node)-[A-Za-z0-9_]+"
)


@dataclass(frozen=True, slots=True)
class RunError:
    """Why a run stopped before it completed."""

    outcome: Outcome
    message: str

    @classmethod
    def of(cls, exc: BaseException) -> RunError:
        """Classify ``exc``: an interrupt, a failure lorelab names, or a crash."""
        message = str(exc) or type(exc).__name__
        if isinstance(exc, KeyboardInterrupt):
            return cls("interrupted", message)
        if isinstance(exc, LorelabError | OSError):
            return cls("failed", message)
        return cls("crashed", message)


@dataclass(slots=True)
class RunLog:
    """One run's receipts, written as they happen; ended once by ``finish`` or ``abort``."""

    receipts: ReceiptDir
    status: Literal["started", "finished", "aborted"] = STARTED
    error: RunError | None = None
    _groups: dict[str, ReceiptDir] = field(default_factory=dict)
    _paths: dict[str, str] = field(default_factory=dict)

    @classmethod
    def start(cls, output: str | os.PathLike[str]) -> RunLog:
        """Create the fresh output directory ``output`` and a log writing into it."""
        return cls(create_output_dir(output))

    @property
    def path(self) -> Path:
        """The output directory."""
        return self.receipts.path

    def normalize_paths(self, places: Mapping[str | os.PathLike[str], str]) -> None:
        """From now on write each directory in ``places`` as its placeholder (``$WORKSPACE``)."""
        for place, placeholder in places.items():
            self._paths[os.path.realpath(place)] = placeholder
            self._paths[os.path.abspath(place)] = placeholder

    def _json(self, receipt: BaseModel) -> str:
        text = pretty_json(receipt)
        # Longest first, so a directory inside another gets its own placeholder.
        for place in sorted(self._paths, key=len, reverse=True):
            text = text.replace(place, self._paths[place])
        return _RUNNER_TMP_DIR.sub(RUNNER_TMP, text)

    @property
    def written_paths(self) -> dict[str, str]:
        """The placeholders receipts use (see :meth:`normalize_paths`)."""
        return dict(self._paths)

    def as_written(self, receipt: BaseModel) -> str:
        """``receipt``'s JSON text as :meth:`write` puts it on disk (paths normalized)."""
        return self._json(receipt)

    def write(self, name: str, receipt: BaseModel) -> Path:
        """Write ``receipt`` as ``name`` now (0600, atomic, never replaced)."""
        self._check_open(name)
        return self.receipts.write_text(name, self._json(receipt))

    def write_bytes(self, name: str, data: bytes) -> Path:
        """Write an opaque receipt (a store snapshot, say) as ``name`` now."""
        self._check_open(name)
        return self.receipts.write_bytes(name, data)

    def write_text(self, name: str, text: str) -> Path:
        """Write a rendering for people (Markdown, say) as ``name`` now."""
        self._check_open(name)
        return self.receipts.write_text(name, text)

    def group(self, name: str) -> ReceiptDir:
        """The subdirectory ``name`` (0700) for units, created on first use."""
        if name not in self._groups:
            self._groups[name] = self.receipts.subdir(name)
        return self._groups[name]

    def unit(self, group: str, name: str, receipt: BaseModel) -> Path:
        """Write one unit's receipt ``group/name`` the moment the unit has ended."""
        self._check_open(f"{group}/{name}")
        return self.group(group).write_text(name, self._json(receipt))

    def contains(self, name: str) -> bool:
        """Whether receipt ``name`` has been written."""
        return self.receipts.contains(name)

    def finish(self, name: str, receipt: BaseModel) -> Path:
        """End the log: the run completed, and ``receipt`` says how."""
        path = self.write(name, receipt)
        self.status = FINISHED
        return path

    def abort(
        self, name: str, exc: BaseException, build: Callable[[RunError], BaseModel]
    ) -> RunError:
        """End the log: the run stopped on ``exc``; ``build(error)`` is the receipt saying so."""
        error = RunError.of(exc)
        self.error = error
        if self.status == STARTED:
            self.receipts.write_text(name, self._json(build(error)))
        self.status = ABORTED
        return error

    def _check_open(self, name: str) -> None:
        if self.status != STARTED:
            raise RuntimeError(f"receipt {name}: the run log is already {self.status}")
