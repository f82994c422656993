#!/usr/bin/env python3
"""Six fusion variants replayed over the 32 hashing draws and LoCoMo dev.

    python3 variants.py <dump dir> [v1 v2 v3 v4 v5 v6 cv]

Run from the crate root, over the dumps draws.py reads. Every row pools
each style over its draws as draws.py does; a star marks fusion below
the style's best channel (on the same questions).

  v1  score fusion: each channel's hits scored by their own score divided
      by the channel's top score ("top") or min-max normalized ("minmax"),
      weighted as kept; CombSUM or CombMNZ (sum x channels that found it).
      The raw-messages and key channels carry no comparable score: they
      give (K+1)/(K+rank) (1 at rank 1; the key's split among holders).
  v2  the weak channels (query vector, raw messages) counted only within
      their first m ranks.
  v3  agreement bonus: the kept RRF score times 1 + b x (n - 1), n the
      channels whose first m ranks hold a memory citing one of the
      memory's source messages.
  v4  rank -> probability calibration (per channel, rank buckets and
      "absent"), fitted on one half (odd seeds + odd LoCoMo questions),
      tested on the other; fused by the sum of probabilities.
  v5  the same calibration, fused as naive Bayes (sum of log likelihood
      ratios).
  v6  naive Bayes with the channel's score (score / top score) binned
      jointly with its rank for full text and the vector.
  cv  v4-v6 reported on each held-out half and two-fold (each question
      scored by the curve fitted on the other half).
"""
import collections, math, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import draws as dr  # noqa: E402
import replay as rp  # noqa: E402

K = 10.0
KEPT = dict(rp.KEPT['hash'])
FUSED = ['key', 'fts', 'vector', 'messages']  # hyde weighs 0 with hashing


def hits_of(q, ch):
    """A channel's hits, each id once (its first place), as (id, rank, score, src)."""
    seen, out = set(), []
    for h in q['ch'].get(ch, []) or []:
        if h['id'] in seen:
            continue
        seen.add(h['id'])
        out.append(h)
    return out


def srcs(q):
    src = {}
    for ch in FUSED:
        for h in hits_of(q, ch):
            src[h['id']] = h['src']
    return src


def finish(q, sc, src):
    order = sorted(sc, key=lambda i: (sc[i], i), reverse=True)
    return rp.place(q, order, src)


def rrf_scores(q, w=KEPT, m=None):
    sc = collections.defaultdict(float)
    holders = rp.key_holders(q)
    for ch in FUSED:
        wc = w.get(ch, 0)
        for h in hits_of(q, ch):
            if m and ch in m and h['rank'] > m[ch]:
                continue
            c = wc / (K + h['rank'])
            if ch == 'key':
                c /= holders[h['score']]
            sc[h['id']] += c
    return sc


def kept(q):
    return finish(q, rrf_scores(q), srcs(q))


# v1: score fusion -----------------------------------------------------------
def v1(q, norm='top', mode='sum', w=KEPT):
    sc, n = collections.defaultdict(float), collections.Counter()
    holders = rp.key_holders(q)
    for ch in FUSED:
        wc = w.get(ch, 0)
        hits = hits_of(q, ch)
        if not wc or not hits:
            continue
        vals = [h['score'] for h in hits if h['score'] is not None]
        top, lo = max(vals), min(vals)
        for h in hits:
            if ch in ('messages', 'key'):
                c = (K + 1) / (K + h['rank'])
                if ch == 'key':
                    c /= holders[h['score']]
            elif norm == 'top':
                c = max(h['score'], 0) / top if top > 0 else 1.0
            else:
                c = (h['score'] - lo) / (top - lo) if top > lo else 1.0
            sc[h['id']] += wc * c
            n[h['id']] += 1
    if mode == 'mnz':
        sc = {i: s * n[i] for i, s in sc.items()}
    return finish(q, sc, srcs(q))


# v2: weak channels within their first m ranks --------------------------------
def v2(q, m):
    return finish(q, rrf_scores(q, m={'vector': m, 'messages': m}), srcs(q))


