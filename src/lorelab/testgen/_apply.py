"""Applying validated tests to a project: never unvalidated, never over an existing file.

``keep_passing`` keeps only the cases that passed validation. For pytest files the test
functions (or methods) of every other case are removed from the source, decorators included;
a parametrised function is kept only if all its instances passed. Node files are kept or
dropped whole, because removing a ``test(...)`` call needs a JavaScript parser lorelab does
not ship. The kept subset is validated again before anything is written.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from pathlib import Path

from lorelab._model import RunnerName
from lorelab.errors import OutputExistsError, PathError
from lorelab.testgen._models import ApplyResult, CandidateValidation
from lorelab.workspace import FileEntry, check_writable, write_files


def _function_of(case_id: str) -> tuple[str, tuple[str, ...]]:
    """Split ``file::[Class::]name[param]`` into the file and the qualified function name."""
    file, *parts = case_id.split("::")
    if parts:
        parts[-1] = parts[-1].split("[", 1)[0]
    return file, tuple(parts)


def _strip_functions(content: str, drop: set[tuple[str, ...]]) -> tuple[str, int]:
    """Remove the named test functions; return the new text and how many tests remain."""
    tree = ast.parse(content)
    lines = content.splitlines(keepends=True)
    cut: list[tuple[int, int]] = []
    remaining = 0

    def visit(body: list[ast.stmt], prefix: tuple[str, ...]) -> None:
        nonlocal remaining
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, (*prefix, node.name))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test"
            ):
                if (*prefix, node.name) in drop:
                    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    cut.append((start, node.end_lineno or node.lineno))
                else:
                    remaining += 1

    visit(tree.body, ())
    for start, end in sorted(cut, reverse=True):
        del lines[start - 1 : end]
    return "".join(lines), remaining


def keep_passing(
    runner: RunnerName, files: Sequence[FileEntry], validation: CandidateValidation
) -> tuple[list[FileEntry], list[str]]:
    """The files reduced to the cases that passed, and the ids of every dropped case."""
    failing = [case.id for case in validation.cases if case.status != "passed"]
    passing = {case.id for case in validation.cases if case.status == "passed"}
    by_file: dict[str, set[tuple[str, ...]]] = {}
    for case_id in failing:
        file, function = _function_of(case_id)
        by_file.setdefault(file, set()).add(function)
    kept: list[FileEntry] = []
    dropped = list(failing)
    for entry in files:
        drop = by_file.get(entry.path)
        if not drop:
            kept.append(entry)
            continue
        if runner == "node" or () in drop:
            dropped.extend(case for case in sorted(passing) if case.startswith(f"{entry.path}::"))
            continue
        content, remaining = _strip_functions(entry.content, drop)
        # A passing parametrised instance goes with its failing siblings: one function.
        dropped.extend(
            case
            for case in sorted(passing)
            if _function_of(case)[0] == entry.path and _function_of(case)[1] in drop
        )
        if remaining:
            kept.append(FileEntry(path=entry.path, content=content))
        else:
            dropped.extend(case for case in sorted(passing) if case.startswith(f"{entry.path}::"))
    return kept, list(dict.fromkeys(dropped))


def apply_tests(
    project: Path,
    runner: RunnerName,
    files: Sequence[FileEntry],
    validation: CandidateValidation,
    *,
    keep: bool,
    dry_run: bool,
    revalidate: Callable[[list[FileEntry]], CandidateValidation],
) -> ApplyResult:
    """Write validated tests into ``project`` (or say what would be written)."""
    kept_validation: CandidateValidation | None = None
    dropped: list[str] = []
    chosen = list(files)

    def result(reason: str, written: list[str] | None = None) -> ApplyResult:
        return ApplyResult(
            applied=written is not None and not dry_run,
            dry_run=dry_run,
            written=written or [],
            dropped_cases=dropped,
            kept_validation=kept_validation,
            reason=reason,
        )

    if not validation.valid:
        usable = (
            keep
            and not validation.path_violations
            and any(case.status == "passed" for case in validation.cases)
        )
        if not usable:
            return result(f"nothing applied: validation failed ({validation.reason})")
        chosen, dropped = keep_passing(runner, files, validation)
        if not chosen:
            return result("nothing applied: no passing case is left to keep")
        kept_validation = revalidate(chosen)
        if not kept_validation.valid:
            return result(
                f"nothing applied: the kept cases failed validation ({kept_validation.reason})"
            )
    try:
        # Against the project as it is now (symlinks, case-only clashes, files the reader
        # skipped, files created since it was read), before the first file is written.
        check_writable(project, [entry.path for entry in chosen])
    except (OutputExistsError, PathError) as exc:
        never = "; never overwritten" if isinstance(exc, OutputExistsError) else ""
        return result(f"nothing applied: {exc}{never}")
    paths = [entry.path for entry in chosen]
    if dry_run:
        return result("dry run: nothing written", paths)
    write_files(project, chosen, private=False)
    return result(f"wrote {len(paths)} test files", paths)
