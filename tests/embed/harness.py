"""Starts tests/embed/server.py on a free loopback port for the test and the
benchmark, and talks to it over HTTP (stdlib only)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent


class Server:
    """The server as a child process; `url` once it listens. Use as a
    context manager: the child is ended on exit."""

    def __init__(self, extra_env: dict[str, str] | None = None, start_timeout: float = 120.0):
        env = dict(os.environ)
        env.update({"EMBED_HOST": "127.0.0.1", "EMBED_PORT": "0", "EMBED_QUIET": "1",
                    "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
        env.update(extra_env or {})
        self.proc = subprocess.Popen([sys.executable, str(HERE / "server.py")], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.banner = ""
        self._stderr: list[str] = []
        self._drainer = threading.Thread(target=self._drain_stderr, daemon=True)
        self._drainer.start()
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(start_timeout)
        if not line or "listening on " not in line[0]:
            self.close()
            raise RuntimeError(f"embed server did not start: {line[:1]} {''.join(self._stderr)[-2000:]}")
        self.banner = line[0].strip()
        self.url = self.banner.split("listening on ", 1)[1].split()[0]

    def _drain_stderr(self):
        for l in self.proc.stderr:
            self._stderr.append(l)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._drainer.join(5)
        for f in (self.proc.stdout, self.proc.stderr):
            if f and not f.closed:
                f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def request(self, method: str, path: str, body=None, raw: bytes | None = None, headers: dict | None = None,
                timeout: float = 300.0) -> tuple[int, dict]:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def embed(self, texts, model: str = "all-MiniLM-L6-v2", **kw) -> dict:
        status, body = self.request("POST", "/v1/embeddings", {"model": model, "input": texts, **kw})
        if status != 200:
            raise RuntimeError(f"POST /v1/embeddings: {status} {body}")
        return body


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0
