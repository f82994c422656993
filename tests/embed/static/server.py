#!/usr/bin/env python3
"""An OpenAI-compatible /v1/embeddings server over a static token table
written by tests/embed/static/distill.py: no model at run time.

A text is WordPiece-tokenized with the table's own tokenizer.json (the
`tokenizers` package; truncation at STATIC_MAX_TOKENS, default 512), the
token vectors are mean-pooled ([CLS]/[SEP]/[PAD]/[UNK] skipped) and the
mean is L2-normalized. The HTTP layer (routes, validation, errors) is
tests/embed/server.py's.

  .tools/embed/bin/python tests/embed/static/server.py TABLE.npz
Environment: EMBED_HOST (127.0.0.1), EMBED_PORT (8799; 0 = free port),
EMBED_MODEL_ID (static-minilm), EMBED_QUIET, STATIC_MAX_TOKENS.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import server  # noqa: E402  tests/embed/server.py


class StaticEncoder:
    def __init__(self, path: Path, max_tokens: int = 512):
        z = np.load(path)
        t = z["table"]
        if t.dtype == np.int8:
            self.table = t.astype(np.float32) * z["scale"][:, None]
        else:
            self.table = t.astype(np.float32)
        self.dims = int(self.table.shape[1])
        self.max_seq_length = max_tokens
        self.tokenizer = Tokenizer.from_str(str(z["vocab"]))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.no_padding()
        v = self.tokenizer.get_vocab()
        self.skip = np.zeros(self.table.shape[0], dtype=bool)
        for s in ("[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]"):
            if s in v:
                self.skip[v[s]] = True

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        encs = self.tokenizer.encode_batch(texts)
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        n = 0
        for i, e in enumerate(encs):
            ids = np.asarray(e.ids, dtype=np.int64)
            n += len(ids)
            ids = ids[~self.skip[ids]]
            if len(ids) == 0:
                continue
            m = self.table[ids].mean(0)
            nrm = float(np.linalg.norm(m))
            if nrm > 0:
                out[i] = m / nrm
        return out, n


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: server.py TABLE.npz")
    host = os.environ.get("EMBED_HOST") or "127.0.0.1"
    port = int(os.environ.get("EMBED_PORT") or 8799)
    quiet = os.environ.get("EMBED_QUIET", "") not in ("", "0")
    enc = StaticEncoder(Path(sys.argv[1]), int(os.environ.get("STATIC_MAX_TOKENS") or 512))
    model_id = os.environ.get("EMBED_MODEL_ID", "static-minilm")
    httpd = server.serve(host, port, enc, model_id, quiet=quiet)
    h, p = httpd.server_address[:2]
    print(f"embed-server: listening on http://{h}:{p} (model {model_id}, {enc.dims} dims, static table {sys.argv[1]})", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
