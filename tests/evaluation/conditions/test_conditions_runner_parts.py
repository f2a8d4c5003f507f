"""Fast tests of the runner's parts: host and memory resolution, refusals before anything runs,
the memory profiles over a real MCP stdio session, snapshots, verification and relevance."""

import json
import os
import stat
import sys
import time
import uuid
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from lorelab._model import estimate_tokens
from lorelab.cli.main import app
from lorelab.errors import InvalidInput, PathError, PreflightError, UsageError
from lorelab.evaluation.conditions import RunOptions
from lorelab.evaluation.conditions._integrity import lock_tasks
from lorelab.evaluation.conditions._manifest import load_manifest
from lorelab.evaluation.conditions._memory import (
    LORELAB_PROFILE,
    MEMCODER_PROFILE,
    open_memory,
)
from lorelab.evaluation.conditions._relevance import is_relevant, relevance_keys
from lorelab.evaluation.conditions._runner import resolve_host, resolve_memory
from lorelab.evaluation.conditions._snapshot import take_snapshot
from lorelab.evaluation.conditions._verify import command_env, run_verify
from lorelab.io import probe_sandbox
from lorelab.workers import adapter_argv
from tests.support.processes import running_with

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parents[2] / "examples" / "conditions"


@pytest.fixture
def manifest():
    return load_manifest(EXAMPLE / "conditions.json")


def test_the_host_comes_from_the_command_line_when_the_manifest_leaves_it_open(manifest):
    assert resolve_host(manifest, "fixture-host") == adapter_argv("fixture-host")


def test_a_host_different_from_the_manifests_declared_host_is_refused(
    write_json, example_manifest_data
):
    example_manifest_data["host"]["argv"] = ["fixture-host"]
    manifest = load_manifest(write_json(example_manifest_data))
    assert resolve_host(manifest, "fixture-host") == adapter_argv("fixture-host")
    with pytest.raises(UsageError, match="must be identical for every condition"):
        resolve_host(manifest, '["python3", "my_host.py"]')


def test_a_host_given_as_a_shell_command_line_is_refused(manifest):
    with pytest.raises(UsageError, match="neither a shipped adapter"):
        resolve_host(manifest, "python3 my_host.py")


def test_the_lorelab_profile_needs_a_memory_home(manifest, tmp_path):
    options = RunOptions(
        manifest_path=EXAMPLE / "conditions.json", host="fixture-host", output=tmp_path / "o"
    )
    with pytest.raises(UsageError, match="--home"):
        resolve_memory(manifest, options, EXAMPLE / "project")


def test_the_lorelab_profile_starts_lorelab_mcp_on_the_given_home(manifest, tmp_path):
    options = RunOptions(
        manifest_path=EXAMPLE / "conditions.json",
        host="fixture-host",
        output=tmp_path / "o",
        memory_home=tmp_path / "home",
    )
    profile, argv, home = resolve_memory(manifest, options, EXAMPLE / "project")
    assert profile is LORELAB_PROFILE
    assert argv[:4] == [sys.executable, "-m", "lorelab", "mcp"]
    assert argv[argv.index("--home") + 1] == str(tmp_path / "home")
    assert home == tmp_path / "home"


def test_the_memcoder_profile_needs_a_server_argv(write_json, example_manifest_data, tmp_path):
    example_manifest_data["memory"] = {"profile": "memcoder", "argv": None}
    path = write_json(example_manifest_data)
    options = RunOptions(manifest_path=path, host="fixture-host", output=tmp_path / "o")
    with pytest.raises(UsageError, match="memory profile memcoder has no default server"):
        resolve_memory(load_manifest(path), options, EXAMPLE / "project")


def test_the_lock_names_every_holdout_by_id_prompt_and_rendered_prompt(manifest):
    tasks = lock_tasks(manifest)
    for task in manifest.tasks:
        present = task.id in tasks and task.prompt in tasks
        assert present == task.holdout
        if task.holdout:
            assert manifest.render_prompt(task) in tasks


