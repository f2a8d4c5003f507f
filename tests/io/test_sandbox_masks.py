"""Which listening sockets the sandbox masks: every one it would see, except another lorelab
process's probe listener, whose removal a mask would race (bubblewrap then cannot create the
mount point under the read-only root, and the run it prefixes never starts)."""

import os
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lorelab.io import _sandbox


@contextmanager
def _listening(prefix: str) -> Iterator[str]:
    place = _sandbox._socket_place()
    if place is None:
        pytest.fail("no place outside the sandbox's private directories to put a socket")
    folder = tempfile.mkdtemp(prefix=prefix, dir=place)
    path = os.path.join(folder, "s")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(path)
            server.listen(1)
            yield path
    finally:
        os.unlink(path)
        os.rmdir(folder)


def _masked(tmp_path: Path) -> list[str]:
    argv = _sandbox.bwrap_argv("bwrap", cwd=tmp_path, writable=(), pid=True, network=True)
    return [
        argv[i + 2]
        for i, arg in enumerate(argv)
        if arg == "--ro-bind" and argv[i + 1] == "/dev/null"
    ]


def test_a_listening_socket_outside_the_writable_places_is_masked(tmp_path):
    with _listening(".lorelab-test-socket-") as path:
        assert path in _masked(tmp_path)


def test_another_processs_probe_listener_is_not_masked(tmp_path):
    with _listening(".lorelab-probe-") as path:
        assert path not in _masked(tmp_path)


def test_this_processs_own_probe_listener_is_masked(tmp_path):
    with _sandbox._outside_listener() as path:
        assert path
        assert path in _masked(tmp_path)
