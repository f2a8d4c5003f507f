"""``lorelab tests run``: nothing a test starts survives the run, ``--sandbox`` confines what
the report says it does, and a symlinked package.json does not choose the runner."""

import json
import tempfile
import uuid

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.io import _sandbox, probe_sandbox
from lorelab.workspace import FileEntry, RunRoot
from tests.support.deep_tree import DEPTH, MAKE_DEEP_TREE
from tests.support.missing_tools import bubblewrap_reason
from tests.support.sleepers import DETACHED_SLEEPERS, kill_sleepers, sleepers_gone

SUPPORT = probe_sandbox()
PASSING = {"tests/test_ok.py": "def test_ok():\n    pass\n"}


@pytest.fixture
def project(tmp_path):
    (tmp_path / "root").mkdir()
    with RunRoot(tmp_path / "root") as root:

        def _make(files, name="p"):
            entries = [FileEntry(path=path, content=text) for path, text in files.items()]
            return root.create_project(name, entries)

        yield _make


def _invoke(*args):
    return CliRunner().invoke(app, ["tests", "run", *map(str, args)])


def test_a_passing_suite_that_detaches_sleepers_leaves_none_running(project):
    token = f"lorelab-sleeper-{uuid.uuid4().hex}"
    test = (
        "import subprocess, sys\n\n"
        f"SCRIPT = {DETACHED_SLEEPERS!r}\n\n"
        "def test_detach(tmp_path):\n"
        f"    subprocess.run([sys.executable, '-c', SCRIPT, str(tmp_path / 'p'), {token!r}],"
        " check=True)\n"
    )
    try:
        result = _invoke(project({"tests/test_detach.py": test}), "--stability-runs", "2", "--json")
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["stable"] is True
        assert report["sandbox"] == "none"
        assert sleepers_gone(token)
    finally:
        kill_sleepers(token)