def test_the_run_command_refuses_an_existing_output_directory_before_anything_runs(tmp_path):
    output = tmp_path / "out"
    output.mkdir()
    result = CliRunner().invoke(
        app,
        [
            "eval", "conditions", "run",
            "--manifest", str(EXAMPLE / "conditions.json"),
            "--host", "fixture-host",
            "--output", str(output),
            "--home", str(tmp_path / "home"),
        ],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "already exists" in result.output
    assert list(output.iterdir()) == []
    assert not (tmp_path / "home").exists()


def test_the_run_command_refuses_a_bad_manifest_with_exit_2(tmp_path, write_json):
    bad = write_json({"schemaVersion": 1})
    result = CliRunner().invoke(
        app,
        ["eval", "conditions", "run", "--manifest", str(bad), "--host", "fixture-host",
         "--output", str(tmp_path / "out")],
    )  # fmt: skip
    assert result.exit_code == 2
    assert not (tmp_path / "out").exists()


def test_a_memory_server_that_is_not_mcp_stops_the_run_with_exit_3_and_no_runs_file(tmp_path):
    output = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "eval", "conditions", "run",
            "--manifest", str(EXAMPLE / "conditions.json"),
            "--host", "fixture-host",
            "--output", str(output),
            "--memory-argv", json.dumps([sys.executable, "-c", "print('not mcp')"]),
        ],
    )  # fmt: skip
    assert result.exit_code == 3, result.output
    assert "could not be reached over MCP" in result.output
    assert (output / "aborted.json").is_file()
    assert not (output / "beta2_runs.json").exists()
    aborted = json.loads((output / "aborted.json").read_text())
    assert aborted["runsCompleted"] == 0
    assert aborted["lockActive"] is False


def test_a_memory_server_lacking_required_tools_is_refused(tmp_path):
    async def attempt():
        async with open_memory(
            MEMCODER_PROFILE,
            [sys.executable, "-m", "lorelab.testing.memcoder", "--only", "memcoder_prepare"],
            home=None,
            cwd=tmp_path,
            stderr_path=tmp_path / "err",
        ):
            pass

    with pytest.raises(PreflightError, match=r"lacks required tools: start \(memcoder_start\)"):
        anyio.run(attempt)


