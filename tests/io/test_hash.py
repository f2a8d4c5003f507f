import hashlib
import os

import pytest

from lorelab.errors import InputFileError
from lorelab.io import sha256_bytes, sha256_file


def test_hash_matches_hashlib_for_a_multi_chunk_file(tmp_path):
    data = os.urandom(3 * 1024 * 1024 + 17)
    path = tmp_path / "blob"
    path.write_bytes(data)
    assert sha256_file(path, cap=8 * 1024 * 1024) == hashlib.sha256(data).hexdigest()
    assert sha256_bytes(data) == hashlib.sha256(data).hexdigest()


def test_file_over_the_cap_is_refused(tmp_path):
    path = tmp_path / "blob"
    path.write_bytes(b"x" * 101)
    with pytest.raises(InputFileError, match="exceeds the hash cap of 100"):
        sha256_file(path, cap=100)


def test_file_growing_past_the_cap_while_hashed_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "blob"
    path.write_bytes(b"x" * 10)
    original_read = os.read
    state = {"grown": False}

    def read_and_grow(fd, n):
        if not state["grown"]:
            state["grown"] = True
            with open(path, "ab") as handle:
                handle.write(b"y" * 200)
        return original_read(fd, n)

    monkeypatch.setattr(os, "read", read_and_grow)
    with pytest.raises(InputFileError, match="grew past the hash cap"):
        sha256_file(path, cap=100)


def test_fifo_and_directory_are_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputFileError, match="FIFO"):
        sha256_file(fifo, cap=100)
    with pytest.raises(InputFileError, match="directory"):
        sha256_file(tmp_path, cap=100)
