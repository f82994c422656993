#!/usr/bin/env python3
"""Replays fusion offline from each channel's rankings, as recall dumped them.

The dumps come from the harness with dump.patch applied (a temporary patch,
never committed to the code): with RECALL_DUMP=<file>, every recall made
with `explain` (the harness's LOCOMO_CHANNELS=1 pass) appends one JSON line
with each channel's hits (id, rank, score, source message ids), and the
harness appends the question's evidence after it. See README.txt here.

    python3 replay.py <dump dir> [table ...]

<dump dir> holds <set>.<embedder>.dump for the sets below and the embedders
minilm and hash. Tables: channels, ranks, k, perquery, reserve, message,
coverage (coverage also reads the sets' JSON; run from the crate root).
Every fused figure is recall@10 over the first 10 distinct source messages
of the first 20 candidates, after crowding (at most two a message), as
the harness counts it; the replay reproduces the harness's own figures.
"""
import collections, json, math, re, statistics as st, sys

SETS = ['locomo-dev', 'coding-agent', 'knowledge-updates', 'long-answers', 'support-chat']
EMBS = ['minilm', 'hash']
KEPT = {'minilm': {'key': 2, 'fts': 1, 'hyde': .25, 'vector': .5, 'messages': .05},
        'hash': {'key': 2, 'fts': 1, 'hyde': 0, 'vector': .25, 'messages': .05}}
CHANNELS = ['fts', 'messages', 'vector', 'hyde']


def load(path, emb):
    qs, cur = [], None
    for line in open(path):
        d = json.loads(line)
        if 'chans' in d:
            cur = d
            continue
        cur['ev'] = dict(e.split('\t') for e in d['ev'])
        cur['n_ev'] = d['n_ev']
        cur['ch'] = {c['ch']: c['hits'] for c in cur['chans']}
        cur['emb'] = emb
        if cur['n_ev']:
            qs.append(cur)
        cur = None
    return qs


def turns(cands, n=10):
    out = []
    for src in cands:
        for m in src or []:
            if m not in out:
                out.append(m)
    return out[:n]


def recall(q, top):
    return len({q['ev'][m] for m in top if m in q['ev']}) / q['n_ev']


def alone(q, ch):
    return recall(q, turns([h['src'] for h in q['ch'].get(ch, [])]))


def rank_of(ch, i, h, position):
    # Position ranks (before evidence ranks) for the memory channels; the
    # messages channel always ranked by message.
    return i + 1 if position and ch != 'messages' else h['rank']


def key_holders(q):
    """How many live memories hold each key the key channel matched (its
    hits' score is the key's place among the analyzer's keys)."""
    return collections.Counter(h['score'] for h in q['ch'].get('key', []))


def scores(q, w, K=10.0, position=False, mode='rrf', key_split=True):
    # key_split: a key's weight is split among its holders
    # (recall::fuse::key_share; docs/bench/generalization/key-holders.txt).
    sc, src = {}, {}
    holders = key_holders(q)
    for ch, hits in q['ch'].items():
        wc = w.get(ch, 0)
        if not wc or not hits:
            continue
        vals = [h['score'] for h in hits if h['score'] is not None]
        seen = set()
        for i, h in enumerate(hits):
            if h['id'] in seen:
                continue
            seen.add(h['id'])
            r = rank_of(ch, i, h, position)
            if mode == 'rrf':
                c = wc / (K + r)
                if ch == 'key' and key_split:
                    c /= holders[h['score']]
            else:  # min-max normalized scores (ranks for messages)
                s, lo, hi = (-r, -hits[-1]['rank'], -1) if ch == 'messages' else (h['score'], min(vals), max(vals))
                c = wc * ((s - lo) / (hi - lo) if hi > lo else 1)
            sc[h['id']] = sc.get(h['id'], 0) + c
            src[h['id']] = h['src']
    return sc, src


def place(q, order, src):
    placed, cands = collections.Counter(), []
    for i in order:
        s = src[i] or []
        if s and all(placed[x] >= 2 for x in s):
            continue
        for x in s:
            placed[x] += 1
        cands.append(s)
        if len(cands) >= 20:
            break
    return recall(q, turns(cands))