def test_a_snapshot_leaves_out_memory_homes_and_caches(tmp_path):
    project = tmp_path / "p"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "a.py").write_text("x = 1\n")
    (project / ".lorelab").mkdir()
    (project / ".lorelab" / "memory.db").write_bytes(b"secret memory")
    (project / "pkg" / "__pycache__").mkdir()
    (project / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (project / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(project / "run.sh", 0o755)
    snapshot = take_snapshot(project)
    assert [f.path for f in snapshot.files] == ["pkg/a.py", "run.sh"]
    copy = snapshot.materialise(tmp_path / "copy")
    assert stat.S_IMODE(os.stat(copy).st_mode) == 0o700
    assert os.access(copy / "run.sh", os.X_OK)
    assert not (copy / ".lorelab").exists()
    (copy / "pkg" / "a.py").write_text("x = 2\n")
    (copy / "pkg" / "b.py").write_text("")
    (copy / "run.sh").unlink()
    assert snapshot.changed_files(copy) == ["pkg/a.py", "pkg/b.py", "run.sh"]


def test_a_snapshot_refuses_a_symlink_inside_the_project(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (project / "a.py").write_text("")
    (project / "link.py").symlink_to(project / "a.py")
    with pytest.raises(PathError, match=r"link\.py"):
        take_snapshot(project)


def test_a_snapshot_of_an_empty_project_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInput, match="holds no files"):
        take_snapshot(tmp_path / "empty")


def test_the_same_project_gives_the_same_snapshot_digest(tmp_path):
    first = take_snapshot(EXAMPLE / "project")
    second = take_snapshot(EXAMPLE / "project")
    assert first.sha256 == second.sha256
    assert len(first.sha256) == 64


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_verify_command_past_its_timeout_is_killed_with_its_group(tmp_path):
    token = f"lorelab-verify-grandchild-{uuid.uuid4().hex}"
    (tmp_path / "slow.py").write_text(
        "import pathlib, subprocess, sys, time\n"
        "child = subprocess.Popen(\n"
        f"    [sys.executable, '-c', 'import time; time.sleep(60)', {token!r}]\n"
        ")\n"
        "pathlib.Path('child.started').write_text('1')\n"
        "time.sleep(60)\n"
    )
    result = run_verify("python slow.py", tmp_path, command_env(), timeout_s=5)
    assert result.timed_out
    assert result.exit_code is None
    assert "timed out" in (result.error or "")
    assert (tmp_path / "child.started").exists()  # the grandchild was started
    deadline = time.monotonic() + 10
    while running_with(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running_with(token) == []


def test_a_verify_command_keeps_a_tail_and_hashes_all_of_its_output(tmp_path):
    (tmp_path / "loud.py").write_text(
        "print('x' * 100000); print('the end'); raise SystemExit(3)\n"
    )
    result = run_verify("python loud.py", tmp_path, command_env(), timeout_s=30)
    assert result.exit_code == 3
    assert result.output_tail.endswith("the end\n")
    assert len(result.output_tail) <= 4000
    assert len(result.output_sha256) == 64


def test_a_verify_command_that_cannot_start_is_recorded_not_raised(tmp_path):
    result = run_verify("no-such-program-xyz --flag", tmp_path, command_env(), timeout_s=5)
    assert result.exit_code is None
    assert "could not start" in (result.error or "")


def test_verify_commands_run_with_lorelabs_python_first_and_no_memory_home(monkeypatch):
    monkeypatch.setenv("LORELAB_HOME", "/somewhere")
    env = command_env()
    assert "LORELAB_HOME" not in env
    assert env["PATH"].split(os.pathsep)[0] == os.path.dirname(sys.executable)


def test_guidance_is_relevant_only_when_it_names_the_tasks_files_or_commands(manifest):
    task = manifest.task("h-line-total-half-up")
    assert relevance_keys(task)[0] == "shop/pricing.py"
    assert is_relevant("Look at shop/pricing.py first.", task)
    assert is_relevant("Run `grep   -rn quantize shop` to find it.", task)
    assert is_relevant(f"Verify with {task.verify}", task)
    assert not is_relevant("Rounding lives in shop/money.py.", task)
    assert not is_relevant(None, task)
    assert not is_relevant("", task)


def test_the_token_estimate_is_a_quarter_of_the_utf8_bytes_rounded_up():
    assert estimate_tokens(None) == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("é") == 1


def test_relevance_needs_the_whole_file_or_command_not_a_part_of_a_longer_one(manifest):
    task = manifest.task("h-line-total-half-up")
    assert not is_relevant("Look at myshop/pricing.py first.", task)
    assert not is_relevant("Look at shop/pricing.pyc first.", task)
    assert not is_relevant("Look at shop/pricing.py/old first.", task)
    assert not is_relevant("Run grep -rn quantize shopping to find it.", task)
    assert is_relevant("The bug is in `shop/pricing.py`.", task)
    assert is_relevant("The bug is in shop/pricing.py.", task)
    assert is_relevant("(shop/pricing.py)", task)


def test_a_verify_command_cannot_write_outside_its_project_copy_and_says_how_it_was_confined(
    tmp_path,
):
    support = probe_sandbox()
    project = tmp_path / "copy"
    project.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (project / "hostile.py").write_text(
        f"import os\ntry:\n    os.remove({str(victim)!r})\nexcept OSError:\n    pass\n"
    )
    result = run_verify("python hostile.py", project, command_env(), timeout_s=30)
    assert result.exit_code == 0
    # The receipt states the confinement this machine really gave, never more.
    assert result.sandbox == support.kind
    if support.kind == "bubblewrap":
        assert victim.read_text() == "keep me\n"
    else:
        assert not victim.exists()  # unconfined here, and the receipt says "partial" or "none"


def test_the_project_snapshot_leaves_out_a_virtual_environment_inside_the_project(tmp_path):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "m.py").write_text("M = 1\n")
    (project / ".venv" / "bin").mkdir(parents=True)
    (project / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (project / ".venv" / "bin" / "python").symlink_to("/usr/bin/python3")
    snapshot = take_snapshot(project)
    assert snapshot.paths() == ["src/m.py"]


def _run_example(tmp_path: Path, *args: str):
    output = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "eval", "conditions", "run",
            "--manifest", str(EXAMPLE / "conditions.json"),
            "--output", str(output),
            "--home", str(tmp_path / "home"),
            *args,
        ],
    )  # fmt: skip
    return result, output


def test_a_host_whose_agent_cli_is_not_installed_is_refused_with_exit_2_before_any_run(
    tmp_path, monkeypatch
):
    # The sandbox is probed (once per process) on the real PATH: only the agent CLI is missing.
    probe_sandbox()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("LORELAB_CLAUDE_BIN", raising=False)
    result, output = _run_example(tmp_path, "--host", "claude")
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert "the host claude cannot start: cannot find claude on PATH" in line
    assert "LORELAB_CLAUDE_BIN" in line
    assert not output.exists()


def test_a_memory_server_whose_program_is_missing_is_refused_with_exit_2_before_any_run(tmp_path):
    result, output = _run_example(
        tmp_path, "--host", "fixture-host", "--memory-argv", '["no-such-memory-server-xyz"]'
    )
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert "the memory server no-such-memory-server-xyz" in line
    assert "cannot start" in line
    assert "--memory-argv" in line
    assert not output.exists()
