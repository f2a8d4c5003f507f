"""The mechanical relevance rule the runner records for guidance.

Guidance is *relevant* to a task when its text names one of the task's declared files, one
of its declared commands, or its verify command (each compared after collapsing whitespace,
as a whole term: ``done/h1`` is not named by ``done/h10``, ``shop/tax.py`` not by
``myshop/tax.py`` or ``shop/tax.pyc``).
No guidance is never relevant. The rule is deliberately mechanical: it says the guidance
pointed at the right place, not that it helped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from lorelab.evaluation.conditions._manifest import TaskSpec


def _flat(text: str) -> str:
    return " ".join(text.split())


def relevance_keys(task: TaskSpec) -> list[str]:
    """What guidance must name to be relevant to ``task``, in declaration order."""
    return list(dict.fromkeys(_flat(key) for key in (*task.files, *task.commands, task.verify)))


def named_keys(text: str | None, keys: Iterable[str]) -> list[str]:
    """The ``keys`` that ``text`` names."""
    if not text:
        return []
    flat = _flat(text)
    return [key for key in keys if key and _whole(key).search(flat)]


def _whole(key: str) -> re.Pattern[str]:
    # Bounded by anything that cannot continue a path or a word: a sentence's full stop,
    # quotes, backticks and brackets may follow, a further path segment or letter may not.
    return re.compile(r"(?<![\w./-])" + re.escape(key) + r"(?![\w/-])(?!\.\w)")


def is_relevant(text: str | None, task: TaskSpec) -> bool:
    """Whether guidance ``text`` is relevant to ``task`` under the mechanical rule."""
    return bool(named_keys(text, relevance_keys(task)))
