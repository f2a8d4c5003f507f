"""Interrupting ``lorelab eval conditions run`` (Ctrl-C, SIGTERM): the host dies with it,
``aborted.json`` says so, the temporary copies are gone, and finalize clears the lock."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.support.processes import gone_soon, running_with

TIMEOUT_S = 120


def _lorelab(*args: str, env=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lorelab", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
        env=env,
    )


@pytest.mark.slow
@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_run_kills_its_host_keeps_aborted_json_and_can_be_finalized(
    mini, tmp_path, sent, code
):
    paths = mini()
    marker = tmp_path / "host.pid"
    host = tmp_path / "slow_host.py"
    host.write_text(
        f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n"
    )
    temp = tmp_path / "tmp"
    temp.mkdir()
    output, home = tmp_path / "out", tmp_path / "home"
    process = subprocess.Popen(
        [
            sys.executable, "-m", "lorelab", "eval", "conditions", "run",
            "--manifest", str(paths["manifest"]),
            "--host", json.dumps([sys.executable, str(host)]),
            "--output", str(output), "--home", str(home),
            "--seed-memory", str(paths["seed"]),
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(temp)},
    )  # fmt: skip
    deadline = time.monotonic() + TIMEOUT_S
    while not marker.exists() or not marker.read_text():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the host was never called"
        time.sleep(0.05)
    host_pid = int(marker.read_text())
    process.send_signal(sent)
    _, stderr = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == code, stderr
    assert f"interrupted by {signal.Signals(sent).name}" in stderr
    assert "Traceback" not in stderr
    assert gone_soon(host_pid)
    # Neither the memory server nor any copy of the project outlives the run.
    assert running_with(str(home)) == []
    assert [p.name for p in temp.iterdir() if p.name.startswith("lorelab-conditions-")] == []
    aborted = json.loads((output / "aborted.json").read_text())
    assert aborted["outcome"] == "interrupted"
    assert aborted["lockActive"] is True
    assert aborted["runsCompleted"] == 0
    assert not (output / "beta2_runs.json").exists()
    assert not (output / "run.json").exists()

    locks = json.loads(_lorelab("memory", "--home", str(home), "lock", "show", "--json").stdout)
    assert [lock["active"] for lock in locks if lock["evaluation_id"] == "mini-eval"] == [True]
    done = _lorelab("eval", "conditions", "finalize", "--output", str(output), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads((output / "finalize.json").read_text())["status"] == "abandoned"
    locks = json.loads(_lorelab("memory", "--home", str(home), "lock", "show", "--json").stdout)
    assert [lock["active"] for lock in locks if lock["evaluation_id"] == "mini-eval"] == [False]


def test_finalize_of_a_run_killed_outright_names_the_command_that_clears_its_lock(tmp_path):
    output = tmp_path / "out"
    output.mkdir()
    preflight = {
        "evaluationId": "mini-eval",
        "memory": {"profile": "lorelab", "home": str(tmp_path / "home")},
        "lockRequested": True,
    }
    (output / "preflight.json").write_text(json.dumps(preflight))
    done = _lorelab("eval", "conditions", "finalize", "--output", str(output))
    assert done.returncode == 2
    expected = f"lorelab memory --home {tmp_path / 'home'} lock clear mini-eval"
    assert expected in done.stderr
