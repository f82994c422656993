#!/usr/bin/env python3
"""Distil a static (model2vec-style) token-embedding table from the packaged
all-MiniLM-L6-v2 (tests/embed/server.py's SentenceEncoder, its ONNX graph).

Recipe (model2vec's "distill" without a corpus):
  1. every WordPiece token of the model's own vocab (30522) is run through
     the encoder alone, as [CLS] tok [SEP], and the last hidden states are
     mean-pooled over the three positions, exactly as the model pools a
     sentence (not normalized: the norm is kept);
  2. PCA to DIMS dimensions (fit on all token vectors, centred);
  3. optional Zipf/SIF weighting by vocab rank (model2vec: p(rank) ∝ 1/rank,
     weight = sif / (sif + p), sif=1e-4), which damps the frequent tokens;
  4. stored as int8 with one float32 scale per row (or float16).

Run with .tools/embed/bin/python (onnxruntime, tokenizers, numpy):
  .tools/embed/bin/python tests/embed/static/distill.py OUT.npz [--dims 256]
      [--no-zipf] [--dtype int8|float16]
The .npz holds `table` ([V, D] int8 or float16), `scale` ([V] float32, int8
only), `vocab` (the tokenizer.json text, so the server needs nothing else).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import server  # noqa: E402  tests/embed/server.py


def token_vectors(enc: "server.SentenceEncoder", batch: int = 1024) -> np.ndarray:
    vocab = enc.tokenizer.get_vocab()
    V = max(vocab.values()) + 1
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    out = np.zeros((V, enc.hidden), dtype=np.float32)
    mask = np.ones((batch, 3), dtype=np.int64)
    for s in range(0, V, batch):
        ids = np.arange(s, min(V, s + batch), dtype=np.int64)
        x = np.stack([np.full_like(ids, cls_id), ids, np.full_like(ids, sep_id)], axis=1)
        h = enc._run(x, mask[: len(ids)])  # [B, 3, H]
        out[s : s + len(ids)] = h.mean(1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--dims", type=int, default=256)
    ap.add_argument("--no-zipf", action="store_true")
    ap.add_argument("--sif", type=float, default=1e-4)
    ap.add_argument("--dtype", choices=["int8", "float16"], default="int8")
    ap.add_argument("--raw", help="cache of the raw [V, 384] token vectors (.npy)")
    a = ap.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    d = server.packaged_model_dir()
    enc = server.SentenceEncoder(d, backend="onnx", onnx_path=Path(sys.prefix) / "all-MiniLM-L6-v2.onnx")
    t0 = time.time()
    if a.raw and Path(a.raw).exists():
        X = np.load(a.raw)
    else:
        X = token_vectors(enc)
        if a.raw:
            np.save(a.raw, X)
    print(f"distill: {X.shape[0]} token vectors in {time.time() - t0:.1f} s", file=sys.stderr)

    # PCA (centred; no whitening, as model2vec).
    mu = X.mean(0)
    Xc = X - mu
    _, S, Vt = np.linalg.svd(Xc, full_matrices=False)
    k = min(a.dims, Vt.shape[0])
    E = Xc @ Vt[:k].T
    kept = float((S[:k] ** 2).sum() / (S ** 2).sum())
    print(f"distill: PCA to {k} dims keeps {kept:.3f} of the variance", file=sys.stderr)

    if not a.no_zipf:
        rank = np.arange(1, E.shape[0] + 1, dtype=np.float64)
        p = (1.0 / rank) / (1.0 / rank).sum()
        w = a.sif / (a.sif + p)
        E = E * w[:, None].astype(np.float32)

    tok_json = (d / "tokenizer.json").read_text()
    if a.dtype == "int8":
        scale = np.abs(E).max(1) / 127.0
        scale[scale == 0] = 1.0
        q = np.round(E / scale[:, None]).astype(np.int8)
        np.savez_compressed(a.out, table=q, scale=scale.astype(np.float32), vocab=np.array(tok_json))
    else:
        np.savez_compressed(a.out, table=E.astype(np.float16), vocab=np.array(tok_json))
    raw_bytes = E.shape[0] * k * (1 if a.dtype == "int8" else 2) + (E.shape[0] * 4 if a.dtype == "int8" else 0)
    print(f"distill: wrote {a.out}: {E.shape[0]} x {k} {a.dtype}, table {raw_bytes / 1e6:.2f} MB raw, "
          f"file {Path(a.out).stat().st_size / 1e6:.2f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
