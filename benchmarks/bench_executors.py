"""Sequential vs ``--jobs 2`` vs a two-worker local Ray cluster, on the conditions example.

Run:  python benchmarks/bench_executors.py [--sleep-s 5] [--tasks 13] [--json]
                                           [--modes sequential,jobs-2,ray-2-workers]
      (needs pip install -e ".[ray]"; starts and stops its own local Ray cluster)

The conditions example (``examples/conditions``) runs three times in this one process, on the
same input, with lorelab's own memory seeded from ``memory_seed.json``: one run after another,
with ``--jobs 2``, and with ``--executor ray`` on a local cluster of two CPUs (two worker
processes) started by ``ray start --head``. The host is the fixture host with ``--sleep-s S``:
it waits S seconds before each answer, a stand-in for an agent session of several minutes
(real sessions spend their time waiting on a model, not on this machine's CPUs). ``--tasks N``
keeps N tasks of the example, leaving out non-holdout, non-seed tasks first (default: all 13,
so 52 task x condition runs; at least 10).

``--modes`` runs only the named modes (default: all three; ``--modes sequential --sleep-s 0``
measures the per-run overhead alone). Reported per mode: wall time of the whole ``eval
conditions run`` command, the CPU time (user + system) of its process tree (every process it
waited for: lorelab, the memory server, hosts, verify commands; not Ray's own workers, which
the cluster owns), the speed-up over sequential (when sequential ran), and the per-run
overhead: the sequential wall time per run minus the host's sleep per run (the work a run
costs besides the session: copies, verify commands, identity checks, memory calls, receipts).
Target: at least 1.8x with ``--jobs 2`` and with Ray. The runs files of the modes run are
compared too, leaving out the verify outputs' SHA-256 (pytest prints
its duration, so those differ between any two runs, sequential ones included).

``--no-pytest-plugins`` sets ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` for every mode (recorded as
``pytest_plugin_autoload: false``): the verify commands and the fixture host's own test runs
then load no installed pytest plugins. The example's tests need none, and each pytest start
otherwise imports every plugin of the environment lorelab runs in (a development install
autoloads hypothesis, xdist, cov, timeout and anyio). It separates what this machine's
environment costs from what lorelab costs; the default measures the environment as it is.

Not part of the test suite: tests never depend on wall-clock time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "conditions"
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
TARGET = 1.8
NO_AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"
MODES = ("sequential", "jobs-2", "ray-2-workers")


def _manifest(base: Path, tasks: int) -> Path:
    data = json.loads((EXAMPLE / "conditions.json").read_text(encoding="utf-8"))
    data["project"]["path"] = str(EXAMPLE / data["project"]["path"])
    # Fewer tasks: the other non-holdout tasks go first (seeds and holdouts are the protocol's
    # minimums), the order of the rest is kept.
    seeds = {seed["taskId"] for seed in data.get("seeds", [])}
    others = [t["id"] for t in data["tasks"] if not t["holdout"] and t["id"] not in seeds]
    dropped = set(others[: max(0, len(data["tasks"]) - tasks)])
    data["tasks"] = [task for task in data["tasks"] if task["id"] not in dropped]
    path = base / "conditions.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _run(base: Path, manifest: Path, name: str, sleep_s: float, extra: list[str]) -> dict:
    host = json.dumps(
        [sys.executable, "-m", "lorelab.testing.fixture_host", "--sleep-s", str(sleep_s)]
    )
    argv = [
        sys.executable, "-m", "lorelab", "eval", "conditions", "run",
        "--manifest", str(manifest), "--host", host, "--output", str(base / name),
        "--home", str(base / f"{name}-home"),
        "--seed-memory", str(EXAMPLE / "memory_seed.json"), "--json", *extra,
    ]  # fmt: skip
    load_before = os.getloadavg()[0]
    cpu_before = _children_cpu_s()
    started = time.perf_counter()
    done = subprocess.run(
        argv, capture_output=True, text=True, check=False, env={**os.environ, **RAY_ENV}
    )
    wall = time.perf_counter() - started
    cpu = _children_cpu_s() - cpu_before
    if done.returncode != 0:
        raise SystemExit(f"{name}: exit {done.returncode}: {done.stderr.strip()[-800:]}")
    summary = json.loads(done.stdout)
    runs = json.loads((base / name / "beta2_runs.json").read_text(encoding="utf-8"))
    calls = sum(r["host_calls"] for r in runs["runs"])
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "runs": summary["runs"],
        "host_calls": calls,
        "runs_file": runs,
        "load": (load_before, os.getloadavg()[0]),
    }


def _children_cpu_s() -> float:
    """User + system CPU seconds of every waited-for descendant of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timeless(runs_file: dict[str, Any]) -> dict[str, Any]:
    """The runs file without the verify outputs' hashes: pytest prints its own duration
    ("1 passed in 0.12s"), so those hashes differ between any two runs, sequential or not."""
    runs = []
    for run in runs_file["runs"]:
        run = dict(run)
        for key in ("verification_before", "verification_after"):
            if isinstance(run.get(key), dict):
                run[key] = {k: v for k, v in run[key].items() if k != "output_sha256"}
        runs.append(run)
    return {**runs_file, "runs": runs}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_ray(base: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    log = open(base / "ray.log", "wb")  # noqa: SIM115 - closed with the process
    process = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("ray")), "start", "--block", "--head",
            "--num-cpus=2", f"--port={port}", "--node-ip-address=127.0.0.1",
            "--include-dashboard=false", "--disable-usage-stats",
        ],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **RAY_ENV},
        start_new_session=True,
    )  # fmt: skip
    address = f"127.0.0.1:{port}"
    probe = f"import ray; ray.init(address={address!r}, log_to_driver=False)"
    for _ in range(60):
        ready = subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            env={**os.environ, **RAY_ENV},
            check=False,
        )
        if ready.returncode == 0:
            return process, address
        time.sleep(2)
    _stop_ray(process)
    raise SystemExit("the local Ray cluster did not start; see ray.log")


