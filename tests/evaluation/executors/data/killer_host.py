"""A test host (role ``host``) that kills the process running it on one task.

A test double, not an agent. Like the conditions tests' mini host, guidance that says ``SOLVE``
makes it write ``done/<task id>``. On the task named by ``--kill-on`` without guidance (the
baseline run) it sends SIGKILL to its parent, the executor's worker process, then waits to be
reaped: the run's worker dies in the middle of the run.
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
if "--kill-on" in sys.argv and task_id == sys.argv[sys.argv.index("--kill-on") + 1]:
    if not guidance:
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(30)
summary = "nothing to do"
if "SOLVE" in guidance:
    Path("done", task_id).write_text("done\n", encoding="utf-8")
    summary = f"wrote done/{task_id}"
print(json.dumps({"summary": summary, "commands": []}))
