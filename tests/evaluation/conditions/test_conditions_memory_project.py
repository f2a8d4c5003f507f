"""The memory server under test gets the run's pristine copy as its project, never the source:
a Dream candidate's checks must see exactly the tree every condition's host sees."""

import json
import shlex
import subprocess
import sys

import pytest

from tests.support.conditions import mini_manifest, mini_seed

pytestmark = pytest.mark.slow

# A check that fails when it runs in a copy of the source (which holds a cache directory the
# snapshot leaves out) and passes in the pristine copy.
NO_CACHE = "python -c \"import os, sys; sys.exit(os.path.exists('.pytest_cache'))\""
MINED = [
    {"command": "python -m compileall -q done", "exit_code": 0},
    {"command": NO_CACHE, "exit_code": 0},
]


def test_dream_checks_run_in_the_pristine_copy_not_in_the_source(mini):
    paths = mini()
    project = paths["project"]
    (project / ".pytest_cache").mkdir()
    (project / ".pytest_cache" / "stale").write_text("left by an earlier pytest run\n")
    seed = mini_seed()
    # Two more verified experiences (non-holdout tasks) that share a procedure the Dream mines.
    for task in ("n1", "n2"):
        seed["experiences"].append(
            {
                "task": f"make check {task} pass",
                "task_id": task,
                "summary": f"wrote done/{task}",
                "outcome": "passed",
                "verification": {"command": f"python check.py {task}", "exit_code": 0},
                "commands": MINED,
                "files": [f"done/{task}"],
            }
        )
    paths = mini(mini_manifest(project), seed)
    output, home = paths["manifest"].parent / "out", paths["manifest"].parent / "home"
    done = subprocess.run(
        [
            sys.executable, "-m", "lorelab", "eval", "conditions", "run",
            "--manifest", str(paths["manifest"]), "--host", "fixture-host",
            "--output", str(output), "--home", str(home),
            "--seed-memory", str(paths["seed"]), "--json",
        ],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    preflight = json.loads((output / "preflight.json").read_text())
    argv = preflight["memory"]["argv"]
    served_project = argv[argv.index("--project") + 1]
    assert served_project != str(project)
    assert served_project.endswith("memory-project")
    dream = json.loads((output / "dream.json").read_text())
    assert len(dream["candidateIds"]) == 1, dream
    [check] = dream["checks"]
    assert [shlex.split(r["command"]) for r in check["results"]] == [
        shlex.split(step["command"]) for step in MINED
    ]
    assert [r["exitCode"] for r in check["results"]] == [0, 0]
    assert check["passed"] is True
    assert list(dream["promoted"]) == dream["candidateIds"]
