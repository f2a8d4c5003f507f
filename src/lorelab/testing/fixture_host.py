"""The deterministic fixture host (role ``host``): solves or fails the example project's tasks by
a fixed rule, offline, so the four-condition protocol runs end to end without an agent.

Run as ``python -m lorelab.testing.fixture_host`` in the project copy. The rule, which
depends only on the payload and the project:

1. The host reads the task prompt, the guidance text (if any) and, from the second attempt on,
   the tail of the last failed verification.
2. If the guidance names one of the task's *decoys* and none of its *needs*, the host follows
   the guidance and makes the plausible but wrong edit (misled by memory).
3. Otherwise, if any of that text names one of the task's *needs* (a file or a command the
   task needs), it applies the correct edit, first undoing its own earlier wrong edit.
4. Otherwise it makes the plausible but wrong edit.

After an edit that changed a file it runs the task's verify command (``task.verify``) once and
reports that edit-then-verify cycle in ``cycles`` (``{edited, verification: {command,
exitCode}}``); a call that changed nothing reports no cycle, so the runner counts rework from
the host's own cycles (docs/conditions.md).

Needs, decoys and edits ship here, with the fixture host, for the example project in
``examples/conditions/`` (``TASKS``) and, in ``fixture_board.json`` beside this module, for the
three projects of the board set in ``benchmarks/data/conditions-board/`` (``board_tasks()``,
written by that set's ``generate.py``); they are never in the project copy and never shown to a
real host.
A task id the host does not know, or a file that does not match, gets no edit. Every response
says ``evidenceKind: "protocol-fixture"``: results produced with this host are never evidence.

Like the agent adapters it takes ``--model M``; no model runs, but it answers with ``model: M``
so the runner's pass-through of ``host.model`` and its claimed-model check can be exercised
offline. Without ``--model`` it claims no model.

``--sleep-s S`` makes it wait S seconds before answering: a stand-in for an agent session of
several minutes, used by the executor benchmark (``benchmarks/bench_executors.py``).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

# lorelab._model's PROTOCOL_FIXTURE, spelled out: importing that module (pydantic) would cost
# every host call a few hundred milliseconds of start-up for one string (a test checks both agree).
EVIDENCE_KIND: Final = "protocol-fixture"
MAX_PAYLOAD_BYTES: Final = 4 * 1024 * 1024
COMMAND_TIMEOUT_S: Final = 20
VERIFY_TIMEOUT_S: Final = 120


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the single occurrence of ``old`` in ``path`` by ``new``."""

    path: str
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class FixtureTask:
    """What the fixture host knows about one task of the example project."""

    needs: tuple[str, ...]
    solution: tuple[Edit, ...]
    solved_summary: str
    wrong: tuple[Edit, ...]
    wrong_summary: str
    decoys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HostAction:
    """What the host decided, and the text it saw that decided it."""

    kind: str  # "solve", "wrong" or "misled"
    reason: str
    commands: tuple[str, ...]


_GREP_QUANTIZE: Final = "grep -rn quantize shop"
_HALF_UP_IMPORT: Final = Edit(
    "shop/pricing.py",
    "from decimal import Decimal\n",
    "from decimal import ROUND_HALF_UP, Decimal\n",
)