def _stop_ray(process: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            continue


def measure(sleep_s: float, tasks: int, modes: tuple[str, ...] = MODES) -> dict[str, Any]:
    """Run the chosen modes (in this order) on one input; return the figures."""
    base = Path(tempfile.mkdtemp(prefix="bench-executors-"))
    results: dict[str, dict[str, Any]] = {}
    try:
        manifest = _manifest(base, tasks)
        if "sequential" in modes:
            results["sequential"] = _run(base, manifest, "sequential", sleep_s, [])
        if "jobs-2" in modes:
            results["jobs-2"] = _run(base, manifest, "jobs-2", sleep_s, ["--jobs", "2"])
        if "ray-2-workers" in modes:
            ray, address = _start_ray(base)
            try:
                results["ray-2-workers"] = _run(
                    base, manifest, "ray", sleep_s, ["--executor", "ray", "--ray-address", address]
                )
            finally:
                _stop_ray(ray)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    seq = results.get("sequential")
    first = next(iter(results.values()))
    runs, calls = first["runs"], first["host_calls"]
    overhead = None if seq is None else round((seq["wall_s"] - calls * sleep_s) / runs, 2)
    identical = all(
        _timeless(r["runs_file"]) == _timeless(first["runs_file"]) for r in results.values()
    )
    return {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "sleep_s": sleep_s,
        "tasks": tasks,
        "runs": runs,
        "host_calls": calls,
        "per_run_overhead_s": overhead,
        "pytest_plugin_autoload": NO_AUTOLOAD not in os.environ,
        "runs_files_identical_but_verify_output_hashes": identical,
        "modes": {
            name: {
                "wall_s": round(r["wall_s"], 1),
                "cpu_s": round(r["cpu_s"], 1),
                "speedup": None if seq is None else round(seq["wall_s"] / r["wall_s"], 2),
                "load_average_1min_before_after": [round(x, 1) for x in r["load"]],
            }
            for name, r in results.items()
        },
        "target_speedup": TARGET,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sleep-s", type=float, default=5.0)
    parser.add_argument("--tasks", type=int, default=13)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--modes",
        default=",".join(MODES),
        help=f"comma-separated modes to run, of {', '.join(MODES)} (default: all)",
    )
    parser.add_argument(
        "--no-pytest-plugins",
        action="store_true",
        help=f"set {NO_AUTOLOAD}=1 for every mode (pytest loads no installed plugins)",
    )
    options = parser.parse_args()
    if options.no_pytest_plugins:
        os.environ[NO_AUTOLOAD] = "1"
    modes = tuple(m.strip() for m in options.modes.split(",") if m.strip())
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        parser.error(f"--modes {options.modes}: choose from {', '.join(MODES)}")
    figures = measure(options.sleep_s, options.tasks, modes)
    if options.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(
        f"{figures['runs']} runs ({figures['host_calls']} host calls of {options.sleep_s} s), "
        f"per-run overhead {figures['per_run_overhead_s']} s, runs files identical: "
        f"{figures['runs_files_identical_but_verify_output_hashes']}"
    )
    for name, mode in figures["modes"].items():
        speedup = mode["speedup"]
        met = (
            ""
            if name == "sequential" or speedup is None
            else (" (target met)" if speedup >= TARGET else " (below target)")
        )
        ratio = "" if speedup is None else f"  x{speedup:.2f}{met}"
        load = mode["load_average_1min_before_after"]
        print(
            f"{name:>14}: {mode['wall_s']:7.1f} s wall, {mode['cpu_s']:7.1f} s CPU{ratio}  "
            f"(load {load})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
