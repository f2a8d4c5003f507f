"""Every execution is contained, and an execution asked to be sandboxed records what it got:
real pytest and node suites that start detached children, delete files outside the project
and open TCP connections."""

from __future__ import annotations

import shutil
import socket
import sys
import uuid

import pytest

from lorelab.io import probe_sandbox
from lorelab.runners import NodeRunner, PytestRunner, check_suite, get_runner
from tests.support.missing_tools import NO_NODE, bubblewrap_reason
from tests.support.sleepers import DETACHED_SLEEPERS, kill_sleepers, sleepers_gone

TIMEOUT = 120
SUPPORT = probe_sandbox()
needs_bubblewrap = pytest.mark.skipif(
    SUPPORT.kind != "bubblewrap",
    reason=bubblewrap_reason(SUPPORT.detail),
)
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason=NO_NODE)


def _detaching_test(token: str) -> str:
    return (
        "import subprocess, sys\n\n"
        f"SCRIPT = {DETACHED_SLEEPERS!r}\n\n"
        "def test_leaves_sleepers(tmp_path):\n"
        "    subprocess.run(\n"
        f"        [sys.executable, '-c', SCRIPT, str(tmp_path / 'pid'), {token!r}], check=True\n"
        "    )\n"
    )


@pytest.mark.parametrize("sandbox", [False, True])
def test_a_test_that_detaches_children_leaves_nothing_running(make, sandbox):
    token = f"lorelab-sleeper-{uuid.uuid4().hex}"
    project = make("p", {"tests/test_detach.py": _detaching_test(token)})
    try:
        execution = PytestRunner(sandbox=sandbox).run(project, timeout_s=TIMEOUT)
        assert execution.classification == "passed", execution.output_tail
        assert sleepers_gone(token)
    finally:
        kill_sleepers(token)


@needs_node
def test_a_node_test_that_detaches_a_child_leaves_nothing_running(make):
    token = f"lorelab-sleeper-{uuid.uuid4().hex}"
    test = (
        "const { test } = require('node:test');\n"
        "const { spawn } = require('node:child_process');\n"
        "test('detach', () => {\n"
        f"  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {{}}, 300000)', "
        f"'{token}'], {{ detached: true, stdio: 'ignore' }});\n"
        "  child.unref();\n"
        "});\n"
    )
    project = make("n", {"package.json": "{}\n", "test/detach.test.js": test})
    try:
        execution = NodeRunner().run(project, timeout_s=TIMEOUT)
        assert execution.classification == "passed", execution.output_tail
        assert execution.sandbox == "none"
        assert sleepers_gone(token)
    finally:
        kill_sleepers(token)


def _conftest_deleting(victim) -> str:
    return f"import os\n\ntry:\n    os.remove({str(victim)!r})\nexcept OSError:\n    pass\n"


@needs_bubblewrap
def test_a_conftest_cannot_delete_a_file_outside_the_project_in_the_sandbox(make, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    project = make(
        "p",
        {
            "tests/conftest.py": _conftest_deleting(victim),
            "tests/test_ok.py": "def test_ok():\n    pass\n",
        },
    )
    execution = PytestRunner(sandbox=True).run(project, timeout_s=TIMEOUT)
    assert execution.classification == "passed", execution.output_tail
    assert execution.sandbox == "bubblewrap"
    assert victim.read_text() == "keep me\n"


def test_without_the_sandbox_the_conftest_does_delete_it(make, tmp_path):
    """The control: the deletion above is real when nothing confines the run."""
    victim = tmp_path / "victim.txt"
    victim.write_text("gone soon\n")
    project = make(
        "p",
        {
            "tests/conftest.py": _conftest_deleting(victim),
            "tests/test_ok.py": "def test_ok():\n    pass\n",
        },
    )
    execution = PytestRunner().run(project, timeout_s=TIMEOUT)
    assert execution.classification == "passed", execution.output_tail
    assert execution.sandbox == "none"
    assert not victim.exists()


@pytest.mark.parametrize("sandbox", [False, True])
def test_a_test_reaches_a_port_outside_only_without_the_sandbox(make, sandbox):
    if sandbox and not SUPPORT.network:
        pytest.skip(f"no network namespace for bubblewrap here ({SUPPORT.detail})")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        test = (
            "import socket\n\n"
            "def test_connect():\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=5).close()\n"
        )
        project = make("p", {"tests/test_net.py": test})
        execution = get_runner("pytest", sandbox=sandbox).run(project, timeout_s=TIMEOUT)
    assert execution.classification == ("failed" if sandbox else "passed"), execution.output_tail
    if sandbox:
        assert execution.sandbox == SUPPORT.kind


def test_the_suite_report_records_the_sandbox(make):
    project = make("p", {"tests/test_ok.py": "def test_ok():\n    pass\n"})
    plain = check_suite(project, runner="pytest", runs=2, timeout_s=TIMEOUT)
    boxed = check_suite(project, runner="pytest", runs=2, timeout_s=TIMEOUT, sandbox=True)
    assert plain.ok
    assert boxed.ok
    assert plain.report.sandbox == "none"
    assert boxed.report.sandbox == SUPPORT.kind
    assert {run.sandbox for run in boxed.stability.runs} == {SUPPORT.kind}


def test_the_python_under_test_is_this_interpreter_inside_the_sandbox_too(make):
    test = f"import sys\n\ndef test_same():\n    assert sys.executable == {sys.executable!r}\n"
    project = make("p", {"tests/test_same.py": test})
    execution = PytestRunner(sandbox=True).run(project, timeout_s=TIMEOUT)
    assert execution.classification == "passed", execution.output_tail
