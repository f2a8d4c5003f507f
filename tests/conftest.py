"""Fixtures shared by every test directory."""

import os
import signal
import subprocess
import venv
from pathlib import Path

import pytest

from tests.support import missing_tools


@pytest.fixture(scope="session")
def pynguin_executable(tmp_path_factory) -> Path:
    """Pynguin 0.48.0 in its own virtual environment (``LORELAB_TEST_PYNGUIN_VENV`` reuses one)."""
    reuse = os.environ.get("LORELAB_TEST_PYNGUIN_VENV")
    home = Path(reuse) if reuse else tmp_path_factory.mktemp("pynguin-venv") / "venv"
    executable = home / "bin" / "pynguin"
    if not executable.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(home)
        subprocess.run(
            [str(home / "bin" / "python"), "-m", "pip", "install", "--quiet", "pynguin==0.48.0"],
            check=True,
            timeout=600,
        )
    return executable


@pytest.fixture(autouse=True)
def _private_state_dir(tmp_path_factory, monkeypatch):
    """Each test has its own user state directory (``lorelab._state``): the servers it starts
    and the memory homes it makes are known to it alone, and the user's real one is untouched."""
    base = tmp_path_factory.mktemp("state")
    base.chmod(0o700)
    monkeypatch.setenv("XDG_STATE_HOME", str(base))


def pytest_configure(config):
    # A shell that starts a command in the background without job control (`cmd &` in a
    # script) starts it with SIGINT ignored, and Python then keeps ignoring it; every process
    # the tests start would inherit that, and the Ctrl-C tests would wait for a signal that
    # never arrives. Each test process (xdist workers included) takes Ctrl-C as a terminal does.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    missing_tools.pytest_configure(config)


def pytest_collection_modifyitems(config, items):
    # Slow tests first (stable otherwise): with `--dist loadfile` a worker takes a file at a
    # time in this order, so the longest files start early instead of ending the run alone.
    items.sort(key=lambda item: 0 if item.get_closest_marker("slow") else 1)
