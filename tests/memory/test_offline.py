"""Recording and briefing with vectors work with the network unavailable to the process."""

import json
import os
import sqlite3
import subprocess
import sys

# Any attempt to reach the network fails the run: proxies point at a closed port, Hugging
# Face is told it is offline, and an audit hook refuses every socket connection and lookup.
_GUARD = """
import sys
def _refuse(event, args):
    if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname"):
        raise OSError(f"network use refused in this test: {event} {args!r}")
sys.addaudithook(_refuse)
from lorelab.cli.main import main
sys.argv = ["lorelab", *sys.argv[1:]]
main()
"""

_OFFLINE = {
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "http_proxy": "http://127.0.0.1:9",
    "https_proxy": "http://127.0.0.1:9",
    "ALL_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "",
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


def _lorelab(home: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **_OFFLINE, "LORELAB_HOME": home}
    return subprocess.run(
        [sys.executable, "-c", _GUARD, "memory", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_record_and_prepare_compute_vectors_with_the_network_unavailable(tmp_path):
    home = str(tmp_path / "home")
    recorded = _lorelab(
        home,
        "record",
        "--task",
        "Fix failing test_refund_partial_amount after Decimal rounding change",
        "--summary",
        "Quantized refunds with ROUND_HALF_UP",
        "--outcome",
        "passed",
        "--verify-command",
        "pytest tests/test_refunds.py",
        "--verify-exit-code",
        "0",
        "--json",
    )
    assert recorded.returncode == 0, recorded.stderr
    assert json.loads(recorded.stdout)["id"] == "exp-1"
    prepared = _lorelab(
        home,
        "prepare",
        "test_refund_partial_amount fails after the Decimal rounding change",
        "--json",
    )
    assert prepared.returncode == 0, prepared.stderr
    assert [item["id"] for item in json.loads(prepared.stdout)["experiences"]] == ["exp-1"]
    with sqlite3.connect(tmp_path / "home" / "memory.db") as conn:
        assert conn.execute("SELECT count(*) FROM experience_vectors").fetchone()[0] == 1


def test_the_guard_really_refuses_a_connection(tmp_path):
    # The guard above must be able to fail: a process that does try the network is stopped.
    code = _GUARD.split("from lorelab")[0] + (
        "import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode != 0
    assert "network use refused in this test: socket." in done.stderr
