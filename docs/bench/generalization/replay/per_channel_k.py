#!/usr/bin/env python3
"""Replays fusion with a rank constant of its own for some channels
(draws-experiments.txt §12): the full-text channel at the kept K and the
others at K x 2, x 4, x 8, their weights as kept ("raw") or scaled by
(K' + 1) / (K + 1) so that a first rank is worth what it was ("same-r1");
and the full-text channel's K alone halved or doubled.

    python3 per_channel_k.py <dump dir> <hash|minilm>

Run from the crate root, over the dumps draws.py reads (target/replay32
for hashing, target/replay-k for MiniLM, as README.txt here makes them).
"""
import itertools, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import draws as dr  # noqa: E402
import replay as rp  # noqa: E402


def fuse(q, w, K, ks):
    sc, src = {}, {}
    holders = rp.key_holders(q)
    for ch, hits in q['ch'].items():
        wc = w.get(ch, 0)
        if not wc or not hits:
            continue
        seen = set()
        for h in hits:
            if h['id'] in seen:
                continue
            seen.add(h['id'])
            c = wc / (ks.get(ch, K) + h['rank'])
            if ch == 'key':
                c /= holders[h['score']]
            sc[h['id']] = sc.get(h['id'], 0) + c
            src[h['id']] = h['src']
    return rp.place(q, sorted(sc, key=lambda i: (sc[i], i), reverse=True), src)


def main():
    d, emb = sys.argv[1], sys.argv[2]
    data = dr.load(d, emb)
    K = 3.0 if emb == 'minilm' else 10.0
    known = dr.messages_of()
    kept = dict(rp.KEPT[emb])
    lean = (lambda q: dr.leaned(q, kept, 3.0, 6.0, known)) if emb == 'minilm' else (lambda q: kept)
    chans = {c: dr.pooled(data, lambda q, c=c: rp.alone(q, c)) for c in rp.CHANNELS}
    best = {k: max(chans[c][k] for c in chans) for k in dr.COLS}
    print(f"{emb:30s}" + ' '.join(f'{c[:6]:>6s}' for c in dr.COLS))
    for c in chans:
        dr.row(c, chans[c])
    dr.row('kept', dr.pooled(data, lambda q: fuse(q, lean(q), K, {})), best)
    others = ('vector', 'hyde', 'messages')
    for ko, scale in itertools.product([K * 2, K * 4, K * 8], ['same-r1', 'raw']):
        def w_of(q, ko=ko, scale=scale):
            w = dict(lean(q))
            if scale == 'same-r1':
                for ch in others:
                    w[ch] *= (ko + 1) / (K + 1)
            return w
        dr.row(f'K other {ko:g} {scale}', dr.pooled(data, lambda q, w_of=w_of, ko=ko: fuse(q, w_of(q), K, {c: ko for c in others})), best)
    for kf in [K / 2, K * 2]:
        dr.row(f'K fts {kf:g}', dr.pooled(data, lambda q, kf=kf: fuse(q, lean(q), K, {'fts': kf})), best)


if __name__ == '__main__':
    main()
