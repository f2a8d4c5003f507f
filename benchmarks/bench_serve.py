"""Load and fault benchmark of ``lorelab serve``: 16 MCP clients over loopback on a 10k store.

Run:  python benchmarks/bench_serve.py [--size 10000] [--clients 16] [--rate 50]
          [--duration 60] [--closed-duration 30] [--fault-duration 10] [--json]

The store holds SYNTHETIC experiences (the seeded vocabulary of ``bench_memory.py``); the
figures measure speed only. The clients are the official SDK's ``Client`` over its streamable
HTTP transport, each with its own session and a write token, all in this one process, on the
same machine as the server (whose cores they share). Each request is ``lore_prepare`` (80%, a
task drawn from the store's own tasks and from unrelated text) or ``lore_record`` (20%, a new
experience with a unique task).

- **Open loop**: requests arrive at a fixed total rate (``--rate``, per second) for
  ``--duration`` seconds, spread round-robin over the clients; each is sent at its arrival
  time whether or not earlier ones were answered. Latency is measured from the arrival time
  (so a server that falls behind shows it: no coordinated omission). Reports p50/p95/p99.
- **Closed loop**: every client sends its next request as soon as its last is answered, for
  ``--closed-duration`` seconds: the saturation throughput.
- **Fault**: the closed loop again, with every record's task unique; after
  ``--fault-duration`` seconds the server is killed with SIGKILL. It is restarted on the same
  store, and every record the server acknowledged (an id returned) must be there with its task;
  then ``PRAGMA integrity_check`` must say ``ok``.

A failed request counts as a failure, never as a fast one. Not part of the test suite: tests
never depend on wall-clock time. The load average before and after is reported: on a shared
machine, label the figures with it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from bench_memory import Vocabulary, _queries
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from lorelab.memory import RecordManyRequest, SqliteMemoryStore
from lorelab.serve import create_token
from mcp import Client

TARGETS = {"openLoopPrepareP95S": 0.050, "closedLoopRps": 100.0, "lostRecords": 0}


def _percentile(values: list[float], pct: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def _build_store(home: Path, size: int, seed: int) -> list[str]:
    """A store of ``size`` synthetic experiences; returns the prepare tasks to send."""
    home.mkdir(parents=True)
    vocab = Vocabulary(seed)
    store = SqliteMemoryStore(home / "memory.db")
    try:
        todo = [vocab.experience(n) for n in range(size)]
        for start in range(0, size, 500):
            store.record_many(RecordManyRequest(experiences=todo[start : start + 500]))
        return _queries(vocab, store, 400)
    finally:
        store.close()


def _start(home: Path, project: Path) -> tuple[subprocess.Popen[bytes], str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lorelab",
            "serve",
            "--home",
            str(home),
            "--project",
            str(project),
            "--port",
            "0",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"lorelab serve exited {process.returncode}")
        with contextlib.suppress(OSError, ValueError):
            state = json.loads((home / "serve.json").read_text())
            if state.get("pid") == process.pid:
                return process, f"{state['url']}/mcp"
        time.sleep(0.05)
    process.kill()
    raise SystemExit("lorelab serve did not start in 180 s")


def _record_arguments(rng: random.Random) -> dict[str, Any]:
    marker = uuid.UUID(int=rng.getrandbits(128)).hex[:12]
    return {
        "task": f"Fix the flaky export job {marker} after the retry change",
        "summary": "Made the retry idempotent; the export test passes again.",
        "outcome": "passed",
        "verification": {"command": "pytest -q tests/test_export.py", "exit_code": 0},
        "commands": [{"command": "pytest -q tests/test_export.py", "exit_code": 0}],
    }


class Load:
    """The clients, the request mix and what was measured."""

    def __init__(self, tasks: list[str], seed: int) -> None:
        self.tasks = tasks
        self.rng = random.Random(seed)
        self.latencies: dict[str, list[float]] = {"prepare": [], "record": []}
        self.failures: dict[str, int] = {"prepare": 0, "record": 0}
        self.acknowledged: dict[str, str] = {}

    def request(self) -> tuple[str, str, dict[str, Any]]:
        if self.rng.random() < 0.2:
            return "record", "lore_record", _record_arguments(self.rng)
        return "prepare", "lore_prepare", {"task": self.rng.choice(self.tasks)}

    async def send(self, client: Client, started: float) -> None:
        kind, tool, arguments = self.request()
        try:
            result = await client.call_tool(tool, arguments, read_timeout_seconds=60)
        except Exception:  # a refused or broken call is a failure, whatever its kind
            self.failures[kind] += 1
            return
        if result.is_error or result.structured_content is None:
            self.failures[kind] += 1
            return
        self.latencies[kind].append(time.perf_counter() - started)
        if kind == "record":
            self.acknowledged[result.structured_content["id"]] = arguments["task"]

    def summary(self, seconds: float) -> dict[str, Any]:
        out: dict[str, Any] = {"seconds": round(seconds, 2)}
        for kind, values in self.latencies.items():
            out[kind] = {
                "answered": len(values),
                "failed": self.failures[kind],
                **{
                    f"p{pct}S": None if (v := _percentile(values, pct)) is None else round(v, 4)
                    for pct in (50, 95, 99)
                },
            }
        answered = sum(len(v) for v in self.latencies.values())
        out["answeredPerSecond"] = round(answered / seconds, 1)
        return out


@contextlib.asynccontextmanager
async def _clients(url: str, token: str, count: int) -> AsyncIterator[list[Client]]:
    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for _ in range(count):
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            await stack.enter_async_context(http)
            client = Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60)
            clients.append(await stack.enter_async_context(client))
        yield clients


async def open_loop(url: str, token: str, load: Load, clients: int, rate: float, duration: float):
    async with _clients(url, token, clients) as connected:
        for client in connected:  # warm each session's connection
            await client.list_tools()
        total = int(rate * duration)
        began = time.perf_counter()
        async with anyio.create_task_group() as group:
            for number in range(total):
                arrival = began + number / rate
                await anyio.sleep(max(0.0, arrival - time.perf_counter()))
                group.start_soon(load.send, connected[number % clients], arrival)
        return load.summary(time.perf_counter() - began)


async def closed_loop(
    url: str, token: str, load: Load, clients: int, duration: float, *, on_start: Any = None
) -> dict[str, Any]:
    async with _clients(url, token, clients) as connected:
        for client in connected:
            await client.list_tools()
        began = time.perf_counter()
        if on_start is not None:
            on_start()

        async def worker(client: Client) -> None:
            while time.perf_counter() - began < duration:
                await load.send(client, time.perf_counter())

        with anyio.move_on_after(duration + 70):
            async with anyio.create_task_group() as group:
                for client in connected:
                    group.start_soon(worker, client)
        return load.summary(time.perf_counter() - began)


def _terminate(process: subprocess.Popen[bytes]) -> float | None:
    """SIGTERM, and the seconds the server took to exit (``None``: killed after 120 s)."""
    began = time.perf_counter()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)
        return None
    return round(time.perf_counter() - began, 2)


def fault(home: Path, project: Path, token: str, tasks: list[str], args: argparse.Namespace):
    process, url = _start(home, project)
    load = Load(tasks, args.seed + 2)

    def kill_later() -> None:
        import threading

        threading.Timer(args.fault_duration, lambda: os.kill(process.pid, signal.SIGKILL)).start()

    try:
        anyio.run(
            lambda: closed_loop(
                url, token, load, args.clients, args.fault_duration + 3, on_start=kill_later
            )
        )
    except Exception as exc:  # the clients' sessions end with the server: expected here
        print(f"fault: the clients stopped with the server ({type(exc).__name__})", file=sys.stderr)
    process.wait(timeout=60)
    killed_by = -process.returncode if process.returncode is not None else None
    again, _ = _start(home, project)  # the lock went with the killed process
    try:
        conn = sqlite3.connect(f"{(home / 'memory.db').as_uri()}?mode=ro", uri=True)
        try:
            lost = [
                ident
                for ident, task in load.acknowledged.items()
                if conn.execute(
                    "SELECT 1 FROM experiences WHERE id = ? AND task = ?",
                    (int(ident.removeprefix("exp-")), task),
                ).fetchone()
                is None
            ]
            integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            conn.close()
    finally:
        _terminate(again)
    return {
        "killedBySignal": killed_by,
        "acknowledgedRecords": len(load.acknowledged),
        "lostRecords": len(lost),
        "integrityCheck": integrity,
        "restarted": True,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="lorelab-bench-serve-") as scratch:
        root = Path(scratch)
        home, project = root / "home", root / "project"
        project.mkdir()
        built = time.perf_counter()
        tasks = _build_store(home, args.size, args.seed)
        build_s = time.perf_counter() - built
        token = create_token(home / "memory.db", "bench", "write")
        load_before = os.getloadavg()
        process, url = _start(home, project)
        try:
            opened = anyio.run(
                open_loop,
                url,
                token,
                Load(tasks, args.seed),
                args.clients,
                args.rate,
                args.duration,
            )
            print(json.dumps({"openLoop": opened}), file=sys.stderr, flush=True)
            closed = anyio.run(
                lambda: closed_loop(
                    url, token, Load(tasks, args.seed + 1), args.clients, args.closed_duration
                )
            )
            print(json.dumps({"openLoop": opened, "closedLoop": closed}), file=sys.stderr)
        finally:
            graceful_s = _terminate(process)
        faulted = fault(home, project, token, tasks, args) if args.fault_duration > 0 else None
        load_after = os.getloadavg()
    p95 = opened["prepare"]["p95S"]
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "storeSize": args.size,
        "storeBuildS": round(build_s, 1),
        "clients": args.clients,
        "mix": {"prepare": 0.8, "record": 0.2},
        "loadAverageBefore": [round(v, 2) for v in load_before],
        "loadAverageAfter": [round(v, 2) for v in load_after],
        "shutdownAfterSigtermS": graceful_s,
        "openLoop": {"ratePerSecond": args.rate, **opened},
        "closedLoop": closed,
        "fault": faulted,
        "targets": TARGETS,
        "met": {
            "openLoopPrepareP95": p95 is not None and p95 <= TARGETS["openLoopPrepareP95S"],
            "closedLoopRps": closed["answeredPerSecond"] >= TARGETS["closedLoopRps"],
            "noLostRecords": faulted is not None
            and faulted["lostRecords"] == 0
            and faulted["integrityCheck"] == "ok",
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--rate", type=float, default=50.0, help="open loop: requests per second")
    parser.add_argument("--duration", type=float, default=60.0, help="open loop: seconds")
    parser.add_argument("--closed-duration", type=float, default=30.0)
    parser.add_argument("--fault-duration", type=float, default=10.0, help="0: no fault test")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run(args)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        o, c, f = report["openLoop"], report["closedLoop"], report["fault"]
        print(
            f"{args.size} experiences, {args.clients} clients; load average "
            f"{report['loadAverageBefore'][0]} before, {report['loadAverageAfter'][0]} after"
        )
        for name, part in (("open loop", o), ("closed loop", c)):
            for kind in ("prepare", "record"):
                row = part[kind]
                print(
                    f"{name:<12} {kind:<8} answered {row['answered']:>6} failed {row['failed']:>4}"
                    f"  p50 {row['p50S']}  p95 {row['p95S']}  p99 {row['p99S']} s"
                )
            print(f"{name:<12} {part['answeredPerSecond']} answered/s")
        if f is not None:
            print(
                f"fault: SIGKILL (signal {f['killedBySignal']}); {f['acknowledgedRecords']} "
                f"acknowledged records, {f['lostRecords']} lost; integrity_check "
                f"{f['integrityCheck']}"
            )
        print("met:", json.dumps(report["met"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
