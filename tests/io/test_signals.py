"""interrupts_deferred: a signal inside the block reaches its handler only after the block."""

from __future__ import annotations

import signal
import threading

import pytest

from lorelab.io import interrupts_deferred


class _Stopped(Exception):
    pass


def _raise(number: int, _frame: object) -> None:
    raise _Stopped(number)


@pytest.fixture
def term_raises():
    previous = signal.signal(signal.SIGTERM, _raise)
    yield
    signal.signal(signal.SIGTERM, previous)


def _write_receipt_and_record(done: list[str], number: int) -> None:
    with interrupts_deferred():
        done.append("receipt")
        signal.raise_signal(number)
        done.append("record")
    done.append("after")  # never reached: the held signal raises as the block ends


def test_a_sigterm_inside_the_block_is_delivered_after_the_whole_block(term_raises):
    done: list[str] = []
    with pytest.raises(_Stopped):
        _write_receipt_and_record(done, signal.SIGTERM)
    assert done == ["receipt", "record"]
    assert signal.getsignal(signal.SIGTERM) is _raise


def test_ctrl_c_inside_the_block_is_delivered_after_it_as_keyboard_interrupt():
    done: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        _write_receipt_and_record(done, signal.SIGINT)
    assert done == ["receipt", "record"]


def test_no_signal_means_nothing_is_raised_and_the_handlers_are_restored(term_raises):
    ctrl_c = signal.getsignal(signal.SIGINT)
    with interrupts_deferred():
        assert signal.getsignal(signal.SIGTERM) is not _raise
    assert signal.getsignal(signal.SIGTERM) is _raise
    assert signal.getsignal(signal.SIGINT) is ctrl_c


def test_outside_the_main_thread_the_block_runs_as_it_is():
    seen: list[object] = []

    def body() -> None:
        with interrupts_deferred():
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert seen == [before]
