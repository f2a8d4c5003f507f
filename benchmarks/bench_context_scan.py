"""Time ``lorelab eval context scan`` over a generated directory of 200 sessions.

Usage: ``python benchmarks/bench_context_scan.py [--sessions 200] [--records 600]``

Half the sessions are Claude Code JSONL, half Codex CLI rollouts (synthetic, generated here in
the published formats), each with a few hundred records: user turns, shell commands that fail
and pass, tool output of a few hundred characters, one or two compactions, and a subagent in
every fifth Claude Code session. The scan runs as a user runs it (the installed ``lorelab``
program, writing receipts), and the wall time is printed with the totals line. Target: under
10 s for 200 sessions.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

OUTPUT = "E   AssertionError: expected 200 but the service answered 503 Service Unavailable\n" * 6


def claude_session(number: int, records: int, rng: random.Random) -> list[dict[str, Any]]:
    session = f"00000000-0000-4000-8000-{number:012d}"
    base = {"sessionId": session, "version": "2.0.14", "cwd": "/home/dev/project",
            "gitBranch": "main", "userType": "external", "isSidechain": False}  # fmt: skip
    lines: list[dict[str, Any]] = [
        {**base, "type": "user", "uuid": "u0", "timestamp": "2026-11-30T09:00:00Z",
         "message": {"role": "user", "content": "Fix the failing integration tests."}}
    ]  # fmt: skip
    commands = [f"pytest tests/test_{k}.py -x" for k in range(8)]
    sidechain = number % 5 == 0
    for step in range(records // 2):
        tool = f"toolu_{step}"
        command = rng.choice(commands)
        failed = rng.random() < 0.3
        if step in (records // 6, records // 3):
            lines.append({**base, "type": "system", "subtype": "compact_boundary",
                          "compactMetadata": {"trigger": "auto", "preTokens": 155000}})  # fmt: skip
            summary = {"role": "user", "content": "Summary of the work."}
            lines.append({**base, "type": "user", "isCompactSummary": True, "message": summary})
        side = sidechain and records // 4 <= step < records // 4 + 10
        use = {"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": command}}
        usage = {"input_tokens": 900, "output_tokens": 40}
        message = {"id": f"msg_{step}", "role": "assistant", "model": "claude-sonnet-4-5",
                   "content": [use], "usage": usage}  # fmt: skip
        lines.append({**base, "isSidechain": side, "type": "assistant", "uuid": f"a{step}",
                      "message": message})  # fmt: skip
        text = f"Exit code 1\n{OUTPUT}" if failed else "12 passed"
        lines.append({**base, "isSidechain": side, "type": "user", "uuid": f"r{step}",
                      "message": {"role": "user", "content": [
                          {"tool_use_id": tool, "type": "tool_result", "content": text,
                           "is_error": failed}]}})  # fmt: skip
    return lines


def codex_session(number: int, records: int, rng: random.Random) -> list[dict[str, Any]]:
    def line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": "2026-11-30T10:00:00Z", "type": kind, "payload": payload}

    session = f"0193a4b2-0000-7000-8000-{number:012d}"
    lines = [
        line("session_meta", {"id": session, "cwd": "/home/dev/api", "cli_version": "0.58.0"}),
        line("turn_context", {"cwd": "/home/dev/api", "model": "gpt-5-codex"}),
    ]
    commands = [f"make test-{k}" for k in range(8)]
    for step in range(records // 3):
        if step == records // 6:
            lines += [line("compacted", {"message": "summary"}),
                      line("event_msg", {"type": "context_compacted"})]  # fmt: skip
        command = rng.choice(commands)
        code = 2 if rng.random() < 0.3 else 0
        call = f"call_{step}"
        argv = ["bash", "-lc", command]
        lines += [
            line("response_item", {"type": "function_call", "name": "shell", "call_id": call,
                                   "arguments": json.dumps({"command": argv})}),
            line("event_msg", {"type": "exec_command_end", "call_id": call, "command": argv,
                               "exit_code": code, "aggregated_output": OUTPUT}),
            line("response_item", {"type": "function_call_output", "call_id": call,
                                   "output": json.dumps({"output": OUTPUT,
                                                         "metadata": {"exit_code": code}})}),
        ]  # fmt: skip
    return lines


def generate(root: Path, sessions: int, records: int) -> int:
    rng = random.Random(20261201)
    total = 0
    for number in range(sessions):
        build = claude_session if number % 2 == 0 else codex_session
        folder = root / ("claude" if number % 2 == 0 else "codex")
        folder.mkdir(exist_ok=True)
        data = "".join(json.dumps(r) + "\n" for r in build(number, records, rng))
        (folder / f"session-{number:04d}.jsonl").write_text(data)
        total += len(data)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--records", type=int, default=600)
    args = parser.parse_args()
    lorelab = Path(sys.executable).parent / "lorelab"
    with tempfile.TemporaryDirectory(prefix="lorelab-bench-scan-") as tmp:
        root = Path(tmp) / "sessions"
        root.mkdir()
        size = generate(root, args.sessions, args.records)
        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.run(
            [str(lorelab), "eval", "context", "scan", str(root), "--output", f"{tmp}/receipts"],
            capture_output=True,
            text=True,
            check=False,
        )
        elapsed = time.perf_counter() - started
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (
            cpu_after.ru_stime - cpu_before.ru_stime
        )
        if proc.returncode not in (0, 1):
            sys.exit(f"scan failed ({proc.returncode}): {proc.stderr.strip()}")
        total = next(line for line in proc.stdout.splitlines() if line.startswith("total"))
        load = (
            Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
        )
        print(
            f"{args.sessions} sessions, {size / 1e6:.1f} MB: scan took {elapsed:.2f} s wall, "
            f"{cpu:.2f} s CPU (load average {load})"
        )
        print(total)


if __name__ == "__main__":
    main()
