"""What it means for experiences to share a procedure, and the mining of shared procedures.

The procedure of an experience is its successful command sequence: the commands it ran with
exit code 0, in order, each normalised (:func:`lorelab.memory._text.normalise_command`),
followed by its verification command when that exited 0. Experiences *share a procedure*
when their procedures have a common subsequence of at least :data:`MIN_SHARED_COMMANDS`
commands; the shared part is what a Skill's steps are made of.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from lorelab.memory._text import normalise_command

MIN_SHARED_COMMANDS: Final = 2


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """One command an experience ran and the exit code it reported."""

    command: str
    exit_code: int


def procedure_of(
    commands: Iterable[CommandOutcome], verification_command: str, verification_exit_code: int
) -> tuple[str, ...]:
    """The normalised successful command sequence of one experience (see the module doc)."""
    sequence = [normalise_command(c.command) for c in commands if c.exit_code == 0]
    sequence = [command for command in sequence if command]
    if verification_exit_code == 0:
        verification = normalise_command(verification_command)
        if verification and (not sequence or sequence[-1] != verification):
            sequence.append(verification)
    return tuple(sequence)


def lcs(a: Sequence[str], b: Sequence[str]) -> tuple[str, ...]:
    """A longest common subsequence of ``a`` and ``b``; deterministic (ties follow ``a``)."""
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = table[i], table[i + 1]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if a[i] == b[j] else max(below[j], row[j + 1])
    out: list[str] = []
    i = j = 0
    while i < n and j < m:
        if a[i] == b[j]:
            out.append(a[i])
            i += 1
            j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def shared_procedure(procedures: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """A common subsequence of all ``procedures``, found by folding :func:`lcs` left to right.

    The fold always yields a subsequence common to every procedure (it may be shorter than
    the true multi-sequence LCS, which is NP-hard in general); empty when there is none.
    """
    if not procedures:
        return ()
    shared = tuple(procedures[0])
    for other in procedures[1:]:
        shared = lcs(shared, other)
        if not shared:
            break
    return shared


def is_subsequence(needle: Sequence[str], haystack: Sequence[str]) -> bool:
    """Whether ``needle`` appears in ``haystack`` in order (not necessarily contiguously)."""
    it = iter(haystack)
    return all(any(item == candidate for candidate in it) for item in needle)


def fingerprint(steps: Sequence[str]) -> str:
    """A stable identity for a step sequence, used to avoid mining the same procedure twice."""
    return hashlib.sha256(json.dumps(list(steps)).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class MinedProcedure:
    """A command sequence shared by two or more verified experiences."""

    steps: tuple[str, ...]
    source_ids: tuple[int, ...]


def mine(procedures: Sequence[tuple[int, tuple[str, ...]]]) -> list[MinedProcedure]:
    """Every maximal command sequence shared by at least two of ``procedures``.

    Deterministic: for each pair (in id order) the LCS is a candidate when it has at least
    :data:`MIN_SHARED_COMMANDS` commands; each candidate's support is every procedure that
    contains it as a subsequence; a candidate contained in another candidate with the same
    support is dropped. Results are ordered by support (largest first), then length, then
    steps.
    """
    ordered = sorted(procedures)
    found: dict[tuple[str, ...], None] = {}
    for index, (_, first) in enumerate(ordered):
        if len(first) < MIN_SHARED_COMMANDS:
            continue
        for _, second in ordered[index + 1 :]:
            if len(second) < MIN_SHARED_COMMANDS:
                continue
            shared = lcs(first, second)
            if len(shared) >= MIN_SHARED_COMMANDS:
                found.setdefault(shared, None)
    mined: list[MinedProcedure] = []
    for steps in found:
        support = tuple(ident for ident, proc in ordered if is_subsequence(steps, proc))
        mined.append(MinedProcedure(steps=steps, source_ids=support))
    maximal = [
        item
        for item in mined
        if not any(
            other is not item
            and len(other.steps) > len(item.steps)
            and set(item.source_ids) <= set(other.source_ids)
            and is_subsequence(item.steps, other.steps)
            for other in mined
        )
    ]
    maximal.sort(key=lambda item: (-len(item.source_ids), -len(item.steps), item.steps))
    return maximal
