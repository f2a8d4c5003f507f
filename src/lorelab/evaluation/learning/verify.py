"""``lorelab eval learning verify DIR``: check a learning run from its receipts alone.

Every file the run wrote before its summary is hashed again and compared with the SHA-256 the
summary recorded for it (``receiptHashes``); the manifest's hash is recomputed from the frozen
manifest it holds; the summary (arms, both sign tests, labels, effect sizes) is rebuilt from
the trial receipts with the code that wrote it, and must equal ``summary.json`` byte for byte;
``summary.md`` must be its rendering and ``controller.json`` must agree with its phase times.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TypeVar

from pydantic import BaseModel

from lorelab.errors import InputFileError, LorelabError, UsageError
from lorelab.evaluation.learning._preparation import manifest_digest
from lorelab.evaluation.learning.records import (
    ControllerReceipt,
    ManifestReceipt,
    SharedPreparation,
    Summary,
    TrialRecord,
)
from lorelab.evaluation.learning.summary import build_summary, summary_markdown
from lorelab.io import pretty_json, read_model, sha256_file

SUMMARY: Final = "summary.json"
# Written after summary.json (so not among the hashes it records), each checked on its own.
AFTER_SUMMARY: Final = ("summary.json", "summary.md", "controller.json", "report.html")
RECEIPT_CAP: Final = 1 << 31
M = TypeVar("M", bound=BaseModel)


@dataclass(slots=True)
class Verification:
    """What ``verify`` found: ``problems`` each start with the file they are about."""

    directory: Path
    checked: int = 0
    problems: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether every hash and every label matched."""
        return not self.problems


def hash_receipts(directory: Path, exclude: tuple[str, ...] = AFTER_SUMMARY) -> dict[str, str]:
    """SHA-256 of every regular file under ``directory`` by relative POSIX path, sorted,
    leaving out the top-level names in ``exclude``."""
    hashes: dict[str, str] = {}
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            relative = path.relative_to(directory).as_posix()
            if relative in exclude:
                continue
            hashes[relative] = sha256_file(path, cap=RECEIPT_CAP)
    return dict(sorted(hashes.items()))


def _read(path: Path, model: type[M], found: Verification) -> M | None:
    try:
        return read_model(path, model, "fixture")
    except LorelabError as exc:
        found.problems.append(f"{path.relative_to(found.directory).as_posix()}: {exc}")
        return None


def _check_hashes(summary: Summary, found: Verification) -> None:
    recorded = summary.receipt_hashes or {}
    actual = hash_receipts(found.directory)
    found.checked = len(actual)
    for name, digest in recorded.items():
        if name not in actual:
            found.problems.append(f"{name}: missing (summary.json records its hash)")
        elif actual[name] != digest:
            found.problems.append(
                f"{name}: SHA-256 {actual[name][:12]}... differs from {digest[:12]}... recorded "
                "in summary.json (the file was changed)"
            )
    found.problems += [
        f"{name}: not among the receipts summary.json records"
        for name in actual
        if name not in recorded
    ]


def _first_difference(stored: str, rebuilt: str) -> str:
    for number, (left, right) in enumerate(
        zip(stored.splitlines(), rebuilt.splitlines(), strict=False), start=1
    ):
        if left != right:
            return f"line {number}: stored {left.strip()!r}, recomputed {right.strip()!r}"
    return "the recomputed summary has a different length"


def _rebuild(summary: Summary, found: Verification) -> None:
    directory = found.directory
    manifest = _read(directory / "manifest.json", ManifestReceipt, found)
    if manifest is None:
        return
    if manifest.manifest is None:
        found.problems.append(
            "manifest.json: holds no frozen manifest, so its hash cannot be checked"
        )
        return
    digest = manifest_digest(manifest.manifest)
    if digest != manifest.manifest_sha256:
        found.problems.append(
            f"manifest.json: the frozen manifest hashes to {digest[:12]}..., not the "
            f"{manifest.manifest_sha256[:12]}... it records"
        )
    trials_dir = directory / "trials"
    paths = sorted(trials_dir.iterdir()) if trials_dir.is_dir() else []
    records = [record for path in paths if (record := _read(path, TrialRecord, found)) is not None]
    preparation_path = directory / "shared-preparation.json"
    preparation = (
        _read(preparation_path, SharedPreparation, found) if preparation_path.exists() else None
    )
    if len(records) != len(paths) or (preparation_path.exists() and preparation is None):
        return
    rebuilt = build_summary(
        manifest.manifest,
        manifest.manifest_sha256,
        manifest.evidence_kind,
        manifest.settings,
        records,
        frozen_lessons=len(preparation.lessons) if preparation else 0,
        executor=summary.executor,
        concurrent=summary.time_comparisons == "confounded",
        controller=summary.controller,
        manifest_receipt=manifest,
        receipt_hashes=summary.receipt_hashes,
    )
    found.labels = {"paired": rebuilt.paired.label}
    if rebuilt.paired_placebo is not None:
        found.labels["pairedPlacebo"] = rebuilt.paired_placebo.label
    stored_text = (directory / SUMMARY).read_text(encoding="utf-8")
    if pretty_json(rebuilt) != stored_text:
        found.problems.append(
            f"summary.json: differs from the summary recomputed from the receipts "
            f"({_first_difference(stored_text, pretty_json(rebuilt))})"
        )
    markdown = directory / "summary.md"
    if markdown.exists() and markdown.read_text(encoding="utf-8") != summary_markdown(summary):
        found.problems.append("summary.md: is not the rendering of summary.json")


def _check_controller(summary: Summary, found: Verification) -> None:
    path = found.directory / "controller.json"
    if not path.exists() or summary.controller is None:
        return
    receipt = _read(path, ControllerReceipt, found)
    if receipt is None:
        return
    stored = summary.controller
    phases = ("setup_ms", "shared_preparation_ms", "ground_truth_ms", "trials_ms")
    for phase in phases:
        if getattr(receipt, phase) != getattr(stored, phase):
            found.problems.append(
                f"controller.json: {phase} differs from summary.json's controller"
            )
    if receipt.elapsed_ms < stored.elapsed_ms:
        found.problems.append(
            "controller.json: elapsedMs is less than summary.json's (written earlier)"
        )


def verify_run(directory: str | os.PathLike[str]) -> Verification:
    """Check the learning run in ``directory`` (see the module docstring).

    Raises :class:`~lorelab.errors.InputFileError` or :class:`~lorelab.errors.UsageError`
    (exit 2) when ``directory`` is not a learning run that recorded its receipts' hashes."""
    path = Path(directory)
    if not path.is_dir():
        raise InputFileError(f"{directory}: no such directory")
    if not (path / SUMMARY).is_file() or not (path / "manifest.json").is_file():
        raise InputFileError(
            f"{directory}: not a completed learning run (no summary.json or manifest.json)"
        )
    found = Verification(path)
    summary = _read(path / SUMMARY, Summary, found)
    if summary is None:
        return found
    if summary.receipt_hashes is None:
        raise UsageError(
            f"{directory}: summary.json records no receipt hashes (written before lorelab "
            "recorded them), so the receipts cannot be checked"
        )
    _check_hashes(summary, found)
    _rebuild(summary, found)
    _check_controller(summary, found)
    return found
