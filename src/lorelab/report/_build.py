"""``lorelab report``: read one or two output directories and write one self-contained page."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

import lorelab
from lorelab.errors import UsageError
from lorelab.report._load import KIND_NAMES, Kind, Receipts, detect_kind
from lorelab.report._page import Column, pair_page, single_page

if TYPE_CHECKING:
    from lorelab.report._compare import Comparability, Loaded

REPORT_FILE: Final = "report.html"
PAIR_FILE: Final = "report-side-by-side.html"


@dataclass(frozen=True, slots=True)
class Report:
    """What ``lorelab report`` wrote, and how complete it is.

    ``exit_code`` is 0 when every directory was complete (and, for two, they are comparable);
    1 when the page was written but a directory was partial or the two are not comparable.
    """

    path: Path
    kind: Kind
    exit_code: int
    problems: list[str] = field(default_factory=list)
    comparability: Comparability | None = None


def _read(kind: Kind, receipts: Receipts, source: str) -> tuple[Loaded, Column]:
    """Read one directory and render its sections; only the kind's own modules are imported."""
    run: Loaded
    if kind == "learning":
        from lorelab.report._learning import learning_sections, learning_title, load_learning

        run = load_learning(receipts)
        title, sections = learning_title(run), learning_sections(run)
    elif kind == "conditions":
        from lorelab.report._conditions import conditions_sections, conditions_title
        from lorelab.report._conditions_load import load_conditions

        conditions = load_conditions(receipts)
        run, title, sections = (
            conditions,
            conditions_title(conditions),
            conditions_sections(conditions),
        )
    else:
        from lorelab.report._context import (
            context_sections,
            context_title,
            load_context,
            load_scan,
            scan_sections,
        )

        if kind == "context":
            context = load_context(receipts)
            run, title, sections = context, context_title(context), context_sections(context)
        else:
            scan = load_scan(receipts)
            run, title, sections = scan, context_title(scan), scan_sections(scan)
    return run, Column(title, source, list(receipts.problems), sections)


def resolve_output(dirs: Sequence[Path], output: Path | None) -> Path:
    """Where the page goes: ``--output``, else ``report.html`` in the (first) directory."""
    if output is None:
        return dirs[0] / (REPORT_FILE if len(dirs) == 1 else PAIR_FILE)
    if output.is_dir():
        raise UsageError(f"--output {output}: is a directory; give a file name such as report.html")
    if not output.parent.is_dir():
        raise UsageError(f"--output {output}: its directory {output.parent} does not exist")
    return output


def _kinds(dirs: Sequence[Path]) -> Kind:
    kinds = [detect_kind(d) for d in dirs]
    if len(set(kinds)) > 1:
        raise UsageError(
            f"{dirs[0]} is a {KIND_NAMES[kinds[0]]} and {dirs[1]} a {KIND_NAMES[kinds[1]]}: only "
            "two directories of the same kind can be shown side by side"
        )
    return kinds[0]


def _write(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        with open(temp, "x", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()


def _leaderboard_page(paths: Sequence[Path], target: Path) -> Report:
    """A leaderboard is already a comparison: it is rendered alone."""
    from lorelab.report._leaderboard import leaderboard_column

    if len(paths) != 1:
        raise UsageError("a leaderboard is rendered alone (it already compares memories)")
    column = leaderboard_column(Receipts(paths[0], target.parent), str(paths[0]))
    try:
        _write(target, single_page(column, lorelab.__version__))
    except OSError as exc:
        raise UsageError(f"--output {target}: cannot write: {exc.strerror}") from None
    problems = [f"{column.source}: {p}" for p in column.problems]
    return Report(target, "leaderboard", 1 if problems else 0, problems)


def build_report(
    dirs: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str] | None = None
) -> Report:
    """Render ``dirs`` (one, or two of one kind side by side) into one HTML file.

    Bad usage (a missing or unrecognised directory, two of different kinds, three or more, an
    output that cannot be written) raises :class:`UsageError` before anything is written.
    """
    paths = [Path(d) for d in dirs]
    if not 1 <= len(paths) <= 2:
        raise UsageError(f"give one or two output directories, not {len(paths)}")
    kind = _kinds(paths)
    target = resolve_output(paths, Path(output) if output is not None else None)
    if kind == "leaderboard":
        return _leaderboard_page(paths, target)
    read = [_read(kind, Receipts(p, target.parent), str(p)) for p in paths]
    loaded, columns = [r[0] for r in read], [r[1] for r in read]
    problems = [f"{c.source}: {p}" for c in columns for p in c.problems]
    verdict: Comparability | None = None
    if len(columns) == 1:
        page = single_page(columns[0], lorelab.__version__)
    else:
        from lorelab.report._compare import comparability

        verdict = comparability(loaded[0], loaded[1])
        page = pair_page(
            columns[0],
            columns[1],
            (verdict.comparable, verdict.reasons, verdict.notes),
            lorelab.__version__,
        )
    try:
        _write(target, page)
    except OSError as exc:
        raise UsageError(f"--output {target}: cannot write: {exc.strerror}") from None
    failed = bool(problems) or (verdict is not None and not verdict.comparable)
    return Report(target, kind, 1 if failed else 0, problems, verdict)
