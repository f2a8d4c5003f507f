import time

import pytest

from lorelab.workspace import FileEntry, RunRoot


@pytest.fixture
def root(tmp_path):
    with RunRoot(tmp_path) as run_root:
        yield run_root


@pytest.fixture
def make(root):
    """Create a project from a {path: content} mapping."""

    def _make(name, files):
        entries = [FileEntry(path=path, content=content) for path, content in files.items()]
        return root.create_project(name, entries)

    return _make


def _gone(pid, within_s=10.0):
    """Whether ``pid`` is dead (absent or a zombie), waiting at most ``within_s``."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def gone():
    """``gone(pid)``: whether a process is dead, polling for at most ten seconds."""
    return _gone
