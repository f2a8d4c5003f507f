"""Helpers shared by the conditions tests: the mini project's manifest and seed file."""

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
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
