"""The deterministic fixture host: its rule, its edits on the example project, its protocol."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lorelab.evaluation.conditions._manifest import load_manifest
from lorelab.testing.fixture_host import TASKS, answer, decide
from lorelab.workers import WorkerBounds, adapter_argv, call_worker, validate_response

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "conditions"
MANIFEST = load_manifest(EXAMPLE / "conditions.json")


def _payload(task_id, prompt=None, guidance=None, attempt=1, tail=None):
    return {
        "protocol": "lorelab.worker/1",
        "role": "host",
        "task": {"id": task_id, "prompt": prompt if prompt is not None else "do it"},
        "guidance": None if guidance is None else {"kind": "brief", "text": guidance},
        "attempt": attempt,
        "lastVerification": None
        if tail is None
        else {"command": "verify", "exitCode": 1, "outputTail": tail},
    }


@pytest.fixture
def project(tmp_path):
    copy = tmp_path / "project"
    shutil.copytree(EXAMPLE / "project", copy)
    return copy


def _verify(project: Path, task_id: str) -> int:
    argv = MANIFEST.task(task_id).verify_argv()
    argv[0] = sys.executable
    return subprocess.run(argv, cwd=project, capture_output=True, check=False).returncode


def test_the_fixture_host_knows_every_task_of_the_example_and_nothing_else():
    assert set(TASKS) == {task.id for task in MANIFEST.tasks}


def test_every_need_of_the_fixture_is_a_declared_file_or_command_of_its_task():
    for task in MANIFEST.tasks:
        declared = set(task.files) | set(task.commands)
        assert set(TASKS[task.id].needs) <= declared, task.id


def test_the_fixture_solves_a_task_when_the_guidance_names_what_it_needs():
    task = TASKS["h-line-total-half-up"]
    assert decide(task, "prompt", "see shop/pricing.py", 1, "").kind == "solve"
    assert decide(task, "prompt", "run grep -rn quantize shop", 1, "").kind == "solve"


def test_the_fixture_makes_a_wrong_edit_when_nothing_names_what_the_task_needs():
    action = decide(TASKS["h-line-total-half-up"], "prompt", "see shop/money.py", 1, "")
    assert action.kind == "wrong"


def test_the_fixture_reads_the_last_verification_only_on_a_rework_attempt():
    task = TASKS["h-csv-quoted"]
    tail = "shop/csv_import.py:26: ValueError"
    assert decide(task, "prompt", "", 1, tail).kind == "wrong"
    assert decide(task, "prompt", "", 2, tail).kind == "solve"


def test_guidance_naming_only_a_decoy_misleads_the_fixture_even_when_the_prompt_is_right():
    task = TASKS["h-format-thousands"]
    prompt = "format_amount in shop/money.py needs grouping"
    assert decide(task, prompt, "", 1, "").kind == "solve"
    assert decide(task, prompt, "see shop/tax.py", 1, "").kind == "misled"
    assert decide(task, prompt, "see shop/tax.py and shop/money.py", 1, "").kind == "solve"


def _failed_ids(project: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    return {line.split()[1] for line in done.stdout.splitlines() if line.startswith("FAILED ")}


def _test_id(task_id: str) -> str:
    return MANIFEST.task(task_id).verify_argv()[-1]


def test_every_task_fails_before_any_edit_and_passes_with_the_fixtures_solutions(project, tmp_path):
    assert _failed_ids(project) == {_test_id(task.id) for task in MANIFEST.tasks}
    solved = tmp_path / "solved"
    shutil.copytree(project, solved)
    for task in MANIFEST.tasks:
        response = answer(_payload(task.id, guidance=TASKS[task.id].needs[0]), solved)
        assert "(solve:" in response["summary"], task.id
    assert _failed_ids(solved) == set()


def test_each_wrong_edit_leaves_its_task_failing(project, tmp_path):
    running = {}
    for task in MANIFEST.tasks:
        wrong = tmp_path / f"wrong-{task.id}"
        shutil.copytree(project, wrong)
        response = answer(_payload(task.id, prompt="nothing useful"), wrong)
        assert "(wrong:" in response["summary"], task.id
        argv = task.verify_argv()
        argv[0] = sys.executable
        running[task.id] = subprocess.Popen(
            argv, cwd=wrong, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    codes = {task_id: process.wait(timeout=120) for task_id, process in running.items()}
    assert all(code != 0 for code in codes.values()), codes


def test_a_rework_attempt_after_a_wrong_edit_undoes_it_and_solves(project):
    first = answer(_payload("h-tax-region-case"), project)
    assert "wrong" in first["summary"]
    assert _verify(project, "h-tax-region-case") != 0
    second = answer(
        _payload("h-tax-region-case", attempt=2, tail="shop/tax.py:18: ValueError"), project
    )
    assert "solve" in second["summary"]
    assert _verify(project, "h-tax-region-case") == 0
    text = (project / "shop" / "tax.py").read_text()
    assert "region.strip()]" not in text


def test_an_unknown_task_gets_no_edit_and_an_honest_summary(project):
    before = {p: p.read_bytes() for p in project.rglob("*.py")}
    response = answer(_payload("not-a-task"), project)
    assert "no data for task not-a-task" in response["summary"]
    assert {p: p.read_bytes() for p in project.rglob("*.py")} == before


def test_a_project_that_does_not_match_gets_no_edit(tmp_path):
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "pricing.py").write_text("unrelated\n")
    response = answer(_payload("h-line-total-half-up", guidance="shop/pricing.py"), tmp_path)
    assert "does not match the fixture data" in response["summary"]
    assert (tmp_path / "shop" / "pricing.py").read_text() == "unrelated\n"


def test_the_fixture_runs_the_commands_it_was_pointed_to_and_reports_their_exit_codes(project):
    response = answer(
        _payload("h-discount-half-up", guidance="Run grep -rn quantize shop first."), project
    )
    assert response["commands"] == [{"command": "grep -rn quantize shop", "exitCode": 0}]


def test_through_the_transport_the_fixture_is_a_valid_host_labelled_protocol_fixture(project):
    call = call_worker(
        adapter_argv("fixture-host"),
        "host",
        _payload("n-slug-collapse", prompt="slugify in shop/slug.py collapses nothing"),
        cwd=project,
        bounds=WorkerBounds(timeout_ms=60_000),
    )
    assert call.ok, call.receipt.failure_detail
    assert call.receipt.evidence_kind == "protocol-fixture"
    assert call.receipt.usage is None
    assert call.receipt.model.claimed is None
    validate_response("host", call.response)
    assert _verify(project, "n-slug-collapse") == 0


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        (b"not json", "not JSON"),
        (json.dumps({"role": "author"}).encode(), "role must be 'host'"),
        (json.dumps({"role": "host", "task": {"id": "x"}}).encode(), "task.prompt"),
        (
            json.dumps({"role": "host", "task": {"id": "x", "prompt": "p"}, "attempt": 0}).encode(),
            "attempt",
        ),
    ],
)
def test_an_invalid_payload_gets_a_nonzero_exit_and_one_line_on_stderr(tmp_path, stdin, message):
    done = subprocess.run(
        adapter_argv("fixture-host"), input=stdin, capture_output=True, cwd=tmp_path, check=False
    )
    assert done.returncode == 2
    assert done.stdout == b""
    assert message in done.stderr.decode()
    assert done.stderr.decode().count("\n") == 1


def test_the_fixture_host_says_protocol_fixture_without_importing_lorelab_models():
    from lorelab._model import PROTOCOL_FIXTURE
    from lorelab.testing.fixture_host import EVIDENCE_KIND

    assert EVIDENCE_KIND == PROTOCOL_FIXTURE
    # It starts once per host call: it must not pay for pydantic (or lorelab's models).
    code = "import sys, lorelab.testing.fixture_host; print(sorted(sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "'pydantic'" not in loaded
    assert "'lorelab._model'" not in loaded
