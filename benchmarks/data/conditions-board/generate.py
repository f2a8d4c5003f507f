"""Write the conditions board set: three small Python projects, one manifest and one seed file
each, and the fixture host's data for their tasks.

    python benchmarks/data/conditions-board/generate.py          # write (deterministic)
    python benchmarks/data/conditions-board/generate.py --check  # exit 1 if any file differs

Every file under ``billing/``, ``rota/`` and ``lending/`` next to this script, and
``src/lorelab/testing/fixture_board.json``, is written from the tables below; the tests
(``tests/evaluation/conditions/test_conditions_board_set.py``) check the committed files are
what this script writes. See README.md for the design.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
FIXTURE_DATA = REPO / "src" / "lorelab" / "testing" / "fixture_board.json"

# ---------------------------------------------------------------------------------------------
# Bug kinds: each is one small function, written correct ("fixed"), with its bug ("buggy") or
# with the plausible but wrong fix the fixture host makes when nothing points it to the file
# ("wrong"). The test fails on "buggy" and on "wrong" and passes on "fixed".
# ---------------------------------------------------------------------------------------------

KINDS = (
    "strip_case",
    "boundary",
    "half_up",
    "empty",
    "positive",
    "pad",
    "dedupe",
    "split_once",
)


def words(noun: str) -> str:
    return noun.replace("_", " ")


def prefix(noun: str) -> str:
    return "".join(part[0] for part in noun.split("_")).upper()


def fn_name(kind: str, noun: str) -> str:
    return {
        "strip_case": f"normalize_{noun}",
        "boundary": f"{noun}_reached",
        "half_up": f"round_{noun}",
        "empty": f"average_{noun}",
        "positive": f"checked_{noun}",
        "pad": f"format_{noun}",
        "dedupe": f"unique_{noun}",
        "split_once": f"parse_{noun}",
    }[kind]


def source(kind: str, noun: str, state: str) -> str:
    """The function's text in state ``fixed``, ``buggy`` or ``wrong``."""
    n, w, name = noun, words(noun), fn_name(kind, noun)
    if kind == "strip_case":
        body = {
            "fixed": f"    return {n}.strip().upper()\n",
            "buggy": f"    return {n}.upper()\n",
            "wrong": f"    return {n}.upper().rstrip()\n",
        }[state]
        return f'def {name}({n}: str) -> str:\n    """The canonical form of a {w} code."""\n' + body
    if kind == "boundary":
        body = {
            "fixed": f"    return {n} >= limit\n",
            "buggy": f"    return {n} > limit\n",
            "wrong": f"    return {n} >= limit - 1\n",
        }[state]
        return (
            f"def {name}({n}: int, limit: int) -> bool:\n"
            f'    """Whether the {w} has reached its limit."""\n' + body
        )
    if kind == "half_up":
        body = {
            "fixed": f"    return Decimal({n}).quantize(CENT, rounding=ROUND_HALF_UP)\n",
            "buggy": f"    return Decimal({n}).quantize(CENT)\n",
            "wrong": f"    return round(Decimal({n}), 2)\n",
        }[state]
        return (
            f"def {name}({n}: str) -> Decimal:\n"
            f'    """The {w} in cents, rounded half up."""\n' + body
        )
    if kind == "empty":
        guard = {
            "fixed": f"    if not {n}:\n        return 0.0\n",
            "buggy": "",
            "wrong": f"    if {n} is None:\n        return 0.0\n",
        }[state]
        return (
            f"def {name}({n}: list[float]) -> float:\n"
            f'    """The mean {w}; 0.0 when there is none."""\n'
            + guard
            + f"    return sum({n}) / len({n})\n"
        )
    if kind == "positive":
        guard = {
            "fixed": f'    if {n} <= 0:\n        raise ValueError("{n} must be positive")\n',
            "buggy": "",
            "wrong": f'    if {n} < 0:\n        raise ValueError("{n} must be positive")\n',
        }[state]
        return (
            f"def {name}({n}: int) -> int:\n"
            f'    """The {w}, refused unless positive."""\n' + guard + f"    return {n}\n"
        )
    if kind == "pad":
        spec = {"fixed": ":04d", "buggy": "", "wrong": ":4d"}[state]
        return (
            f"def {name}(year: int, {n}: int) -> str:\n"
            f'    """The printed {w}: {prefix(n)}-YEAR-NNNN."""\n'
            f'    return f"{prefix(n)}-{{year}}-{{{n}{spec}}}"\n'
        )
    if kind == "dedupe":
        body = {
            "fixed": f"    return list(dict.fromkeys({n}))\n",
            "buggy": f"    return list(set({n}))\n",
            "wrong": f"    return sorted(set({n}))\n",
        }[state]
        return (
            f"def {name}({n}: list[int]) -> list[int]:\n"
            f'    """The {w} ids without repeats, in first-seen order."""\n' + body
        )
    if kind == "split_once":
        call = {"fixed": '.split("=", 1)', "buggy": '.split("=")', "wrong": '.split("=")[:2]'}
        return (
            f"def {name}({n}: str) -> tuple[str, str]:\n"
            f'    """A {w} line \'key = value\', split at the first \'=\'."""\n'
            f"    key, value = {n}{call[state]}\n"
            "    return key.strip(), value.strip()\n"
        )
    raise ValueError(kind)


