"""Benchmark lorelab's pytest runner against bare ``python -m pytest`` subprocesses.

Runs M executions of a small suite (one project each) four ways: bare pytest serially, the
runner serially, bare pytest on a pool, and the runner on its pool (``run_parallel``). Serial
executions alternate bare and runner so that drift in machine load hits both alike. Prints
the harness overhead (runner serial / bare serial) and the pool speedup (runner serial /
runner parallel) against the targets: overhead at most 15%, speedup at least 1.7x on 2 cores.
Wall-clock figures suffer from anything else the machine runs, so the overhead is also given
as the median of per-pair ratios and in CPU time (user + system of the parent and children).

    python benchmarks/bench_runners.py [--executions 20] [--workers 2] [--no-plugin-autoload]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, default=20, help="M, executions per mode")
    parser.add_argument("--workers", type=int, default=2, help="pool size for parallel modes")
    parser.add_argument(
        "--no-plugin-autoload",
        action="store_true",
        help="disable entry-point plugins in both bare pytest and the runner",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.executions < 1 or args.workers < 1:
        parser.error("--executions and --workers must be at least 1")
    autoload = not args.no_plugin_autoload
    runner = PytestRunner(plugin_autoload=autoload)
    env = _bare_env(autoload)

    with RunRoot() as root:
        bare_projects = [root.create_project(f"bare{i}", _files()) for i in range(args.executions)]
        runner_projects = [root.create_project(f"run{i}", _files()) for i in range(args.executions)]
        # Warm the file system cache and the interpreter's imports once for both.
        _bare(bare_projects[0], env)
        _runner(runner, runner_projects[0])

        bare_serial = runner_serial = bare_cpu = runner_cpu = 0.0
        pair_ratios = []
        for bare_project, runner_project in zip(bare_projects, runner_projects, strict=True):
            cpu = _cpu_s()
            bare_s = _bare(bare_project, env)
            bare_cpu += _cpu_s() - cpu
            cpu = _cpu_s()
            runner_s = _runner(runner, runner_project)
            runner_cpu += _cpu_s() - cpu
            bare_serial += bare_s
            runner_serial += runner_s
            pair_ratios.append(runner_s / bare_s)

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            list(pool.map(lambda project: _bare(project, env), bare_projects))
        bare_parallel = time.perf_counter() - start

        start = time.perf_counter()
        executions = run_parallel(
            [ExecutionJob(runner=runner, project=p, timeout_s=300) for p in runner_projects],
            max_workers=args.workers,
        )
        runner_parallel = time.perf_counter() - start
        if any(execution.classification != "passed" for execution in executions):
            raise SystemExit("a parallel execution did not pass")

    figures = {
        "executions": args.executions,
        "workers": args.workers,
        "cpus": os.cpu_count(),
        "pluginAutoload": autoload,
        "bareSerialS": round(bare_serial, 3),
        "runnerSerialS": round(runner_serial, 3),
        "bareParallelS": round(bare_parallel, 3),
        "runnerParallelS": round(runner_parallel, 3),
        "overheadRatio": round(runner_serial / bare_serial, 3),
        "overheadMedianPairRatio": round(statistics.median(pair_ratios), 3),
        "overheadCpuRatio": round(runner_cpu / bare_cpu, 3),
        "parallelSpeedup": round(runner_serial / runner_parallel, 3),
        "bareParallelSpeedup": round(bare_serial / bare_parallel, 3),
    }
    figures["overheadTargetMet"] = figures["overheadRatio"] <= OVERHEAD_TARGET
    figures["speedupTargetMet"] = figures["parallelSpeedup"] >= SPEEDUP_TARGET
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    per = 1000 / args.executions
    print(f"{args.executions} executions, pool of {args.workers}, plugin autoload {autoload}")
    print(f"bare pytest, serial    {bare_serial:8.2f} s  ({bare_serial * per:6.0f} ms each)")
    print(f"runner, serial         {runner_serial:8.2f} s  ({runner_serial * per:6.0f} ms each)")
    print(f"bare pytest, parallel  {bare_parallel:8.2f} s")
    print(f"runner, parallel       {runner_parallel:8.2f} s")
    print(
        f"harness overhead       {figures['overheadRatio']:.3f}x  "
        f"(target <= {OVERHEAD_TARGET}: {'met' if figures['overheadTargetMet'] else 'MISSED'})"
    )
    print(
        f"pool speedup           {figures['parallelSpeedup']:.3f}x  "
        f"(target >= {SPEEDUP_TARGET}: {'met' if figures['speedupTargetMet'] else 'MISSED'})"
    )
    print(f"overhead, median pair  {figures['overheadMedianPairRatio']:.3f}x")
    print(f"overhead, CPU time     {figures['overheadCpuRatio']:.3f}x")
    print(f"bare pool speedup      {figures['bareParallelSpeedup']:.3f}x  (for reference)")


if __name__ == "__main__":
    main()
