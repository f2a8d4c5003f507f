import os
import sys

from lorelab.io import run_process
from tests.support.sleepers import gone

ENV = dict(os.environ)


def test_exit_status_and_output_are_recorded(tmp_path):
    result = run_process(
        [sys.executable, "-c", "print('hello'); import sys; sys.exit(3)"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=30,
    )
    assert result.exit_code == 3
    assert result.signal is None
    assert not result.timed_out
    assert b"hello" in result.output_tail


def test_the_timeout_kills_the_process_and_the_grandchild_it_spawned(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen(['sleep', '300'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "while True:\n"
        "    time.sleep(0.05)\n"
    )
    result = run_process([sys.executable, "-c", script], cwd=tmp_path, env=ENV, timeout_s=2)
    assert result.timed_out
    assert result.exit_code is None
    assert result.signal == "SIGKILL"
    assert gone(int(pid_file.read_text()))


def test_children_left_running_after_a_normal_exit_are_killed(tmp_path):
    pid_file = tmp_path / "orphan.pid"
    script = (
        "import subprocess\n"
        "child = subprocess.Popen(['sleep', '300'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
    )
    result = run_process([sys.executable, "-c", script], cwd=tmp_path, env=ENV, timeout_s=30)
    assert result.exit_code == 0
    assert not result.timed_out
    assert gone(int(pid_file.read_text()))


def test_a_process_killed_by_a_signal_has_no_exit_code(tmp_path):
    result = run_process(
        [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=30,
    )
    assert result.exit_code is None
    assert result.signal == "SIGKILL"
    assert not result.timed_out


def test_only_the_tail_of_a_flood_of_output_is_kept(tmp_path):
    script = "import sys\nfor i in range(200000): sys.stdout.write(f'line {i}\\n')\n"
    result = run_process(
        [sys.executable, "-c", script], cwd=tmp_path, env=ENV, timeout_s=30, tail_bytes=1000
    )
    assert result.exit_code == 0
    assert len(result.output_tail) == 1000
    assert result.output_tail.endswith(b"line 199999\n")


def test_stdin_is_empty(tmp_path):
    result = run_process(
        [sys.executable, "-c", "import sys; print(repr(sys.stdin.read()))"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=30,
    )
    assert result.output_tail.strip() == b"''"
