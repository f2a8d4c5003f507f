"""A scripted test host (role ``host``) for the rework tests: it does what a script says.

A test double, not an agent. ``CYCLE_HOST_SCRIPT`` names a JSON list with one entry per
attempt: ``{"write": true}`` writes ``done/<task id>`` (what the mini project's ``check.py``
verifies); ``"cycles"`` is reported as given, with ``VERIFY`` replaced by ``task.verify`` (an
entry without ``"cycles"`` reports none). Every payload is appended, one JSON line each, to
the file ``CYCLE_HOST_LOG`` names (outside the project copy).
"""

import json
import os
import sys
from pathlib import Path

payload = json.loads(sys.stdin.read())
with open(os.environ["CYCLE_HOST_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(payload) + "\n")
script = json.loads(Path(os.environ["CYCLE_HOST_SCRIPT"]).read_text(encoding="utf-8"))
step = script[min(payload["attempt"], len(script)) - 1]
task = payload["task"]
if step.get("write"):
    Path("done", task["id"]).write_text("done\n", encoding="utf-8")
response = {"summary": "scripted", "commands": []}
if "cycles" in step:
    text = json.dumps(step["cycles"]).replace('"VERIFY"', json.dumps(task.get("verify")))
    response["cycles"] = json.loads(text)
print(json.dumps(response))
