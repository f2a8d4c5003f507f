"""The conditions board set (benchmarks/data/conditions-board/): its counts, its manifests and
seed files, and the ground truth of its tasks under the fixture host."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lorelab.evaluation.conditions._manifest import load_manifest
from lorelab.evaluation.conditions._seed import read_seed
from lorelab.testing.fixture_host import TASKS, answer, board_tasks

REPO = Path(__file__).resolve().parents[3]
SET = REPO / "benchmarks" / "data" / "conditions-board"
PROJECTS = ("billing", "rota", "lending")
MANIFESTS = {name: load_manifest(SET / name / "conditions.json") for name in PROJECTS}


def _seed(name: str):
    return read_seed(SET / name / "memory_seed.json")


def _payload(task, guidance=None, attempt=1):
    return {
        "protocol": "lorelab.worker/1",
        "role": "host",
        "task": {"id": task.id, "prompt": task.prompt, "verify": task.verify},
        "guidance": None if guidance is None else {"kind": "brief", "text": guidance},
        "attempt": attempt,
        "lastVerification": None,
    }


def _verify(project: Path, argv: list[str]) -> int:
    argv = list(argv)
    argv[0] = sys.executable
    return subprocess.run(argv, cwd=project, capture_output=True, check=False).returncode


def test_the_committed_set_is_what_generate_writes():
    completed = subprocess.run(
        [sys.executable, str(SET / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr


def test_the_set_has_40_holdouts_over_3_projects_and_200_seeds_per_store():
    holdouts = [t.id for m in MANIFESTS.values() for t in m.tasks if t.holdout]
    assert len(holdouts) >= 40
    assert len(set(holdouts)) == len(holdouts)
    assert len({m.project.path for m in MANIFESTS.values()}) == 1  # "project", per directory
    assert len({(SET / name / "project").resolve() for name in PROJECTS}) == 3
    for name in PROJECTS:
        assert len(_seed(name).experiences) >= 200, name


def test_every_seed_is_a_verified_record_request_with_its_fields():
    for name in PROJECTS:
        seed = _seed(name)  # read_seed validates each entry against lore_record's model
        for index, entry in enumerate(seed.experiences):
            assert entry["outcome"] == "passed", (name, index)
            assert entry["verification"]["exit_code"] == 0, (name, index)
            assert entry["verification"]["command"].startswith("python -m unittest"), index
            assert entry["files"], (name, index)
            assert entry["project"] in PROJECTS, (name, index)
            assert entry["task"].strip(), (name, index)
            assert entry["summary"].strip(), (name, index)


def test_the_manifest_seeds_come_first_and_no_seed_records_a_holdout():
    for name, manifest in MANIFESTS.items():
        seed = _seed(name)
        declared = [s.task_id for s in manifest.seeds]
        assert [e.get("task_id") for e in seed.experiences[:2]] == declared
        assert all("task_id" not in e for e in seed.experiences[2:])
        holdout_texts = {t.prompt for t in manifest.tasks if t.holdout}
        assert not holdout_texts & {e["task"] for e in seed.experiences}
        assert seed.promote_skill["experience_ids"] == ["exp-1", "exp-2"]


def test_most_seeds_are_distractors_for_every_holdout():
    for name, manifest in MANIFESTS.items():
        experiences = _seed(name).experiences
        for task in manifest.tasks:
            if not task.holdout:
                continue
            naming = [e for e in experiences if task.files[0] in e["summary"] + e["task"]]
            assert len(naming) * 2 < len(experiences), task.id
            own_project = [e for e in experiences if e["project"] == name]
            others = [e for e in own_project if task.files[0] not in e["files"]]
            assert len(others) > len(own_project) // 2, task.id


def test_recall_holdouts_have_a_remembered_file_and_fresh_holdouts_none():
    for name, manifest in MANIFESTS.items():
        experiences = _seed(name).experiences
        recall = [t for t in manifest.tasks if t.holdout and t.id.split("-")[1].startswith("a")]
        fresh = [t for t in manifest.tasks if t.holdout and t.id.split("-")[1].startswith("b")]
        assert len(recall) == 8
        assert len(fresh) == 6
        for task in recall:
            assert task.files[0] not in task.prompt, task.id
            assert any(task.files[0] in e["files"] for e in experiences), task.id
        for task in fresh:
            assert task.files[0] in task.prompt, task.id
            assert not any(task.files[0] in e["files"] for e in experiences), task.id


def test_the_fixture_host_knows_the_set_and_its_ids_never_clash_with_the_example():
    board = board_tasks()
    ids = {t.id for m in MANIFESTS.values() for t in m.tasks}
    assert set(board) == ids
    assert not set(board) & set(TASKS)
    for manifest in MANIFESTS.values():
        for task in manifest.tasks:
            assert set(board[task.id].needs) <= set(task.files) | set(task.commands), task.id
            assert task.files[0] not in board[task.id].decoys


def test_every_seed_verification_passes_on_the_pristine_projects():
    # Distractors are history: the test each one names passes now (one unittest process).
    for name in PROJECTS:
        commands = {
            e["verification"]["command"]
            for e in _seed(name).experiences
            if e["project"] == name and "task_id" not in e
        }
        ids = sorted(command.split()[-1] for command in commands)
        assert len(ids) >= 30
        argv = [sys.executable, "-m", "unittest", "-q", *ids]
        completed = subprocess.run(
            argv, cwd=SET / name / "project", capture_output=True, text=True, check=False
        )
        assert completed.returncode == 0, completed.stderr[-2000:]


def test_every_task_test_fails_on_the_pristine_projects():
    # one unittest process per project: every task's test, each must fail or error
    for name, manifest in MANIFESTS.items():
        ids = [task.verify_argv()[-1] for task in manifest.tasks]
        assert all(test_id.startswith("tests.test_reported.") for test_id in ids)
        completed = subprocess.run(
            [sys.executable, "-m", "unittest", *ids],
            cwd=SET / name / "project",
            capture_output=True,
            text=True,
            check=False,
        )
        failed = {
            line.split("(")[1].rstrip(")").strip()
            for line in completed.stderr.splitlines()
            if line.startswith(("FAIL: ", "ERROR: "))
        }
        assert failed == set(ids), completed.stderr[-2000:]


@pytest.mark.parametrize(
    ("name", "task_id"),
    [("billing", "bl-a01"), ("rota", "ro-b03"), ("lending", "le-a05"), ("lending", "le-b06")],
)
def test_ground_truth_of_a_task_under_the_fixture_host(tmp_path, name, task_id):
    task = MANIFESTS[name].task(task_id)
    fresh = task.files[0] in task.prompt

    def run(guidance):
        copy = tmp_path / f"copy-{len(list(tmp_path.iterdir()))}"
        shutil.copytree(SET / name / "project", copy)
        response = answer(_payload(task, guidance), copy)
        return _verify(copy, task.verify_argv()), response

    # no guidance: a fresh holdout names its file (solved), a recall holdout does not (wrong)
    code, response = run(None)
    assert (code == 0) is fresh, response["summary"]
    # guidance that names the file solves it
    code, response = run(f"An earlier fix touched {task.files[0]}.")
    assert code == 0, response["summary"]
    # guidance that names only another file of the project misleads it
    decoy = board_tasks()[task_id].decoys[0]
    code, response = run(f"An earlier fix touched {decoy}.")
    assert code != 0
    assert "misled" in response["summary"]
