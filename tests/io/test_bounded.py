import os
import threading

import pytest

from lorelab.errors import InputFileError, UsageError
from lorelab.io import FIXTURE_LIMIT, MANIFEST_LIMIT, read_bounded


def test_reads_a_regular_file_whole(tmp_path):
    path = tmp_path / "m.json"
    path.write_bytes(b'{"a": 1}')
    assert read_bounded(path) == b'{"a": 1}'


def test_manifest_of_exactly_the_limit_is_read(tmp_path):
    path = tmp_path / "m.json"
    path.write_bytes(b" " * MANIFEST_LIMIT)
    assert len(read_bounded(path)) == MANIFEST_LIMIT


def test_manifest_one_byte_over_two_mib_is_refused(tmp_path):
    path = tmp_path / "m.json"
    path.write_bytes(b" " * (MANIFEST_LIMIT + 1))
    with pytest.raises(InputFileError, match="exceeds the manifest limit"):
        read_bounded(path)


def test_fixture_limit_is_thirty_two_mib(tmp_path):
    path = tmp_path / "f.json"
    path.write_bytes(b" " * (MANIFEST_LIMIT + 1))
    assert len(read_bounded(path, "fixture")) == MANIFEST_LIMIT + 1
    assert FIXTURE_LIMIT == 32 * 1024 * 1024


def test_limit_can_be_lowered(tmp_path):
    path = tmp_path / "m.json"
    path.write_bytes(b"12345")
    with pytest.raises(InputFileError, match="limit of 4"):
        read_bounded(path, limit=4)


def test_limit_cannot_be_raised_above_the_kind(tmp_path):
    path = tmp_path / "m.json"
    path.write_bytes(b"{}")
    with pytest.raises(UsageError, match="between 1 and"):
        read_bounded(path, limit=MANIFEST_LIMIT + 1)


def test_directory_is_refused(tmp_path):
    with pytest.raises(InputFileError, match="directory"):
        read_bounded(tmp_path)


def test_missing_file_is_refused_with_its_name(tmp_path):
    with pytest.raises(InputFileError, match=r"nope\.json: no such file"):
        read_bounded(tmp_path / "nope.json")


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputFileError, match="FIFO"):
        read_bounded(fifo)


def test_device_is_refused():
    with pytest.raises(InputFileError, match="device"):
        read_bounded("/dev/zero")


def test_symlink_swapped_in_after_open_cannot_switch_the_input(tmp_path, monkeypatch):
    real = tmp_path / "m.json"
    real.write_bytes(b'{"original": true}')
    other = tmp_path / "other.json"
    other.write_bytes(b'{"swapped": true}')
    original_fstat = os.fstat

    def swap_then_fstat(fd):
        # The path now names a symlink to another file; the open descriptor must still win.
        real.unlink()
        real.symlink_to(other)
        return original_fstat(fd)

    monkeypatch.setattr(os, "fstat", swap_then_fstat)
    assert read_bounded(real) == b'{"original": true}'


def test_file_growing_past_the_limit_during_the_read_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "m.json"
    path.write_bytes(b"x" * 10)
    original_read = os.read
    grown = threading.Event()

    def read_and_grow(fd, n):
        if not grown.is_set():
            grown.set()
            with open(path, "ab") as handle:
                handle.write(b"y" * 100)
        return original_read(fd, n)

    monkeypatch.setattr(os, "read", read_and_grow)
    with pytest.raises(InputFileError, match="grew past"):
        read_bounded(path, limit=50)
