"""Running a context evaluation over fixture files and writing its receipts."""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import lorelab
from lorelab.errors import UsageError
from lorelab.evaluation.context._compare import Baseline, compare, load_baseline
from lorelab.evaluation.context._fixture import LoadedFixture, load_fixture, utf8_path
from lorelab.evaluation.context._receipt import (
    BYTE_ACCOUNTING,
    RECEIPT_JSON,
    RECEIPT_MARKDOWN,
    Comparison,
    ContextReceipt,
    Mode,
    Qualification,
    RecordResult,
    evaluator_identity,
    render_markdown,
    summarise,
)
from lorelab.evaluation.context._score import SCORER_VERSION, score_fixture
from lorelab.io import ReceiptDir, create_output_dir, pretty_json


@dataclass(frozen=True, slots=True)
class EvaluationResult:
    """What a run produced: the receipt, where it was written, and the exit code it implies."""

    receipt: ContextReceipt
    output: Path
    exit_code: int


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def package_tree() -> Path:
    """The directory of the running ``lorelab`` package: the code a receipt's hashes bind."""
    return Path(lorelab.__file__).resolve().parent


def check_output_location(output: str | os.PathLike[str], fixtures: Sequence[str]) -> None:
    """Refuse an output directory inside the lorelab package or a fixture's directory tree.

    The package is the code the receipts hash (a receipt written there would sit among the
    modules it binds); the rest of a checkout, such as ``out/`` in a fresh clone, is fine.
    Paths are compared after resolving symlinks, so a link into the package is caught too.
    """
    utf8_path(output, "--output")
    if not os.fspath(output):
        # An empty path would silently mean the current directory.
        raise UsageError("--output: an empty path; name a fresh directory")
    target = Path(os.path.realpath(output))
    roots = [("the lorelab package", package_tree())]
    roots += [
        (f"the directory of fixture {fixture}", Path(os.path.realpath(fixture)).parent)
        for fixture in fixtures
    ]
    for what, root in roots:
        if _inside(target, root):
            raise UsageError(
                f"--output {os.fspath(output)}: inside {what} ({root}); choose a directory "
                "outside it"
            )


def new_run_id() -> str:
    """A fresh run id: ``ctx-<UTC time>-<random hex>``."""
    return f"ctx-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


def load_fixtures(paths: Sequence[str | os.PathLike[str]]) -> list[LoadedFixture]:
    """Load and validate every fixture before anything runs; ids must be distinct."""
    if not paths:
        raise UsageError("give at least one fixture file")
    loaded = [load_fixture(path) for path in paths]
    seen: dict[str, str] = {}
    for item in loaded:
        if item.fixture.id in seen:
            raise UsageError(
                f"fixtures {seen[item.fixture.id]} and {item.path} have the same id "
                f"{item.fixture.id!r}"
            )
        seen[item.fixture.id] = item.path
    return loaded


def fixture_record(item: LoadedFixture) -> RecordResult:
    """Score one fixture and describe its outcome (metrics only)."""
    fixture = item.fixture
    score = score_fixture(fixture)
    unlabelled = fixture.labels.status == "unlabelled"
    return RecordResult(
        record_id=fixture.id,
        fixture_id=fixture.id,
        fixture_path=item.path,
        fixture_digest=item.digest,
        boundary_kinds=list(fixture.required_boundaries),
        observed_boundaries=list(score.observed_boundaries),
        failures=score.failures,
        forbidden_history=score.forbidden_history,
        verdict=score.verdict,
        label=fixture.labels.expected,
        label_agrees=None if unlabelled else score.verdict == fixture.labels.expected,
        facts_scored=not unlabelled,
        provenance=fixture.provenance,
        usage=fixture.usage,
        synthetic=fixture.provenance.synthetic,
        qualification=Qualification(
            mode="fixture",
            evidence_kind="recorded",
            synthetic=fixture.provenance.synthetic,
            scorer=SCORER_VERSION,
            scoring="mechanical" if unlabelled else "full",
        ),
    )


def exit_code_for(records: Sequence[RecordResult], comparison: Comparison | None) -> int:
    """0 only when every record passes, agrees with its label, and any baseline is comparable."""
    failed = any(r.verdict == "FAIL" or r.label_agrees is False for r in records)
    refused = comparison is not None and not comparison.comparable
    return 1 if failed or refused else 0


@dataclass(frozen=True, slots=True)
class _Rendered:
    """A receipt and the exact bytes of its two files, produced before anything is written."""

    receipt: ContextReceipt
    json_bytes: bytes
    markdown_bytes: bytes
    exit_code: int


def _render(
    *, run_id: str, mode: Mode, records: list[RecordResult], baseline: Baseline | None
) -> _Rendered:
    comparison = compare(mode, records, baseline) if baseline is not None else None
    code = exit_code_for(records, comparison)
    receipt = ContextReceipt(
        run_id=run_id,
        created_at=datetime.now(UTC),
        mode=mode,
        evaluator=evaluator_identity(),
        records=records,
        summary=summarise(records),
        comparison=comparison,
        byte_accounting=dict(BYTE_ACCOUNTING) if mode == "trial" else None,
        exit_code=code,
    )
    return _Rendered(
        receipt=receipt,
        json_bytes=pretty_json(receipt).encode("utf-8"),
        markdown_bytes=render_markdown(receipt).encode("utf-8"),
        exit_code=code,
    )


def _write(out: ReceiptDir, rendered: _Rendered) -> EvaluationResult:
    out.write_bytes(RECEIPT_JSON, rendered.json_bytes)
    out.write_bytes(RECEIPT_MARKDOWN, rendered.markdown_bytes)
    return EvaluationResult(receipt=rendered.receipt, output=out.path, exit_code=rendered.exit_code)


def finish(
    out: ReceiptDir,
    *,
    run_id: str,
    mode: Mode,
    records: list[RecordResult],
    baseline: Baseline | None,
) -> EvaluationResult:
    """Compare with the baseline if any, then write the JSON and Markdown receipts."""
    return _write(out, _render(run_id=run_id, mode=mode, records=records, baseline=baseline))


def evaluate_fixtures(
    fixtures: Sequence[str | os.PathLike[str]],
    *,
    output: str | os.PathLike[str],
    baseline: str | os.PathLike[str] | None = None,
) -> EvaluationResult:
    """Score fixture files (no provider calls) and write receipts to a fresh ``output``.

    Every input is read and checked, and both receipts are rendered, before the output
    directory is created: bad input (exit 2) leaves nothing behind, not even an empty directory.
    """
    loaded = load_fixtures(fixtures)
    checked = load_baseline(baseline) if baseline is not None else None
    check_output_location(output, [item.path for item in loaded])
    records = [fixture_record(item) for item in loaded]
    rendered = _render(run_id=new_run_id(), mode="fixture", records=records, baseline=checked)
    return _write(create_output_dir(output), rendered)
