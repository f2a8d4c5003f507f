"""Start-up cost of the ``lorelab`` program, as whole processes, against ``python -c pass``.

Run:  python benchmarks/bench_cli.py [--runs 15] [--json]

Every figure is the median wall time of N fresh processes, measured in the same run as the
baseline ``python -c pass`` with the same interpreter, interleaved round by round so that a
busy machine slows both alike. Each process's own CPU time (user + system, from ``wait4``) is
reported beside it, with its ratio to the baseline's, and the load average before and after:
on a shared machine the CPU ratio is the steadier figure. Targets (on wall time, as medians):

- ``lorelab --version`` and ``lorelab --help``: at most 10x the baseline;
- ``lorelab memory prepare`` on a one-item store, and every ``lorelab hooks run EVENT`` handler: at
  most 20x the baseline;
- ``hook UserPromptSubmit (via server)``: the same hook with a ``lorelab serve`` running
  for its store (the hooks' fast path), at most 5x the baseline; the in-process row beside it;
- ``lorelab mcp``, from spawn to the tools listed by the MCP SDK's own client: at most 0.8 s.
  Beside it, a reference without target: the import of the SDK's server modules, the way
  ``lorelab mcp`` imports them, timed inside a fresh process: the SDK's part of that start.

Not part of the test suite: tests never depend on wall-clock time. The hook rows (``hook
EVENT``) appear once the program has a hook command: ``hooks run`` (``hook`` in releases before
it); each replays one payload in Claude Code's format.
``hook Stop`` is the common turn end, with nothing to record; ``hook Stop (records)`` first
journals a prompt, an edit and a passing test command in a new session (untimed), then times
the Stop that records that session's verified experience.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lorelab._state import server_file

PROGRAM = [sys.executable, "-m", "lorelab"]
VIA_SERVER = "hook UserPromptSubmit (via server)"
TARGETS = {"version": 10.0, "help": 10.0, "memory prepare": 20.0, VIA_SERVER: 5.0}
HOOK_TARGET = 20.0
MCP_TARGET_S = 0.8
SDK_IMPORT = (
    "import time\n"
    "started = time.perf_counter()\n"
    "from lorelab.cli._mcp_sdk import load_server_modules\n"
    "load_server_modules()\n"
    "print(time.perf_counter() - started)\n"
)
"""Times, inside a fresh process, the import of what ``lorelab mcp`` uses of the MCP SDK, the way
it imports it: the part of the server's start that is the SDK's (a reference, with no target;
the process's own exit, slow after so many imports, is not counted, as it is not in the
server's spawn-to-tools time)."""


def _sdk_import_s(env: dict[str, str]) -> float:
    done = subprocess.run(
        [sys.executable, "-c", SDK_IMPORT], capture_output=True, text=True, env=env, check=True
    )
    return float(done.stdout.strip())


def _time_process(argv: list[str], env: dict[str, str], stdin: bytes = b"") -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the child's own) of one process."""
    with tempfile.TemporaryFile() as given, tempfile.TemporaryFile() as errors:
        given.write(stdin)
        given.seek(0)
        started = time.perf_counter()
        child = subprocess.Popen(
            argv, stdin=given, stdout=subprocess.DEVNULL, stderr=errors, env=env
        )
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            errors.seek(0)
            message = errors.read().decode(errors="replace")[-500:]
            raise SystemExit(f"{argv} exited {child.returncode}: {message}")
    return elapsed, usage.ru_utime + usage.ru_stime


def _mcp_spawn_to_tools(home: Path) -> float:
    import anyio
    from mcp.client.stdio import get_default_environment, stdio_client

    from mcp import ClientSession, StdioServerParameters

    # The SDK starts a stdio server with a minimal environment; PYTHONPATH is passed on so
    # that a source tree given that way is the one measured, as in the other rows.
    extra = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lorelab", "mcp", "--home", str(home)],
        env={**get_default_environment(), **extra},
    )

    async def listed() -> float:
        started = time.perf_counter()
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            elapsed = time.perf_counter() - started
            if not tools.tools:
                raise SystemExit("lorelab mcp listed no tools")
            return elapsed

    return anyio.run(listed)


