"""Trial executors: every unit once, results reported as they end, a refusal stops the run."""

import pytest

from lorelab.evaluation.executors import SequentialExecutor, TrialExecutor


def test_the_sequential_executor_is_a_trial_executor():
    executor: TrialExecutor = SequentialExecutor()
    assert isinstance(executor, SequentialExecutor)


def test_every_unit_runs_once_in_order_and_is_reported_as_it_ends():
    events = []

    def execute(unit):
        events.append(("run", unit))
        return unit * 10

    def done(unit, result):
        events.append(("done", unit, result))
        return True

    results = SequentialExecutor().run([1, 2, 3], execute, done)
    assert results == [10, 20, 30]
    assert events == [
        ("run", 1),
        ("done", 1, 10),
        ("run", 2),
        ("done", 2, 20),
        ("run", 3),
        ("done", 3, 30),
    ]


def test_no_unit_starts_after_done_refuses():
    started = []
    results = SequentialExecutor().run(
        ["a", "b", "c"], lambda unit: started.append(unit) or unit, lambda unit, _r: unit != "b"
    )
    assert started == ["a", "b"]
    assert results == ["a", "b"]


def test_an_error_in_a_unit_propagates_unchanged():
    def execute(unit):
        if unit == 2:
            raise KeyboardInterrupt
        return unit

    reported = []
    with pytest.raises(KeyboardInterrupt):
        SequentialExecutor().run([1, 2, 3], execute, lambda unit, _r: reported.append(unit) or True)
    assert reported == [1]
