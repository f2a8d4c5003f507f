"""Interrupting the learning evaluation: the worker dies with it and the receipts say so."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from lorelab.evaluation.learning import get_dataset
from tests.support.processes import gone_soon, running_with


def _manifest(tmp_path: Path) -> Path:
    manifest = get_dataset("default")
    fixture = manifest.fixtures[0]
    fixture = fixture.model_copy(update={"defects": fixture.defects[:1]})
    one = manifest.model_copy(update={"fixtures": [fixture]})
    path = tmp_path / "one.json"
    path.write_text(json.dumps(one.model_dump(mode="json", by_alias=True)))
    return path


def _start(manifest: Path, output: Path, agent: str) -> subprocess.Popen[str]:
    """``lorelab eval learning`` on ``manifest`` in a child process, one repetition."""
    argv = [sys.executable, "-m", "lorelab", "eval", "learning", "run", "--fixtures", str(manifest)]
    argv += ["--repeat", "1", "--seed", "1", "--output", str(output), "--agent", agent]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_run_kills_its_worker_and_records_the_interruption(tmp_path, sent, code):
    marker = tmp_path / "worker.pid"
    worker = tmp_path / "slow_worker.py"
    worker.write_text(
        "import os, sys, time\n"
        f"open({str(marker)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(120)\n"
    )
    output = tmp_path / "out"
    process = _start(_manifest(tmp_path), output, json.dumps([sys.executable, str(worker)]))
    deadline = time.monotonic() + 120
    while not marker.exists() or not marker.read_text():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the worker never started"
        time.sleep(0.05)
    worker_pid = int(marker.read_text())
    process.send_signal(sent)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == code, stderr
    assert "interrupted by" in stderr
    assert "Traceback" not in stderr
    assert gone_soon(worker_pid)
    controller = json.loads((output / "controller.json").read_text())
    assert controller["outcome"] == "interrupted"


def test_an_interrupt_during_ground_truth_kills_the_running_tests_at_once(tmp_path):
    # A reference test that starts a long sleeper carrying a unique token and then runs far
    # past any wait below: only killing it on the interrupt lets the run exit in time. The
    # tests run sandboxed (no writes outside the copy, their own PID namespace), so the
    # sleeper is found from out here by its token in /proc, not by a pid it reports.
    token = f"lorelab-gt-sleeper-{uuid.uuid4().hex}"
    manifest = get_dataset("default")
    fixture = manifest.fixtures[0]
    [reference, *rest] = fixture.reference_tests
    slow = reference.model_copy(
        update={
            "content": reference.content
            + "\n\ndef test_zz_slow():\n"
            + "    import subprocess, sys, time\n"
            + "    subprocess.Popen(\n"
            + f"        [sys.executable, '-c', 'import time; time.sleep(300)', {token!r}]\n"
            + "    )\n"
            + "    time.sleep(300)\n"
        }
    )
    fixture = fixture.model_copy(
        update={"defects": fixture.defects[:1], "reference_tests": [slow, *rest]}
    )
    path = tmp_path / "slow.json"
    one = manifest.model_copy(update={"fixtures": [fixture]})
    path.write_text(json.dumps(one.model_dump(mode="json", by_alias=True)))
    output = tmp_path / "out"
    process = _start(path, output, "fixture")
    deadline = time.monotonic() + 120
    while not running_with(token):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the reference tests never started"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    deadline = time.monotonic() + 10
    while running_with(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running_with(token) == []
    controller = json.loads((output / "controller.json").read_text())
    assert controller["outcome"] == "interrupted"