TASKS: Final[Mapping[str, FixtureTask]] = {
    "seed-parse-half-up": FixtureTask(
        needs=("shop/money.py", _GREP_QUANTIZE),
        solution=(
            Edit(
                "shop/money.py",
                "from decimal import Decimal, InvalidOperation\n",
                "from decimal import ROUND_HALF_UP, Decimal, InvalidOperation\n",
            ),
            Edit(
                "shop/money.py",
                "    return value.quantize(CENT)\n",
                "    return value.quantize(CENT, rounding=ROUND_HALF_UP)\n",
            ),
        ),
        solved_summary=(
            "Found the rounding with `grep -rn quantize shop`; parse_amount in shop/money.py now "
            "quantizes to CENT with ROUND_HALF_UP."
        ),
        wrong=(
            Edit(
                "shop/money.py",
                "    return value.quantize(CENT)\n",
                "    return round(value, 2)\n",
            ),
        ),
        wrong_summary="Rounded parse_amount with round(value, 2) in shop/money.py.",
    ),
    "seed-tax-half-up": FixtureTask(
        needs=("shop/tax.py", _GREP_QUANTIZE),
        solution=(
            Edit(
                "shop/tax.py",
                "from decimal import Decimal\n",
                "from decimal import ROUND_HALF_UP, Decimal\n\nfrom shop.money import CENT\n",
            ),
            Edit(
                "shop/tax.py",
                "    return round(amount * rate_for(region), 2)\n",
                "    return (amount * rate_for(region)).quantize(CENT, rounding=ROUND_HALF_UP)\n",
            ),
        ),
        solved_summary=(
            "Found the rounding with `grep -rn quantize shop`; tax_for in shop/tax.py now "
            "quantizes to CENT with ROUND_HALF_UP."
        ),
        wrong=(
            Edit(
                "shop/tax.py",
                "    return round(amount * rate_for(region), 2)\n",
                '    return (amount * rate_for(region)).quantize(Decimal("0.01"))\n',
            ),
        ),
        wrong_summary="Quantized tax_for to 0.01 in shop/tax.py (default rounding).",
    ),
    "n-reserve-positive": FixtureTask(
        needs=("shop/inventory.py",),
        solution=(
            Edit(
                "shop/inventory.py",
                "        if quantity > self.available(sku):\n",
                "        if quantity <= 0:\n"
                '            raise ValueError("quantity must be positive")\n'
                "        if quantity > self.available(sku):\n",
            ),
        ),
        solved_summary="Inventory.reserve in shop/inventory.py refuses non-positive quantities.",
        wrong=(
            Edit(
                "shop/inventory.py",
                "        self._reserved[sku] = self._reserved.get(sku, 0) - quantity\n",
                "        if quantity <= 0:\n"
                '            raise ValueError("quantity must be positive")\n'
                "        self._reserved[sku] = self._reserved.get(sku, 0) - quantity\n",
            ),
        ),
        wrong_summary="Guarded Inventory.release against non-positive quantities.",
    ),
    "n-csv-header-spaces": FixtureTask(
        needs=("shop/csv_import.py",),
        solution=(
            Edit(
                "shop/csv_import.py",
                '    header = lines[0].split(",")\n',
                '    header = [field.strip() for field in lines[0].split(",")]\n',
            ),
        ),
        solved_summary="parse_products in shop/csv_import.py strips spaces from header fields.",
        wrong=(
            Edit(
                "shop/csv_import.py",
                '    header = lines[0].split(",")\n',
                '    header = lines[0].lower().split(",")\n',
            ),
        ),
        wrong_summary="Lower-cased the CSV header before comparing it.",
    ),
    "n-slug-collapse": FixtureTask(
        needs=("shop/slug.py",),
        solution=(
            Edit(
                "shop/slug.py",
                '    return re.sub(r"[^a-z0-9]", "-", lowered).strip("-")\n',
                '    return re.sub(r"[^a-z0-9]+", "-", lowered).strip("-")\n',
            ),
        ),
        solved_summary="slugify in shop/slug.py collapses runs of separators into one dash.",
        wrong=(
            Edit(
                "shop/slug.py",
                '    return re.sub(r"[^a-z0-9]", "-", lowered).strip("-")\n',
                '    return re.sub(r"[^a-z0-9]", "-", lowered).strip("-").replace("--", "-")\n',
            ),
        ),
        wrong_summary="Replaced double dashes in slugs once.",
    ),
    "h-line-total-half-up": FixtureTask(
        needs=("shop/pricing.py", _GREP_QUANTIZE),
        solution=(
            _HALF_UP_IMPORT,
            Edit(
                "shop/pricing.py",
                "    return (unit_price * quantity).quantize(CENT)\n",
                "    return (unit_price * quantity).quantize(CENT, rounding=ROUND_HALF_UP)\n",
            ),
        ),
        solved_summary=(
            "Found the rounding with `grep -rn quantize shop`; line_total in shop/pricing.py now "
            "quantizes to CENT with ROUND_HALF_UP."
        ),
        wrong=(
            Edit(
                "shop/pricing.py",
                "    return (unit_price * quantity).quantize(CENT)\n",
                "    return round(unit_price * quantity, 2)\n",
            ),
        ),
        wrong_summary="Rounded line totals with round(..., 2).",
    ),
    "h-discount-half-up": FixtureTask(
        needs=("shop/pricing.py", _GREP_QUANTIZE),
        solution=(
            _HALF_UP_IMPORT,
            Edit(
                "shop/pricing.py",
                "    return (total * (100 - percent) / 100).quantize(CENT)\n",
                "    return (total * (100 - percent) / 100)"
                ".quantize(CENT, rounding=ROUND_HALF_UP)\n",
            ),
        ),
        solved_summary=(
            "Found the rounding with `grep -rn quantize shop`; apply_discount in shop/pricing.py "
            "now quantizes to CENT with ROUND_HALF_UP."
        ),
        wrong=(
            Edit(
                "shop/pricing.py",
                "    return (total * (100 - percent) / 100).quantize(CENT)\n",
                "    return round(total * (100 - percent) / 100, 2)\n",
            ),
        ),
        wrong_summary="Rounded discounted totals with round(..., 2).",
    ),
    "h-tax-region-case": FixtureTask(
        needs=("shop/tax.py",),
        solution=(
            Edit(
                "shop/tax.py",
                "        return RATES[region]\n",
                "        return RATES[region.strip().upper()]\n",
            ),
        ),
        solved_summary="rate_for in shop/tax.py upper-cases and strips region codes.",
        wrong=(
            Edit(
                "shop/tax.py",
                "        return RATES[region]\n",
                "        return RATES[region.strip()]\n",
            ),
        ),
        wrong_summary="Stripped whitespace from region codes.",
    ),
    "h-format-thousands": FixtureTask(
        needs=("shop/money.py",),
        decoys=("shop/tax.py",),
        solution=(
            Edit(
                "shop/money.py",
                '    return f"{amount:.2f} {currency}"\n',
                '    return f"{amount:,.2f} {currency}"\n',
            ),
        ),
        solved_summary="format_amount in shop/money.py groups thousands with commas.",
        wrong=(
            Edit(
                "shop/money.py",
                '    return f"{amount:.2f} {currency}"\n',
                '    return f"{amount:,} {currency}"\n',
            ),
        ),
        wrong_summary="Added a thousands separator but dropped the two decimal places.",
    ),
    "h-release-over": FixtureTask(
        needs=("shop/inventory.py",),
        solution=(
            Edit(
                "shop/inventory.py",
                "        self._reserved[sku] = self._reserved.get(sku, 0) - quantity\n",
                "        if quantity > self._reserved.get(sku, 0):\n"
                '            raise ValueError(f"only {self._reserved.get(sku, 0)} units of {sku} '
                'reserved")\n'
                "        self._reserved[sku] = self._reserved.get(sku, 0) - quantity\n",
            ),
        ),
        solved_summary=(
            "Inventory.release in shop/inventory.py refuses to release more than is reserved."
        ),
        wrong=(
            Edit(
                "shop/inventory.py",
                "        self._reserved[sku] = self._reserved.get(sku, 0) - quantity\n",
                "        self._reserved[sku] = max(0, self._reserved.get(sku, 0) - quantity)\n",
            ),
        ),
        wrong_summary="Clamped reservations at zero on release.",
    ),
    "h-csv-quoted": FixtureTask(
        needs=("shop/csv_import.py",),
        solution=(
            Edit(
                "shop/csv_import.py",
                "from dataclasses import dataclass\n",
                "import csv\nfrom dataclasses import dataclass\n",
            ),
            Edit(
                "shop/csv_import.py",
                '    for line in lines[1:]:\n        sku, name, price = line.split(",")\n',
                "    for sku, name, price in csv.reader(lines[1:]):\n",
            ),
        ),
        solved_summary="parse_products in shop/csv_import.py reads rows with csv.reader.",
        wrong=(
            Edit(
                "shop/csv_import.py",
                '        sku, name, price = line.split(",")\n',
                '        sku, name, price = line.strip().split(",")\n',
            ),
        ),
        wrong_summary="Stripped each CSV row before splitting it.",
    ),
    "h-free-shipping-boundary": FixtureTask(
        needs=("shop/shipping.py",),
        decoys=("shop/pricing.py",),
        solution=(
            Edit(
                "shop/shipping.py",
                "    if order_total > FREE_FROM:\n",
                "    if order_total >= FREE_FROM:\n",
            ),
        ),
        solved_summary="shipping_cost in shop/shipping.py is free from exactly FREE_FROM.",
        wrong=(
            Edit(
                "shop/shipping.py",
                '    surcharge = Decimal("2.50") if weight_kg > 10 else Decimal("0.00")\n',
                '    surcharge = Decimal("2.50") if weight_kg >= 10 else Decimal("0.00")\n',
            ),
        ),
        wrong_summary="Made the heavy-parcel surcharge start at 10 kg.",
    ),
    "h-slug-accents": FixtureTask(
        needs=("shop/slug.py",),
        solution=(
            Edit("shop/slug.py", "import re\n", "import re\nimport unicodedata\n"),
            Edit(
                "shop/slug.py",
                "    lowered = name.lower()\n",
                '    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore")\n'
                '    lowered = ascii_name.decode("ascii").lower()\n',
            ),
        ),
        solved_summary="slugify in shop/slug.py transliterates accents with unicodedata NFKD.",
        wrong=(
            Edit("shop/slug.py", "    lowered = name.lower()\n", "    lowered = name.casefold()\n"),
        ),
        wrong_summary="Case-folded names before building slugs.",
    ),
}