def test_body(kind: str, noun: str, module: str) -> str:
    call = f"{module}.{fn_name(kind, noun)}"
    return {
        "strip_case": f'        self.assertEqual({call}("  ab1 "), "AB1")\n',
        "boundary": f"        self.assertTrue({call}(10, 10))\n"
        f"        self.assertFalse({call}(9, 10))\n",
        "half_up": f'        self.assertEqual({call}("2.665"), Decimal("2.67"))\n'
        f'        self.assertEqual({call}("1.005"), Decimal("1.01"))\n',
        "empty": f"        self.assertEqual({call}([]), 0.0)\n"
        f"        self.assertEqual({call}([2.0, 4.0]), 3.0)\n",
        "positive": f"        for bad in (0, -3):\n"
        f"            with self.assertRaises(ValueError):\n"
        f"                {call}(bad)\n"
        f"        self.assertEqual({call}(2), 2)\n",
        "pad": f'        self.assertEqual({call}(2026, 7), "{prefix(noun)}-2026-0007")\n',
        "dedupe": f"        self.assertEqual({call}([3, 1, 3]), [3, 1])\n",
        "split_once": f'        self.assertEqual({call}("a = b=c"), ("a", "b=c"))\n',
    }[kind]


def symptom(kind: str, noun: str) -> str:
    fn, w = fn_name(kind, noun), words(noun)
    return {
        "strip_case": f"{fn} keeps the spaces around a {w} typed as ' ab1 ', so the lookup "
        "misses it; it must give 'AB1'.",
        "boundary": f"{fn} says a {w} of exactly the limit (10 of 10) has not reached it; "
        "reaching the limit counts.",
        "half_up": f"{fn} turns a {w} of 2.665 into 2.66; amounts are rounded half up, so it "
        "must be 2.67.",
        "empty": f"{fn} crashes with ZeroDivisionError when there are no {w} values; it must "
        "return 0.0.",
        "positive": f"{fn} accepts a {w} of 0; zero or negative values must raise ValueError.",
        "pad": f"{fn} prints {prefix(noun)}-2026-7; the {w} must be zero-padded to four "
        f"digits: {prefix(noun)}-2026-0007.",
        "dedupe": f"{fn} loses the order of the {w} ids ([3, 1, 3] gives [1, 3]); repeats "
        "must go, first-seen order kept ([3, 1]).",
        "split_once": f"{fn} fails on a {w} line whose value holds an '=' ('a = b=c'); split "
        "at the first '=' only.",
    }[kind]


def fix(kind: str, noun: str, path: str, package: str) -> str:
    fn, w = fn_name(kind, noun), words(noun)
    return {
        "strip_case": f"{fn} in {path} strips surrounding spaces before upper-casing the {w}.",
        "boundary": f"{fn} in {path} compares with >= so a {w} at the limit counts as reached.",
        "half_up": f"Found the rounding with `grep -rn quantize {package}`; {fn} in {path} now "
        "quantizes to CENT with ROUND_HALF_UP.",
        "empty": f"{fn} in {path} returns 0.0 for an empty list of {w} values.",
        "positive": f"{fn} in {path} raises ValueError unless the {w} is positive.",
        "pad": f"{fn} in {path} zero-pads the {w} to four digits.",
        "dedupe": f"{fn} in {path} drops repeated {w} ids with dict.fromkeys, keeping "
        "first-seen order.",
        "split_once": f"{fn} in {path} splits a {w} line at the first '=' only.",
    }[kind]