def _one_item_store(home: Path, env: dict[str, str]) -> None:
    subprocess.run(
        [
            *PROGRAM,
            "memory",
            "--home",
            str(home),
            "record",
            "--task",
            "Fix the failing date parser test",
            "--summary",
            "Parse ISO dates with a timezone; the test passes",
            "--outcome",
            "passed",
            "--verify-command",
            "pytest -q tests/test_dates.py",
            "--verify-exit-code",
            "0",
        ],
        check=True,
        capture_output=True,
        env=env,
    )


def _claude_code_input(project: Path, session: str, fields: dict[str, object]) -> bytes:
    """One hook payload in Claude Code's hook input format (its hooks reference)."""
    base = {
        "session_id": session,
        "transcript_path": str(project / "transcript.jsonl"),
        "cwd": str(project),
    }
    return json.dumps({**base, **fields}).encode()


@functools.cache
def _hook_spelling() -> tuple[str, ...] | None:
    """How the program runs a hook: ``hooks run``, ``hook`` (earlier releases), or None."""
    for spelling in (("hooks", "run"), ("hook",)):
        done = subprocess.run([*PROGRAM, *spelling, "--help"], capture_output=True, check=False)
        if done.returncode == 0:
            return spelling
    return None


def _hook_cases(project: Path) -> dict[str, bytes]:
    """One payload per hook event, in Claude Code's hook input format (its hooks reference)."""
    if _hook_spelling() is None:
        return {}
    events: dict[str, dict[str, object]] = {
        "SessionStart": {"hook_event_name": "SessionStart", "source": "startup"},
        "UserPromptSubmit": {
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Fix the failing date parser test",
        },
        "PostToolUse": {
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q"},
            "tool_response": {"stdout": "1 passed", "stderr": "", "exit_code": 0},
        },
        "PreCompact": {"hook_event_name": "PreCompact", "trigger": "auto"},
        "Stop": {"hook_event_name": "Stop", "stop_hook_active": False},
    }
    return {
        name: _claude_code_input(project, "bench-session", fields)
        for name, fields in events.items()
    }


def _stop_that_records(project: Path, env: dict[str, str], session: str) -> tuple[float, float]:
    """A Stop that records a verified experience: a new session journals a prompt, an edit and
    a passing test command (untimed), then its Stop is timed (Claude Code's hook input)."""
    steps: list[dict[str, object]] = [
        {"hook_event_name": "UserPromptSubmit", "prompt": f"Fix the date parser ({session})"},
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Edit",
            "tool_input": {"file_path": str(project / "dates.py")},
            "tool_response": {},
        },
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q tests/test_dates.py"},
            "tool_response": {"stdout": "1 passed", "stderr": "", "exit_code": 0},
        },
    ]
    for step in steps:
        event = str(step["hook_event_name"])
        _time_process([*PROGRAM, *_hook(), event], env, _claude_code_input(project, session, step))
    stop = _claude_code_input(
        project, session, {"hook_event_name": "Stop", "stop_hook_active": False}
    )
    return _time_process([*PROGRAM, *_hook(), "Stop"], env, stop)


def _hook() -> tuple[str, ...]:
    spelling = _hook_spelling()
    assert spelling is not None  # only asked for once the hook rows exist
    return spelling


