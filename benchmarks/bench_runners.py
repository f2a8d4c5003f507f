"""Benchmark lorelab's pytest runner against bare ``python -m pytest`` subprocesses.

Runs M executions of a small suite (one project each) four ways, in R rounds: bare pytest
serially, the runner serially, bare pytest on a pool, and the runner on its pool
(``run_parallel``). Serial executions alternate bare and runner so that drift in machine load
hits both alike; the best round of each mode counts, as with ``timeit``. Prints
the harness overhead (runner serial / bare serial) and the pool speedup (runner serial /
runner parallel) against the targets: overhead at most 15%, speedup at least 1.7x on 2 cores.
Wall-clock figures suffer from anything else the machine runs, so the overhead is also given
as the median of per-pair ratios and in CPU time (user + system of the parent and children).

    python benchmarks/bench_runners.py [--executions 12] [--rounds 3] [--workers 2]
        [--no-plugin-autoload] [--sandbox] [--json]

Every runner execution is contained (a launcher kills every descendant); ``--sandbox`` also
runs it in bubblewrap (as far as the machine allows: the figures name what it got), so the
overhead targets can be checked with the sandbox on.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lorelab.io import sandbox_kind
from lorelab.runners import ExecutionJob, PytestRunner, run_parallel
from lorelab.workspace import FileEntry, RunRoot

OVERHEAD_TARGET = 1.15
SPEEDUP_TARGET = 1.7
SOURCE = """def add(a, b):
    return a + b


def clamp(value, low, high):
    return max(low, min(high, value))