def fuse(q, w=None, reserve=None, **kw):
    w = w or KEPT[q['emb']]
    sc, src = scores(q, w, **kw)
    order = sorted(sc, key=lambda i: (sc[i], i), reverse=True)
    if reserve:  # (m, L, channels): each channel's first m hits no later than place L
        m, L, chans = reserve
        res = {h['id'] for ch in chans if w.get(ch, 0) for h in q['ch'].get(ch, []) if h['rank'] <= m}
        r = [i for i in order if i in res]
        rest = [i for i in order if i not in res]
        order, ri, fi = [], 0, 0
        while ri < len(r) or fi < len(rest):
            if ri < len(r) and (fi >= len(rest) or sc[r[ri]] >= sc[rest[fi]] or L - len(order) <= len(r) - ri):
                order.append(r[ri]); ri += 1
            else:
                order.append(rest[fi]); fi += 1
    return place(q, order, src)


def fuse_by_message(q, share):
    w = KEPT[q['emb']]
    sc, src = scores(q, w)
    msc = collections.defaultdict(float)
    for ch, hits in q['ch'].items():
        best = {}
        for h in hits:
            for m in h['src'] or []:
                best[m] = min(best.get(m, 1e9), h['rank'])
        for m, r in best.items():
            msc[m] += w.get(ch, 0) / (10 + r)
    tot = {i: (1 - share) * sc[i] + share * max([msc[m] for m in src[i] or []] or [sc[i]]) + 1e-6 * sc[i] for i in sc}
    return place(q, sorted(tot, key=lambda i: (tot[i], i), reverse=True), src)


def top_turns(hits, n=10):
    out = []
    for h in hits:
        for m in h['src'] or [h['id']]:
            if m not in out:
                out.append(m)
        if len(out) >= n:
            break
    return set(out[:n])


def agreement(q, b):
    w = dict(KEPT[q['emb']])
    tops = {c: top_turns(q['ch'].get(c, [])) for c in ['fts', 'vector', 'hyde', 'messages'] if w.get(c, 0)}
    for c in tops:
        others = set().union(*[tops[o] for o in tops if o != c])
        w[c] *= 1 + b * len(tops[c] & others) / max(1, len(tops[c]))
    return w


def gap(q, b):
    w = dict(KEPT[q['emb']])
    for c in ['fts', 'vector', 'hyde']:
        s = [h['score'] for h in q['ch'].get(c, []) if h['score'] is not None]
        if len(s) >= 10 and s[0] > 0:
            w[c] *= 1 + b * (s[0] - s[9]) / s[0]
    return w


def standardized(q, b):
    w = dict(KEPT[q['emb']])
    z = {}
    for c in ['fts', 'vector', 'hyde']:
        s = [h['score'] for h in q['ch'].get(c, []) if h['score'] is not None]
        if len(s) >= 20 and w.get(c, 0):
            z[c] = (s[0] - st.mean(s[:50])) / (st.pstdev(s[:50]) or 1)
    if z:
        m = st.mean(z.values())
        for c, v in z.items():
            w[c] *= math.exp(b * (v - m))
    return w


STOP = set("a an the and or but if of to in on at for with by from as is are was were be been being do does did have has had i me my mine you your we our they their he she it its this that these those what which who whom whose when where why how can could would should will shall may might must not no so than then there here about into over under again further once all any both each few more most other some such only own same too very just now also up down out off".split())


