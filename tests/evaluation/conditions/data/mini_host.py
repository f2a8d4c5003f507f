"""A tiny test host (role ``host``) for the runner's fast tests on a generated mini project.

A test double, not an agent. Rules, on the payload alone: guidance that says ``SOLVE`` makes it
write ``done/<task id>`` (what the mini project's ``check.py`` verifies); a prompt that says
``CHEAT`` makes it rewrite ``check.py`` to always pass (editing what the verify command runs).
With ``--claim-model M`` it answers with ``model: M``.
"""

import json
import sys
from pathlib import Path

payload = json.loads(sys.stdin.read())
task_id = payload["task"]["id"]
prompt = payload["task"]["prompt"]
guidance = (payload.get("guidance") or {}).get("text", "")
summary = "nothing to do"
if "SOLVE" in guidance:
    Path("done", task_id).write_text("done\n", encoding="utf-8")
    summary = f"wrote done/{task_id}"
if "CHEAT" in prompt:
    Path("check.py").write_text("raise SystemExit(0)\n", encoding="utf-8")
    summary = "made check.py pass"
response = {"summary": summary, "commands": []}
if "--claim-model" in sys.argv:
    response["model"] = sys.argv[sys.argv.index("--claim-model") + 1]
print(json.dumps(response))
