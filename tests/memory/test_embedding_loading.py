"""The embedding model's fast loading: the pure-Python tokenizer against ``tokenizers`` (the
oracle), its table cache, and the mapped weights against ``safetensors`` (the reference)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from lorelab._cache import CACHE_ENV
from lorelab.errors import IntegrityFailure
from lorelab.memory import _bpe, _embedding

ROOT = Path(__file__).resolve().parents[2]
HELDOUT = ROOT / "benchmarks" / "data" / "retrieval_heldout.json"
TOKENIZER_JSON = _embedding._package_dir().joinpath(*_embedding._TOKENIZER)
WEIGHTS = _embedding._package_dir().joinpath(*_embedding._WEIGHTS)


@pytest.fixture(scope="module")
def oracle() -> Tokenizer:
    return Tokenizer.from_file(str(TOKENIZER_JSON))


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> _bpe.Bpe:
    return _bpe.build(json.loads(TOKENIZER_JSON.read_text(encoding="utf-8")))


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(where))
    return where


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _example_texts() -> list[str]:
    texts: list[str] = []
    for path in sorted((ROOT / "examples").rglob("*.json")):
        if path.stat().st_size <= 2_000_000:
            texts.extend(_strings(json.loads(path.read_text(encoding="utf-8"))))
    return texts


def _adversarial() -> list[str]:
    fixed = [
        "",
        " ",
        "   ",
        "\t",
        "\n\n",
        "a",
        "  leading and trailing  ",
        "many     spaces   between",
        "\u2581already\u2581marked \u2581",
        "<s>",
        "</s>",
        "<unk>",
        "<s><s></s>",
        "x<s>y</s>z<unk>",
        " <s> spaced </s> ",
        "<s",
        "</",
        "<0x0A> looks like a byte token",
        "control \x00\x01\x1b[31m\x7f\x85 chars",
        "emoji 🎉👨\u200d👩\u200d👧 🏳️\u200d🌈 flags 🇫🇷",
        "CJK 日本語のテキスト 中文 한국어",
        "combining e\u0301 a\u0308 \ufeffbom \u200b zero width",
        "rtl \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627",
        "math \U0001d518\U0001d52b\U0001d526 \u2200x\u2208\u211d",
        "private use \ue000 \U000f0000 noncharacter \uffff",
        "antidisestablishmentarianism" * 40,
        "x" * 5000,
        "ab" * 3000,
        "Fix the failing date parser test",
        "pytest -q tests/test_dates.py::test_iso --maxfail=1 2>&1 | tail -n 20",
        'def f(x):\n    return {"k": [1, 2.5e-3]}\n',
    ]
    rng = random.Random(20261201)
    alphabet = (
        [chr(c) for c in range(0x20, 0x7F)]
        + [chr(c) for c in range(0x00, 0x20)]
        + list("éüßçñøåœ∑∂ƒ©˙∆˚¬…æ«»“”\u2018\u2019\u2013\u2014")
        + list("日本語中文字한국어テキスト")
        + ["🎉", "😀", "🚀", "\u200d", "\ufe0f", "\u2581", "<s>", "</s>", "<unk>"]
        + [" "] * 20
    )
    generated = [
        "".join(rng.choice(alphabet) for _ in range(rng.choice([1, 3, 10, 80, 600, 2500])))
        for _ in range(300)
    ]
    return fixed + generated


def _disagreements(tables: _bpe.Bpe, oracle: Tokenizer, texts: list[str]) -> list[str]:
    expected = [e.ids for e in oracle.encode_batch(texts, add_special_tokens=False)]
    return [
        text[:60] for text, ids in zip(texts, expected, strict=True) if tables.encode(text) != ids
    ]


def test_the_python_tokenizer_gives_the_ids_of_tokenizers_on_the_held_out_set(tables, oracle):
    texts = list(_strings(json.loads(HELDOUT.read_text(encoding="utf-8"))))
    assert len(texts) > 500
    assert _disagreements(tables, oracle, texts) == []


def test_the_python_tokenizer_gives_the_ids_of_tokenizers_on_the_example_stores(tables, oracle):
    texts = _example_texts()
    assert len(texts) > 100
    assert _disagreements(tables, oracle, texts) == []


def test_the_python_tokenizer_gives_the_ids_of_tokenizers_on_adversarial_text(tables, oracle):
    texts = _adversarial()
    assert _disagreements(tables, oracle, texts) == []


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=400))
def test_the_python_tokenizer_agrees_with_tokenizers_on_any_text(tables, oracle, text):
    assert tables.encode(text) == oracle.encode(text, add_special_tokens=False).ids


def test_a_long_text_merges_through_the_dict_and_still_agrees(tables, oracle):
    text = "The quick brown fox, ünïcödé… 日本 🎉 " * 200
    assert len(text) > _bpe._DICT_FROM
    assert tables.encode(text) == oracle.encode(text, add_special_tokens=False).ids


def test_the_tables_are_cached_under_the_tokenizer_digest_and_read_back(cache_dir, tables):
    first = _bpe.load(TOKENIZER_JSON)
    (cached,) = cache_dir.iterdir()
    assert cached.name.startswith("bpe-")
    assert len(cached.name) == len("bpe-.bin") + 64
    again = _bpe.load(TOKENIZER_JSON)
    assert again.keys == first.keys == tables.keys
    assert again.values == tables.values
    assert again.chars == tables.chars
    assert again.specials == tables.specials


def test_a_damaged_cache_is_rebuilt_not_trusted(cache_dir, tables):
    _bpe.load(TOKENIZER_JSON)
    (cached,) = cache_dir.iterdir()
    data = bytearray(cached.read_bytes())
    data[-100] ^= 0xFF
    cached.write_bytes(bytes(data))
    rebuilt = _bpe.load(TOKENIZER_JSON)
    assert rebuilt.values == tables.values
    assert cached.read_bytes() != bytes(data)  # written again, intact


def test_a_cache_directory_that_cannot_be_written_is_not_an_error(tmp_path, monkeypatch, tables):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))
    assert _bpe.load(TOKENIZER_JSON).keys == tables.keys


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda c: c["model"].update(ignore_merges=True), "model.ignore_merges"),
        (lambda c: c["model"].update(byte_fallback=False), "model.byte_fallback"),
        (lambda c: c.update(pre_tokenizer={"type": "Metaspace"}), "pre_tokenizer is set"),
        (lambda c: c["normalizer"]["normalizers"].pop(), "the normalizer"),
        (lambda c: c["added_tokens"][0].update(normalized=True), "not a plain special"),
        (lambda c: c["model"]["merges"].append("zz qq"), "not in the vocabulary"),
        (lambda c: c["model"]["vocab"].pop("<0x0A>"), "byte token"),
    ],
)
def test_a_tokenizer_of_another_shape_is_refused(change, problem):
    config = json.loads(TOKENIZER_JSON.read_text(encoding="utf-8"))
    change(config)
    with pytest.raises(_bpe.Unsupported, match=problem):
        _bpe.build(config)


def test_the_mapped_weights_equal_what_safetensors_reads():
    weights = _embedding.read_weights(WEIGHTS)
    mapped = _embedding.Model(weights, TOKENIZER_JSON).table
    reference = load_file(str(WEIGHTS))["embedding.weight"]
    assert mapped.dtype == reference.dtype
    assert mapped.shape == reference.shape
    assert np.array_equal(mapped, reference)
    for token in (0, 1, 4242, weights.rows - 1):
        assert weights.row(token) == tuple(reference[token].astype(np.float64).tolist())


def test_a_token_outside_the_table_is_an_integrity_failure():
    weights = _embedding.read_weights(WEIGHTS)
    with pytest.raises(IntegrityFailure, match=f"token id {weights.rows} is outside"):
        weights.row(weights.rows)


def test_a_query_vector_is_the_float64_mean_of_its_token_rows_normalised(oracle):
    table = load_file(str(WEIGHTS))["embedding.weight"].astype(np.float64)
    texts = ["Fix the failing date parser test", "pytest -q tests/test_dates.py", "x" * 3000]
    for text in texts:
        ids = oracle.encode(text, add_special_tokens=False).ids[: _embedding.MAX_TOKENS]
        mean = table[ids].mean(axis=0)
        expected = mean / np.linalg.norm(mean)
        query = np.array(_embedding.embed_query(text))
        assert np.allclose(query, expected, rtol=0, atol=1e-12)
        # and what a stored vector of the same text holds, to fp32 precision
        assert np.allclose(query, _embedding.embed([text])[0], rtol=0, atol=1e-6)
    assert _embedding.embed_query("") == (0.0,) * _embedding.DIMENSIONS


def _with_header(tmp_path: Path, header: dict[str, Any], data: bytes) -> Path:
    raw = json.dumps(header).encode()
    path = tmp_path / "weights.safetensors"
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + data)
    return path


@pytest.mark.parametrize(
    ("header", "size", "problem"),
    [
        ({"embedding.weight": {"dtype": "F32", "shape": [4, 256], "data_offsets": [0, 2048]}},
         2048, "expected F16 rows of 256 dimensions, got F32"),
        ({"embedding.weight": {"dtype": "F16", "shape": [4, 128], "data_offsets": [0, 1024]}},
         1024, "got F16 \\[4, 128\\]"),
        ({"embedding.weight": {"dtype": "F16", "shape": [4, 256], "data_offsets": [0, 2048]}},
         100, "do not fit"),
        ({"embedding.weight": {"dtype": "F16", "shape": [4, 256], "data_offsets": [0, 1000]}},
         2048, "do not fit"),
        ({"other": {"dtype": "F16", "shape": [4, 256], "data_offsets": [0, 2048]}},
         2048, "unreadable header"),
    ],
)  # fmt: skip
def test_weights_that_do_not_match_the_model_are_refused(tmp_path, header, size, problem):
    path = _with_header(tmp_path, header, b"\0" * size)
    with pytest.raises(IntegrityFailure, match=problem) as caught:
        _embedding.read_weights(path)
    assert "reinstall lorelab" in str(caught.value)


@pytest.mark.parametrize(
    "data", [b"", b"\x05\0\0\0", b"\xff" * 8 + b"{}", b"\x03" + b"\0" * 7 + b"{x}"]
)
def test_a_file_that_is_not_safetensors_is_refused(tmp_path, data):
    path = tmp_path / "weights.safetensors"
    path.write_bytes(data)
    with pytest.raises(IntegrityFailure, match="could not be loaded"):
        _embedding.read_weights(path)


def _reference_vectors(texts: list[str], oracle: Tokenizer) -> np.ndarray:
    """The vectors as lorelab computed them before: tokenizers + safetensors, same arithmetic."""
    table = load_file(str(WEIGHTS))["embedding.weight"]
    out = np.zeros((len(texts), _embedding.DIMENSIONS), dtype=np.float32)
    for row, encoding in enumerate(oracle.encode_batch(texts, add_special_tokens=False)):
        ids = encoding.ids[: _embedding.MAX_TOKENS]
        if ids:
            out[row] = table[ids].astype(np.float32).mean(axis=0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: np.ndarray = out / norms
    return result


def test_stored_vectors_are_byte_identical_to_the_previous_loader(cache_dir, oracle):
    heldout = json.loads(HELDOUT.read_text(encoding="utf-8"))
    tasks = [item["task"] for item in heldout["experiences"]]
    texts = [*tasks[:40], "", "<s>", "x" * 3000]
    reference = [_embedding.to_blob(v) for v in _reference_vectors(texts, oracle)]
    one_by_one = [_embedding.to_blob(_embedding.embed([text])[0]) for text in texts]
    batched = [_embedding.to_blob(v) for v in _embedding.embed(texts)]
    assert len(texts) >= _embedding.RUST_BATCH  # the batch goes through tokenizers
    assert one_by_one == reference
    assert batched == reference


def test_a_stored_vector_computed_without_numpy_is_numpys_to_the_bit(oracle):
    heldout = json.loads(HELDOUT.read_text(encoding="utf-8"))
    texts = [item["task"] for item in heldout["experiences"]]
    texts += [task["text"] for task in heldout["tasks"]]
    texts += ["", "<s>", "a", "x" * 3000, "fix " * 600, "Ünïcödé\ttabs\nand \u200b spaces"]
    loaded = _embedding.model(1)
    for text in texts:
        ids = loaded.token_ids([text])[0][: _embedding.MAX_TOKENS]
        emulated = np.array(_embedding._stored_vector_f32(loaded.weights, ids), dtype=np.float32)
        assert np.array_equal(emulated, _embedding.embed([text])[0]), text[:60]


def test_a_process_without_numpy_stores_the_bytes_numpy_would(tmp_path):
    import subprocess
    import sys

    texts = ["Fix the failing date parser test", "Rotate the staging certificates"]
    code = (
        "import json, sys\n"
        "from lorelab.memory import _embedding\n"
        f"blobs = _embedding.stored_blobs({texts!r})\n"
        "print(json.dumps([[b.hex() for b in blobs], 'numpy' in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    blobs, numpy_loaded = json.loads(done.stdout)
    assert numpy_loaded is False
    assert blobs == [_embedding.to_blob(vector).hex() for vector in _embedding.embed(texts)]


def test_the_package_directory_is_found_without_importing_wordllama(tmp_path):
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from lorelab.memory import _embedding\n"
        "_embedding.embed(['fix the parser'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('wordllama', 'requests', 'tokenizers', 'safetensors')))\n"
    )
    env = {**os.environ, CACHE_ENV: str(tmp_path / "cache")}
    for _ in range(2):  # the first run writes the cache, the second reads it
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        assert done.stdout.strip() == "[]"
    assert list((tmp_path / "cache").iterdir())