BOARD_DATA: Final = Path(__file__).with_name("fixture_board.json")


def _edits(items: Any) -> tuple[Edit, ...]:
    return tuple(Edit(item["path"], item["old"], item["new"]) for item in items)


def board_tasks() -> dict[str, FixtureTask]:
    """The board set's tasks (``fixture_board.json``); task ids never clash with ``TASKS``."""
    data = json.loads(BOARD_DATA.read_text(encoding="utf-8"))
    return {
        task_id: FixtureTask(
            needs=tuple(entry["needs"]),
            solution=_edits(entry["solution"]),
            solved_summary=entry["solvedSummary"],
            wrong=_edits(entry["wrong"]),
            wrong_summary=entry["wrongSummary"],
            decoys=tuple(entry["decoys"]),
        )
        for task_id, entry in data.items()
    }


def known_task(task_id: str) -> FixtureTask | None:
    """The example's task, else the board set's, else None."""
    task = TASKS.get(task_id)
    if task is None:
        task = board_tasks().get(task_id)
    return task


class PayloadError(ValueError):
    """The payload is not a host payload this fixture can answer."""


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise PayloadError(f"{where} must be a string")
    return value


@dataclass(frozen=True, slots=True)
class HostInput:
    """What the fixture reads from a host payload."""

    task_id: str
    prompt: str
    verify: str | None
    guidance: str
    attempt: int
    tail: str


