"""How often the learning evaluation's label is wrong, and how often it is right: simulated
campaigns pushed through the real summary and label code.

Run:  python benchmarks/null_campaigns.py [--campaigns 10000] [--power-campaigns 1000]

A campaign is one learning run: S specifications x R repetitions x two arms, every trial
qualified and complete (the label's best case), each specification with 3 planted defects as
in the shipped datasets. Specification s has a difficulty p_s drawn uniformly from
[0.1, 0.9]; every trial of either arm detects Binomial(3, p_s) defects, so per-specification
recalls tie as often as real runs do (recall moves in steps of 1/3).

- **Null** (no effect): both arms draw from the same distribution, so the arms are
  exchangeable. The rates of ``positive`` and of ``negative`` labels are false-positive
  rates; each must stay at or below 5%.
- **Power** (planted effect q): in the memory arm each trial gains one detection (at most
  the 3 defects) with probability q. The rate of ``positive`` labels is the power.

Every campaign's trials are real :class:`TrialRecord` receipts, summarised by
:func:`lorelab.evaluation.learning.summary.compare_arms`, the function every ``summary.json``
comes from; nothing here re-implements the sign test or the label rule. The effect interval's
bootstrap is cut to a few resamples here, as it never reads into the label.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from lorelab.evaluation.learning.records import Arm, ControlArm, RoleWorkerBinding, TrialRecord
from lorelab.evaluation.learning.roles import PerRole
from lorelab.evaluation.learning.summary import compare_arms

DEFECTS = 3
LOW, HIGH = 0.1, 0.9
SIMULATION_RESAMPLES = 10
NULL_SPECS = (6, 8, 12)
POWER_Q = (0.6, 0.7, 0.8, 0.9, 0.95)
POWER_SPECS = tuple(range(6, 13))
POWER_REPETITIONS = (3, 4, 5)
LIMIT = 0.05
# Simulated trials name a worker no one ran; only the recall fields are read.
_SIMULATED = RoleWorkerBinding(argv=["simulated"], identity_sha256="0" * 64)
SIMULATED_ROLES = PerRole[RoleWorkerBinding](
    architect=_SIMULATED, author=_SIMULATED, reviewer=_SIMULATED
)


@dataclass(frozen=True, slots=True)
class Rates:
    """Label rates over ``campaigns`` simulated campaigns."""

    specifications: int
    repetitions: int
    q: float | None
    campaigns: int
    positive: float
    negative: float


def _trial(spec: str, repetition: int, arm: Arm, detected: int) -> TrialRecord:
    return TrialRecord(
        position=1,
        specification=spec,
        repetition=repetition,
        arm=arm,
        status="qualified",
        complete=True,
        reason=None,
        identity_checks=[],
        role_workers=SIMULATED_ROLES,
        memory_store_sha256=None,
        lessons_recalled=[],
        lessons_below_floor=[],
        lessons_reached_author=[],
        generation=None,
        validation=None,
        generated_baseline_cases=[],
        passing_cases=1,
        defects=[],
        defects_total=DEFECTS,
        detected=detected,
        recall=detected / DEFECTS,
        leak_scan=None,
        setup_ms=0,
        retrieval_ms=None,
        generation_ms=None,
        validation_ms=None,
        total_ms=0,
    )


def _detections(rng: random.Random, p: float) -> int:
    return sum(rng.random() < p for _ in range(DEFECTS))


def campaign_records(
    rng: random.Random,
    specifications: Sequence[str],
    repetitions: int,
    q: float | None,
    *,
    placebo: bool = False,
) -> list[TrialRecord]:
    """One campaign's trials: both arms (and the placebo arm with ``placebo``) from one
    difficulty per specification, plus q in the memory arm."""
    records = []
    for spec in specifications:
        p = rng.uniform(LOW, HIGH)
        for repetition in range(1, repetitions + 1):
            plain = _detections(rng, p)
            memory = _detections(rng, p)
            if q is not None and rng.random() < q:
                memory = min(DEFECTS, memory + 1)
            records.append(_trial(spec, repetition, "memory", memory))
            records.append(_trial(spec, repetition, "no-memory", plain))
            if placebo:
                records.append(_trial(spec, repetition, "placebo", _detections(rng, p)))
    return records


def label_of(
    records: Sequence[TrialRecord],
    specifications: Sequence[str],
    repetitions: int,
    control: ControlArm = "no-memory",
) -> str:
    """The label the real summary code gives ``records`` (a live run with lessons), memory
    against ``control``."""
    paired = compare_arms(
        specifications,
        records,
        kind="live",
        declared_fixture=False,
        frozen_lessons=1,
        repetitions=repetitions,
        resamples=SIMULATION_RESAMPLES,
        control=control,
    )
    return paired.label


def simulate_placebo(
    specifications: int, repetitions: int, campaigns: int, *, seed: int = 0
) -> tuple[Rates, Rates]:
    """Null label rates of both comparisons of a three-arm run (memory against no-memory,
    memory against placebo), every arm drawn alike."""
    rng = random.Random(seed)
    specs = [f"spec-{index}" for index in range(specifications)]
    labels: dict[ControlArm, Counter[str]] = {"no-memory": Counter(), "placebo": Counter()}
    for _ in range(campaigns):
        records = campaign_records(rng, specs, repetitions, None, placebo=True)
        for control, counter in labels.items():
            counter[label_of(records, specs, repetitions, control)] += 1
    return tuple(  # type: ignore[return-value]
        Rates(
            specifications,
            repetitions,
            None,
            campaigns,
            labels[control]["positive"] / campaigns,
            labels[control]["negative"] / campaigns,
        )
        for control in ("no-memory", "placebo")
    )


def _placebo_table(campaigns: int, seed: int) -> list[Rates]:
    print(f"## Null with a placebo arm: {campaigns} campaigns each, 3 repetitions, 3 arms alike\n")
    print("| specifications | comparison | positive | negative | at most 5% |")
    print("|---|---|---|---|---|")
    rows = []
    for specs in NULL_SPECS:
        pair = simulate_placebo(specs, 3, campaigns, seed=seed + 7 * specs)
        for name, rates in zip(("memory vs no-memory", "memory vs placebo"), pair, strict=True):
            ok = rates.positive <= LIMIT and rates.negative <= LIMIT
            print(
                f"| {specs} | {name} | {rates.positive:.2%} | {rates.negative:.2%} | "
                f"{'yes' if ok else 'NO'} |"
            )
            rows.append(rates)
    print()
    return rows


def simulate(
    specifications: int, repetitions: int, campaigns: int, *, q: float | None = None, seed: int = 0
) -> Rates:
    """Label rates over ``campaigns`` campaigns (``q`` None: the null)."""
    rng = random.Random(seed)
    specs = [f"spec-{index}" for index in range(specifications)]
    labels: Counter[str] = Counter()
    for _ in range(campaigns):
        records = campaign_records(rng, specs, repetitions, q)
        labels[label_of(records, specs, repetitions)] += 1
    return Rates(
        specifications,
        repetitions,
        q,
        campaigns,
        labels["positive"] / campaigns,
        labels["negative"] / campaigns,
    )


def _null_table(campaigns: int, seed: int) -> list[Rates]:
    print(f"## Null: {campaigns} campaigns each, 3 repetitions, exchangeable arms\n")
    print("| specifications | positive | negative | at most 5% |")
    print("|---|---|---|---|")
    rows = []
    for specs in NULL_SPECS:
        rates = simulate(specs, 3, campaigns, seed=seed + specs)
        ok = rates.positive <= LIMIT and rates.negative <= LIMIT
        print(
            f"| {specs} | {rates.positive:.2%} | {rates.negative:.2%} | {'yes' if ok else 'NO'} |"
        )
        rows.append(rates)
    print()
    return rows


def _power_table(campaigns: int, seed: int, qs: Sequence[float] = POWER_Q) -> None:
    print(f"## Power: share of campaigns labelled positive ({campaigns} campaigns per cell)\n")
    header = " | ".join(f"{specs} specs" for specs in POWER_SPECS)
    print(f"| q | repetitions | {header} |")
    print("|---|---|" + "---|" * len(POWER_SPECS))
    for q in qs:
        for repetitions in POWER_REPETITIONS:
            cells = [
                simulate(specs, repetitions, campaigns, q=q, seed=seed + specs * 100 + repetitions)
                for specs in POWER_SPECS
            ]
            row = " | ".join(f"{cell.positive:.0%}" for cell in cells)
            print(f"| {q:.2f} | {repetitions} | {row} |")
    print()


# --- the pooled design: a campaign of several manifests, their pairs pooled ------------------

MANIFEST_CAP = 12
POOLED_SPECS = (24, 36, 48)
# The first live run on `evolution` (docs/learning.md), per specification: defects detected of
# 3 per trial by memory, no-memory and placebo. Pynguin's search is seeded, so a
# specification's repetitions repeat the same tests: one row stands for all of them.
FIRST_RUN = (
    (2, 2, 2),  # bisect-left
    (2, 1, 1),  # time-format
    (1, 0, 0),  # leap-years
    (1, 1, 1),  # email-quote
    (3, 0, 0),  # path-join
    (2, 1, 1),  # json-ascii
    (2, 1, 1),  # path-parts
    (0, 1, 0),  # re-escape
    (3, 3, 3),  # normpath
    (1, 3, 1),  # glob-escape
    (0, 0, 0),  # commonprefix (every trial failed: counted 0)
    (1, 1, 1),  # ordinal-date
)


def pooled_specifications(specifications: int) -> list[str]:
    """Specification ids of a campaign of ceil(S / 12) manifests, each at most 12, named by
    manifest so that ids never collide when the pairs are pooled."""
    return [
        f"m{index // MANIFEST_CAP + 1}-spec-{index % MANIFEST_CAP}"
        for index in range(specifications)
    ]


def simulate_pooled_null(
    specifications: int, repetitions: int, campaigns: int, *, seed: int = 0
) -> tuple[Rates, Rates]:
    """Null label rates of the pooled label of a campaign of manifests, both comparisons:
    every manifest's trials drawn alike in the three arms, then labelled together."""
    rng = random.Random(seed)
    specs = pooled_specifications(specifications)
    labels: dict[ControlArm, Counter[str]] = {"no-memory": Counter(), "placebo": Counter()}
    for _ in range(campaigns):
        records = campaign_records(rng, specs, repetitions, None, placebo=True)
        for control, counter in labels.items():
            counter[label_of(records, specs, repetitions, control)] += 1
    return tuple(  # type: ignore[return-value]
        Rates(
            specifications,
            repetitions,
            None,
            campaigns,
            labels[control]["positive"] / campaigns,
            labels[control]["negative"] / campaigns,
        )
        for control in ("no-memory", "placebo")
    )


