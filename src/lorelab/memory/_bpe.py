"""The bundled Llama-2 BPE tokenizer read in pure Python, from a compact cache of its tables.

Building a ``tokenizers.Tokenizer`` from the packaged 1.8 MB JSON costs more than everything
else a hook does, so a query is tokenized here instead, with the same algorithm (the BPE model
of Hugging Face ``tokenizers``: special tokens split out first, each other piece normalised
with ``Prepend("▁")`` and ``Replace(" ", "▁")``, characters looked up one by one with UTF-8
byte fallback, then merges applied lowest rank first, leftmost first). Tests compare the ids
with ``tokenizers`` itself on retrieval texts and an adversarial corpus.

The tables (single-character vocabulary, byte tokens, merges as integer pairs) are written on
first use to ``$LORELAB_CACHE_DIR`` (else ``$XDG_CACHE_HOME/lorelab``, else
``~/.cache/lorelab``), in a file named after the SHA-256 of the tokenizer JSON and checked by
the SHA-256 of its own payload. A cache that is missing, unreadable or damaged is rebuilt from
the JSON; one that cannot be written is not an error (the tables are then built in memory).
A tokenizer JSON of another shape than the one described is refused with ``Unsupported``.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import json
import marshal
import re
import sys
from array import array
from bisect import bisect_left
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from lorelab._cache import cache_dir, write_atomically

_MAGIC: Final = f"lorelab-bpe-1 {sys.byteorder} {array('Q').itemsize}\n".encode()
_DICT_FROM: Final = 2048
"""Symbols in one piece from which the merges are looked up in a dict."""
_SHIFT: Final = 20
"""Token ids and ranks are packed as ``high << 20 | low``: room for a vocabulary of 1M ids."""
_MASK: Final = (1 << _SHIFT) - 1
_SPACE: Final = "\u2581"
_EXPECTED_NORMALIZER: Final = {
    "type": "Sequence",
    "normalizers": [
        {"type": "Prepend", "prepend": _SPACE},
        {"type": "Replace", "pattern": {"String": " "}, "content": _SPACE},
    ],
}
_EXPECTED_MODEL: Final = {
    "type": "BPE",
    "dropout": None,
    "continuing_subword_prefix": None,
    "end_of_word_suffix": None,
    "fuse_unk": True,
    "byte_fallback": True,
    "ignore_merges": False,
}


class Unsupported(ValueError):
    """A tokenizer JSON this reader does not implement exactly."""


class Bpe:
    """The tables of one BPE tokenizer, as this module needs them."""

    __slots__ = ("_table", "byte_ids", "chars", "keys", "specials", "values")

    def __init__(
        self,
        chars: dict[str, int],
        byte_ids: tuple[int, ...],
        keys: array[int],
        values: array[int],
        specials: dict[str, int],
    ) -> None:
        self.chars = chars
        """Vocabulary entries one character long."""
        self.byte_ids = byte_ids
        """The id of ``<0xXX>`` for each byte value."""
        self.keys = keys
        """Merges, sorted: ``left << 20 | right``."""
        self.values = values
        """For each key: ``rank << 20 | merged id``."""
        self.specials = specials
        """Added tokens, matched in the raw text before normalisation."""
        self._table: dict[int, int] | None = None

    def _lookup(self, symbols: int) -> Callable[[int], int | None]:
        # A short text is merged by binary search in the sorted arrays (nothing to build); a
        # long one pays once for a dict of the merges, as its lookups then dominate.
        if symbols > _DICT_FROM or self._table is not None:
            if self._table is None:
                self._table = dict(zip(self.keys, self.values, strict=True))
            return self._table.get
        keys, values, size = self.keys, self.values, len(self.keys)

        def search(key: int) -> int | None:
            index = bisect_left(keys, key)
            return values[index] if index < size and keys[index] == key else None

        return search

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text`` (no special tokens added)."""
        ids: list[int] = []
        if not self.specials:
            return self._piece(text)
        pattern = _special_pattern(tuple(self.specials))
        start = 0
        for found in pattern.finditer(text):
            ids.extend(self._piece(text[start : found.start()]))
            ids.append(self.specials[found.group()])
            start = found.end()
        ids.extend(self._piece(text[start:]))
        return ids

    def _piece(self, text: str) -> list[int]:
        if not text:
            return []
        return self._merge(self._symbols(_SPACE + text.replace(" ", _SPACE)))

    def _symbols(self, word: str) -> list[int]:
        chars, byte_ids = self.chars, self.byte_ids
        ids: list[int] = []
        for char in word:
            found = chars.get(char)
            if found is None:
                ids.extend(byte_ids[b] for b in char.encode("utf-8", "surrogatepass"))
            else:
                ids.append(found)
        return ids

    def _merge(self, ids: list[int]) -> list[int]:
        count = len(ids)
        if count < 2:
            return ids
        lookup = self._lookup(count)
        following = [*range(1, count), -1]
        preceding = list(range(-1, count - 1))
        removed = [False] * count
        queue: list[tuple[int, int, int]] = []
        for pos in range(count - 1):
            found = lookup(ids[pos] << _SHIFT | ids[pos + 1])
            if found is not None:
                queue.append((found >> _SHIFT, pos, found & _MASK))
        heapq.heapify(queue)
        while queue:
            _, pos, new = heapq.heappop(queue)
            right = following[pos]
            if removed[pos] or right == -1:
                continue
            found = lookup(ids[pos] << _SHIFT | ids[right])
            if found is None or found & _MASK != new:
                continue  # a stale entry: one side has merged since it was queued
            ids[pos] = new
            removed[right] = True
            after = following[right]
            following[pos] = after
            if after != -1:
                preceding[after] = pos
                found = lookup(new << _SHIFT | ids[after])
                if found is not None:
                    heapq.heappush(queue, (found >> _SHIFT, pos, found & _MASK))
            before = preceding[pos]
            if before != -1:
                found = lookup(ids[before] << _SHIFT | new)
                if found is not None:
                    heapq.heappush(queue, (found >> _SHIFT, before, found & _MASK))
        return [token for token, gone in zip(ids, removed, strict=True) if not gone]