# ---------------------------------------------------------------------------------------------
# The three projects. Remembered modules have earlier verified experiences in the seed store;
# fresh modules have none (their holdouts name the file in the prompt).
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Module:
    name: str
    domain: str
    correct: tuple[tuple[str, str], ...]  # (kind, noun): correct functions with passing tests
    tasks: tuple[tuple[str, str, str], ...]  # (role, kind, noun): role seed, A (recall), B (fresh)


@dataclass(frozen=True)
class Project:
    package: str
    short: str
    title: str
    description: str
    modules: tuple[Module, ...]


def _remembered(name: str, domain: str, nouns: str, tasks: str, offset: int) -> Module:
    """Five correct functions (kinds rotated by ``offset``) and the tasks ``role:kind:noun``."""
    correct = tuple(
        (KINDS[(offset + index) % len(KINDS)], noun) for index, noun in enumerate(nouns.split())
    )
    parsed = tuple(tuple(item.split(":")) for item in tasks.split())
    return Module(name, domain, correct, parsed)  # type: ignore[arg-type]


PROJECTS: tuple[Project, ...] = (
    Project(
        "billing",
        "bl",
        "billing",
        "Invoicing: invoices, payments, credit notes, statements, discounts, VAT, late fees, "
        "reminders and refunds.",
        (
            _remembered(
                "invoices",
                "invoice",
                "invoice_ref invoice_line invoice_batch invoice_terms invoice_copy",
                "seed:half_up:invoice_total A:pad:invoice_number",
                0,
            ),
            _remembered(
                "payments",
                "payment",
                "payer_code payment_run payment_amount payment_share payment_batch",
                "seed:half_up:payment_fee A:strip_case:payment_method",
                1,
            ),
            _remembered(
                "credit_notes",
                "credit note",
                "credit_reason credit_count credit_value credit_lines credit_ids",
                "A:boundary:credit_limit A:dedupe:credit_note",
                2,
            ),
            _remembered(
                "statements",
                "statement",
                "statement_period statement_balance statement_rows statement_code statement_id",
                "A:positive:statement_page A:half_up:statement_total",
                3,
            ),
            _remembered(
                "discounts",
                "discount",
                "discount_code discount_tier discount_rate discount_days discount_rule",
                "A:half_up:discount_amount",
                4,
            ),
            _remembered(
                "vat",
                "VAT",
                "vat_region vat_threshold vat_rate vat_filings vat_number",
                "A:strip_case:vat_code",
                5,
            ),
            Module(
                "late_fees",
                "late fee",
                (("strip_case", "fee_band"), ("dedupe", "fee_ids")),
                (("B", "boundary", "grace_days"), ("B", "empty", "late_fee")),
            ),
            Module(
                "reminders",
                "reminder",
                (("half_up", "reminder_charge"), ("boundary", "reminder_count")),
                (("B", "pad", "reminder_number"), ("B", "split_once", "reminder_setting")),
            ),
            Module(
                "refunds",
                "refund",
                (("empty", "refund_amount"), ("pad", "refund_number")),
                (("B", "positive", "refund_quantity"), ("B", "strip_case", "refund_reason")),
            ),
        ),
    ),
    Project(
        "rota",
        "ro",
        "rota",
        "Staff rostering: shifts, timesheets, overtime, holidays, breaks, payroll export, "
        "availability, shift swaps and on-call duty.",
        (
            _remembered(
                "shifts",
                "shift",
                "shift_code shift_hours shift_slots shift_length shift_ids",
                "seed:half_up:shift_pay A:pad:shift_number",
                2,
            ),
            _remembered(
                "timesheets",
                "timesheet",
                "timesheet_week timesheet_hours timesheet_entry timesheet_rows timesheet_code",
                "seed:half_up:timesheet_total A:strip_case:timesheet_status",
                3,
            ),
            _remembered(
                "overtime",
                "overtime",
                "overtime_band overtime_rate overtime_cap overtime_weeks overtime_rule",
                "A:boundary:overtime_hours A:dedupe:overtime_staff",
                4,
            ),
            _remembered(
                "holidays",
                "holiday",
                "holiday_type holiday_days holiday_pay holiday_entitlement holiday_region",
                "A:positive:holiday_request A:half_up:holiday_accrual",
                5,
            ),
            _remembered(
                "breaks",
                "break",
                "break_rule break_minutes break_count break_policy break_slot",
                "A:half_up:break_allowance",
                6,
            ),
            _remembered(
                "payroll_export",
                "payroll export",
                "payroll_line payroll_period payroll_gross payroll_codes payroll_ref",
                "A:strip_case:payroll_grade",
                7,
            ),
            Module(
                "availability",
                "availability",
                (("pad", "availability_ref"), ("half_up", "availability_rate")),
                (("B", "boundary", "availability_days"), ("B", "empty", "availability_hours")),
            ),
            Module(
                "swaps",
                "shift swap",
                (("positive", "swap_window"), ("strip_case", "swap_code")),
                (("B", "dedupe", "swap_requests"), ("B", "split_once", "swap_setting")),
            ),
            Module(
                "on_call",
                "on-call duty",
                (("boundary", "call_outs"), ("empty", "call_minutes")),
                (("B", "positive", "oncall_weeks"), ("B", "pad", "oncall_number")),
            ),
        ),
    ),
    Project(
        "lending",
        "le",
        "lending",
        "A lending library: loans, fines, holds, the catalogue, members, renewals, reading "
        "lists, inter-library requests and donations.",
        (
            _remembered(
                "loans",
                "loan",
                "loan_code loan_period loan_items loan_limit loan_ids",
                "seed:half_up:loan_deposit A:pad:loan_number",
                4,
            ),
            _remembered(
                "fines",
                "fine",
                "fine_band fine_days fine_rate fine_waiver fine_cap",
                "seed:half_up:fine_amount A:strip_case:fine_reason",
                5,
            ),
            _remembered(
                "holds",
                "hold",
                "hold_queue hold_code hold_shelf hold_days hold_notice",
                "A:boundary:hold_count A:dedupe:hold_patrons",
                6,
            ),
            _remembered(
                "catalogue",
                "catalogue",
                "shelf_mark catalogue_entry catalogue_copies catalogue_price catalogue_ids",
                "A:positive:catalogue_volume A:half_up:catalogue_fee",
                7,
            ),
            _remembered(
                "members",
                "member",
                "member_card member_tier member_visits member_ids member_age",
                "A:half_up:member_credit",
                0,
            ),
            _remembered(
                "renewals",
                "renewal",
                "renewal_count renewal_period renewal_fee renewal_rule renewal_ids",
                "A:strip_case:renewal_channel",
                1,
            ),
            Module(
                "reading_lists",
                "reading list",
                (("dedupe", "list_titles"), ("split_once", "list_setting")),
                (("B", "boundary", "list_size"), ("B", "empty", "list_ratings")),
            ),
            Module(
                "inter_library",
                "inter-library request",
                (("half_up", "ill_charge"), ("positive", "ill_copies")),
                (("B", "pad", "ill_number"), ("B", "strip_case", "ill_library")),
            ),
            Module(
                "donations",
                "donation",
                (("boundary", "donation_quota"), ("pad", "donation_ref")),
                (("B", "positive", "donation_count"), ("B", "split_once", "donation_setting")),
            ),
        ),
    ),
)

# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------

HEADER = (
    '"""{doc}"""\n\nfrom __future__ import annotations\n\n'
    'from decimal import ROUND_HALF_UP, Decimal\n\nCENT = Decimal("0.01")\n'
)


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def module_path(project: Project, module: Module) -> str:
    return f"{project.package}/{module.name}.py"


def module_source(project: Project, module: Module) -> str:
    functions = [source(kind, noun, "fixed") for kind, noun in module.correct]
    functions += [source(kind, noun, "buggy") for _, kind, noun in module.tasks]
    doc = f"{module.domain.capitalize()} rules of the {project.title} project."
    return HEADER.format(doc=doc) + "".join("\n\n" + text for text in functions)


def tests_source(project: Project, module: Module) -> str:
    lines = [
        f'"""Tests of {module_path(project, module)} (all pass)."""\n\n'
        "import unittest\nfrom decimal import Decimal  # noqa: F401\n\n"
        f"from {project.package} import {module.name}\n\n\n"
        f"class {camel(module.name)}Tests(unittest.TestCase):\n"
    ]
    for kind, noun in module.correct:
        lines.append(
            f"    def test_{fn_name(kind, noun)}(self) -> None:\n"
            + test_body(kind, noun, module.name)
            + "\n"
        )
    return "".join(lines).rstrip("\n") + "\n"