def _start_server(home: Path, project: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A ``lorelab serve`` for ``home``, once its state file (the hooks' fast path) exists."""
    server = subprocess.Popen(
        [*PROGRAM, "serve", "start", "--home", str(home), "--project", str(project), "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if json.loads(server_file(home).read_text()).get("pid") == server.pid:
                return server
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    server.kill()
    raise SystemExit("lorelab serve did not start")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="processes per figure (median)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="lorelab-bench-cli-") as scratch:
        root = Path(scratch)
        home = root / "home"
        project = root / "project"
        project.mkdir()
        (project / "transcript.jsonl").write_text("")
        env = {**os.environ, "LORELAB_HOME": str(home)}
        _one_item_store(home, env)

        cases: dict[str, Callable[[], tuple[float, float]]] = {
            "python -c pass": lambda: _time_process([sys.executable, "-c", "pass"], env),
            "version": lambda: _time_process([*PROGRAM, "--version"], env),
            "help": lambda: _time_process([*PROGRAM, "--help"], env),
            "memory prepare": lambda: _time_process(
                [*PROGRAM, "memory", "prepare", "Fix the date parser test"], env
            ),
        }
        hook_env = {**env, "CLAUDE_PROJECT_DIR": str(project)}
        for event, payload in _hook_cases(project).items():
            cases[f"hook {event}"] = lambda event=event, payload=payload: _time_process(
                [*PROGRAM, *_hook(), event], hook_env, payload
            )
        if cases.keys() >= {"hook Stop"}:
            sessions = itertools.count()
            cases["hook Stop (records)"] = lambda: _stop_that_records(
                project, hook_env, f"bench-record-{next(sessions)}"
            )
        server = None
        if "hook UserPromptSubmit" in cases:
            served_home = root / "served-home"
            _one_item_store(served_home, {**env, "LORELAB_HOME": str(served_home)})
            server = _start_server(served_home, project, env)
            served_env = {**hook_env, "LORELAB_HOME": str(served_home)}
            prompt = _hook_cases(project)["UserPromptSubmit"]
            cases[VIA_SERVER] = lambda: _time_process(
                [*PROGRAM, *_hook(), "UserPromptSubmit"], served_env, prompt
            )
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        mcp_samples: list[float] = []
        sdk_samples: list[float] = []
        load_before = os.getloadavg()
        try:
            for _ in range(args.runs):
                for name, run in cases.items():
                    samples[name].append(run())
                mcp_samples.append(_mcp_spawn_to_tools(home))
                sdk_samples.append(_sdk_import_s(env))
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=60)
        load_after = os.getloadavg()

    baseline = statistics.median(wall for wall, _ in samples["python -c pass"])
    baseline_cpu = statistics.median(cpu for _, cpu in samples["python -c pass"])
    rows = []
    for name, values in samples.items():
        if name == "python -c pass":
            continue
        median = statistics.median(wall for wall, _ in values)
        cpu = statistics.median(cpu for _, cpu in values)
        target = TARGETS.get(name, HOOK_TARGET)
        rows.append(
            {
                "command": name,
                "medianS": round(median, 4),
                "ratio": round(median / baseline, 2),
                "cpuMedianS": round(cpu, 4),
                "cpuRatio": round(cpu / baseline_cpu, 2),
                "targetRatio": target,
                "met": median / baseline <= target,
            }
        )
    mcp_median = statistics.median(mcp_samples)
    sdk_floor = statistics.median(sdk_samples)
    report = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "runs": args.runs,
        "baselineS": round(baseline, 4),
        "baselineCpuS": round(baseline_cpu, 4),
        "loadAverageBefore": [round(v, 2) for v in load_before],
        "loadAverageAfter": [round(v, 2) for v in load_after],
        "commands": rows,
        "mcpSpawnToToolsS": round(mcp_median, 4),
        "mcpTargetS": MCP_TARGET_S,
        "mcpMet": mcp_median <= MCP_TARGET_S,
        "mcpSdkImportS": round(sdk_floor, 4),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(
            f"baseline python -c pass: {baseline * 1000:.1f} ms wall, {baseline_cpu * 1000:.1f} ms"
            f" CPU (medians of {args.runs}); load average {load_before[0]:.2f} before,"
            f" {load_after[0]:.2f} after"
        )
        for row in rows:
            verdict = "ok" if row["met"] else "OVER"
            print(
                f"{row['command']:<24} {row['medianS'] * 1000:8.1f} ms  {row['ratio']:6.2f}x"
                f"  (target <= {row['targetRatio']:g}x) {verdict}"
                f"   CPU {row['cpuMedianS'] * 1000:7.1f} ms {row['cpuRatio']:6.2f}x"
            )
        verdict = "ok" if report["mcpMet"] else "OVER"
        print(
            f"{'mcp spawn to tools':<24} {mcp_median * 1000:8.1f} ms"
            f"  (target <= {MCP_TARGET_S} s) {verdict}"
        )
        print(
            f"{'  the SDK import in it':<24} {sdk_floor * 1000:8.1f} ms"
            "  (the SDK's server modules, timed inside a fresh process; no target)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
