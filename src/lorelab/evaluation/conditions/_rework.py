"""Rework as the protocol defines it: "meaningful retry/edit/test cycles after the first
attempt", counted from the cycles the host itself reports.

A host response may list ``cycles``: each the files the host edited since its previous verify
run, then that verify run (``{edited, verification: {command, exitCode}}``). A cycle is
*meaningful* when it edited at least one file and its verify run is the task's verify command
(compared with whitespace collapsed): re-running the tests without an edit, or an edit checked
with some other command, is no rework cycle. The host's cycles of every attempt of a run are
added up; ``rework_count`` is that sum minus the first cycle (never below 0).

Unknown stays unknown: when any host call of the run did not report its cycles (a host that
does not report them, a call that failed, or no call at all), the run's cycles and rework are
``None``. lorelab's own re-prompts (host attempts after the first) are a separate count,
``reprompt_count``: they say how often lorelab asked again, not what the host did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def _collapsed(command: str) -> str:
    return " ".join(command.split())


def meaningful_cycles(cycles: Iterable[Mapping[str, Any]], verify: str) -> int:
    """How many of ``cycles`` edited a file and then ran ``verify``."""
    wanted = _collapsed(verify)
    count = 0
    for cycle in cycles:
        verification = cycle.get("verification")
        command = verification.get("command") if isinstance(verification, Mapping) else None
        if cycle.get("edited") and isinstance(command, str) and _collapsed(command) == wanted:
            count += 1
    return count


def rework_from_cycles(host_cycles: int | None) -> int | None:
    """The protocol's rework count: the host's meaningful cycles after the first one."""
    return None if host_cycles is None else max(0, host_cycles - 1)