def _parse(payload: Any) -> HostInput:
    if not isinstance(payload, dict):
        raise PayloadError("payload must be a JSON object")
    if payload.get("role") != "host":
        raise PayloadError(f"role must be 'host', got {payload.get('role')!r}")
    task = payload.get("task")
    if not isinstance(task, dict):
        raise PayloadError("task must be an object {id, prompt}")
    task_id = _text(task.get("id"), "task.id")
    prompt = _text(task.get("prompt"), "task.prompt")
    verify = task.get("verify")
    if verify is not None:
        verify = _text(verify, "task.verify")
    guidance = payload.get("guidance")
    guidance_text = ""
    if guidance is not None:
        if not isinstance(guidance, dict):
            raise PayloadError("guidance must be null or an object")
        guidance_text = _text(guidance.get("text"), "guidance.text")
    attempt = payload.get("attempt")
    if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 1:
        raise PayloadError("attempt must be a positive integer")
    last = payload.get("lastVerification")
    tail = ""
    if last is not None:
        if not isinstance(last, dict):
            raise PayloadError("lastVerification must be null or an object")
        tail = _text(last.get("outputTail", ""), "lastVerification.outputTail")
    return HostInput(task_id, prompt, verify, guidance_text, attempt, tail)


def decide(task: FixtureTask, prompt: str, guidance: str, attempt: int, tail: str) -> HostAction:
    """Apply the documented rule to the text the host sees."""
    guided_needs = [need for need in task.needs if need in guidance]
    guided_decoys = [decoy for decoy in task.decoys if decoy in guidance]
    if guided_decoys and not guided_needs:
        return HostAction("misled", f"guidance names {guided_decoys[0]}", ())
    seen = [("prompt", prompt), ("guidance", guidance)]
    if attempt > 1:
        seen.append(("last verification", tail))
    for where, text in seen:
        for need in task.needs:
            if need in text:
                commands = tuple(n for n in task.needs if " " in n and n in text)
                return HostAction("solve", f"{where} names {need}", commands)
    return HostAction("wrong", "nothing names what the task needs", ())


