"""Benchmark of the memory store: ``prepare`` latency at 1k/10k/100k experiences, and ingest rate.

Run:  python benchmarks/bench_memory.py [--sizes 1000 10000 100000] [--queries 200]
                                        [--model minilm|wordllama] [--fill store|padded]
                                        [--keep-stores DIR | --store-from DIR]

The experiences are SYNTHETIC: generated from a seeded vocabulary (Zipf-distributed words,
realistic task templates, commands and files) so the index has a realistic term distribution.
They measure speed only; retrieval quality is measured on the authored labelled set
(``benchmarks/retrieval_quality.py``). Not part of the test suite: tests never depend on
wall-clock time.

Ingest is measured two ways: ``record`` (one experience per call and transaction, what an agent
does) and ``record_many`` (batches of 500, a bulk import); both compute and store each
experience's embedding vector. ``prepare`` latency includes embedding the task, scoring every
stored vector, BM25, the abstention rule, and recording the brief for audit (a write
transaction). Model load is timed in fresh processes, as a command that embeds one text pays it:
importing numpy, then mapping the bundled weights, reading the tokenizer's cached tables
(written by the first run) and embedding one query. ``--model`` chooses the store's embedding
model (default: a new store's, ``$LORELAB_EMBEDDING_MODEL`` or MiniLM); for MiniLM the load is
importing numpy and onnxruntime, making the session and embedding one query.

``costGrowth`` is the largest level's prepare p95 divided by the smallest's (100k / 1k with the
default sizes), both measured in this run: how prepare's cost grows with the store, a ratio
that holds better than either figure on a busy or slower machine. Every measured task is
new to the store (the store keeps its recent query vectors; none is measured twice).

Filling a 100k store takes long. ``--keep-stores DIR`` writes a copy of each level's store,
filled and not yet measured, to ``DIR`` (with ``stores.json``: seed, model, fill); a later run
with ``--store-from DIR`` (same settings) measures copies of them without filling, so prepare
at every level, and ``costGrowth``, can be measured again in one run on an idle machine. Such a
level starts without the briefs a filling run recorded at the levels before it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lorelab.memory import (
    CommandRun,
    PrepareRequest,
    RecordManyRequest,
    RecordRequest,
    SqliteMemoryStore,
    Verification,
)

VERBS = ["Fix", "Repair", "Resolve", "Investigate", "Debug", "Patch", "Handle", "Stabilise"]
PROBLEMS = [
    "failing test {test}",
    "flaky test {test} in CI",
    "ImportError in {module} after upgrading {dep}",
    "TypeError raised by {module}.{func}",
    "lint errors ({rule}) in {module}",
    "migration {migration} fails on {table}",
    "CI job {job} timing out",
    "memory leak in {module} worker",
    "deprecation warnings from {dep} in {module}",
    "wrong {field} returned by {func} endpoint",
]
TOOLS = ["pytest", "npx jest", "go test", "cargo test", "ruff check", "mypy", "npm run build"]


class Vocabulary:
    """Seeded synthetic vocabulary with a Zipf-like word distribution."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "qu", "sa", "do"]
        self.words = sorted(
            {
                "".join(self.rng.choice(syllables) for _ in range(self.rng.randint(2, 4)))
                for _ in range(30000)
            }
        )
        self.cum_weights = list(
            itertools.accumulate(1.0 / (rank + 1) for rank in range(len(self.words)))
        )
        self.modules = [f"{self.word()}_{self.word()}" for _ in range(3000)]
        self.deps = [f"{self.word()}lib" for _ in range(400)]
        self.tables = [f"{self.word()}s" for _ in range(600)]

    def word(self) -> str:
        return self.rng.choices(self.words, cum_weights=self.cum_weights)[0]

    def sentence(self, n: int) -> str:
        return " ".join(self.rng.choices(self.words, cum_weights=self.cum_weights, k=n))

    def experience(self, number: int) -> RecordRequest:
        rng = self.rng
        module = rng.choice(self.modules)
        problem = rng.choice(PROBLEMS).format(
            test=f"test_{self.word()}_{self.word()}",
            module=module,
            dep=rng.choice(self.deps),
            func=self.word(),
            rule=f"{rng.choice('BEFW')}{rng.randint(100, 999)}",
            migration=f"{rng.randint(1, 9999):04d}_{self.word()}",
            table=rng.choice(self.tables),
            job=f"{self.word()}-{self.word()}",
            field=self.word(),
        )
        tool = rng.choice(TOOLS)
        commands = [
            CommandRun(command=f"{tool} {module.replace('_', '/')}", exit_code=rng.choice([0, 1])),
            CommandRun(
                command=f"pip install {rng.choice(self.deps)}=={rng.randint(1, 9)}.0", exit_code=0
            ),
        ]
        return RecordRequest(
            task=f"{rng.choice(VERBS)} {problem}",
            summary=self.sentence(rng.randint(15, 40)),
            outcome="passed" if rng.random() < 0.8 else "failed",
            verification=Verification(
                command=f"{tool} -q", exit_code=0 if rng.random() < 0.85 else 1
            ),
            commands=commands,
            files=[f"src/{module.replace('_', '/')}.py", f"tests/test_{module}.py"],
            project=f"project-{number % 7}",
            qa="approved",
        )


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def _queries(vocab: Vocabulary, store: SqliteMemoryStore, count: int) -> list[str]:
    rng = random.Random(7)
    conn = store.connection
    total = conn.execute("SELECT max(id) FROM experiences").fetchone()[0]
    related = []
    for _ in range(count // 2):
        task = conn.execute(
            "SELECT task FROM experiences WHERE id = ?", (rng.randint(1, total),)
        ).fetchone()[0]
        words = task.split()
        rng.shuffle(words)
        related.append(" ".join(words[: max(3, len(words) - 2)]))
    unrelated = [f"{rng.choice(VERBS)} {vocab.sentence(8)}" for _ in range(count - count // 2)]
    return related + unrelated


_LOAD = """
import time
import lorelab.memory.{module} as embedding
wall, cpu = time.perf_counter(), time.process_time()
import numpy
{runtime}
imported = time.perf_counter(), time.process_time()
embedding.embed(["fix the failing date parser test"])
done = time.perf_counter(), time.process_time()
print(imported[0] - wall, imported[1] - cpu, done[0] - imported[0], done[1] - imported[1])
"""


def model_load(repeats: int, model: str) -> dict[str, float]:
    """Seconds to import numpy (and onnxruntime, for MiniLM), load the model and embed one
    query, each in a fresh process (lorelab itself already imported): median and worst, wall
    clock and CPU."""
    if model == "minilm":
        code = _LOAD.format(module="_minilm", runtime="import onnxruntime, tokenizers")
    else:
        code = _LOAD.format(module="_embedding", runtime="")
    rows: list[list[float]] = []
    for _ in range(repeats):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
        )
        rows.append([float(v) for v in done.stdout.split()])
    wall = [r[0] + r[2] for r in rows]
    cpu = [r[1] + r[3] for r in rows]
    return {
        "runs": repeats,
        "import_wall_s_median": round(statistics.median(r[0] for r in rows), 3),
        "files_wall_s_median": round(statistics.median(r[2] for r in rows), 3),
        "total_wall_s_median": round(statistics.median(wall), 3),
        "total_wall_s_max": round(max(wall), 3),
        "total_cpu_s_median": round(statistics.median(cpu), 3),
        "total_cpu_s_max": round(max(cpu), 3),
        "load_average": os.getloadavg()[0],
    }


def shortlist_recall(store: SqliteMemoryStore, texts: list[str]) -> float | None:
    """Share of the exact 50 nearest vectors the two-stage scan also returns (None: exact)."""
    import numpy as np

    from lorelab.memory import DEFAULT_POLICY
    from lorelab.memory._embedders import of_store
    from lorelab.memory._vectors import cache_for

    embedder = of_store(store.connection)
    embed = embedder.embed
    cache = cache_for(store.connection, embedder)
    usable = int(cache.verified[: cache.size].sum())
    if usable <= DEFAULT_POLICY.shortlist:
        return None
    full = cache.matrix[: cache.size].astype(np.float32)
    found = 0
    for text in texts:
        query = embed([text])[0]
        exact_scores = np.where(cache.verified[: cache.size], full @ query, -np.inf)
        exact = set(cache.ids[np.argpartition(-exact_scores, 50)[:50]].tolist())
        ids, scores = cache.similarities(query, None, DEFAULT_POLICY.shortlist)
        staged = set(ids[np.argpartition(-scores, 50)[:50]].tolist())
        found += len(exact & staged)
    return round(found / (50 * len(texts)), 4)


def _padded_minilm_blobs(texts: list[str]) -> list[bytes]:
    """MiniLM vectors computed 64 texts at a time, padded (``--fill padded``): close to what a
    record stores (one text at a time, no padding) but not bit-identical; for filling large
    stores fast, when only the speed of what follows is measured."""
    import numpy as np

    from lorelab.memory import _minilm
    from lorelab.memory._embedders import to_blob

    model = _minilm.model()
    encodings = model.tokenizer.encode_batch(texts)
    out: list[bytes] = [b""] * len(texts)
    order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
    for start in range(0, len(order), 64):
        chunk = order[start : start + 64]
        width = max(len(encodings[i].ids) for i in chunk)
        ids = np.zeros((len(chunk), width), dtype=np.int64)
        mask = np.zeros((len(chunk), width), dtype=np.int64)
        for row, i in enumerate(chunk):
            ids[row, : len(encodings[i].ids)] = encodings[i].ids
            mask[row, : len(encodings[i].ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = model.session.run(None, {name: feeds[name] for name in model.inputs})[0]
        pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
        for row, i in enumerate(chunk):
            out[i] = to_blob(pooled[row])
    return out


def _batched_rate(store: SqliteMemoryStore, vocab: Vocabulary, first: int, count: int) -> float:
    todo = [vocab.experience(n) for n in range(first, first + count)]
    started = time.perf_counter()
    for start in range(0, len(todo), 500):
        store.record_many(RecordManyRequest(experiences=todo[start : start + 500]))
    return len(todo) / (time.perf_counter() - started)


STORES_FILE = "stores.json"
"""What ``--keep-stores`` wrote: the seed, model and fill its level copies were made with."""


def _copy_store(source: Path, target: Path) -> None:
    """A consistent copy of the store at ``source`` (SQLite's online backup)."""
    origin, copy = sqlite3.connect(source), sqlite3.connect(target)
    try:
        origin.backup(copy)
    finally:
        origin.close()
        copy.close()


def _kept(directory: Path, seed: int, model: str, padded_fill: bool) -> dict[str, object]:
    """The ``--store-from`` directory's description, checked against this run's settings."""
    try:
        kept = json.loads((directory / STORES_FILE).read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"--store-from {directory}: no readable {STORES_FILE} ({exc})") from None
    wanted = {"seed": seed, "model": model, "paddedFill": padded_fill}
    differs = [key for key, value in wanted.items() if kept.get(key) != value]
    if differs:
        raise SystemExit(
            f"--store-from {directory}: its stores were made with other settings ({differs[0]}:"
            f" {kept.get(differs[0])!r}, this run {wanted[differs[0]]!r})"
        )
    return dict(kept)


def run(
    sizes: list[int],
    queries: int,
    seed: int,
    model: str,
    padded_fill: bool = False,
    keep: Path | None = None,
    store_from: Path | None = None,
) -> dict[str, object]:
    """Every level's prepare latency and ingest rate; ``padded_fill``: levels after the first
    are filled with MiniLM vectors computed in padded batches (their ingest rate is then not
    the store's). ``keep``: a copy of each level's store, filled and not yet measured, is
    written there; ``store_from``: each level is a copy of the one kept there (nothing is
    filled, so no ingest rate is measured)."""
    from lorelab.memory._embedders import MINILM

    vocab = Vocabulary(seed)
    results: list[dict[str, object]] = []
    if store_from is not None:
        _kept(store_from, seed, model, padded_fill)
        for size in sizes:
            if not (store_from / f"level-{size}.db").is_file():
                raise SystemExit(f"--store-from {store_from}: no level-{size}.db")
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lorelab-bench-") as tmp:
        store = SqliteMemoryStore(Path(tmp) / "memory.db", embedding_model=model)
        have = 0
        single_rate = None
        for size in sorted(sizes):
            todo = [vocab.experience(n) for n in range(have, size)]
            started, cpu = time.perf_counter(), time.process_time()
            if store_from is not None:
                # The same vocabulary draws as a filling run (the queries depend on them).
                store.close()
                level_file = Path(tmp) / f"level-{size}.db"
                _copy_store(store_from / f"level-{size}.db", level_file)
                store = SqliteMemoryStore(level_file, create=False)
                ingest_mode = f"copy of {store_from / f'level-{size}.db'} (not measured)"
            elif single_rate is None:
                # The first level is ingested one call (and transaction) at a time.
                for request in todo:
                    store.record(request)
                ingest_mode = "record (1 per transaction)"
            else:
                if padded_fill:
                    MINILM.stored_blobs = _padded_minilm_blobs  # type: ignore[method-assign]
                for start in range(0, len(todo), 500):
                    store.record_many(RecordManyRequest(experiences=todo[start : start + 500]))
                if padded_fill:
                    del MINILM.stored_blobs
                ingest_mode = "record_many (500 per transaction)"
                if padded_fill:
                    ingest_mode += ", vectors from padded batches (fill only, not a rate)"
            rate = len(todo) / (time.perf_counter() - started)
            cpu_rate = len(todo) / max(time.process_time() - cpu, 1e-9)
            if store_from is not None:
                rate = cpu_rate = float("nan")
            single_rate = single_rate or rate
            have = size
            if keep is not None:
                _copy_store(store.location, keep / f"level-{size}.db")
            # Ten more to warm the page cache, not measured: the store keeps its recent query
            # vectors, and a warmed text would be measured without its embedding.
            warm, texts = (lambda found: (found[:10], found[10:]))(
                _queries(vocab, store, queries + 10)
            )
            for text in warm:
                store.prepare(PrepareRequest(task=text))
            timings: list[float] = []
            cpu_timings: list[float] = []
            empty = 0
            for text in texts:
                begin, cpu = time.perf_counter(), time.process_time()
                brief = store.prepare(PrepareRequest(task=text))
                timings.append((time.perf_counter() - begin) * 1000)
                cpu_timings.append((time.process_time() - cpu) * 1000)
                empty += brief.empty
            results.append(
                {
                    "experiences": size,
                    "ingest_mode": ingest_mode,
                    "ingest_per_second": None if rate != rate else round(rate),
                    "ingest_per_cpu_second": None if cpu_rate != cpu_rate else round(cpu_rate),
                    "prepare_ms_p50": round(statistics.median(timings), 2),
                    "prepare_ms_p95": round(_percentile(timings, 95), 2),
                    "prepare_cpu_ms_p50": round(statistics.median(cpu_timings), 2),
                    "prepare_cpu_ms_p95": round(_percentile(cpu_timings, 95), 2),
                    "prepare_calls": len(timings),
                    "empty_briefs": empty,
                    "semantic_top50_shortlist_recall": shortlist_recall(store, texts[:30]),
                    "vectors": store.connection.execute(
                        "SELECT count(*) FROM experience_vectors"
                    ).fetchone()[0],
                    "load_average": os.getloadavg()[0],
                }
            )
        # Per-call ingest at the largest size, on top of everything already stored.
        extra = [vocab.experience(n) for n in range(have, have + 500)]
        record_ms: list[float] = []
        record_cpu_ms: list[float] = []
        started, cpu = time.perf_counter(), time.process_time()
        for request in extra:
            one, one_cpu = time.perf_counter(), time.process_time()
            store.record(request)
            record_ms.append((time.perf_counter() - one) * 1000)
            record_cpu_ms.append((time.process_time() - one_cpu) * 1000)
        per_call_at_top = len(extra) / (time.perf_counter() - started)
        per_call_cpu_at_top = len(extra) / (time.process_time() - cpu)
        batched_at_top = _batched_rate(store, vocab, have + len(extra), 1000)
        store_model = store.embedding_model
        store.close()
    if keep is not None:
        described = {"seed": seed, "model": model, "paddedFill": padded_fill, "sizes": sizes}
        (keep / STORES_FILE).write_text(json.dumps(described, indent=2) + "\n")
    first, last = results[0], results[-1]
    return {
        "synthetic": True,
        "model": store_model,
        "costGrowth": {
            "from": first["experiences"],
            "to": last["experiences"],
            "prepareP95": round(float(last["prepare_ms_p95"]) / float(first["prepare_ms_p95"]), 2),  # type: ignore[arg-type]
            "prepareCpuP95": round(
                float(last["prepare_cpu_ms_p95"]) / float(first["prepare_cpu_ms_p95"]),  # type: ignore[arg-type]
                2,
            ),
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
        },
        "levels": results,
        "record_per_second_at_largest": round(per_call_at_top),
        "record_per_cpu_second_at_largest": round(per_call_cpu_at_top),
        "record_ms_p50_at_largest": round(statistics.median(record_ms), 2),
        "record_ms_p95_at_largest": round(_percentile(record_ms, 95), 2),
        "record_cpu_ms_p50_at_largest": round(statistics.median(record_cpu_ms), 2),
        "record_cpu_ms_p95_at_largest": round(_percentile(record_cpu_ms, 95), 2),
        "load_average_at_end": os.getloadavg(),
        "record_many_per_second_at_largest": round(batched_at_top),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=20240301)
    parser.add_argument("--load-runs", type=int, default=5, help="fresh processes timing load")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--load-only", action="store_true", help="only time the model load")
    parser.add_argument(
        "--python-scan",
        action="store_true",
        help="score stores of at most 1,000 vectors in Python, as a process without numpy does "
        "(this process has numpy: it records)",
    )
    parser.add_argument(
        "--model",
        choices=["minilm", "wordllama"],
        default=None,
        help="the store's embedding model (default: a new store's)",
    )
    parser.add_argument(
        "--fill",
        choices=["store", "padded"],
        default="store",
        help="how levels after the first are filled: by the store (its ingest is measured) or, "
        "for MiniLM, with vectors from padded batches (fast; only prepare is measured there)",
    )
    parser.add_argument(
        "--keep-stores",
        type=Path,
        default=None,
        metavar="DIR",
        help="write a copy of each level's filled store to DIR (for --store-from)",
    )
    parser.add_argument(
        "--store-from",
        type=Path,
        default=None,
        metavar="DIR",
        help="measure copies of the level stores an earlier --keep-stores run wrote to DIR "
        "(same --seed, --model and --fill; nothing is filled, no ingest rate is measured)",
    )
    args = parser.parse_args()
    from lorelab.memory._embedders import default_for_new_store

    model = args.model or default_for_new_store().name
    if args.python_scan:
        from lorelab.memory import _search

        _search.python_scan = lambda: True
    if args.load_only:
        print(json.dumps(model_load(args.load_runs, model), indent=2))
        return
    figures = run(
        args.sizes,
        args.queries,
        args.seed,
        model,
        args.fill == "padded",
        args.keep_stores,
        args.store_from,
    )
    figures["model_load"] = model_load(args.load_runs, model)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    scan = "Python scan up to 1,000 vectors" if args.python_scan else "numpy scan"
    print(
        f"machine: {figures['machine']}  (synthetic experiences; model {figures['model']}; "
        f"wall and CPU time; {scan})"
    )
    print(
        f"{'experiences':>11} {'p50 ms':>7} {'p95 ms':>7} {'cpu p50':>8} {'cpu p95':>8} "
        f"{'ingest/s':>9} {'cpu/s':>6} {'load':>5}  ingest mode"
    )
    for level in figures["levels"]:  # type: ignore[attr-defined]
        print(
            f"{level['experiences']:>11} {level['prepare_ms_p50']:>7} {level['prepare_ms_p95']:>7}"
            f" {level['prepare_cpu_ms_p50']:>8} {level['prepare_cpu_ms_p95']:>8}"
            f" {level['ingest_per_second']!s:>9} {level['ingest_per_cpu_second']!s:>6}"
            f" {level['load_average']:>5.1f}  {level['ingest_mode']}"
        )
    print(
        "record (1 per transaction) at the largest size: "
        f"{figures['record_per_second_at_largest']}/s wall, "
        f"{figures['record_per_cpu_second_at_largest']}/s CPU; record_many (500 per "
        f"transaction): {figures['record_many_per_second_at_largest']}/s wall"
    )
    print(
        "one record at the largest size: p50/p95 "
        f"{figures['record_ms_p50_at_largest']}/{figures['record_ms_p95_at_largest']} ms wall, "
        f"{figures['record_cpu_ms_p50_at_largest']}/{figures['record_cpu_ms_p95_at_largest']} "
        "ms CPU"
    )
    growth = figures["costGrowth"]
    print(
        f"costGrowth (prepare p95 at {growth['to']} / at {growth['from']}, this run): "  # type: ignore[index]
        f"{growth['prepareP95']} wall, {growth['prepareCpuP95']} CPU"  # type: ignore[index]
    )
    print(f"model load (fresh processes): {figures['model_load']}")


if __name__ == "__main__":
    main()