"""
TESTS = "from src.calc import add, clamp\n\n" + "".join(
    f"def test_add_{i}():\n    assert add({i}, 1) == {i + 1}\n\n"
    f"def test_clamp_{i}():\n    assert clamp({i}, 0, 10) == {min(i, 10)}\n\n"
    for i in range(15)
)


def _files() -> list[FileEntry]:
    return [
        FileEntry(path="src/__init__.py", content=""),
        FileEntry(path="src/calc.py", content=SOURCE),
        FileEntry(path="tests/test_calc.py", content=TESTS),
    ]


def _bare_env(plugin_autoload: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    if not plugin_autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def _bare(project: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q"],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
        timeout=300,
    )
    if completed.returncode != 0:
        raise SystemExit(f"bare pytest failed in {project} with status {completed.returncode}")
    return time.perf_counter() - start


def _runner(runner: PytestRunner, project: Path) -> float:
    start = time.perf_counter()
    execution = runner.run(project, timeout_s=300)
    if execution.classification != "passed":
        raise SystemExit(f"runner reported {execution.classification}: {execution.reason}")
    return time.perf_counter() - start


def _cpu_s() -> float:
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def _bare_pool(projects: list[Path], env: dict[str, str], workers: int) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda project: _bare(project, env), projects))
    return time.perf_counter() - start


def _runner_pool(runner: PytestRunner, projects: list[Path], workers: int) -> float:
    start = time.perf_counter()
    executions = run_parallel(
        [ExecutionJob(runner=runner, project=p, timeout_s=300) for p in projects],
        max_workers=workers,
    )
    elapsed = time.perf_counter() - start
    if any(execution.classification != "passed" for execution in executions):
        raise SystemExit("a parallel execution did not pass")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, default=12, help="M, executions per mode")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the best one counts")
    parser.add_argument("--workers", type=int, default=2, help="pool size for parallel modes")
    parser.add_argument(
        "--no-plugin-autoload",
        action="store_true",
        help="disable entry-point plugins in both bare pytest and the runner",
    )
    parser.add_argument(
        "--sandbox", action="store_true", help="run the runner's executions in the sandbox"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.executions < 1 or args.workers < 1 or args.rounds < 1:
        parser.error("--executions, --rounds and --workers must be at least 1")
    autoload = not args.no_plugin_autoload
    runner = PytestRunner(plugin_autoload=autoload, sandbox=args.sandbox)
    env = _bare_env(autoload)
    times: dict[str, list[float]] = {
        "bareSerial": [],
        "runnerSerial": [],
        "bareParallel": [],
        "runnerParallel": [],
    }
    cpu_ratios: list[float] = []
    pair_ratios: list[float] = []

    with RunRoot() as root:
        bare = [root.create_project(f"bare{i}", _files()) for i in range(args.executions)]
        ours = [root.create_project(f"run{i}", _files()) for i in range(args.executions)]
        # One run in every project first: bare pytest caches rewritten test modules in
        # __pycache__ on its first run there, and every later bare run profits from it.
        for project in bare:
            _bare(project, env)
        for round_number in range(args.rounds):
            bare_s = runner_s = bare_cpu = runner_cpu = 0.0
            for bare_project, runner_project in zip(bare, ours, strict=True):
                cpu = _cpu_s()
                one_bare = _bare(bare_project, env)
                bare_cpu += _cpu_s() - cpu
                cpu = _cpu_s()
                one_runner = _runner(runner, runner_project)
                runner_cpu += _cpu_s() - cpu
                bare_s += one_bare
                runner_s += one_runner
                pair_ratios.append(one_runner / one_bare)
            times["bareSerial"].append(bare_s)
            times["runnerSerial"].append(runner_s)
            cpu_ratios.append(runner_cpu / bare_cpu)
            # Alternate which pool goes first, so neither always meets the same load.
            if round_number % 2 == 0:
                times["bareParallel"].append(_bare_pool(bare, env, args.workers))
                times["runnerParallel"].append(_runner_pool(runner, ours, args.workers))
            else:
                times["runnerParallel"].append(_runner_pool(runner, ours, args.workers))
                times["bareParallel"].append(_bare_pool(bare, env, args.workers))

    best = {mode: min(values) for mode, values in times.items()}
    figures: dict[str, object] = {
        "executions": args.executions,
        "rounds": args.rounds,
        "workers": args.workers,
        "cpus": os.cpu_count(),
        "pluginAutoload": autoload,
        "sandbox": sandbox_kind(args.sandbox),
        "loadAverageAfter": os.getloadavg()[0],
        **{f"{mode}S": [round(value, 3) for value in values] for mode, values in times.items()},
        "overheadRatio": round(best["runnerSerial"] / best["bareSerial"], 3),
        "overheadMedianPairRatio": round(statistics.median(pair_ratios), 3),
        "overheadCpuRatio": round(statistics.median(cpu_ratios), 3),
        "parallelSpeedup": round(best["runnerSerial"] / best["runnerParallel"], 3),
        "bareParallelSpeedup": round(best["bareSerial"] / best["bareParallel"], 3),
    }
    overhead_met = float(str(figures["overheadRatio"])) <= OVERHEAD_TARGET
    speedup_met = float(str(figures["parallelSpeedup"])) >= SPEEDUP_TARGET
    figures["overheadTargetMet"] = overhead_met
    figures["speedupTargetMet"] = speedup_met
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    per = 1000 / args.executions
    print(
        f"{args.executions} executions x {args.rounds} rounds, pool of {args.workers}, "
        f"plugin autoload {autoload}, sandbox {figures['sandbox']}; best round of each mode:"
    )
    for mode, label in (
        ("bareSerial", "bare pytest, serial  "),
        ("runnerSerial", "runner, serial       "),
        ("bareParallel", "bare pytest, pool    "),
        ("runnerParallel", "runner, pool         "),
    ):
        print(f"{label}  {best[mode]:7.2f} s  ({best[mode] * per:5.0f} ms per execution)")
    print(
        f"harness overhead       {figures['overheadRatio']:.3f}x  "
        f"(target <= {OVERHEAD_TARGET}: {'met' if overhead_met else 'MISSED'})"
    )
    print(
        f"pool speedup           {figures['parallelSpeedup']:.3f}x  "
        f"(target >= {SPEEDUP_TARGET}: {'met' if speedup_met else 'MISSED'})"
    )
    print(f"overhead, median pair  {figures['overheadMedianPairRatio']:.3f}x")
    print(f"overhead, CPU time     {figures['overheadCpuRatio']:.3f}x (median of rounds)")
    print(f"bare pool speedup      {figures['bareParallelSpeedup']:.3f}x  (for reference)")
    print(f"load average after     {figures['loadAverageAfter']:.2f}")


if __name__ == "__main__":
    main()
