"""Load and fault benchmark of ``lorelab serve``: 16 MCP clients over loopback on a 10k store.

Run:  python benchmarks/bench_serve.py [--size 10000] [--clients 16] [--rate R] [--workers N]
          [--duration 60] [--closed-duration 30] [--in-process-duration 15]
          [--fault-after 200] [--client sdk|raw] [--draw repeated|new] [--json]

The store holds SYNTHETIC experiences (the seeded vocabulary of ``bench_memory.py``); the
figures measure speed only. The clients run in this one process, on the same machine as the
server (whose cores they share), each with a write token. ``--client sdk`` (the default) is the
official SDK's ``Client`` over its streamable HTTP transport; it validates every result against
the tool's output schema. ``--client raw`` speaks the same MCP protocol over streamable HTTP
(the SDK's JSON-RPC messages and headers, one POST per call, through ``httpx2``) and only
parses the JSON answer: it shows the server's throughput when the clients cost less. Each
request is ``lore_prepare`` (80%, a task drawn from 400 of the store's own tasks and of
unrelated text; with ``--draw new`` each of them gets a random marker, so no task comes twice)
or ``lore_record`` (20%, a new experience with a unique task). The server's CPU time
(from ``/proc``: the server and its worker processes) and this process's are reported per
answered call, for each mode.

- **In process**: before the server starts, one thread of this process calls ``prepare`` on
  a copy of the same store, one call after another, for ``--in-process-duration`` seconds (the
  same task draw; with ``--draw repeated``, after one unmeasured pass over the 400 tasks, as
  the server has seen them when its ratio phases run), and the same again on the same copy once
  the server has stopped (``inProcessAfter``). The mean of the two (``yardstick``: calls per
  second, p50) is what the two ratios below divide by, so a machine whose speed drifts during
  the run moves both sides of a ratio.
- **Closed loop**: every client sends its next request as soon as its last is answered, for
  ``--closed-duration`` seconds: the saturation throughput.
- **Open loop**: requests arrive at a fixed total rate (``--rate`` per second; default 70% of
  the closed loop's throughput just measured) for ``--duration`` seconds, spread round-robin
  over the clients; each is sent at its arrival time whether or not earlier ones were
  answered. Latency is measured from the arrival time
  (so a server that falls behind shows it: no coordinated omission). Reports p50/p95/p99.
- **Ratios**, which hold better than absolute figures on a busy or slower machine, from two
  more phases that send ``lore_prepare`` only (the in-process thread's work, same draw): a
  closed loop (``closedLoopPrepareOnly``) and an open loop at 70% of its throughput
  (``openLoopPrepareOnly``). ``coreScaling`` is that closed loop's answers per second divided
  by the in-process thread's calls per second (how well the server turns the machine's cores
  into answers, net of the HTTP and MCP layers and of the clients, which share the cores);
  ``openLoopHeadroom`` is that open loop's prepare p95 divided by the in-process p50. The same
  ratios of the mixed loops are reported under ``mixed`` (their records cost more than a
  prepare, and the in-process thread records nothing).
- **SIGTERM under a backlog**: ``--backlog`` requests at once; once some wait in the queue,
  SIGTERM. Reports the seconds to exit and how each request ended (answered, refused with
  503, failed), before and after the signal.
- **Fault**: the closed loop again, with every record's task unique; once the server has
  acknowledged ``--fault-after`` records (while the clients keep sending) it is killed with
  SIGKILL. It is restarted on the same store, and every record the server acknowledged (an id
  returned) must be there with its task; then ``PRAGMA integrity_check`` must say ``ok``.

A failed request counts as a failure, never as a fast one; a 503 from admission control is
counted apart as refused. Not part of the test suite: tests
never depend on wall-clock time. The load average before and after is reported: on a shared
machine, label the figures with it.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
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
import httpx2
from bench_memory import Vocabulary, _copy_store, _queries
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from lorelab._state import server_file
from lorelab.memory import PrepareRequest, RecordManyRequest, SqliteMemoryStore
from lorelab.serve import create_token
from mcp import Client

PROTOCOL = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientInfo": {"name": "bench_serve", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
HZ = os.sysconf("SC_CLK_TCK")
TARGETS = {
    "openLoopPrepareP95S": 0.050,
    "closedLoopRps": 100.0,
    "lostRecords": 0,
    "coreScaling": 1.4,
    "openLoopHeadroom": 6.0,
}
OPEN_LOOP_SHARE = 0.7
"""The default open loop's rate: this share of the closed loop's throughput."""


def _percentile(values: list[float], pct: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def _build_store(home: Path, size: int, seed: int, copy_of: Path | None = None) -> list[str]:
    """A store of ``size`` synthetic experiences (``copy_of``: a copy of that store, built
    before with the same size and seed); returns the prepare tasks to send."""
    home.mkdir(parents=True)
    vocab = Vocabulary(seed)
    todo = [vocab.experience(n) for n in range(size)]
    if copy_of is not None:
        _copy_store(copy_of / "memory.db" if copy_of.is_dir() else copy_of, home / "memory.db")
    store = SqliteMemoryStore(home / "memory.db")
    try:
        if copy_of is None:
            for start in range(0, size, 500):
                store.record_many(RecordManyRequest(experiences=todo[start : start + 500]))
        elif store.connection.execute("SELECT count(*) FROM experiences").fetchone()[0] != size:
            raise SystemExit(f"--store-from {copy_of}: not a store of {size} experiences")
        return _queries(vocab, store, 400)
    finally:
        store.close()


def _start(
    home: Path, project: Path, workers: int | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    chosen = [] if workers is None else ["--workers", str(workers)]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lorelab",
            "serve",
            "start",
            "--home",
            str(home),
            "--project",
            str(project),
            "--port",
            "0",
            *chosen,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"lorelab serve exited {process.returncode}")
        with contextlib.suppress(OSError, ValueError):
            state = json.loads(server_file(home).read_text())
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


DRAWS = ("repeated", "new")
"""How a ``lore_prepare`` task is drawn: ``repeated``, one of the 400 tasks (each comes back
often, so its query vector is mostly kept); ``new``, one of them with a random marker
appended, never sent before (every call embeds its task, as an agent's new prompt does)."""


def draw_task(rng: random.Random, tasks: list[str], draw: str) -> str:
    """One ``lore_prepare`` task of the ``draw`` kind (:data:`DRAWS`)."""
    task = rng.choice(tasks)
    return f"{task} variant {rng.getrandbits(40):010x}" if draw == "new" else task


class Load:
    """The clients, the request mix and what was measured."""

    def __init__(
        self, tasks: list[str], seed: int, *, record_share: float = 0.2, draw: str = "repeated"
    ) -> None:
        self.tasks = tasks
        self.rng = random.Random(seed)
        self.record_share = record_share
        self.draw = draw
        self.latencies: dict[str, list[float]] = {"prepare": [], "record": []}
        self.failures: dict[str, int] = {"prepare": 0, "record": 0}
        self.refused: dict[str, int] = {"prepare": 0, "record": 0}
        self.acknowledged: dict[str, str] = {}
        self.on_acknowledged: Any = None
        self.pending = 0
        """Requests sent and not yet answered."""

    def request(self) -> tuple[str, str, dict[str, Any]]:
        if self.record_share and self.rng.random() < self.record_share:
            return "record", "lore_record", _record_arguments(self.rng)
        return "prepare", "lore_prepare", {"task": draw_task(self.rng, self.tasks, self.draw)}

    async def send(self, client: Any, started: float) -> None:
        kind, tool, arguments = self.request()
        self.pending += 1
        try:
            content = await client.call(tool, arguments)
        except Busy:
            self.refused[kind] += 1
            return
        except Exception:  # a broken call is a failure, whatever its kind
            self.failures[kind] += 1
            return
        finally:
            self.pending -= 1
        if content is None:
            self.failures[kind] += 1
            return
        self.latencies[kind].append(time.perf_counter() - started)
        if kind == "record":
            self.acknowledged[content["id"]] = arguments["task"]
            if self.on_acknowledged is not None:
                self.on_acknowledged(len(self.acknowledged))

    def summary(self, seconds: float) -> dict[str, Any]:
        out: dict[str, Any] = {"seconds": round(seconds, 2)}
        for kind, values in self.latencies.items():
            out[kind] = {
                "answered": len(values),
                "failed": self.failures[kind],
                "refused": self.refused[kind],
                **{
                    f"p{pct}S": None if (v := _percentile(values, pct)) is None else round(v, 4)
                    for pct in (50, 95, 99)
                },
            }
        answered = sum(len(v) for v in self.latencies.values())
        out["answeredPerSecond"] = round(answered / seconds, 1)
        return out


class Busy(Exception):
    """A call refused by admission control (503)."""


class SdkClient:
    """The official SDK's ``Client`` (it validates each result against the output schema)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def warm(self) -> None:
        await self.client.list_tools()

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        try:
            result = await self.client.call_tool(tool, arguments, read_timeout_seconds=60)
        except Exception as exc:
            if "server busy" in str(exc):
                raise Busy(str(exc)) from exc
            raise
        if result.is_error or result.structured_content is None:
            return None
        return dict(result.structured_content)


class RawClient:
    """The SDK's messages and headers over streamable HTTP, one POST a call, JSON parsed."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self.http, self.url, self.ident = http, url, 0

    async def warm(self) -> None:
        await self.call("lore_list", {})

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        self.ident += 1
        params = {"name": tool, "arguments": arguments, "_meta": META}
        message = {"jsonrpc": "2.0", "id": self.ident, "method": "tools/call", "params": params}
        headers = {"Mcp-Method": "tools/call", "Mcp-Name": tool}
        response = await self.http.post(self.url, content=json.dumps(message), headers=headers)
        if response.status_code == 503:
            raise Busy(response.text)
        response.raise_for_status()
        result = response.json().get("result")
        if not isinstance(result, dict) or result.get("isError"):
            return None
        content = result.get("structuredContent")
        return content if isinstance(content, dict) else None


@contextlib.asynccontextmanager
async def _clients(url: str, token: str, count: int, kind: str) -> AsyncIterator[list[Any]]:
    async with contextlib.AsyncExitStack() as stack:
        clients: list[Any] = []
        for _ in range(count):
            if kind == "raw":
                headers = {
                    "Authorization": f"Bearer {token}",
                    "Accept": "application/json, text/event-stream",
                    "Content-Type": "application/json",
                    "Mcp-Protocol-Version": PROTOCOL,
                }
                raw = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60))
                clients.append(RawClient(await stack.enter_async_context(raw), url))
                continue
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            await stack.enter_async_context(http)
            client = Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60)
            clients.append(SdkClient(await stack.enter_async_context(client)))
        for client in clients:  # warm each connection (and the SDK's output schemas)
            await client.warm()
        yield clients


