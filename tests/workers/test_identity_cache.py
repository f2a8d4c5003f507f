"""Kept hashes of bound files: reused only while a file's status proves it unchanged.

The cache's clock is replaced (``_cache.time_ns``) so that "old enough to keep" and "too
recent to keep" are decided by the test, never by how fast the machine runs it.
"""

import hashlib
import os
import sys
import time
from pathlib import Path

import pytest

import lorelab
from lorelab.errors import InputFileError
from lorelab.io import SCRIPT_HASH_CAP, sha256_file
from lorelab.workers import bind_identity, check_identity, implementation_hashes
from lorelab.workers.identity import _cache

CAP = SCRIPT_HASH_CAP


@pytest.fixture(autouse=True)
def _fresh_cache():
    _cache.forget()
    yield
    _cache.forget()


@pytest.fixture
def hashed(monkeypatch):
    """Count the real hashing the cache does."""
    calls: list[str] = []

    def counting(path, *, cap):
        calls.append(os.fspath(path))
        return sha256_file(path, cap=cap)

    monkeypatch.setattr(_cache, "sha256_file", counting)
    return calls


def _clock_after(monkeypatch, path: Path, delta_ns: int) -> None:
    st = os.stat(path)
    now = max(st.st_mtime_ns, st.st_ctime_ns) + delta_ns
    monkeypatch.setattr(_cache, "time_ns", lambda: now)


def _wait_for_a_later_ctime(path: Path) -> None:
    """Return once a change made now gets a later st_ctime than ``path`` has (timestamps are
    kernel ticks: a change within the same tick would keep the same time)."""
    before = os.stat(path).st_ctime_ns
    probe = path.with_name(path.name + ".probe")
    while True:
        probe.write_bytes(b"x")
        if os.stat(probe).st_ctime_ns > before:
            probe.unlink()
            return
        time.sleep(0.001)


def test_an_unchanged_old_file_is_hashed_once(tmp_path, monkeypatch, hashed):
    script = tmp_path / "worker.py"
    script.write_text("print('{}')\n")
    _clock_after(monkeypatch, script, _cache.STABLE_AFTER_NS + 1)
    first = _cache.file_sha256(script, cap=CAP)
    second = _cache.file_sha256(script, cap=CAP)
    assert first == second == hashlib.sha256(script.read_bytes()).hexdigest()
    assert hashed == [str(script)]


def test_a_file_changed_too_recently_is_hashed_every_time(tmp_path, monkeypatch, hashed):
    script = tmp_path / "worker.py"
    script.write_text("print('{}')\n")
    _clock_after(monkeypatch, script, _cache.STABLE_AFTER_NS)
    _cache.file_sha256(script, cap=CAP)
    _cache.file_sha256(script, cap=CAP)
    assert hashed == [str(script), str(script)]


def test_a_same_size_change_with_its_mtime_restored_is_seen(tmp_path, monkeypatch, hashed):
    script = tmp_path / "worker.py"
    script.write_text("print('{}')\n")
    _clock_after(monkeypatch, script, _cache.STABLE_AFTER_NS + 1)
    kept = _cache.file_sha256(script, cap=CAP)
    st = os.stat(script)
    _wait_for_a_later_ctime(script)
    script.write_text("print('[]')\n")
    os.utime(script, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(script).st_size == st.st_size
    assert os.stat(script).st_mtime_ns == st.st_mtime_ns
    again = _cache.file_sha256(script, cap=CAP)
    assert again != kept
    assert again == hashlib.sha256(b"print('[]')\n").hexdigest()
    assert len(hashed) == 2


def test_a_file_replaced_by_a_rename_is_seen(tmp_path, monkeypatch, hashed):
    script = tmp_path / "worker.py"
    script.write_text("print('{}')\n")
    _clock_after(monkeypatch, script, _cache.STABLE_AFTER_NS + 1)
    kept = _cache.file_sha256(script, cap=CAP)
    other = tmp_path / "other.py"
    other.write_text("print('[]')\n")
    os.replace(other, script)
    assert _cache.file_sha256(script, cap=CAP) != kept


def test_a_file_that_cannot_be_hashed_any_more_raises_and_is_dropped(tmp_path, monkeypatch):
    script = tmp_path / "worker.py"
    script.write_text("print('{}')\n")
    _clock_after(monkeypatch, script, _cache.STABLE_AFTER_NS + 1)
    _cache.file_sha256(script, cap=CAP)
    script.unlink()
    with pytest.raises(InputFileError, match="no such file"):
        _cache.file_sha256(script, cap=CAP)
    assert _cache._KEPT == {}


def test_a_kept_hash_does_not_hide_a_change_from_check_identity(trial, monkeypatch):
    script = trial / "worker.py"
    script.write_text("print('{}')\n")
    # Every file counts as old enough to keep: the check must still see the change.
    monkeypatch.setattr(_cache, "STABLE_AFTER_NS", -(10**19))
    identity = bind_identity([sys.executable, "worker.py"], cwd=trial, operator_identity=None)
    assert check_identity(identity, cwd=trial).ok
    _wait_for_a_later_ctime(script)
    st = os.stat(script)
    script.write_text("print('[]')\n")
    os.utime(script, ns=(st.st_atime_ns, st.st_mtime_ns))
    check = check_identity(identity, cwd=trial)
    assert not check.ok
    assert any("script 'worker.py': content changed" in c for c in check.changes)


def test_implementation_hashes_list_every_module_as_rglob_does():
    root = Path(lorelab.__file__).resolve().parent
    doubles = {path for path in (root / "testing").rglob("*") if path.is_file()}
    expected = {
        "lorelab/" + path.relative_to(root).as_posix(): sha256_file(path, cap=CAP)
        for path in sorted(set(root.rglob("*.py")) | doubles)
        if "__pycache__" not in path.parts
    }
    found = implementation_hashes()
    assert list(found.items()) == list(expected.items())
    # Listed again (not kept): the same modules, in the same order.
    assert list(implementation_hashes().items()) == list(expected.items())
