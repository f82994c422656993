"""Throughput of the embedding server over HTTP on loopback: `make
embed-bench`. Starts tests/embed/server.py on a free port, then sends
EMBED_BENCH_ROUNDS (default 10) requests of 64 generated texts of ~30 words
each (plus 2 warm-up requests), and 50 single-text requests. Bounded in count;
prints one table in Markdown."""

from __future__ import annotations

import os
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Server, timed  # noqa: E402

WORDS = (
    "the a my our their this that some every memory agent user assistant project meeting deadline release bug "
    "server database query index vector recall session profile note reminder preference trip flight hotel "
    "dinner recipe garden book movie song weekend monday friday morning evening yesterday tomorrow week month "
    "moved started finished asked told wanted planned fixed deployed wrote read bought visited called booked "
    "quickly carefully finally again still already never often usually with about from into after before during "
    "because while and but or so then new old small large late early important simple careful local remote"
).split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def main() -> None:
    rounds = int(os.environ.get("EMBED_BENCH_ROUNDS", "10"))
    batch = 64
    rng = random.Random(25)
    batches = [[sentence(rng, rng.randint(26, 34)) for _ in range(batch)] for _ in range(rounds + 2)]
    load0 = os.getloadavg()[0]
    with Server() as s:
        print(s.banner, file=sys.stderr)
        for b in batches[:2]:
            s.embed(b)
        times, tokens = [], 0
        for b in batches[2:]:
            r, dt = timed(lambda: s.embed(b))
            times.append(dt)
            tokens += r["usage"]["prompt_tokens"]
        singles = []
        for i in range(50):
            _, dt = timed(lambda: s.embed(batches[0][i % batch]))
            singles.append(dt)
    total = sum(times)
    words = sum(len(t.split()) for b in batches[2:] for t in b) / (rounds * batch)
    print("| measure | value |")
    print("|---|---:|")
    print(f"| texts/s, {batch}-text batches | {rounds * batch / total:.0f} |")
    print(f"| tokens/s | {tokens / total:.0f} |")
    print(f"| per {batch}-text request, median | {statistics.median(times) * 1000:.0f} ms |")
    print(f"| words per text (mean) / tokens per text (mean, with [CLS] and [SEP]) | {words:.1f} / {tokens / (rounds * batch):.1f} |")
    print(f"| one text per request, p50 | {statistics.median(singles) * 1000:.1f} ms |")
    print(f"| requests | {rounds} x {batch} texts (+2 warm-up), 50 x 1 text |")
    setting = ", ".join(f"{k}={os.environ[k]}" for k in ("EMBED_BACKEND", "EMBED_THREADS", "EMBED_BATCH") if os.environ.get(k))
    print(f"| server settings | {setting or 'defaults (onnx, threads 0, batch 32)'} |")
    print(f"| load average before / after (of {os.cpu_count()} CPUs) | {load0:.2f} / {os.getloadavg()[0]:.2f} |")


if __name__ == "__main__":
    main()
