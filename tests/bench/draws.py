#!/usr/bin/env python3
"""Summarises `make locomo-draws`: each set's recall@10 by channel, fused,
and pooled over draws of the same style.

Reads, on standard input, the output of the LoCoMo harness run with
LOCOMO_CHANNELS=1 over several files, each run preceded by a line
`== <path>`. Prints one row per file (fused, each channel, the two plain
baselines) with flags where:

  <BEST c      fusion ranks below its best channel c;
  FTS<PLAIN    the full-text channel is below plain bm25 over the same
               memories (its plain counterpart);
  MSG<BM25     the raw-messages channel is below plain bm25 over the turns.

The last two columns ask whether the answer itself came back: over the
questions whose answer an evidence turn states word for word, the share
with the answer in one of the first 10 memories recall returned
("answer"), and in one of bm25's first 10 turns ("ans-bm25": a whole
turn, so an easier test). "ceiling" is the share of evidence turns that
some active memory cites at all: what extraction and supersession left
for recall to find.

Then every style pooled over its draws (the committed development files
and each seed's draw): recall@10 weighted by questions, with the same
flags. A draw is the generator (tests/fixtures/dev-styles/generate.py) run
with another seed: the same templates, other values, phrasings and
distractors, so a figure that holds only on the committed draw shows here.

Standard library only.
"""

import re
import sys

CHANNELS = ["fts", "messages", "vector", "hyde", "key"]
COLUMNS = ["fused", "fts", "fts-plain", "messages", "bm25", "vector", "hyde", "answer", "ans-bm25", "ceiling"]
EPS = 1e-9


def short(path):
    for prefix in ("tests/fixtures/dev-styles/", "target/draws/", "../shared/bench/locomo/", "/work/shared/bench/locomo/"):
        path = path.replace(prefix, "dev/" if prefix.startswith("tests") else "")
    return path.replace(".json", "")


def parse(lines):
    """{set: {column: (recall@5, recall@10), "n": questions}} in input
    order, and the embedders the runs named."""
    sets, cur, embedders = {}, None, []
    row = re.compile(r"\s*(channel (\S+)\s+alone|bm25 baseline|pipeline \(fused\)):\s+recall@5=([\d.]+) @10=([\d.]+)")
    # LoCoMo prints its fused and bm25 figures in its overall row.
    locomo = re.compile(r"overall\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+\s+([\d.]+)\s+([\d.]+)\s+[\d.]+$")
    for line in lines:
        if line.startswith("== "):
            cur = short(line[3:].strip())
            sets[cur] = {}
            continue
        if cur is None:
            continue
        if line.startswith("embedder:") and line.strip() not in embedders:
            embedders.append(line.strip())
        m = row.match(line)
        if m:
            name = m.group(2) or ("bm25" if "bm25" in m.group(1) else "fused")
            sets[cur][name] = (float(m.group(3)), float(m.group(4)))
            continue
        m = locomo.match(line.strip())
        if m:
            sets[cur]["n"] = int(m.group(1))
            sets[cur]["fused"] = (float(m.group(2)), float(m.group(3)))
            sets[cur]["bm25"] = (float(m.group(4)), float(m.group(5)))
            continue
        m = re.match(r"answer returned: in the first 5 / 10 memories ([\d.]+) / ([\d.]+); bm25's first 5 / 10 turns ([\d.]+) / ([\d.]+) \((\d+) questions", line)
        if m:
            sets[cur]["answer"] = (float(m.group(1)), float(m.group(2)))
            sets[cur]["ans-bm25"] = (float(m.group(3)), float(m.group(4)))
            sets[cur]["answered"] = int(m.group(5))
            continue
        m = re.match(r"extraction ceiling: ([\d.]+) of evidence turns", line)
        if m:
            sets[cur]["ceiling"] = (float(m.group(1)), float(m.group(1)))
            continue
        m = re.search(r"\((\d+) questions\)", line)
        if m:
            sets[cur]["n"] = int(m.group(1))
    return sets, embedders


def flags(d):
    out = []
    chans = [(d[c], c) for c in CHANNELS if c in d]
    if chans and "fused" in d:
        best, name = max(chans)
        if d["fused"] + EPS < best:
            out.append("<BEST " + name)
    if "fts" in d and "fts-plain" in d and d["fts"] + EPS < d["fts-plain"]:
        out.append("FTS<PLAIN")
    if "messages" in d and "bm25" in d and d["messages"] + EPS < d["bm25"]:
        out.append("MSG<BM25")
    return "  ".join(out)


def line(name, d):
    cells = "".join("%10.3f" % d[c] if c in d else "%10s" % "-" for c in COLUMNS)
    return "%-26s%s  %s" % (name, cells, flags(d))


def main():
    sets, embedders = parse(sys.stdin)
    for e in embedders:
        print(e)
    print("recall@10 by set")
    print("%-26s%s" % ("set", "".join("%10s" % c for c in COLUMNS)))
    pooled, total = {}, {}
    # Answer columns are pooled over the questions they count.
    weight = lambda d, c: d.get("answered", 0) if c.startswith("answer") else d.get("n", 1)
    for name, d in sets.items():
        at10 = {c: v[1] for c, v in d.items() if c not in ("n", "answered")}
        if "fused" not in at10:
            continue
        print(line(name, at10))
        if name.startswith("locomo"):
            continue
        style = name.split("/")[-1]
        for c, v in at10.items():
            n = weight(d, c)
            for acc in (pooled.setdefault(style, {}), total):
                s = acc.setdefault(c, [0.0, 0])
                s[0] += v * n
                s[1] += n
    print()
    print("pooled over each style's draws (weighted by questions)")
    print("%-26s%s" % ("style (questions)", "".join("%10s" % c for c in COLUMNS)))
    for style, acc in sorted(pooled.items()):
        n = acc["fused"][1]
        print(line("%s (%d)" % (style, n), {c: v[0] / v[1] for c, v in acc.items() if v[1]}))
    if total:
        n = total["fused"][1]
        print(line("all styles (%d)" % n, {c: v[0] / v[1] for c, v in total.items() if v[1]}))


if __name__ == "__main__":
    main()