def reported_source(project: Project) -> str:
    imports = ", ".join(module.name for module in project.modules)
    parts = [
        '"""Reported bugs: each test fails until its task is done."""\n\n'
        "import unittest\nfrom decimal import Decimal  # noqa: F401\n\n"
        f"from {project.package} import {imports}\n"
    ]
    for module in project.modules:
        if not module.tasks:
            continue
        body = "".join(
            f"    def test_{fn_name(kind, noun)}(self) -> None:\n"
            + test_body(kind, noun, module.name)
            + "\n"
            for _, kind, noun in module.tasks
        )
        parts.append(
            f"\n\nclass Reported{camel(module.name)}(unittest.TestCase):\n"
            + body.rstrip("\n")
            + "\n"
        )
    return "".join(parts)


def task_id(project: Project, role: str, index: int) -> str:
    return f"{project.short}-{'seed' if role == 'seed' else role.lower()}{index:02d}"


def verify_of(project: Project, module: Module, kind: str, noun: str) -> str:
    return (
        f"python -m unittest -q tests.test_reported.Reported{camel(module.name)}"
        f".test_{fn_name(kind, noun)}"
    )


def grep_of(project: Project) -> str:
    return f"grep -rn quantize {project.package}"


@dataclass(frozen=True)
class Task:
    id: str
    role: str
    kind: str
    noun: str
    module: Module
    path: str
    prompt: str
    verify: str
    needs: tuple[str, ...]


def tasks_of(project: Project) -> list[Task]:
    counters = {"seed": 0, "A": 0, "B": 0}
    out = []
    for module in project.modules:
        path = module_path(project, module)
        for role, kind, noun in module.tasks:
            counters[role] += 1
            text = symptom(kind, noun)
            prompt = f"In {path}, {text}" if role in ("B", "seed") else text
            needs = (path, grep_of(project)) if kind == "half_up" and role != "B" else (path,)
            out.append(
                Task(
                    task_id(project, role, counters[role]),
                    role,
                    kind,
                    noun,
                    module,
                    path,
                    prompt,
                    verify_of(project, module, kind, noun),
                    needs,
                )
            )
    # manifest order: the two seeds first, then recall (A) and fresh (B) holdouts interleaved
    seeds = [t for t in out if t.role == "seed"]
    recall = [t for t in out if t.role == "A"]
    fresh = [t for t in out if t.role == "B"]
    mixed: list[Task] = []
    while recall or fresh:
        if recall:
            mixed.append(recall.pop(0))
        if fresh:
            mixed.append(fresh.pop(0))
    return seeds + mixed


def expected(kind: str, noun: str) -> str:
    fn = fn_name(kind, noun)
    return {
        "strip_case": f"{fn}('  ab1 ') returns 'AB1'.",
        "boundary": f"{fn}(10, 10) is True and {fn}(9, 10) is False.",
        "half_up": f"{fn}('2.665') returns Decimal('2.67') and {fn}('1.005') Decimal('1.01').",
        "empty": f"{fn}([]) returns 0.0 and {fn}([2.0, 4.0]) returns 3.0.",
        "positive": f"{fn}(0) and {fn}(-3) raise ValueError; {fn}(2) returns 2.",
        "pad": f"{fn}(2026, 7) returns '{prefix(noun)}-2026-0007'.",
        "dedupe": f"{fn}([3, 1, 3]) returns [3, 1].",
        "split_once": f"{fn}('a = b=c') returns ('a', 'b=c').",
    }[kind]


