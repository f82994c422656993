#!/usr/bin/env python3
"""Replays fusion over the sixteen draws (docs/bench/generalization/draws-16.txt).

Reads the dumps README.txt here describes ("Sixteen draws"), one per set
and embedder, named <set>.<hash|minilm>.dump where <set> is locomo-dev,
dev_<style> (the committed draw) or s<seed>_<style>, pools each style
over its draws as tests/bench/draws.py does, and prints recall@10 for:

  channels   each channel alone, and fusion at the kept constants;
  grid       fusion over a grid of K, the query vector's weight and the
             raw-messages channel's weight (HyDE at its kept weight);
  fts-top    the query vector weighed more when the full-text channel's
             best score is below a threshold;
  coverage   the same when the query's idf coverage by its best-matching
             turn (replay.py's) is below a threshold;
  lean       the vector channels' weights times 1 + G x max(0, 1 - m / T),
             m = the full-text channel's best score / ln(messages in the
             profile) (recall::fuse::SEMANTIC_LEAN, LEXICAL_MATCH_FULL);
  lean-kept  that rule at the kept T 3, G 6 only;
  vec-by-m   the query vector's weight as a ramp in m (rising from lo at
             m = 0 to hi at m >= T, or falling): a lean for hashed vectors.
  key        the key channel's weight split among a key's holders (kept,
             recall::fuse::key_share), undivided as before, by the square
             root of the holders, and no key channel (key-holders.txt).

    python3 draws.py <dump dir> <hash|minilm> [channels] [grid] [fts-top] [coverage] [lean] [lean-kept] [vec-by-m] [key]

A dump directory may hold other draws (e.g. seeds held out from a
choice): a set s<k>_<style> reads target/draws/seed-<k>/<style>.json.

A figure is starred where fusion is below the style's best channel. Run
from the crate root (coverage reads the sets' JSON).
"""
import collections, glob, itertools, json, math, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replay as rp  # noqa: E402

STYLES = ['coding-agent', 'knowledge-updates', 'long-answers', 'support-chat']
COLS = ['locomo'] + STYLES + ['all']


def path_of(n):
    if n == 'locomo-dev':
        return '../shared/bench/locomo/locomo-dev.json'
    if n.startswith('dev_'):
        return f'tests/fixtures/dev-styles/{n[4:]}.json'
    seed, style = n[1:].split('_', 1)
    return f'target/draws/seed-{seed}/{style}.json'


def load(d, emb):
    data = {}
    for f in sorted(glob.glob(f'{d}/*.{emb}.dump')):
        n = os.path.basename(f).split('.')[0]
        style = 'locomo' if n == 'locomo-dev' else n.split('_', 1)[1]
        for q in rp.load(f, emb):
            q['set'] = n
            data.setdefault(style, []).append(q)
    return data


def pooled(data, fn):
    out = {s: sum(fn(q) for q in data[s]) / len(data[s]) if data.get(s) else float('nan') for s in ['locomo'] + STYLES}
    every = [q for s in STYLES for q in data.get(s, [])]
    out['all'] = sum(fn(q) for q in every) / len(every)
    return out


def row(name, r, best=None):
    flag = lambda c: '*' if best and r[c] < best[c] - 1e-9 else ' '
    print(f'{name:30s}' + ' '.join(f'{r[c]:.3f}{flag(c)}' for c in COLS), flush=True)


def messages_of():
    """The messages of each question's profile: its haystack's turns (a
    LoCoMo conversation's, for LoCoMo)."""
    n = {}
    for c in json.load(open(path_of('locomo-dev'))):
        turns = sum(len(v) for k, v in c['conversation'].items() if k.startswith('session_') and isinstance(v, list))
        for qa in c['qa']:
            n[('locomo-dev', qa['question'])] = turns
    return n


def messages(q, known):
    if (q['set'], q['q']) not in known:
        for x in json.load(open(path_of(q['set']))):
            known[(q['set'], x['question'])] = sum(len(s) for s in x['haystack_sessions'])
    return known[(q['set'], q['q'])]


def leaned(q, kept, T, G, known):
    m = fts_top(q) / math.log(max(messages(q, known), 3))
    f = 1 + G * max(0.0, 1 - m / T)
    return {**kept, 'vector': kept['vector'] * f, 'hyde': kept['hyde'] * f}


def toks(t):
    return [x[:-1] if x.endswith('s') and len(x) > 3 else x for x in re.findall(r"[a-z0-9]+", t.lower())]


def coverage(question, turns):
    sets = [set(toks(t)) for t in turns]
    df = collections.Counter(w for s in sets for w in s)
    qt = [w for w in dict.fromkeys(toks(question)) if w not in rp.STOP]
    idf = {w: math.log(1 + (len(sets) - df[w] + 0.5) / (df[w] + 0.5)) for w in qt}
    return max((sum(idf[w] for w in qt if w in s) for s in sets), default=0) / (sum(idf.values()) or 1)


