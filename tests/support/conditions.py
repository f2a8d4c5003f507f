"""Helpers shared by the conditions tests: the mini project's manifest and seed file, and runs
files in the protocol's format."""

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.evaluation.conditions._manifest import CONDITIONS

DATA = Path(__file__).resolve().parents[1] / "evaluation" / "conditions" / "data"
MINI_HOST = DATA / "mini_host.py"
MINI_TASKS = ["s1", "s2", "n1", "n2", "h1", "h2", "h3", "h4", "h5", "h6"]
MINI_SHARED = [
    {"command": "grep -rn done .", "exit_code": 0},
    {"command": "python -m compileall -q .", "exit_code": 0},
]


def mini_manifest(project: Path, **host) -> dict:
    """A 10-task manifest (6 holdouts h1-h6; seeds s1, s2 with exp-1, exp-2 and skill-1) over
    the mini project, whose verify commands are a fast ``python check.py TASK``."""
    return {
        "schemaVersion": 1,
        "id": "mini-eval",
        "project": {"path": str(project)},
        "host": {"argv": None, "model": None, "timeBudgetS": 60, **host},
        "promptTemplate": "Task {task_id}: {prompt}",
        "reworkBudget": 0,
        "tasks": [
            {
                "id": task,
                "prompt": f"make check {task} pass",
                "verify": f"python check.py {task}",
                "expectedBehaviour": f"done/{task} exists",
                "holdout": task.startswith("h"),
                "files": [f"done/{task}"],
            }
            for task in MINI_TASKS
        ],
        "seeds": [
            {"taskId": "s1", "experienceId": "exp-1", "qa": "approved"},
            {"taskId": "s2", "experienceId": "exp-2", "qa": "approved"},
        ],
        "sharedProcedure": "grep for done, byte-compile",
        "skill": {
            "id": "skill-1",
            "name": "mark-done",
            "promotedFrom": [
                {"experienceId": "exp-1", "taskId": "s1"},
                {"experienceId": "exp-2", "taskId": "s2"},
            ],
        },
    }


def mini_seed(**first) -> dict:
    """The seed file that gives a fresh lorelab memory exp-1, exp-2 and skill-1."""
    experiences = [
        {
            "task": f"make check {task} pass",
            "task_id": task,
            "summary": f"wrote done/{task}",
            "outcome": "passed",
            "verification": {"command": f"python check.py {task}", "exit_code": 0},
            "commands": MINI_SHARED,
            "files": [f"done/{task}"],
            "qa": "approved",
        }
        for task in ("s1", "s2")
    ]
    experiences[0].update(first)
    return {
        "schemaVersion": 1,
        "experiences": experiences,
        "promoteSkill": {
            "experience_ids": ["exp-1", "exp-2"],
            "name": "mark-done",
            "description": "Mark a task done: grep for done, write the marker, byte-compile.",
        },
    }


def write_mini(base: Path, **host) -> dict[str, Path]:
    """The mini project, its manifest and seed file, written under ``base``."""
    project = write_mini_project(base)
    manifest = base / "conditions.json"
    manifest.write_text(json.dumps(mini_manifest(project, **host)))
    seed = base / "seed.json"
    seed.write_text(json.dumps(mini_seed()))
    return {"manifest": manifest, "seed": seed, "project": project}


def write_mini_project(base: Path) -> Path:
    """The mini project under ``base``: a task is done when ``done/<task>`` exists."""
    project = base / "mini-project"
    (project / "done").mkdir(parents=True)
    (project / "done" / "README").write_text("markers of done tasks\n")
    (project / "check.py").write_text(
        "import pathlib, sys\n"
        "raise SystemExit(0 if pathlib.Path('done', sys.argv[1]).is_file() else 1)\n"
    )
    return project


def run_mini(base: Path, memory_argv: list[str]) -> dict:
    """Run the mini project under all four conditions against the memory ``memory_argv``
    serves (profile memcoder), then finalize and evaluate; the results and output directory."""
    manifest = mini_manifest(write_mini_project(base))
    manifest["memory"] = {"profile": "memcoder", "argv": memory_argv}
    (base / "manifest.json").write_text(json.dumps(manifest))
    seed = mini_seed()
    for experience in seed["experiences"]:
        # MemCoder's QA admits a summary of three words or more; SOLVE makes the mini host
        # solve a task whose guidance serves this experience.
        experience["summary"] = f"SOLVE: wrote the marker file done/{experience['task_id']}"
    seed["promoteSkill"]["description"] = "Make a check pass: grep for done, write the marker."
    (base / "seed.json").write_text(json.dumps(seed))
    output = base / "out"
    runner = CliRunner()
    run = runner.invoke(
        app,
        ["eval", "conditions", "run", "--manifest", str(base / "manifest.json"), "--host",
         json.dumps([sys.executable, str(MINI_HOST)]), "--output", str(output),
         "--seed-memory", str(base / "seed.json"), "--json"],
    )  # fmt: skip
    finalize = runner.invoke(app, ["eval", "conditions", "finalize", "--output", str(output)])
    evaluate = runner.invoke(
        app,
        ["eval", "conditions", "decide", "--input", str(output / "beta2_runs.json"), "--manifest",
         str(base / "manifest.json"), "--json"],
    )  # fmt: skip
    return {"run": run, "finalize": finalize, "evaluate": evaluate, "output": output}


def run_lorelab(*args: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
    """``python -m lorelab ARGS`` as a separate process, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "lorelab", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def run_record(task, condition, passed, rework=0, relevant=True, tokens=100, **extra) -> dict:
    """One run in the protocol's own keys (baseline: no relevance, no guidance tokens)."""
    record = {
        "task_id": task,
        "condition": condition,
        "passed": passed,
        "rework_count": rework,
        "retrieval_relevant": None if condition == "baseline" else relevant,
        "guidance_tokens": 0 if condition == "baseline" else tokens,
        "notes": "",
    }
    record.update(extra)
    return record


def filler_runs(tasks: int, fill_to: int = 10) -> list[dict]:
    """Non-holdout tasks that bring a runs file up to the protocol's 10 tasks."""
    return [
        run_record(f"n{i}", condition, True, holdout=False)
        for i in range(1, fill_to - tasks + 1)
        for condition in CONDITIONS
    ]


def runs_of(outcomes: dict[str, dict[str, bool]], **extra) -> dict:
    """outcomes: task -> condition -> passed. Holdout runs get non-holdout tasks added up to
    the protocol's 10 tasks, so the rule, not the minimum, decides."""
    runs = []
    for task, by_condition in outcomes.items():
        for condition in CONDITIONS:
            runs.append(
                run_record(
                    task,
                    condition,
                    by_condition[condition],
                    rework=0 if by_condition[condition] else 2,
                    **extra,
                )
            )
    if extra.get("holdout") is True:
        runs += filler_runs(len(outcomes))
    return {"runs": runs}


def uniform_outcomes(n, baseline, other) -> dict[str, dict[str, bool]]:
    """Tasks t1..tn where baseline has one outcome and every memory condition the other."""
    return {
        f"t{i}": {
            "baseline": baseline,
            "memory_guided": other,
            "skill_planned": other,
            "dreaming": other,
        }
        for i in range(1, n + 1)
    }