def coverage_of_questions():
    """Share of a question's idf (stop words out) that its best-matching turn of the haystack holds."""
    def toks(t):
        return [x[:-1] if x.endswith('s') and len(x) > 3 else x for x in re.findall(r"[a-z0-9]+", t.lower())]
    cov = {}

    def one(question, texts):
        sets = [set(toks(t)) for t in texts]
        df = collections.Counter(w for s in sets for w in s)
        qt = [w for w in dict.fromkeys(toks(question)) if w not in STOP]
        idf = {w: math.log(1 + (len(sets) - df[w] + 0.5) / (df[w] + 0.5)) for w in qt}
        cov[question] = max((sum(idf[w] for w in qt if w in s) for s in sets), default=0) / (sum(idf.values()) or 1)
    for f in SETS[1:]:
        for q in json.load(open(f'tests/fixtures/dev-styles/{f}.json')):
            one(q['question'], [t['content'] for s in q['haystack_sessions'] for t in s])
    for c in json.load(open('../shared/bench/locomo/locomo-dev.json')):
        texts = [t['text'] for k, v in c['conversation'].items() if k.startswith('session_') and isinstance(v, list) for t in v]
        for qa in c['qa']:
            one(qa['question'], texts)
    return cov


def main():
    d = sys.argv[1]
    wanted = sys.argv[2:] or ['channels', 'ranks', 'k', 'perquery', 'reserve', 'message']
    data = {(e, s): load(f'{d}/{s}.{e}.dump', e) for e in EMBS for s in SETS}
    mean = lambda xs: sum(xs) / len(xs)
    best = [max(mean([alone(q, c) for q in data[(e, s)]]) for c in CHANNELS) for e in EMBS for s in SETS]

    def row(name, f):
        vals = [mean([f(q) for q in data[(e, s)]]) for e in EMBS for s in SETS]
        print(f"{name:34s}" + ''.join(f"{v:6.3f}{'*' if v < b - 1e-3 else ' '}" for v, b in zip(vals, best)))
    print(f"{'(* below the best channel)':34s}" + ''.join(f"{e[0]}:{s[:4]:>5s}" for e in EMBS for s in SETS))
    print(f"{'best channel':34s}" + ''.join(f"{b:6.3f} " for b in best))
    if 'channels' in wanted:
        for c in CHANNELS:
            row(f'{c} alone', lambda q, c=c: alone(q, c))
    if 'ranks' in wanted:
        m2 = lambda q: {**KEPT[q['emb']], 'messages': .2 if q['emb'] == 'minilm' else .05}
        row('position ranks, messages 0.2/0.05', lambda q: fuse(q, m2(q), position=True))
        row('evidence ranks, messages 0.2/0.05', lambda q: fuse(q, m2(q)))
        row('evidence ranks, messages 0.05 (kept)', lambda q: fuse(q))
    if 'k' in wanted:
        for K in [5, 20, 60]:
            row(f'K {K}', lambda q, K=K: fuse(q, K=K))
        row('min-max score fusion', lambda q: fuse(q, mode='minmax'))
    if 'perquery' in wanted:
        for b in [0.5, 2]:
            row(f'agreement b {b}', lambda q, b=b: fuse(q, agreement(q, b)))
            row(f'score gap b {b}', lambda q, b=b: fuse(q, gap(q, b)))
        row('standardized top score b 0.5', lambda q: fuse(q, standardized(q, 0.5)))
    if 'reserve' in wanted:
        every = ('fts', 'vector', 'hyde', 'key', 'messages')
        row('first hit by place 10, every channel', lambda q: fuse(q, reserve=(1, 10, every)))
        row('first hit by place 15, every channel', lambda q: fuse(q, reserve=(1, 15, every)))
        row('first hit by place 10, semantic vector', lambda q: fuse(q, reserve=(1, 10, ('vector',) if q['emb'] == 'minilm' else ())))
    if 'message' in wanted:
        for share in [0.5, 1.0]:
            row(f'message-level fusion, share {share}', lambda q, share=share: fuse_by_message(q, share))
    if 'coverage' in wanted:
        cov = coverage_of_questions()
        for s in SETS:
            qs = data[('minilm', s)]
            vb = [cov.get(q['q'], 1) for q in qs if alone(q, 'vector') > alone(q, 'fts')]
            fb = [cov.get(q['q'], 1) for q in qs if alone(q, 'vector') < alone(q, 'fts')]
            print(f"coverage {s:18s} vector better {mean(vb) if vb else float('nan'):.2f} (n {len(vb)}), full text better {mean(fb) if fb else float('nan'):.2f} (n {len(fb)})")


if __name__ == '__main__':
    main()