# v3: agreement bonus at the source message -----------------------------------
def v3(q, m, b):
    sc, src = rrf_scores(q), srcs(q)
    agree = collections.defaultdict(set)  # message -> channels with it in their first m ranks
    for ch in FUSED:
        if not KEPT.get(ch, 0):
            continue
        for h in hits_of(q, ch):
            if h['rank'] <= m:
                for x in h['src'] or []:
                    agree[x].add(ch)
    out = {}
    for i, s in sc.items():
        chans = set().union(*[agree[x] for x in src[i] or []]) if src[i] else set()
        out[i] = s * (1 + b * max(0, len(chans) - 1))
    return finish(q, out, src)


# v4-v6: calibration ------------------------------------------------------------
EDGES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 20, 30, 50]


def rbucket(r):
    for e in EDGES:
        if r <= e:
            return e
    return 999


def coarse(r):
    return 3 if r <= 3 else 10 if r <= 10 else 20 if r <= 20 else 50 if r <= 50 else 999


def sbin(x):
    for e in (0.9, 0.75, 0.6, 0.45, 0.3):
        if x >= e:
            return e
    return 0.0


def features(q, with_score):
    """{id: {channel: feature}} over the union of the fused channels' hits;
    a channel that did not rank the id gives 'absent'."""
    feats = collections.defaultdict(dict)
    for ch in FUSED:
        hits = hits_of(q, ch)
        vals = [h['score'] for h in hits if h['score'] is not None]
        top = max(vals) if vals else 0
        for h in hits:
            if with_score and ch in ('fts', 'vector') and top > 0:
                f = (coarse(h['rank']), sbin(max(h['score'], 0) / top))
            elif ch == 'key':
                f = min(h['rank'], 3)
            else:
                f = rbucket(h['rank'])
            feats[h['id']][ch] = f
    for i in feats:
        for ch in FUSED:
            feats[i].setdefault(ch, 'absent')
    return feats


def relevant(q, src_ids):
    return any(x in q['ev'] for x in src_ids or [])


def fit(train, with_score, a=5.0):
    """P(relevant | channel feature) over the candidates of the training
    questions, shrunk toward the channel's base rate with a pseudo-count a."""
    cnt = {ch: collections.defaultdict(lambda: [0, 0]) for ch in FUSED}
    rel_all = tot_all = 0
    for q in train:
        src = srcs(q)
        for i, f in features(q, with_score).items():
            r = relevant(q, src[i])
            rel_all += r
            tot_all += 1
            for ch in FUSED:
                c = cnt[ch][f[ch]]
                c[0] += r
                c[1] += 1
    p0 = rel_all / tot_all
    model = {ch: {f: (c[0] + a * p0) / (c[1] + a) for f, c in cnt[ch].items()} for ch in FUSED}
    return model, p0


def logit(p):
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def calibrated(q, model, with_score, how):
    m, p0 = model
    sc = {}
    for i, f in features(q, with_score).items():
        ps = [m[ch].get(f[ch], p0) for ch in FUSED]
        if how == 'sum':
            sc[i] = sum(ps)
        else:
            sc[i] = sum(logit(p) - logit(p0) for p in ps)
    return finish(q, sc, srcs(q))


# pooling -------------------------------------------------------------------------
def half(data, odd):
    """The questions of one half: seeds odd (and LoCoMo's odd questions) or
    even (with the committed dev draws and LoCoMo's even questions)."""
    out = {}
    for style, qs in data.items():
        if style == 'locomo':
            out[style] = [q for k, q in enumerate(qs) if (k % 2 == 1) == odd]
        else:
            out[style] = [q for q in qs if (q['set'].startswith('s') and int(q['set'][1:].split('_')[0]) % 2 == 1) == odd]
    return out