_patterns: dict[tuple[str, ...], re.Pattern[str]] = {}


def _special_pattern(specials: tuple[str, ...]) -> re.Pattern[str]:
    # Leftmost match, longest first among those starting at the same place (as tokenizers'
    # LeftmostLongest automaton).
    pattern = _patterns.get(specials)
    if pattern is None:
        ordered = sorted(specials, key=len, reverse=True)
        pattern = re.compile("|".join(re.escape(token) for token in ordered))
        _patterns[specials] = pattern
    return pattern


def load(tokenizer_json: Path) -> Bpe:
    """The tables of ``tokenizer_json``, from the cache when it holds them intact."""
    raw = tokenizer_json.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    path = cache_dir() / f"bpe-{digest}.bin"
    cached = _read_cache(path)
    if cached is not None:
        return cached
    tables = build(json.loads(raw))
    with contextlib.suppress(OSError):
        _write_cache(path, tables)
    return tables


def _read_cache(path: Path) -> Bpe | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(_MAGIC) + 64
    if not data.startswith(_MAGIC) or len(data) < head + 1:
        return None
    payload = data[head + 1 :]
    if hashlib.sha256(payload).hexdigest().encode() != data[len(_MAGIC) : head]:
        return None
    try:
        chars, byte_ids, specials, key_bytes, value_bytes = marshal.loads(payload)
        keys, values = array("Q"), array("Q")
        keys.frombytes(key_bytes)
        values.frombytes(value_bytes)
    except (ValueError, EOFError, TypeError):
        return None
    if len(keys) != len(values):
        return None
    return Bpe(chars, byte_ids, keys, values, specials)


def _write_cache(path: Path, tables: Bpe) -> None:
    payload = marshal.dumps(
        (
            tables.chars,
            tables.byte_ids,
            tables.specials,
            tables.keys.tobytes(),
            tables.values.tobytes(),
        )
    )
    write_atomically(path, _MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)


def build(config: dict[str, Any]) -> Bpe:
    """The tables of a parsed tokenizer JSON; ``Unsupported`` for any other shape."""
    model = config.get("model")
    if not isinstance(model, dict):
        raise Unsupported("the tokenizer has no model")
    for key, expected in _EXPECTED_MODEL.items():
        if model.get(key) != expected:
            raise Unsupported(f"model.{key} is {model.get(key)!r}, not {expected!r}")
    if config.get("normalizer") != _EXPECTED_NORMALIZER:
        raise Unsupported("the normalizer is not Prepend('▁') then Replace(' ', '▁')")
    for key in ("pre_tokenizer", "truncation", "padding"):
        if config.get(key) is not None:
            raise Unsupported(f"{key} is set")
    vocab: dict[str, int] = model["vocab"]
    merges = _merges(vocab, model["merges"])
    ordered = sorted(merges)
    return Bpe(
        chars={token: ident for token, ident in vocab.items() if len(token) == 1},
        byte_ids=_byte_ids(vocab),
        keys=array("Q", ordered),
        values=array("Q", (merges[key] for key in ordered)),
        specials=_specials(config.get("added_tokens") or []),
    )


def _byte_ids(vocab: dict[str, int]) -> tuple[int, ...]:
    try:
        return tuple(vocab[f"<0x{value:02X}>"] for value in range(256))
    except KeyError as missing:
        raise Unsupported(f"byte token {missing} is not in the vocabulary") from None


def _merges(vocab: dict[str, int], lines: list[Any]) -> dict[int, int]:
    if max(vocab.values(), default=0) > _MASK or len(lines) > _MASK:
        raise Unsupported("the vocabulary or the merges are too large")
    merges: dict[int, int] = {}
    for rank, line in enumerate(lines):
        parts = line.split(" ") if isinstance(line, str) else line
        if len(parts) != 2:
            raise Unsupported(f"merge {rank} is not a pair: {line!r}")
        left, right = parts
        try:
            key = vocab[left] << _SHIFT | vocab[right]
            merges[key] = rank << _SHIFT | vocab[left + right]
        except KeyError as missing:
            raise Unsupported(f"merge {rank} names {missing}, not in the vocabulary") from None
    return merges


def _specials(added: list[dict[str, Any]]) -> dict[str, int]:
    specials: dict[str, int] = {}
    for token in added:
        if token.get("normalized") or token.get("single_word"):
            raise Unsupported(f"added token {token.get('content')!r} is not a plain special")
        if token.get("lstrip") or token.get("rstrip"):
            raise Unsupported(f"added token {token.get('content')!r} strips spaces")
        specials[token["content"]] = token["id"]
    return specials