def _own_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def _cpu_seconds(pid: int) -> float:
    """CPU time of ``pid`` and of its live descendants (the server's worker processes)."""
    total = _own_cpu_seconds(pid)
    todo = [pid]
    while todo:
        parent = todo.pop()
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{parent}/task"):
                children = Path(f"/proc/{parent}/task/{task}/children").read_text().split()
                for child in map(int, children):
                    with contextlib.suppress(OSError):
                        total += _own_cpu_seconds(child)
                    todo.append(child)
    return total


def in_process(
    home: Path,
    tasks: list[str],
    seed: int,
    seconds: float,
    draw: str = "repeated",
    *,
    again: bool = False,
) -> dict[str, Any]:
    """One thread of this process calling ``prepare`` on a copy of the store, back to back.

    Warmed as the server is when its ratio phases run: with the ``repeated`` draw, every task
    once first (its query vector kept), so both sides are measured in their steady state.
    ``again``: the second measure, on the copy the first made (not on the store the server
    has since written to), warmed the same way."""
    rng = random.Random(seed)
    copy = home.parent / "in-process.db"
    if not again:
        _copy_store(home / "memory.db", copy)
    store = SqliteMemoryStore(copy, create=False)
    try:
        store.prepare(PrepareRequest(task="load the model and the vector cache"))
        for task in tasks if draw == "repeated" else ():
            store.prepare(PrepareRequest(task=task))
        latencies: list[float] = []
        began, cpu = time.perf_counter(), time.process_time()
        while time.perf_counter() - began < seconds:
            task = draw_task(rng, tasks, draw)
            one = time.perf_counter()
            store.prepare(PrepareRequest(task=task))
            latencies.append(time.perf_counter() - one)
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    finally:
        store.close()
    return {
        "calls": len(latencies),
        "callsPerSecond": round(len(latencies) / elapsed, 1),
        "p50S": round(_percentile(latencies, 50) or 0.0, 4),
        "cpuMsPerCall": round(1000 * cpu / len(latencies), 2),
    }