def manifest(project: Project) -> dict[str, Any]:
    tasks = tasks_of(project)
    seeds = [t for t in tasks if t.role == "seed"]
    grep = grep_of(project)
    return {
        "schemaVersion": 1,
        "id": f"board-{project.package}-1",
        "project": {"path": "project"},
        "host": {
            "argv": None,
            "model": None,
            "settings": {"note": "identical for every condition"},
            "permissions": {"edit": "project copy only", "network": "none"},
            "timeBudgetS": 120,
        },
        "promptTemplate": f"You are working in the {project.title} project (Python). Task "
        "{task_id}: {prompt}\nChange the project so the task is done; the task is verified "
        "with its own test.",
        "reworkBudget": 1,
        "tasks": [
            {
                "id": t.id,
                "prompt": t.prompt,
                "verify": t.verify,
                "expectedBehaviour": expected(t.kind, t.noun),
                "holdout": t.role != "seed",
                "files": [t.path],
                "commands": [grep] if grep in t.needs else [],
            }
            for t in tasks
        ],
        "seeds": [
            {"taskId": t.id, "experienceId": f"exp-{index}", "qa": "approved"}
            for index, t in enumerate(seeds, 1)
        ],
        "sharedProcedure": f"Find the rounding with `{grep}`, quantize to CENT with "
        f"ROUND_HALF_UP, byte-compile with `python -m compileall -q {project.package}`, then "
        "run the focused test.",
        "skill": {
            "id": "skill-1",
            "name": "round-half-up-to-cents",
            "promotedFrom": [
                {"experienceId": f"exp-{index}", "taskId": t.id} for index, t in enumerate(seeds, 1)
            ],
        },
        "thresholds": {
            "alpha": 0.05,
            "maxNegativeTransfer": 0,
            "maxPollutionRate": 0.2,
            "maxIrrelevanceRate": 0.5,
            "maxMeanGuidanceTokens": 1200,
            "reviewRequiredFailures": 2,
        },
        "memory": {"profile": "lorelab", "argv": None},
    }


def _experience(
    project: Project,
    task: str,
    summary: str,
    verify: str,
    path: str,
    fn: str,
    *,
    qa: str = "unreviewed",
    task_id: str | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "task": task,
        "summary": summary,
        "outcome": "passed",
        "verification": {"command": verify, "exit_code": 0},
        "commands": [
            {"command": f"grep -rn 'def {fn}' {project.package}", "exit_code": 0},
            {"command": f"python -m compileall -q {project.package}", "exit_code": 0},
        ],
        "files": [path],
        "project": project.package,
        "qa": qa,
        "host": "board-history",
        "model": None,
    }
    if task_id is not None:
        entry["task_id"] = task_id
        entry["commands"][0] = {"command": grep_of(project), "exit_code": 0}
    return entry


