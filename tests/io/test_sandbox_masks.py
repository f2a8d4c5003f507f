"""Which listening sockets the sandbox masks: every one it would see (the containment tests
show a socket outside is unreachable), except another lorelab process's probe listener, whose
removal a mask would race (bubblewrap then cannot create the mount point under the read-only
root, and the run it prefixes never starts)."""

from pathlib import Path

from lorelab.io import _sandbox


def _masked(tmp_path: Path) -> list[str]:
    argv = _sandbox.bwrap_argv("bwrap", cwd=tmp_path, writable=(), pid=True, network=True)
    return [
        argv[i + 2]
        for i, arg in enumerate(argv)
        if arg == "--ro-bind" and argv[i + 1] == "/dev/null"
    ]


def test_this_processs_own_probe_listener_is_masked(tmp_path):
    with _sandbox._outside_listener() as path:
        assert path
        assert path in _masked(tmp_path)


def test_another_processs_probe_listener_is_not_masked(tmp_path):
    with _sandbox._outside_listener() as path:
        assert path
        # Seen from this process, the same listener held by another one.
        _sandbox._own_probe_sockets.discard(path)
        assert path not in _masked(tmp_path)