def first_run_records(
    rng: random.Random, specifications: Sequence[str], repetitions: int
) -> list[TrialRecord]:
    """A campaign whose specifications are drawn, with replacement, from the first live run's
    (the effect seen there), each repeating its row in every repetition."""
    records = []
    for spec in specifications:
        memory, plain, placebo = rng.choice(FIRST_RUN)
        for repetition in range(1, repetitions + 1):
            records.append(_trial(spec, repetition, "memory", memory))
            records.append(_trial(spec, repetition, "no-memory", plain))
            records.append(_trial(spec, repetition, "placebo", placebo))
    return records


def simulate_first_run_power(
    specifications: int, repetitions: int, campaigns: int, *, seed: int = 0
) -> dict[ControlArm, Counter[str]]:
    """Label counts of pooled campaigns at the effect of the first run, both comparisons."""
    rng = random.Random(seed)
    specs = pooled_specifications(specifications)
    labels: dict[ControlArm, Counter[str]] = {"no-memory": Counter(), "placebo": Counter()}
    for _ in range(campaigns):
        records = first_run_records(rng, specs, repetitions)
        for control, counter in labels.items():
            counter[label_of(records, specs, repetitions, control)] += 1
    return labels


def _pooled_tables(campaigns: int, seed: int) -> list[Rates]:
    print(
        f"## Pooled null: {campaigns} campaigns each, 3 repetitions, manifests of at most "
        f"{MANIFEST_CAP}, 3 arms alike\n"
    )
    print("| specifications | manifests | comparison | positive | negative | at most 5% |")
    print("|---|---|---|---|---|---|")
    rows = []
    for specs in POOLED_SPECS:
        pair = simulate_pooled_null(specs, 3, campaigns, seed=seed + 11 * specs)
        manifests = -(-specs // MANIFEST_CAP)
        for name, rates in zip(("memory vs no-memory", "memory vs placebo"), pair, strict=True):
            ok = rates.positive <= LIMIT and rates.negative <= LIMIT
            print(
                f"| {specs} | {manifests} | {name} | {rates.positive:.2%} | "
                f"{rates.negative:.2%} | {'yes' if ok else 'NO'} |"
            )
            rows.append(rates)
    print()
    print(f"## Pooled power at the first run's effect ({campaigns} campaigns per row)\n")
    print("| specifications | comparison | positive | negative | inconclusive |")
    print("|---|---|---|---|---|")
    for specs in (12, *POOLED_SPECS):
        labels = simulate_first_run_power(specs, 3, campaigns, seed=seed + 13 * specs)
        for control, name in (
            ("placebo", "memory vs placebo"),
            ("no-memory", "memory vs no-memory"),
        ):
            counts = labels[control]  # type: ignore[index]
            print(
                f"| {specs} | {name} | {counts['positive'] / campaigns:.1%} | "
                f"{counts['negative'] / campaigns:.1%} | "
                f"{counts['inconclusive'] / campaigns:.1%} |"
            )
    print()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=10_000, help="Null campaigns per row.")
    parser.add_argument(
        "--power-campaigns", type=int, default=1_000, help="Campaigns per power cell (0: skip)."
    )
    parser.add_argument("--seed", type=int, default=20_260_101)
    parser.add_argument(
        "--q", type=float, nargs="+", default=list(POWER_Q), help="Planted effects to tabulate."
    )
    parser.add_argument("--no-null", action="store_true", help="Skip the null table.")
    parser.add_argument(
        "--placebo-campaigns",
        type=int,
        default=2_000,
        help="Null campaigns per row with a placebo arm (0: skip).",
    )
    parser.add_argument(
        "--pooled-campaigns",
        type=int,
        default=1_000,
        help="Campaigns per row of the pooled design's null and power tables (0: skip).",
    )
    parser.add_argument(
        "--only-pooled", action="store_true", help="Print the pooled design's tables only."
    )
    args = parser.parse_args()
    started = time.perf_counter()
    if args.only_pooled:
        rows = _pooled_tables(args.pooled_campaigns, args.seed)
        print(f"({time.perf_counter() - started:.0f} s)")
        if any(row.positive > LIMIT or row.negative > LIMIT for row in rows):
            raise SystemExit("a false-positive rate exceeds 5%")
        return
    rows = [] if args.no_null else _null_table(args.campaigns, args.seed)
    if args.placebo_campaigns:
        rows += _placebo_table(args.placebo_campaigns, args.seed)
    if args.power_campaigns:
        _power_table(args.power_campaigns, args.seed, args.q)
    if args.pooled_campaigns:
        rows += _pooled_tables(args.pooled_campaigns, args.seed)
    print(f"({time.perf_counter() - started:.0f} s)")
    if any(row.positive > LIMIT or row.negative > LIMIT for row in rows):
        raise SystemExit("a false-positive rate exceeds 5%")


if __name__ == "__main__":
    main()
