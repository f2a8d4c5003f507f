"""Text normalisation shared by indexing and retrieval: terms, stems, commands, task keys.

Indexing and querying go through the same :func:`terms` function, and the full-text index
stores its output, so "which query terms does this item contain" is a plain set
intersection: the relevance floor never depends on a tokenizer we cannot see into.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Iterable
from typing import Final

_WORD: Final = re.compile(r"[^\W_]+", re.UNICODE)
# Characters shlex.quote leaves alone, plus whitespace between words.
_PLAIN_COMMAND: Final = re.compile(r"[\w@%+=:,./\s-]*", re.ASCII)

# Words that say nothing about which past work is relevant. Kept short and explicit: a word
# belongs here only if it appears in almost any coding task description.
_STOPWORD_TEXT: Final = """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each either
    else etc even ever every few for from further get gets getting got had has have having he
    her here hers him his how i if in into is it its itself just let lets like make makes
    making me more most much must my need needs no nor not now of off on once one only or
    other our ours out over own please same should so some such than that the their theirs
    them then there these they this those through to too under until up upon us use used
    using very via want was we were what when where which while who whom why will with
    without would you your yours
    add adds added adding change changes changed changing fix fixes fixed fixing update
    updates updated updating new make work works working issue issues problem problems task
    tasks thing things something way ways again still now currently instead properly correctly
    sure ensure
"""
STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())

_SUFFIXES: Final = (
    ("ational", "ate"),
    ("ization", "ize"),
    ("ations", "ate"),
    ("ation", "ate"),
    ("iness", "y"),
    ("ings", ""),
    ("ing", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("edly", ""),
    ("ed", ""),
    ("ers", "er"),
    ("sses", "ss"),
    ("es", ""),
    ("s", ""),
)
_KEEP_S: Final = ("ss", "us", "is")
_ES_AFTER: Final = ("x", "ch", "sh", "z", "ss")
_UNDOUBLE: Final = frozenset(("ing", "ings", "ed", "edly"))


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A small, deterministic suffix stripper: ``failing``/``failed``/``fails`` -> ``fail``.

    Deliberately light (a few Porter-like rules, not Porter): words of three letters or
    fewer and numbers are kept as they are; a common inflection is removed, then a final
    ``e`` (so ``parse``, ``parses`` and ``parsing`` all become ``pars``).
    """
    if len(word) <= 3 or word.isdigit():
        return word
    base = word
    for suffix, replacement in _SUFFIXES:
        if not word.endswith(suffix) or len(word) - len(suffix) < 3:
            continue
        head = word[: len(word) - len(suffix)]
        if suffix == "s" and word.endswith(_KEEP_S):
            break
        if suffix == "es" and not head.endswith(_ES_AFTER):
            head, replacement = word[:-1], ""
        base = head + replacement
        if (
            suffix in _UNDOUBLE
            and len(base) >= 4
            and base[-1] == base[-2]
            and base[-1] not in "slz"
        ):
            base = base[:-1]
        break
    if base.endswith("e") and len(base) > 4:
        base = base[:-1]
    return base


def words(text: str) -> list[str]:
    """Lower-cased letter/digit runs of ``text``; underscores and punctuation separate words."""
    return _WORD.findall(text.lower())


def _term(word: str) -> str:
    if len(word) < 2 or word in STOPWORDS:
        return ""
    stemmed = stem(word)
    return "" if stemmed in STOPWORDS else stemmed


# Word -> term ("" for a word that is not a term). Indexing sees the same words again and
# again, so a plain dict (bounded) saves most of the work.
_TERMS: dict[str, str] = {}
_TERMS_MAX: Final = 200_000


def terms(text: str) -> list[str]:
    """The index terms of ``text``: words, stemmed, stopwords and 1-character words removed."""
    out: list[str] = []
    cache = _TERMS
    for word in _WORD.findall(text.lower()):
        term = cache.get(word)
        if term is None:
            term = _term(word)
            if len(cache) < _TERMS_MAX:
                cache[word] = term
        if term:
            out.append(term)
    return out


def term_string(parts: Iterable[str]) -> str:
    """The space-separated terms of several texts: what the full-text index stores."""
    return " ".join(terms("\n".join(parts)))


def unique_terms(text: str) -> list[str]:
    """The distinct terms of ``text`` in first-seen order."""
    return list(dict.fromkeys(terms(text)))


def normalise_whitespace(text: str) -> str:
    """``text`` with runs of whitespace collapsed to one space and the ends stripped."""
    return " ".join(text.split())


def task_key(text: str) -> str:
    """The key two tasks are compared by for evaluation locks: whitespace-normalised,
    casefolded, trailing punctuation dropped (``Fix it.`` and ``fix  it`` are one task)."""
    return normalise_whitespace(text).casefold().rstrip(TRAILING_PUNCTUATION).rstrip()


TRAILING_PUNCTUATION = ".,;:!?…"


def normalise_command(command: str) -> str:
    """One canonical spelling of a shell command: shell words re-joined with single spaces.

    Quoting that does not change the argv (``pytest 'tests'`` vs ``pytest tests``) does not
    change the result; a command ``shlex`` cannot split is whitespace-normalised instead.
    """
    if _PLAIN_COMMAND.fullmatch(command):
        # Nothing to unquote and nothing shlex.join would quote: same result, much faster.
        return " ".join(command.split())
    try:
        argv = shlex.split(command)
    except ValueError:
        return normalise_whitespace(command)
    return shlex.join(argv)


def fts_query(query_terms: Iterable[str]) -> str:
    """An FTS5 query matching any of ``query_terms`` (each quoted, so no term is syntax)."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in query_terms)
