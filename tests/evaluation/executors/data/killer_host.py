"""A test host (role ``host``) that kills the process running it on one task.

A test double, not an agent. Like the conditions tests' mini host, guidance that says ``SOLVE``
makes it write ``done/<task id>``. With ``--kill-on TASK --marker FILE``, the first run of TASK
that creates FILE sends SIGKILL to its parent, the executor's worker process, then waits to be
reaped: that run's worker dies in the middle of the run (once, whatever the condition).
"""

import json
import os
import signal
import sys
import time
from pathlib import Path

payload = json.loads(sys.stdin.read())
task_id = payload["task"]["id"]
guidance = (payload.get("guidance") or {}).get("text", "")


def _option(name: str) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


marker = _option("--marker")
if task_id == _option("--kill-on") and marker is not None:
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        pass
    else:
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(30)
summary = "nothing to do"
if "SOLVE" in guidance:
    Path("done", task_id).write_text("done\n", encoding="utf-8")
    summary = f"wrote done/{task_id}"
print(json.dumps({"summary": summary, "commands": []}))
