"""Where an evaluation's trials run: one small interface, so controllers never change with it.

A controller hands an executor its units (scheduled trials) in run order, a function that
executes one unit and returns its record, and a callback called with each record the moment
its unit ends (it writes the receipt; returning ``False`` stops the run: no further unit
starts). The executor returns the records of the units that ran, in run order.

The contract every executor keeps, whatever it runs on:

- each unit is executed exactly once, never retried, resumed or relabelled;
- ``done`` is called in the caller's thread, once per executed unit, so receipts are written
  by one writer;
- calls to one worker stay sequential (a pool runs different units side by side, never two
  calls of one unit), so latency is not confounded;
- after ``done`` returns ``False`` no new unit starts; units already running finish and are
  reported before ``run`` returns;
- an exception from ``execute`` or ``done`` (an interrupt included) propagates unchanged
  once running units are stopped.

Only :class:`SequentialExecutor` exists today. A local-pool or Ray executor implements the
same :class:`TrialExecutor` protocol; the four-condition runner keeps its runs in one
sequence by design (its memory server and Dream step are shared, ordered state).
"""

from lorelab.evaluation.executors._interface import SequentialExecutor, TrialExecutor

__all__ = ["SequentialExecutor", "TrialExecutor"]
