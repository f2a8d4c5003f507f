"""Reading an output directory for a report: which evaluation wrote it, and its typed receipts.

A receipt that is missing or does not parse is not an error here: it becomes a *problem*, one
line that the report shows at its top, so a partial directory still gives a report that says
what is missing.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, TypeVar

from pydantic import BaseModel

from lorelab.errors import LorelabError, UsageError
from lorelab.io import FIXTURE_LIMIT, read_model

Kind = Literal["learning", "conditions", "context", "context-scan", "leaderboard"]
KIND_NAMES: Final[dict[str, str]] = {
    "learning": "learning evaluation",
    "conditions": "four-condition evaluation",
    "context": "context evaluation",
    "context-scan": "context scan",
    "leaderboard": "memory leaderboard",
}

M = TypeVar("M", bound=BaseModel)

_MARKERS: Final[tuple[tuple[str, Kind], ...]] = (
    ("leaderboard.json", "leaderboard"),
    ("context-scan.json", "context-scan"),
    ("context-receipt.json", "context"),
    ("beta2_runs.json", "conditions"),
    ("run.json", "conditions"),
    ("aborted.json", "conditions"),
    ("dream.json", "conditions"),
    ("runs", "conditions"),
    ("summary.json", "learning"),
    ("controller.json", "learning"),
    ("trials", "learning"),
    ("ground-truth", "learning"),
)


def _manifest_kind(path: Path) -> Kind | None:
    try:
        with path.open("rb") as handle:
            data = json.loads(handle.read(FIXTURE_LIMIT))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if "manifest" in data and "sha256" in data:
        return "conditions"
    if "manifestId" in data or "schedule" in data:
        return "learning"
    return None


def detect_kind(directory: Path) -> Kind:
    """Which evaluation wrote ``directory``; :class:`UsageError` when none can be told."""
    if not directory.exists():
        raise UsageError(f"{directory}: no such directory")
    if not directory.is_dir():
        raise UsageError(f"{directory}: not a directory (give an evaluation's output directory)")
    for name, kind in _MARKERS:
        if (directory / name).exists():
            return kind
    manifest = directory / "manifest.json"
    if manifest.is_file():
        found = _manifest_kind(manifest)
        if found is not None:
            return found
    raise UsageError(
        f"{directory}: not a lorelab evaluation output directory (no summary.json, "
        "beta2_runs.json, context-receipt.json, context-scan.json or manifest.json of a run)"
    )


@dataclass(slots=True)
class Receipts:
    """One output directory being read: where it is, where the report goes, what is wrong."""

    directory: Path
    report_dir: Path
    problems: list[str] = field(default_factory=list)

    def href(self, path: Path) -> str:
        """``path`` relative to the report's directory, as a URL path."""
        relative = os.path.relpath(path.resolve(), self.report_dir.resolve())
        return urllib.parse.quote(Path(relative).as_posix())

    def note(self, problem: str) -> None:
        """Record a problem the report must show."""
        self.problems.append(problem)

    def read(self, name: str, model: type[M], *, missing: str | None = None) -> M | None:
        """Receipt ``name`` as ``model``; ``None`` (and a problem) when absent or malformed.

        ``missing`` says what an absent receipt means; without it an absent file is no problem.
        """
        path = self.directory / name
        if not path.exists():
            if missing is not None:
                self.note(f"{name}: missing ({missing})")
            return None
        return self.read_path(path, model)

    def read_path(self, path: Path, model: type[M]) -> M | None:
        """The receipt at ``path`` as ``model``, or ``None`` with the problem recorded."""
        try:
            return read_model(path, model, "fixture")
        except LorelabError as exc:
            message = str(exc).replace(f"{path}: ", "")
            self.note(f"{self.name(path)}: unreadable ({message})")
            return None

    def name(self, path: Path) -> str:
        """``path`` relative to the output directory, for problems and tables."""
        try:
            return path.relative_to(self.directory).as_posix()
        except ValueError:
            return str(path)

    def listing(self, subdir: str) -> list[Path]:
        """The ``*.json`` files in ``subdir``, sorted; empty when it does not exist."""
        folder = self.directory / subdir
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir() if p.suffix == ".json" and p.is_file())
