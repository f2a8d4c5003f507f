"""The shared progress bar: drawn on a real terminal (a pty), silent when output is not one."""

import io
import os
import select

from lorelab.io import at_terminal, no_progress, progress_bar


def _read_all(fd: int) -> bytes:
    chunks = []
    while select.select([fd], [], [], 0.2)[0]:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)


def test_no_bar_and_no_output_at_all_when_output_is_not_a_terminal():
    out, err = io.StringIO(), io.StringIO()
    with progress_bar("runs", 3, stdout=out, stderr=err) as tick:
        assert tick is no_progress
        for n in range(3):
            tick(f"run {n}")
    assert out.getvalue() == ""
    assert err.getvalue() == ""


def test_no_bar_when_stdout_is_piped_even_if_stderr_is_a_terminal():
    primary, secondary = os.openpty()
    try:
        with os.fdopen(os.dup(secondary), "w") as terminal:
            assert not at_terminal(io.StringIO(), terminal)
            with progress_bar("runs", 2, stdout=io.StringIO(), stderr=terminal) as tick:
                tick("one")
                tick("two")
            terminal.flush()
        assert _read_all(primary) == b""
    finally:
        os.close(primary)
        os.close(secondary)


def test_a_bar_with_its_count_is_drawn_on_stderr_when_both_are_terminals():
    primary, secondary = os.openpty()
    try:
        with os.fdopen(os.dup(secondary), "w") as terminal:
            assert at_terminal(terminal, terminal)
            with progress_bar("conditions runs", 2, stdout=terminal, stderr=terminal) as tick:
                tick("t1 baseline")
                tick("t1 dreaming")
            terminal.flush()
        drawn = _read_all(primary).decode("utf-8", "replace")
    finally:
        os.close(primary)
        os.close(secondary)
    assert "conditions runs" in drawn
    assert "2/2" in drawn