def _apply(root: Path, edits: Sequence[Edit], undo: Sequence[Edit]) -> list[str]:
    """Apply ``edits`` all or nothing, after undoing ``undo`` where it was applied."""
    contents: dict[str, str] = {}
    for edit in (*undo, *edits):
        if edit.path not in contents:
            path = root / edit.path
            if not path.is_file() or path.is_symlink():
                raise FileNotFoundError(edit.path)
            contents[edit.path] = path.read_text(encoding="utf-8")
    for edit in undo:
        if contents[edit.path].count(edit.new) == 1:
            contents[edit.path] = contents[edit.path].replace(edit.new, edit.old)
    changed: list[str] = []
    for edit in edits:
        text = contents[edit.path]
        if edit.new in text:
            continue
        if text.count(edit.old) != 1:
            raise LookupError(edit.path)
        contents[edit.path] = text.replace(edit.old, edit.new)
        changed.append(edit.path)
    for name, text in contents.items():
        path = root / name
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return sorted(set(changed))


def _run(command: str, cwd: Path, timeout_s: float = COMMAND_TIMEOUT_S) -> dict[str, Any]:
    try:
        completed = subprocess.run(
            shlex.split(command),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {"command": command, "exitCode": None}
    return {"command": command, "exitCode": completed.returncode}


def answer(payload: Any, cwd: Path) -> dict[str, Any]:
    """The host response for ``payload``, after editing files under ``cwd`` (and running the
    verify command once when an edit changed a file)."""
    given = _parse(payload)
    task = known_task(given.task_id)
    if task is None:
        return {
            "summary": f"The fixture host has no data for task {given.task_id}; no edit made.",
            "commands": [],
            "cycles": [],
            "evidenceKind": EVIDENCE_KIND,
        }
    action = decide(task, given.prompt, given.guidance, given.attempt, given.tail)
    commands = [_run(command, cwd) for command in action.commands]
    edits, undo = (task.solution, task.wrong) if action.kind == "solve" else (task.wrong, ())
    summary = task.solved_summary if action.kind == "solve" else task.wrong_summary
    edited: list[str] = []
    try:
        edited = _apply(cwd, edits, undo)
    except (FileNotFoundError, LookupError) as exc:
        summary = f"The project does not match the fixture data ({exc}); no edit made."
    cycles: list[dict[str, Any]] = []
    if edited and given.verify is not None:
        verification = _run(given.verify, cwd, VERIFY_TIMEOUT_S)
        commands.append(verification)
        cycles.append({"edited": edited, "verification": verification})
    return {
        "summary": f"{summary} ({action.kind}: {action.reason})",
        "commands": commands,
        "cycles": cycles,
        "evidenceKind": EVIDENCE_KIND,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Read one payload on stdin, edit the project in the working directory, print one answer."""
    parser = argparse.ArgumentParser(
        prog="fixture_host", description="The deterministic fixture host (role host)."
    )
    parser.add_argument("--model", "-m", help="Echoed as the claimed model (no model runs).")
    parser.add_argument(
        "--sleep-s", type=float, default=0.0, help="Wait this long before answering (a stand-in)."
    )
    options = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    data = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
    if len(data) > MAX_PAYLOAD_BYTES:
        print(f"fixture_host: payload larger than {MAX_PAYLOAD_BYTES} bytes", file=sys.stderr)
        return 2
    try:
        payload = json.loads(data.decode("utf-8"))
        response = answer(payload, Path.cwd())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(f"fixture_host: payload is not JSON: {exc}", file=sys.stderr)
        return 2
    except PayloadError as exc:
        print(f"fixture_host: invalid payload: {exc}", file=sys.stderr)
        return 2
    if options.model:
        response["model"] = options.model
    if options.sleep_s > 0:
        time.sleep(options.sleep_s)
    sys.stdout.write(json.dumps(response, ensure_ascii=False, separators=(",", ":")))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