def _with_cpu(summary: dict[str, Any], server: float, client: float) -> dict[str, Any]:
    """CPU time per answered call, of the server and of this process (the clients)."""
    answered = sum(summary[kind]["answered"] for kind in ("prepare", "record"))
    per_call = (lambda seconds: round(1000 * seconds / answered, 2)) if answered else None
    summary["serverCpuMsPerCall"] = per_call(server) if per_call else None
    summary["clientCpuMsPerCall"] = per_call(client) if per_call else None
    return summary


async def open_loop(
    url: str, token: str, load: Load, args: argparse.Namespace, rate: float, pid: int
) -> dict[str, Any]:
    async with _clients(url, token, args.clients, args.client) as connected:
        total = int(rate * args.duration)
        server, client = _cpu_seconds(pid), time.process_time()
        began = time.perf_counter()
        async with anyio.create_task_group() as group:
            for number in range(total):
                arrival = began + number / rate
                await anyio.sleep(max(0.0, arrival - time.perf_counter()))
                group.start_soon(load.send, connected[number % args.clients], arrival)
        summary = load.summary(time.perf_counter() - began)
        return _with_cpu(summary, _cpu_seconds(pid) - server, time.process_time() - client)


async def closed_loop(
    url: str, token: str, load: Load, args: argparse.Namespace, duration: float, pid: int
) -> dict[str, Any]:
    async with _clients(url, token, args.clients, args.client) as connected:
        began = time.perf_counter()
        server, client = _cpu_seconds(pid), time.process_time()
        stop = anyio.Event()

        async def worker(client: Any) -> None:
            while time.perf_counter() - began < duration and not stop.is_set():
                await load.send(client, time.perf_counter())

        if load.on_acknowledged is not None:
            kill = load.on_acknowledged

            def stop_after(count: int) -> None:
                if kill(count):
                    stop.set()

            load.on_acknowledged = stop_after
        with anyio.move_on_after(duration + 70):
            async with anyio.create_task_group() as group:
                for each in connected:
                    group.start_soon(worker, each)
        summary = load.summary(time.perf_counter() - began)
        with contextlib.suppress(OSError):  # the fault mode's server is gone by now
            return _with_cpu(summary, _cpu_seconds(pid) - server, time.process_time() - client)
        return summary


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


