"""A store damaged in the middle, or made read-only, is refused in one line before any write;
a read-only store still gives briefs (issue 31, items 11 and 12)."""

import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.memory import RecordManyRequest, SqliteMemoryStore
from tests.support.memory import experience

RECORD = [
    "record",
    "--task",
    "Fix the flaky login test",
    "--summary",
    "Waited for the session cookie.",
    "--outcome",
    "passed",
    "--verify-command",
    "pytest -q",
    "--verify-exit-code",
    "0",
]
PAGE = 4096


def _memory(home: Path, *args: str):
    return CliRunner().invoke(app, ["memory", "--home", str(home), *args])


def _one_error_line(stderr: str) -> str:
    [line] = stderr.strip().splitlines()
    assert line.startswith("lorelab: error: "), line
    return line


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _store(home: Path, n: int = 120) -> Path:
    path = home / "memory.db"
    with SqliteMemoryStore(path) as store:
        store.record_many(
            RecordManyRequest(
                experiences=[
                    experience(
                        f"Fix the flaky login test number {i} in module auth_{i}",
                        f"Waited for the session cookie in case {i}; " + "details " * 40,
                    )
                    for i in range(n)
                ]
            )
        )
    assert sorted(p.name for p in home.iterdir()) == ["memory.db"]  # WAL folded in on close
    return path


def _quick_check(path: Path) -> list[str]:
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return [str(row[0]) for row in conn.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        return [str(exc)]
    finally:
        conn.close()


def _damage_a_middle_page(path: Path) -> None:
    """Overwrite one page in the middle of the file with random bytes, such that SQLite's own
    check sees the damage (a free page would not be damage)."""
    rng = random.Random(31)
    pages = path.stat().st_size // PAGE
    original = path.read_bytes()
    for page in range(pages // 2, pages - 1):
        with path.open("r+b") as handle:
            handle.seek(page * PAGE)
            handle.write(rng.randbytes(PAGE))
        if _quick_check(path) != ["ok"]:
            return
        path.write_bytes(original)
    raise AssertionError("no middle page of the test store is checked by quick_check")


@pytest.mark.parametrize(
    "command", [RECORD, ["prepare", "fix the flaky login test"]], ids=["record", "prepare"]
)
def test_a_store_damaged_in_the_middle_is_refused_in_one_line_before_any_write(tmp_path, command):
    home = tmp_path / "home"
    path = _store(home)
    _damage_a_middle_page(path)
    before = _digest(path)
    result = _memory(home, *command)
    assert result.exit_code == 3, result.output
    line = _one_error_line(result.stderr)
    assert str(path) in line
    assert "damaged" in line
    assert _digest(path) == before


# As root, file modes do not bind: the CLI then runs without the capabilities that override
# them (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER), as an unprivileged owner would.
_DROPPED = "-dac_override,-dac_read_search,-fowner"


def _unprivileged(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without util-linux setpriv to drop capabilities")
        prefix = [setpriv, "--bounding-set", _DROPPED, "--"]
    return subprocess.run(
        [*prefix, sys.executable, "-m", "lorelab", "memory", "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_read_only_store_still_briefs_and_record_refuses_in_one_line(tmp_path):
    home = tmp_path / "home"
    path = _store(home, n=3)
    path.chmod(0o444)
    before = _digest(path)
    try:
        prepared = _unprivileged(home, "prepare", "fix the flaky login test", "--json")
        recorded = _unprivileged(home, *RECORD)
        listed = _unprivileged(home, "list")
    finally:
        mode = path.stat().st_mode & 0o777
        path.chmod(0o600)
    assert prepared.returncode == 0, prepared.stderr
    assert prepared.stderr == ""
    brief = json.loads(prepared.stdout)
    assert brief["brief_id"] is None
    assert not brief["empty"]
    assert "Fix the flaky login test" in brief["text"]
    assert recorded.returncode == 3, recorded.stdout + recorded.stderr
    line = _one_error_line(recorded.stderr)
    assert str(path) in line
    assert "read-only" in line
    assert listed.returncode == 0, listed.stderr
    assert "exp-3" in listed.stdout
    assert mode & 0o222 == 0  # the store was left read-only (made private, never writable)
    assert _digest(path) == before


def _rollback_journal_store(home: Path) -> Path:
    """A store restored from a ``.backup``: rollback-journal mode (``journal_mode=delete``)."""
    source = _store(home.parent / "source", n=3)
    home.mkdir()
    path = home / "memory.db"
    with sqlite3.connect(source) as src, sqlite3.connect(path) as dst:
        src.backup(dst)
        assert dst.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
    dst.close()
    return path


def _journal_mode(path: Path) -> str:
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        conn.close()


def test_a_read_only_rollback_journal_store_still_briefs_and_record_refuses_in_one_line(
    tmp_path,
):
    # Issue 40: prepare exited 2 ("attempt to write a readonly database") switching it to WAL.
    home = tmp_path / "home"
    path = _rollback_journal_store(home)
    path.chmod(0o444)
    before = _digest(path)
    try:
        prepared = _unprivileged(home, "prepare", "fix the flaky login test", "--json")
        recorded = _unprivileged(home, *RECORD)
        listed = _unprivileged(home, "list")
    finally:
        mode = path.stat().st_mode & 0o777
        path.chmod(0o600)
    assert prepared.returncode == 0, prepared.stderr
    assert prepared.stderr == ""
    brief = json.loads(prepared.stdout)
    assert brief["brief_id"] is None
    assert "Fix the flaky login test" in brief["text"]
    assert recorded.returncode == 3, recorded.stdout + recorded.stderr
    line = _one_error_line(recorded.stderr)
    assert str(path) in line
    assert "read-only" in line
    assert listed.returncode == 0, listed.stderr
    assert mode & 0o222 == 0
    assert _digest(path) == before
    assert _journal_mode(path) == "delete"
    assert sorted(p.name for p in home.iterdir()) == ["memory.db"]


def test_a_store_file_without_write_bits_is_opened_read_only_even_by_root(tmp_path):
    # Root's writes ignore file modes: lorelab reads the mode bits instead, so a store the user
    # made read-only is never switched to WAL, migrated or written, whoever runs lorelab. This
    # runs in-process with whatever capabilities the test has (as root: all of them).
    home = tmp_path / "home"
    path = _rollback_journal_store(home)
    path.chmod(0o444)
    before = _digest(path)
    try:
        prepared = _memory(home, "prepare", "fix the flaky login test", "--json")
        recorded = _memory(home, *RECORD)
    finally:
        path.chmod(0o600)
    assert prepared.exit_code == 0, prepared.output
    assert json.loads(prepared.stdout)["brief_id"] is None
    assert recorded.exit_code == 3, recorded.output
    line = _one_error_line(recorded.stderr)
    assert "read-only" in line
    assert _digest(path) == before
    assert _journal_mode(path) == "delete"
