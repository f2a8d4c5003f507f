"""The Skills a dreaming run was served are attributed to it (``skill_id``/``skill_ids``), so a
Skill whose runs fail repeatedly, Dream products included, is marked ``review_required``."""

import json

import anyio
import pytest

from lorelab.errors import SchemaError
from lorelab.evaluation.conditions import evaluate, read_runs
from lorelab.evaluation.conditions._guidance import guidance_for
from lorelab.evaluation.conditions._manifest import CONDITIONS, TaskSpec
from lorelab.evaluation.conditions._memory import LORELAB_PROFILE, lorelab_server_argv, open_memory
from tests.support.conditions import mini_seed


def test_a_dreaming_brief_attributes_the_skill_it_served_to_the_run(tmp_path):
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    (project / "check.py").write_text("print('ok')\n")
    seed = mini_seed()
    task = TaskSpec(
        id="h1",
        prompt="mark the h1 task done: grep for done, write the marker, byte-compile",
        verify="python check.py h1",
        expected_behaviour="done/h1 exists",
        holdout=True,
        files=["done/h1"],
    )

    async def main():
        async with open_memory(
            LORELAB_PROFILE,
            lorelab_server_argv(home, project),
            home=home,
            cwd=project,
            stderr_path=tmp_path / "stderr",
        ) as memory:
            for experience in seed["experiences"]:
                await memory.call("record", experience)
            skill = await memory.call("promote_skill", seed["promoteSkill"])
            dreaming = await guidance_for(memory, task, "dreaming")
            guided = await guidance_for(memory, task, "memory_guided")
            return skill["id"], dreaming, guided

    skill_id, dreaming, guided = anyio.run(main)
    assert dreaming.skill_ids == (skill_id,)
    assert dreaming.skill_id == skill_id
    # memory_guided asks for no Skills, so it is attributed none.
    assert guided.skill_ids == ()
    assert guided.skill_id is None


def _run(task, condition, passed, **extra):
    return {
        "task_id": task,
        "condition": condition,
        "passed": passed,
        "rework_count": 0,
        "retrieval_relevant": None if condition == "baseline" else True,
        "guidance_tokens": 0 if condition == "baseline" else 50,
        "holdout": True,
        **extra,
    }


def test_a_dream_skill_that_fails_on_dreaming_runs_is_marked_review_required(tmp_path):
    runs = []
    for task in ("t1", "t2", "t3"):
        for condition in CONDITIONS:
            extra = {}
            if condition == "dreaming":
                # Two Skills served in one brief: no single skill_id, both attributed.
                extra = {"skill_id": None, "skill_ids": ["skill-7", "skill-1"]}
            runs.append(_run(task, condition, condition != "dreaming", **extra))
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"runs": runs}))
    report = evaluate(read_runs(path))
    flagged = {item.skill_id: item for item in report.review_required}
    assert set(flagged) == {"skill-1", "skill-7"}
    assert flagged["skill-7"].failed_runs == 3
    assert flagged["skill-7"].failed_tasks == ["t1", "t2", "t3"]


def test_a_baseline_run_that_names_served_skills_is_refused(tmp_path):
    runs = [
        _run(
            "t1", condition, True, **({"skill_ids": ["skill-1"]} if condition == "baseline" else {})
        )
        for condition in CONDITIONS
    ]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"runs": runs}))
    with pytest.raises(SchemaError, match="skill_ids skill-1"):
        read_runs(path)