@pytest.mark.skipif(
    SUPPORT.kind != "bubblewrap",
    reason=bubblewrap_reason(SUPPORT.detail),
)
def test_with_sandbox_a_conftest_cannot_delete_a_file_outside_the_project(project, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    conftest = f"import os\n\ntry:\n    os.remove({str(victim)!r})\nexcept OSError:\n    pass\n"
    path = project({**PASSING, "tests/conftest.py": conftest})
    result = _invoke(path, "--stability-runs", "2", "--sandbox", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sandbox"] == "bubblewrap"
    assert victim.read_text() == "keep me\n"
    assert "--sandbox" not in result.stderr


def _marking_suite(marker):
    """A passing suite whose conftest and test file each leave a file outside the project
    when they are executed at all."""
    return {
        "tests/conftest.py": f"open({str(marker)!r} + '.conftest', 'w').close()\n",
        "tests/test_ok.py": f"open({str(marker)!r} + '.test', 'w').close()\n\n"
        "def test_ok():\n    pass\n",
    }


def _fake_bwrap(directory, body):
    directory.mkdir()
    fake = directory / "bwrap"
    fake.write_text(f"#!/bin/sh\n{body}\n")
    fake.chmod(0o755)
    return fake


def _hide_bubblewrap(how, monkeypatch, tmp_path):
    """No working bubblewrap, the ways a machine has none: the variable lorelab honours set
    empty, a PATH without bwrap, a bwrap that cannot create its namespaces."""
    monkeypatch.delenv(_sandbox.BWRAP_ENV, raising=False)
    if how == "variable":
        monkeypatch.setenv(_sandbox.BWRAP_ENV, "")
    elif how == "path":
        monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    else:
        fake = _fake_bwrap(
            tmp_path / "fake-bin",
            "echo 'bwrap: No permissions to create a new namespace' >&2\nexit 1",
        )
        monkeypatch.setenv(_sandbox.BWRAP_ENV, str(fake))


@pytest.mark.parametrize("how", ["variable", "path", "no-namespaces"])
def test_sandbox_without_a_working_bubblewrap_exits_2_and_runs_nothing(
    project, tmp_path, monkeypatch, how
):
    # Issue 40: the suite ran unsandboxed, exit 0, with a warning on stderr.
    marker = tmp_path / "ran"
    path = project(_marking_suite(marker))
    _hide_bubblewrap(how, monkeypatch, tmp_path)
    _sandbox.probe_sandbox.cache_clear()
    try:
        result = _invoke(path, "--stability-runs", "2", "--sandbox", "--json")
    finally:
        _sandbox.probe_sandbox.cache_clear()
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("lorelab: error: --sandbox: no working sandbox on this machine")
    assert "apt-get install bubblewrap" in line
    assert list(tmp_path.glob("ran*")) == []


def test_without_sandbox_the_marking_suite_does_run(project, tmp_path, monkeypatch):
    # The control: the same suite, not asked to be sandboxed, runs on the same machine.
    marker = tmp_path / "ran"
    _hide_bubblewrap("variable", monkeypatch, tmp_path)
    _sandbox.probe_sandbox.cache_clear()
    try:
        result = _invoke(project(_marking_suite(marker)), "--stability-runs", "2", "--json")
    finally:
        _sandbox.probe_sandbox.cache_clear()
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sandbox"] == "none"
    assert sorted(p.name for p in tmp_path.glob("ran*")) == ["ran.conftest", "ran.test"]


def test_a_package_json_symlink_to_etc_passwd_does_not_select_node(project):
    path = project(PASSING)
    (path / "package.json").symlink_to("/etc/passwd")
    result = _invoke(path, "--stability-runs", "2", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["runner"] == "pytest"


def _deep_tree_test() -> str:
    # Leaves the tree beside lorelab's own reports (the --junitxml directory), which lorelab
    # must remove after the run; the test itself passes.
    return (
        "import os, subprocess, sys\n\n"
        f"SCRIPT = {MAKE_DEEP_TREE!r}\n\n"
        "def test_leaves_a_deep_tree():\n"
        "    reports = next(a.split('=', 1)[1] for a in sys.argv if a.startswith('--junitxml='))\n"
        "    base = os.path.join(os.path.dirname(reports), 'deep')\n"
        "    os.mkdir(base)\n"
        f"    subprocess.run([sys.executable, '-c', SCRIPT, base, '{DEPTH}'], check=True)\n"
    )


@pytest.mark.parametrize("sandbox", [False, True])
def test_a_tree_deeper_than_the_recursion_limit_keeps_the_result_and_is_removed(
    project, tmp_path, monkeypatch, sandbox
):
    # Issue 31 item 5: RecursionError in rmtree made `tests run --sandbox` exit 70, losing the
    # result and leaving the temporary directory behind.
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", None)
    path = project({"tests/test_deep.py": _deep_tree_test()})
    args = [path, "--stability-runs", "2", "--json", *(["--sandbox"] if sandbox else [])]
    result = _invoke(*args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["classification"] == "passed"
    assert list(scratch.iterdir()) == []


def test_a_test_that_kills_its_launcher_leaves_no_daemon_after_tests_run(project):
    # Issue 31 item 3: without --sandbox, the setsid daemon outlived `lorelab tests run`.
    token = f"lorelab-sleeper-{uuid.uuid4().hex}"
    test = (
        "import os, signal, subprocess, sys, time\n\n"
        f"SCRIPT = {DETACHED_SLEEPERS!r}\n\n"
        "def test_kills_its_launcher(tmp_path):\n"
        f"    subprocess.run([sys.executable, '-c', SCRIPT, str(tmp_path / 'p'), {token!r}],"
        " check=True)\n"
        "    os.kill(os.getppid(), signal.SIGKILL)\n"
        "    time.sleep(5)\n"
    )
    try:
        result = _invoke(project({"tests/test_kill.py": test}), "--stability-runs", "2", "--json")
        assert result.exit_code == 1, result.output
        assert json.loads(result.stdout)["classification"] == "crashed"
        assert sleepers_gone(token)
    finally:
        kill_sleepers(token)