async def sigterm_under_backlog(
    url: str, token: str, tasks: list[str], process: subprocess.Popen[bytes], count: int
) -> dict[str, Any]:
    """``count`` ``lore_prepare`` requests at once, SIGTERM once some wait in the queue: how
    long the server takes to exit and what each request was answered."""
    answers: dict[str, int] = {}
    signalled: list[float] = []
    health = url.removesuffix("/mcp") + "/healthz"
    limits = httpx2.Limits(max_connections=count + 8)
    async with httpx2.AsyncClient(timeout=120, limits=limits) as http:
        raw = RawClient(http, url)
        http.headers.update(
            {
                "Authorization": f"Bearer {token}",
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
                "Mcp-Protocol-Version": PROTOCOL,
            }
        )

        async def one(number: int) -> None:
            try:
                await raw.call("lore_prepare", {"task": tasks[number % len(tasks)]})
                outcome = "answered"
            except Busy:
                outcome = "refused503"
            except Exception:  # cut off: a failure
                outcome = "failed"
            when = "AfterSigterm" if signalled else "BeforeSigterm"
            answers[outcome + when] = answers.get(outcome + when, 0) + 1

        async with anyio.create_task_group() as group:
            for number in range(count):
                group.start_soon(one, number)
            with anyio.move_on_after(60):
                while (await http.get(health)).json().get("queued", 0) == 0:
                    await anyio.sleep(0.05)
            signalled.append(time.perf_counter())
            process.send_signal(signal.SIGTERM)
            await anyio.to_thread.run_sync(functools.partial(process.wait, 120))
        seconds = round(time.perf_counter() - signalled[0], 2)
    return {"requests": count, "exitAfterSigtermS": seconds, **dict(sorted(answers.items()))}