def project_experiences(project: Project) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the two seed experiences, every other experience of the project)."""
    seeds = []
    for t in tasks_of(project):
        if t.role == "seed":
            seeds.append(
                _experience(
                    project,
                    t.prompt,
                    fix(t.kind, t.noun, t.path, project.package),
                    t.verify,
                    t.path,
                    fn_name(t.kind, t.noun),
                    qa="approved",
                    task_id=t.id,
                )
            )
    others: list[dict[str, Any]] = []
    for module in project.modules:
        if all(role == "B" for role, _, _ in module.tasks):
            continue  # fresh module: nothing about it is remembered
        path = module_path(project, module)
        module_verify = f"python -m unittest -q tests.test_{module.name}"
        for kind, noun in module.correct:
            fn = fn_name(kind, noun)
            verify = f"{module_verify}.{camel(module.name)}Tests.test_{fn}"
            text, done = symptom(kind, noun), fix(kind, noun, path, project.package)
            others.append(_experience(project, text, done, verify, path, fn))
            others.append(
                _experience(
                    project,
                    f"Regression after the {words(module.name)} clean-up: {text}",
                    f"Restored the behaviour: {done} The test pins it.",
                    verify,
                    path,
                    fn,
                )
            )
        for role, kind, noun in module.tasks:
            if role != "A":
                continue
            fn = fn_name(kind, noun)
            others.append(
                _experience(
                    project,
                    f"{fn} lived in a shared helpers module that the {module.domain} code no "
                    f"longer imports; move it next to the rest of the {module.domain} code.",
                    f"Moved {fn} into {path}; its callers import it from there now.",
                    module_verify,
                    path,
                    fn,
                )
            )
            others.append(
                _experience(
                    project,
                    f"Type checking flagged {fn}: its arguments had no annotations.",
                    f"Annotated {fn} in {path} (arguments and return type); behaviour unchanged.",
                    module_verify,
                    path,
                    fn,
                )
            )
    return seeds, others


def seed_file(project: Project) -> dict[str, Any]:
    """The project's two seeds first (exp-1, exp-2), then its own experiences, then every
    other project's: one store of every experience of the set, in a project-specific order."""
    seeds, own = project_experiences(project)
    rest: list[dict[str, Any]] = []
    for other in PROJECTS:
        if other is project:
            continue
        other_seeds, other_own = project_experiences(other)
        # another project's seed experiences are plain history here (no task_id: they are not
        # this manifest's tasks)
        for entry in other_seeds:
            plain = dict(entry)
            plain.pop("task_id")
            plain["qa"] = "unreviewed"
            rest.append(plain)
        rest.extend(other_own)
    grep = grep_of(project)
    return {
        "schemaVersion": 1,
        "experiences": seeds + own + rest,
        "promoteSkill": {
            "experience_ids": ["exp-1", "exp-2"],
            "name": "round-half-up-to-cents",
            "description": f"Round money amounts half up to the cent: find the rounding with "
            f"`{grep}`, quantize to CENT with ROUND_HALF_UP, byte-compile the package, then "
            "run the focused test.",
        },
    }


def fixture_data() -> dict[str, Any]:
    """What the fixture host knows about every task of the set (never in a project copy)."""
    data: dict[str, Any] = {}
    for project in PROJECTS:
        paths = [module_path(project, module) for module in project.modules]
        for t in tasks_of(project):
            fn = fn_name(t.kind, t.noun)
            data[t.id] = {
                "project": project.package,
                "needs": list(t.needs),
                "decoys": [path for path in paths if path != t.path],
                "solution": [
                    {
                        "path": t.path,
                        "old": source(t.kind, t.noun, "buggy"),
                        "new": source(t.kind, t.noun, "fixed"),
                    }
                ],
                "solvedSummary": fix(t.kind, t.noun, t.path, project.package),
                "wrong": [
                    {
                        "path": t.path,
                        "old": source(t.kind, t.noun, "buggy"),
                        "new": source(t.kind, t.noun, "wrong"),
                    }
                ],
                "wrongSummary": f"Changed {fn} where the report pointed, but not in the way its "
                "test expects.",
            }
    return data


def files() -> dict[Path, str]:
    out: dict[Path, str] = {}
    for project in PROJECTS:
        root = HERE / project.package
        proj = root / "project"
        out[proj / "pyproject.toml"] = (
            f'[project]\nname = "{project.package}"\nversion = "0.1.0"\n'
            f'description = "{project.description}"\nrequires-python = ">=3.11"\n'
        )
        out[proj / "README.md"] = (
            f"# {project.title}\n\n{project.description}\n\nTests: `python -m unittest`. "
            "`tests/test_reported.py` holds the reported bugs: each fails until its task is "
            "done.\n"
        )
        out[proj / project.package / "__init__.py"] = f'"""{project.description}"""\n'
        out[proj / "tests" / "__init__.py"] = ""
        for module in project.modules:
            out[proj / project.package / f"{module.name}.py"] = module_source(project, module)
            out[proj / "tests" / f"test_{module.name}.py"] = tests_source(project, module)
        out[proj / "tests" / "test_reported.py"] = reported_source(project)
        out[root / "conditions.json"] = json.dumps(manifest(project), indent=2) + "\n"
        out[root / "memory_seed.json"] = json.dumps(seed_file(project), indent=1) + "\n"
    out[FIXTURE_DATA] = json.dumps(fixture_data(), indent=1, sort_keys=True) + "\n"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    options = parser.parse_args(argv)
    stale = []
    for path, text in files().items():
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        stale.append(path)
        if not options.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if options.check and stale:
        print("stale: " + ", ".join(str(p.relative_to(REPO)) for p in stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