def coverages():
    cov = {}
    for style in STYLES:
        for n, path in [(f'dev_{style}', f'tests/fixtures/dev-styles/{style}.json')] + [
                (f's{s}_{style}', f'target/draws/seed-{s}/{style}.json') for s in range(1, 16)]:
            if os.path.exists(path):
                for q in json.load(open(path)):
                    cov[(n, q['question'])] = coverage(q['question'], [t['content'] for s in q['haystack_sessions'] for t in s])
    for c in json.load(open('../shared/bench/locomo/locomo-dev.json')):
        turns = [t['text'] for k, v in c['conversation'].items() if k.startswith('session_') and isinstance(v, list) for t in v]
        for qa in c['qa']:
            cov[('locomo-dev', qa['question'])] = coverage(qa['question'], turns)
    return cov


def fts_top(q):
    hits = q['ch'].get('fts', [])
    return hits[0]['score'] if hits and hits[0]['score'] is not None else 0.0


def main():
    d, emb, wanted = sys.argv[1], sys.argv[2], sys.argv[3:] or ['channels']
    data = load(d, emb)
    K = 3.0 if emb == 'minilm' else 10.0
    known = messages_of()
    kept = dict(rp.KEPT[emb])
    chans = {c: pooled(data, lambda q, c=c: rp.alone(q, c)) for c in rp.CHANNELS}
    best = {k: max(chans[c][k] for c in chans) for k in COLS}
    print(f"{emb:30s}" + ' '.join(f'{c[:6]:>6s}' for c in COLS))
    if 'channels' in wanted:
        for c in chans:
            row(f'{c} alone', chans[c])
    row('kept', pooled(data, lambda q: rp.fuse(q, w=kept, K=K)), best)
    if 'grid' in wanted:
        ks, vs, ms = ([3.0, 5.0, 10.0, 20.0], [0.1, 0.25, 0.5], [0.05, 0.15, 0.3]) if emb == 'hash' else \
            ([2.0, 3.0, 5.0], [0.5, 0.75, 1.0, 1.5], [0.05, 0.15])
        for k, v, m in itertools.product(ks, vs, ms):
            w = {**kept, 'vector': v, 'messages': m}
            row(f'K {k:g} vector {v:g} messages {m:g}', pooled(data, lambda q: rp.fuse(q, w=w, K=k)), best)
    boosts = [1.0, 2.0] if emb == 'minilm' else [0.5, 1.0]
    if 'fts-top' in wanted:
        for t, b in itertools.product([4, 8, 10, 15], boosts):
            w = {**kept, 'vector': b}
            row(f'fts top < {t}: vector {b:g}', pooled(data, lambda q: rp.fuse(q, w=w if fts_top(q) < t else kept, K=K)), best)
    if 'lean' in wanted:
        for t, g in itertools.product([2.0, 2.5, 3.0, 3.5, 4.0], [2.0, 4.0, 6.0, 8.0]):
            row(f'lean T {t:g} G {g:g}', pooled(data, lambda q: rp.fuse(q, w=leaned(q, kept, t, g, known), K=K)), best)
    if 'lean-kept' in wanted:
        row('lean T 3 G 6 (kept)', pooled(data, lambda q: rp.fuse(q, w=leaned(q, kept, 3.0, 6.0, known), K=K)), best)
    if 'vec-by-m' in wanted:
        m_of = lambda q: fts_top(q) / math.log(max(messages(q, known), 3))
        for t, lo, hi in itertools.product([2.0, 3.0, 4.0, 5.0], [0.0, 0.1], [0.25, 0.5]):
            row(f'vector {lo:g} -> {hi:g} by m/{t:g}', pooled(data, lambda q: rp.fuse(q, w={**kept, 'vector': lo + (hi - lo) * min(1.0, m_of(q) / t)}, K=K)), best)
        for t, hi in itertools.product([3.0, 5.0], [0.25, 0.5]):
            row(f'vector {hi:g} -> 0.1 by m/{t:g}', pooled(data, lambda q: rp.fuse(q, w={**kept, 'vector': hi - (hi - 0.1) * min(1.0, m_of(q) / t)}, K=K)), best)
    if 'key' in wanted:
        lean = (lambda q: leaned(q, kept, 3.0, 6.0, known)) if emb == 'minilm' else (lambda q: kept)
        holders = collections.Counter(min(n, 10) for s in data.values() for q in s for n in rp.key_holders(q).values())
        print('holders of each matched key (10: ten or more):', ' '.join(f'{n}:{c}' for n, c in sorted(holders.items())))
        row('key split (kept)', pooled(data, lambda q: rp.fuse(q, w=lean(q), K=K)), best)
        row('key undivided', pooled(data, lambda q: rp.fuse(q, w=lean(q), K=K, key_split=False)), best)
        row('no key channel', pooled(data, lambda q: rp.fuse(q, w={**lean(q), 'key': 0}, K=K)), best)
    if 'coverage' in wanted:
        cov = coverages()
        for t, b in itertools.product([0.3, 0.5, 0.7], boosts):
            w = {**kept, 'vector': b}
            row(f'coverage < {t}: vector {b:g}', pooled(data, lambda q: rp.fuse(q, w=w if cov[(q["set"], q["q"])] < t else kept, K=K)), best)


if __name__ == '__main__':
    main()