def table(data, title, rows):
    chans = {c: dr.pooled(data, lambda q, c=c: rp.alone(q, c)) for c in ['fts', 'messages', 'vector']}
    best = {k: max(chans[c][k] for c in chans) for k in dr.COLS}
    print(f"\n{title}")
    print(f"{'hash':30s}" + ' '.join(f'{c[:6]:>6s}' for c in dr.COLS))
    for c in chans:
        dr.row(f'{c} alone', chans[c])
    for name, fn in rows:
        r = dr.pooled(data, fn)
        dr.row(name, r, best)
        ok = not any(r[k] < best[k] - 1e-9 for k in dr.COLS) and r['locomo'] >= 0.778 - 1e-9 and r['all'] >= 0.861 - 1e-9
        if ok:
            print(f'{"":30s}^ clears (no star, LoCoMo >= 0.778, all >= 0.861)')


def main():
    d = sys.argv[1]
    wanted = sys.argv[2:] or ['v1', 'v2', 'v3', 'cv']
    data = dr.load(d, 'hash')
    for style, qs in data.items():  # the index of a question in its set
        pass
    rows = [('kept', kept)]
    if 'v1' in wanted:
        for norm in ['top', 'minmax']:
            for mode in ['sum', 'mnz']:
                rows.append((f'v1 {norm} {mode}', lambda q, norm=norm, mode=mode: v1(q, norm, mode)))
        rows.append(('v1 top sum, vector 0.5', lambda q: v1(q, 'top', 'sum', {**KEPT, 'vector': 0.5})))
        rows.append(('v1 top sum, vector 0.1', lambda q: v1(q, 'top', 'sum', {**KEPT, 'vector': 0.1})))
    if 'v2' in wanted:
        for m in [5, 10, 20, 30]:
            rows.append((f'v2 weak within {m}', lambda q, m=m: v2(q, m)))
    if 'v3' in wanted:
        for m, b in [(10, 0.1), (10, 0.3), (20, 0.1), (20, 0.3)]:
            rows.append((f'v3 agree m {m} b {b}', lambda q, m=m, b=b: v3(q, m, b)))
    table(data, 'all 32 draws and LoCoMo dev', rows)
    if 'cv' in wanted:
        odd, even = half(data, True), half(data, False)
        cal = [('v4 calibrated, sum of p', False, 'sum'), ('v5 calibrated, naive Bayes', False, 'nb'),
               ('v6 rank x score, naive Bayes', True, 'nb')]
        models = {}
        for name, ws, how in cal:
            models[(name, 'odd')] = fit([q for qs in odd.values() for q in qs], ws)
            models[(name, 'even')] = fit([q for qs in even.values() for q in qs], ws)
        r_even = [('kept', kept)] + [(name, lambda q, name=name, ws=ws, how=how: calibrated(q, models[(name, 'odd')], ws, how)) for name, ws, how in cal]
        table(even, 'held out: even seeds + dev + LoCoMo even questions, curves fitted on the odd half', r_even)
        r_odd = [('kept', kept)] + [(name, lambda q, name=name, ws=ws, how=how: calibrated(q, models[(name, 'even')], ws, how)) for name, ws, how in cal]
        table(odd, 'held out: odd seeds + LoCoMo odd questions, curves fitted on the even half', r_odd)
        oddset = {id(q) for qs in odd.values() for q in qs}
        r_cv = [('kept', kept)] + [(name, lambda q, name=name, ws=ws, how=how: calibrated(q, models[(name, 'even' if id(q) in oddset else 'odd')], ws, how)) for name, ws, how in cal]
        table(data, 'two-fold: every question scored by the curve fitted on the other half', r_cv)
        if 'curves' in wanted:
            for (name, h), (m, p0) in models.items():
                if h == 'odd':
                    print(f'\n{name} fitted on the odd half: base rate {p0:.4f}')
                    for ch in FUSED:
                        print(f'  {ch:9s}' + ' '.join(f'{f}:{p:.3f}' for f, p in sorted(m[ch].items(), key=lambda x: str(x[0]))))


if __name__ == '__main__':
    main()
