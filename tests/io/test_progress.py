"""The shared progress: a bar on a real terminal (a pty), one plain line per finished unit on
stderr when output is not one, and nothing at all when quiet."""

import io
import os
import re
import select

from lorelab.io import at_terminal, no_progress, progress_bar, quiet_progress


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


def test_one_plain_line_per_finished_unit_on_stderr_when_output_is_not_a_terminal():
    out, err = io.StringIO(), io.StringIO()
    with progress_bar("runs", 3, stdout=out, stderr=err) as tick:
        for n in range(3):
            tick(f"run {n}")
    assert out.getvalue() == ""
    lines = err.getvalue().splitlines()
    assert len(lines) == 3
    for n, line in enumerate(lines):
        assert re.fullmatch(rf"runs {n + 1}/3: run {n} \(\d+\.\d s\)", line), line
    assert "\x1b" not in err.getvalue()


def test_a_label_with_control_characters_is_printed_escaped():
    err = io.StringIO()
    with progress_bar("runs", 1, stdout=io.StringIO(), stderr=err) as tick:
        tick("evil\x1b[2Jname")
    assert "\x1b" not in err.getvalue()
    assert "evil\\x1b[2Jname" in err.getvalue()


def test_quiet_shows_nothing_at_all():
    out, err = io.StringIO(), io.StringIO()
    with quiet_progress(), progress_bar("runs", 3, stdout=out, stderr=err) as tick:
        assert tick is no_progress
        tick("run 0")
    assert out.getvalue() == err.getvalue() == ""


def test_lines_not_a_bar_when_stdout_is_piped_even_if_stderr_is_a_terminal():
    primary, secondary = os.openpty()
    try:
        with os.fdopen(os.dup(secondary), "w") as terminal:
            assert not at_terminal(io.StringIO(), terminal)
            with progress_bar("runs", 2, stdout=io.StringIO(), stderr=terminal) as tick:
                tick("one")
                tick("two")
            terminal.flush()
        drawn = _read_all(primary).decode("utf-8", "replace")
    finally:
        os.close(primary)
        os.close(secondary)
    assert [line.split(" (")[0] for line in drawn.splitlines()] == [
        "runs 1/2: one",
        "runs 2/2: two",
    ]


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
