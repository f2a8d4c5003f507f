import pytest

from lorelab.workspace import FileEntry, RunRoot
from tests.support import sleepers


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


@pytest.fixture
def gone():
    """``gone(pid)``: whether a process is dead, polling for at most ten seconds."""
    return sleepers.gone
