#!/usr/bin/env python3
"""Decomposition rows for v1 (min-max score fusion) and v2 (weak channels
within their first m ranks), and the two halves for each row
(variants.py's split), with lost/won question counts against the best
channel per style.

    python3 variants_extra.py <dump dir>
"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import draws as dr, replay as rp  # noqa: E402
import variants as v  # noqa: E402


def v1_mixed(q, scored=('fts', 'vector'), w=v.KEPT):
    """min-max scores for the channels in `scored`, (K+1)/(K+rank) for the rest."""
    import collections
    sc = collections.defaultdict(float)
    holders = rp.key_holders(q)
    for ch in v.FUSED:
        wc = w.get(ch, 0)
        hits = v.hits_of(q, ch)
        if not wc or not hits:
            continue
        vals = [h['score'] for h in hits if h['score'] is not None]
        top, lo = max(vals), min(vals)
        for h in hits:
            if ch in scored:
                c = (h['score'] - lo) / (top - lo) if top > lo else 1.0
            else:
                c = (v.K + 1) / (v.K + h['rank'])
                if ch == 'key':
                    c /= holders[h['score']]
            sc[h['id']] += wc * c
    return v.finish(q, sc, v.srcs(q))


def counts(data, fn, ref):
    out = []
    for s in ['long-answers', 'locomo']:
        lost = sum(1 for q in data[s] if fn(q) < rp.alone(q, ref) - 1e-9)
        won = sum(1 for q in data[s] if fn(q) > rp.alone(q, ref) + 1e-9)
        out.append(f'{s} vs {ref}: lost {lost} won {won}')
    return '; '.join(out)


def main():
    data = dr.load(sys.argv[1], 'hash')
    rows = [('kept', v.kept),
            ('v1 minmax sum', lambda q: v.v1(q, 'minmax', 'sum')),
            ('v1 minmax fts only', lambda q: v1_mixed(q, ('fts',))),
            ('v1 minmax vector only', lambda q: v1_mixed(q, ('vector',))),
            ('v2 weak within 5', lambda q: v.v2(q, 5)),
            ('v2 vector within 5 only', lambda q: v.finish(q, v.rrf_scores(q, m={'vector': 5}), v.srcs(q))),
            ('v2 messages within 5 only', lambda q: v.finish(q, v.rrf_scores(q, m={'messages': 5}), v.srcs(q))),
            ('v2 within 3', lambda q: v.v2(q, 3))]
    v.table(data, 'all 32 draws and LoCoMo dev', rows)
    v.table(v.half(data, True), 'odd half', rows)
    v.table(v.half(data, False), 'even half', rows)
    print()
    for name, fn in rows:
        print(f'{name:30s}', counts(data, fn, 'fts'))


if __name__ == '__main__':
    main()