def fault(home: Path, project: Path, token: str, tasks: list[str], args: argparse.Namespace):
    process, url = _start(home, project, args.workers)
    load = Load(tasks, args.seed + 2)
    in_flight_at_kill: list[int] = []

    def kill_at(count: int) -> bool:
        """SIGKILL once ``--fault-after`` records are acknowledged, with the clients' requests
        in flight (those get no answer and are not counted as acknowledged)."""
        if count >= args.fault_after and not in_flight_at_kill:
            in_flight_at_kill.append(load.pending)
            os.kill(process.pid, signal.SIGKILL)
        return bool(in_flight_at_kill)  # True: the clients send no new request

    load.on_acknowledged = kill_at
    try:
        anyio.run(closed_loop, url, token, load, args, 600.0, process.pid)
    except Exception as exc:  # the clients' sessions end with the server: expected here
        print(f"fault: the clients stopped with the server ({type(exc).__name__})", file=sys.stderr)
    if not in_flight_at_kill:
        process.kill()
    process.wait(timeout=60)
    killed_by = -process.returncode if process.returncode is not None else None
    # The lock went with the killed process; its workers were killed with it (by the kernel).
    again, _ = _start(home, project, args.workers)
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
        "inFlightAtKill": in_flight_at_kill[0] if in_flight_at_kill else None,
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
        tasks = _build_store(home, args.size, args.seed, args.store_from)
        build_s = time.perf_counter() - built
        token = create_token(home / "memory.db", "bench", "write")
        load_before = os.getloadavg()
        alone = in_process(home, tasks, args.seed + 1, args.in_process_duration, args.draw)
        print(json.dumps({"inProcess": alone}), file=sys.stderr, flush=True)
        process, url = _start(home, project, args.workers)
        try:
            pid = process.pid
            closed = anyio.run(
                closed_loop,
                url,
                token,
                Load(tasks, args.seed + 1, draw=args.draw),
                args,
                args.closed_duration,
                pid,
            )
            print(json.dumps({"closedLoop": closed}), file=sys.stderr, flush=True)
            if args.rate is None:
                args.rate = round(OPEN_LOOP_SHARE * closed["answeredPerSecond"], 1)
            opened = anyio.run(
                open_loop, url, token, Load(tasks, args.seed, draw=args.draw), args, args.rate, pid
            )
            print(json.dumps({"openLoop": opened}), file=sys.stderr, flush=True)
            # The ratios' phases: prepare only, the in-process thread's work.
            only = {"record_share": 0.0, "draw": args.draw}
            closed_only = anyio.run(
                closed_loop,
                url,
                token,
                Load(tasks, args.seed + 3, **only),
                args,
                args.closed_duration,
                pid,
            )
            print(json.dumps({"closedLoopPrepareOnly": closed_only}), file=sys.stderr, flush=True)
            rate_only = round(OPEN_LOOP_SHARE * closed_only["answeredPerSecond"], 1)
            opened_only = anyio.run(
                open_loop, url, token, Load(tasks, args.seed + 4, **only), args, rate_only, pid
            )
            print(json.dumps({"openLoopPrepareOnly": opened_only}), file=sys.stderr, flush=True)
            backlog = anyio.run(sigterm_under_backlog, url, token, tasks, process, args.backlog)
        finally:
            if process.poll() is None:
                _terminate(process)
        # The yardstick again, now that the server has stopped: the ratios divide by the mean
        # of the two, so a machine that speeds up or slows down during the run moves both sides.
        after = in_process(
            home, tasks, args.seed + 1, args.in_process_duration, args.draw, again=True
        )
        print(json.dumps({"inProcessAfter": after}), file=sys.stderr, flush=True)
        faulted = fault(home, project, token, tasks, args) if args.fault_after > 0 else None
        load_after = os.getloadavg()
    p95 = opened["prepare"]["p95S"]
    yardstick = {
        "callsPerSecond": round((alone["callsPerSecond"] + after["callsPerSecond"]) / 2, 1),
        "p50S": round((alone["p50S"] + after["p50S"]) / 2, 4),
    }
    scaling = round(closed_only["answeredPerSecond"] / yardstick["callsPerSecond"], 2)
    headroom = None
    only_p95 = opened_only["prepare"]["p95S"]
    if only_p95 is not None and yardstick["p50S"]:
        headroom = round(only_p95 / yardstick["p50S"], 2)
    mixed_headroom = None
    if args.rate_share is not None and p95 is not None and yardstick["p50S"]:
        mixed_headroom = round(p95 / yardstick["p50S"], 2)
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "storeSize": args.size,
        "storeBuildS": round(build_s, 1),
        "storeCopied": args.store_from is not None,
        "clients": args.clients,
        "client": args.client,
        "mix": {"prepare": 0.8, "record": 0.2},
        "draw": args.draw,
        "loadAverageBefore": [round(v, 2) for v in load_before],
        "loadAverageAfter": [round(v, 2) for v in load_after],
        "workers": args.workers,
        "inProcess": alone,
        "inProcessAfter": after,
        "yardstick": yardstick,
        "coreScaling": scaling,
        "openLoopHeadroom": headroom,
        "mixed": {
            "coreScaling": round(closed["answeredPerSecond"] / yardstick["callsPerSecond"], 2),
            "openLoopHeadroom": mixed_headroom,
        },
        "sigtermUnderBacklog": backlog,
        "openLoop": {"ratePerSecond": args.rate, **opened},
        "closedLoop": closed,
        "openLoopPrepareOnly": {"ratePerSecond": rate_only, **opened_only},
        "closedLoopPrepareOnly": closed_only,
        "fault": faulted,
        "targets": TARGETS,
        "met": {
            "openLoopPrepareP95": p95 is not None and p95 <= TARGETS["openLoopPrepareP95S"],
            "closedLoopRps": closed["answeredPerSecond"] >= TARGETS["closedLoopRps"],
            "coreScaling": scaling >= TARGETS["coreScaling"],
            "openLoopHeadroom": headroom is not None and headroom <= TARGETS["openLoopHeadroom"],
            "noLostRecords": faulted is not None
            and faulted["lostRecords"] == 0
            and faulted["integrityCheck"] == "ok",
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument(
        "--rate",
        type=float,
        default=None,
        help="open loop: requests per second (default: 70%% of the closed loop's throughput)",
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="server processes (default: the server's)"
    )
    parser.add_argument(
        "--in-process-duration",
        type=float,
        default=15.0,
        help="seconds of prepare calls in one thread of this process",
    )
    parser.add_argument("--duration", type=float, default=60.0, help="open loop: seconds")
    parser.add_argument("--closed-duration", type=float, default=30.0)
    parser.add_argument(
        "--fault-after",
        type=int,
        default=200,
        help="SIGKILL after N acknowledged records (0: no fault test)",
    )
    parser.add_argument("--client", choices=("sdk", "raw"), default="sdk")
    parser.add_argument(
        "--backlog", type=int, default=200, help="requests at once before the SIGTERM"
    )
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument(
        "--draw",
        choices=DRAWS,
        default="repeated",
        help="prepare's tasks: the 400 tasks, repeated (default), or each one new",
    )
    parser.add_argument(
        "--store-from",
        type=Path,
        default=None,
        help="copy this store (built by an earlier run with the same --size and --seed) "
        "instead of building one",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    args.rate_share = OPEN_LOOP_SHARE if args.rate is None else None
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
                    f" refused {row['refused']:>4}"
                    f"  p50 {row['p50S']}  p95 {row['p95S']}  p99 {row['p99S']} s"
                )
            print(
                f"{name:<12} {part['answeredPerSecond']} answered/s; CPU per call: server "
                f"{part.get('serverCpuMsPerCall')} ms, clients {part.get('clientCpuMsPerCall')} ms"
            )
        if f is not None:
            print(
                f"fault: SIGKILL (signal {f['killedBySignal']}); {f['acknowledgedRecords']} "
                f"acknowledged records, {f['inFlightAtKill']} requests in flight at the kill, "
                f"{f['lostRecords']} lost; integrity_check "
                f"{f['integrityCheck']}"
            )
        for name, alone in (("before", report["inProcess"]), ("after", report["inProcessAfter"])):
            print(
                f"in process (one thread), {name} the server: {alone['callsPerSecond']} "
                f"prepares/s, p50 {alone['p50S']} s, {alone['cpuMsPerCall']} ms CPU per call "
                f"({report['draw']} draw)"
            )
        c1, o1 = report["closedLoopPrepareOnly"], report["openLoopPrepareOnly"]
        print(
            f"prepare only: closed loop {c1['answeredPerSecond']}/s (server "
            f"{c1.get('serverCpuMsPerCall')} ms CPU per call), open loop at "
            f"{o1['ratePerSecond']}/s: p50 {o1['prepare']['p50S']} p95 {o1['prepare']['p95S']} s;"
            f" coreScaling {report['coreScaling']}, openLoopHeadroom {report['openLoopHeadroom']}"
            f" (mixed loops: {report['mixed']['coreScaling']}, "
            f"{report['mixed']['openLoopHeadroom']})"
        )
        print("SIGTERM under a backlog:", json.dumps(report["sigtermUnderBacklog"]))
        print("met:", json.dumps(report["met"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
