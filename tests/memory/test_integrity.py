"""The store never silently starts over: only a missing file makes a new store."""

import hashlib
import sqlite3
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.errors import InputFileError
from lorelab.memory import ListRequest, SqliteMemoryStore
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


def _memory(home: Path, *args: str):
    return CliRunner().invoke(app, ["memory", "--home", str(home), *args])


def _one_error_line(result) -> str:
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("lorelab: error: "), line
    return line


@pytest.mark.parametrize("command", [RECORD, ["list"], ["prepare", "fix the login test"]])
def test_a_zero_byte_store_is_refused_and_left_as_it_is(tmp_path, command):
    home = tmp_path / "home"
    home.mkdir()
    (home / "memory.db").write_bytes(b"")
    result = _memory(home, *command)
    assert result.exit_code == 2, result.output
    line = _one_error_line(result)
    assert str(home / "memory.db") in line
    assert "empty file" in line
    assert (home / "memory.db").read_bytes() == b""
    assert sorted(path.name for path in home.iterdir()) == ["memory.db"]


def _foreign_database(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total TEXT)")
    conn.execute("INSERT INTO invoices (total) VALUES ('12.50')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("command", [RECORD, ["list"], ["lock", "set", "e1", "--task", "t"]])
def test_a_sqlite_file_that_is_not_a_store_is_refused_and_not_changed(tmp_path, command):
    home = tmp_path / "home"
    home.mkdir()
    _foreign_database(home / "memory.db")
    before = hashlib.sha256((home / "memory.db").read_bytes()).hexdigest()
    result = _memory(home, *command)
    assert result.exit_code == 2, result.output
    line = _one_error_line(result)
    assert str(home / "memory.db") in line
    assert "not a lorelab memory store" in line
    assert hashlib.sha256((home / "memory.db").read_bytes()).hexdigest() == before
    assert sorted(path.name for path in home.iterdir()) == ["memory.db"]  # no -wal, no -shm
    conn = sqlite3.connect(home / "memory.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()


def test_a_file_that_is_not_sqlite_at_all_is_refused_and_not_changed(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "memory.db").write_bytes(b"not a database, just some notes\n" * 200)
    result = _memory(home, *RECORD)
    assert result.exit_code == 2
    assert str(home / "memory.db") in _one_error_line(result)
    assert (home / "memory.db").read_bytes() == b"not a database, just some notes\n" * 200


def test_only_a_missing_file_makes_a_new_store(tmp_path):
    home = tmp_path / "home"
    first = _memory(home, *RECORD)
    assert first.exit_code == 0, first.output
    assert "recorded exp-1" in first.output
    second = _memory(home, *RECORD)
    assert "recorded exp-2" in second.output
    assert not list(home.glob(".memory.db.*"))  # no temporary left behind


def test_many_openers_of_a_missing_store_share_one_new_store(tmp_path):
    path = tmp_path / "home" / "memory.db"
    path.parent.mkdir()
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def open_and_record() -> None:
        try:
            start.wait(timeout=30)
            with SqliteMemoryStore(path) as store:
                store.record(experience())
        except BaseException as exc:  # reported below, with the thread's failure
            errors.append(exc)

    threads = [threading.Thread(target=open_and_record) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    with SqliteMemoryStore(path) as store:
        assert store.list_items(ListRequest()).total == 8
    assert not list(path.parent.glob(".memory.db.*"))


def test_the_library_refuses_an_empty_store_file_too(tmp_path):
    path = tmp_path / "memory.db"
    path.write_bytes(b"")
    with pytest.raises(InputFileError, match="empty file"):
        SqliteMemoryStore(path)
    assert path.read_bytes() == b""
