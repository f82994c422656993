#!/usr/bin/env python3
"""Per-query fusion rules replayed over the 32 draws and LoCoMo dev
(draws-experiments.txt §15).

    python3 qpp.py <dump dir> <hash|minilm> [a b c d1 d2 d3 d4 d5 sel halves counts]

Run from the crate root over the dumps draws.py reads (make_dumps32.sh
here makes the hashing ones). Each style is pooled over its draws as
draws.py does; a star marks fusion below the style's best channel (on
the same questions). "kept" is the committed rule: weighted RRF, K 10
(hashing) or 3 with the semantic lean (MiniLM).

  a  query-performance-prediction gating: the weaker channels' weights
     (vector, HyDE, raw messages; the key channel keeps its own) times
     1 - b x ramp, ramp = max(0, (pct - t) / (1 - t)), pct the query's
     percentile (among the other half's queries: two-fold) of the
     full-text channel's confidence:
       gap   (s1 - s10) / s1 over its best score at each of its first 10
             ranks;
       ratio s1 / mean(s1..s10);
       nqc   standard deviation / mean of s1..s10 (normalized query
             commitment);
       top1  (s1 - s2) / s1.
     "sharp" instead halves full text's rank constant as the ramp rises.
  b  query agreement: each weak channel's weight times
     ((1 + a_c) / (1 + mean a_c))^e, a_c the share of its first 10 source
     messages among full text's first 10 ("fts") or among every other
     fused channel's first 10 ("others"); mean a_c over the other half.
  c  a protected prefix: full text's first p ranks (one memory each, the
     one kept places highest) are placed within the fused list's first L
     memories; the places they need are taken from kept's first L, last
     first, sparing a weak channel's own first t ranks (those stay if kept
     had them there). The rest in kept's order.
     "dominant" (MiniLM): the anchor is the heavier of full text and the
     vector for the query (the semantic lean can make the vector heavier).
  ac a (t 0, b 1) and c (p 10, L 10, t 2) together.
  d  d1 pool: the weak channels add only to memories citing one of full
     text's first N source messages, or within their own first t ranks.
     d2 copeland: Copeland (pairwise majority, the kept weights as votes)
     over the union of the channels' first 30, a channel's unranked
     memory below its list, ties by kept's score; "one vote each": every
     channel one vote, ties by full text.
     d3 margin: full text's first 10 ranks hold the head; a memory from
     outside takes the weakest one's place only if its kept score is
     above m times that one's.
     d4 full text's rank read from its score, r' = 1 + (n-1)(s1 - s) /
     (s1 - sn), in the kept RRF (near ties share credit).
     d5 sibling credit (§9 of draws-experiments.txt, at this scale): a
     memory a channel did not rank takes a share of the channel's best
     rank among the memories citing one of its source messages.
     d6 sibling credit to one memory a message: the message's memory with
     the best kept score among those the channel did not rank.
  sel  for each family, the setting chosen on one half (fewest stars,
     then 'all' + LoCoMo) scored on the other, and the reverse.
  halves  every row on each half alone.
  counts  questions lost and won against the best channel, per style.
"""
import bisect, collections, itertools, math, os, statistics as st, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import draws as dr  # noqa: E402
import replay as rp  # noqa: E402
import variants as v  # noqa: E402

EMB = 'hash'
K = 10.0
BASE = {}
FUSED = []
WEAK = []
KNOWN = None


def setup(emb):
    global EMB, K, BASE, FUSED, WEAK, KNOWN
    EMB = emb
    K = 3.0 if emb == 'minilm' else 10.0
    BASE = dict(rp.KEPT[emb])
    FUSED = [c for c in ['key', 'fts', 'vector', 'hyde', 'messages'] if BASE.get(c, 0)]
    WEAK = [c for c in ['vector', 'hyde', 'messages'] if BASE.get(c, 0)]
    KNOWN = dr.messages_of() if emb == 'minilm' else None


def kept_w(q):
    if EMB == 'minilm':
        return dr.leaned(q, BASE, 3.0, 6.0, KNOWN)
    return dict(BASE)


def srcs(q):
    src = {}
    for ch in FUSED:
        for h in v.hits_of(q, ch):
            src[h['id']] = h['src']
    return src


def scores(q, w, Ks=None, allow=None):
    """Weighted RRF; Ks: a rank constant per channel; allow(ch, h): whether
    a hit counts."""
    sc = collections.defaultdict(float)
    holders = rp.key_holders(q)
    for ch in FUSED:
        wc = w.get(ch, 0)
        if not wc:
            continue
        k = (Ks or {}).get(ch, K)
        for h in v.hits_of(q, ch):
            if allow and not allow(ch, h):
                continue
            c = wc / (k + h['rank'])
            if ch == 'key':
                c /= holders[h['score']]
            sc[h['id']] += c
    return sc


def order_of(sc):
    return sorted(sc, key=lambda i: (sc[i], i), reverse=True)


def done(q, order):
    return rp.place(q, order, srcs(q))


def kept(q):
    return done(q, order_of(scores(q, kept_w(q))))


def cached(q, key, f):
    c = q.setdefault('_c', {})
    if key not in c:
        c[key] = f()
    return c[key]


# (a) confidence of the full-text channel -------------------------------------
def fts_levels(q):
    """Full text's best score at each of its first 10 ranks (evidence ranks:
    the memories of one message share a rank)."""
    best = {}
    for h in q['ch'].get('fts', []) or []:
        if h['score'] is None:
            continue
        best[h['rank']] = max(best.get(h['rank'], -1e18), h['score'])
    return [best[r] for r in sorted(best)[:10]]


def conf(q, how):
    s = fts_levels(q)
    if len(s) < 2 or s[0] <= 0:
        return 0.0
    if how == 'gap':
        return (s[0] - s[-1]) / s[0]
    if how == 'ratio':
        return s[0] / st.mean(s)
    if how == 'nqc':
        return st.pstdev(s) / (st.mean(s) or 1)
    if how == 'top1':
        return (s[0] - s[1]) / s[0]
    raise ValueError(how)


class Pct:
    """Percentile of a value among a reference set of queries."""

    def __init__(self, vals):
        self.v = sorted(vals)

    def __call__(self, x):
        return bisect.bisect_right(self.v, x) / len(self.v)


def ramp(p, t):
    return max(0.0, (p - t) / (1 - t)) if t < 1 else 0.0


def rule_a(q, how, t, b, pct, sharp=False):
    r = ramp(pct(conf(q, how)), t)
    w = kept_w(q)
    if sharp:
        return done(q, order_of(scores(q, w, Ks={'fts': K * (1 - 0.5 * b * r)})))
    for c in WEAK:
        w[c] *= max(0.0, 1 - b * r)
    return done(q, order_of(scores(q, w)))


# (b) agreement --------------------------------------------------------------------
def top_msgs(q, ch, n=10):
    return set(rp.turns([h['src'] for h in v.hits_of(q, ch)], n))


def agreement(q, c, ref):
    mine = top_msgs(q, c)
    if not mine:
        return 0.0
    if ref == 'fts':
        other = top_msgs(q, 'fts')
    else:
        other = set().union(*[top_msgs(q, o) for o in FUSED if o not in (c, 'key')] or [set()])
    return len(mine & other) / len(mine)


def rule_b(q, ref, e, means):
    w = kept_w(q)
    for c in WEAK:
        w[c] *= ((1 + agreement(q, c, ref)) / (1 + means[(c, ref)])) ** e
    return done(q, order_of(scores(q, w)))


def agreement_means(qs):
    return {(c, ref): st.mean(agreement(q, c, ref) for q in qs) for c in WEAK for ref in ('fts', 'others')}


# (c) protected prefix -------------------------------------------------------------
def gated_w(q, how, t, b, pct):
    w = kept_w(q)
    r = ramp(pct(conf(q, how)), t)
    for c in WEAK:
        w[c] *= max(0.0, 1 - b * r)
    return w


def rule_c(q, p, L, t, anchor='fts', w=None):
    w = w or kept_w(q)
    if anchor == 'dominant':  # the heavier of full text and the vector for this query
        anchor = max(['fts', 'vector'], key=lambda c: (w.get(c, 0), c == 'fts'))
    sc = scores(q, w)
    order = order_of(sc)
    pos = {i: n for n, i in enumerate(order)}
    prot = []
    byrank = collections.defaultdict(list)
    for h in v.hits_of(q, anchor):
        byrank[h['rank']].append(h['id'])
    for r in sorted(byrank)[:p]:
        prot.append(min(byrank[r], key=lambda i: pos.get(i, 1e9)))
    spare = {h['id'] for c in FUSED if c != anchor for h in v.hits_of(q, c) if h['rank'] <= t}
    head = order[:L]
    missing = [i for i in prot if i not in head]
    keep = set(prot) | spare
    for i in missing:  # drop kept's last unprotected place in the head
        for j in reversed(head):
            if j not in keep:
                head.remove(j)
                break
        else:
            break
        head.append(i)
    head = sorted(head, key=lambda i: (sc[i], i), reverse=True)
    rest = [i for i in order if i not in set(head)]
    return done(q, head + rest)


# (d) --------------------------------------------------------------------------------
def rule_d1(q, N, t):
    pool = top_msgs(q, 'fts', N)
    src = srcs(q)

    def allow(ch, h):
        if ch in ('fts', 'key') or h['rank'] <= t:
            return True
        return any(m in pool for m in src.get(h['id']) or [])
    return done(q, order_of(scores(q, kept_w(q), allow=allow)))


def rule_d3(q, n, m):
    """Full text's first n ranks (one memory each) hold the head; a
    memory outside enters only if its kept score is above m times the
    weakest held one's, which then leaves."""
    sc = scores(q, kept_w(q))
    order = order_of(sc)
    pos = {i: k for k, i in enumerate(order)}
    byrank = collections.defaultdict(list)
    for h in v.hits_of(q, 'fts'):
        byrank[h['rank']].append(h['id'])
    head = [min(byrank[r], key=lambda i: pos.get(i, 1e9)) for r in sorted(byrank)[:n]]
    hs = set(head)
    for i in order:
        if i in hs:
            continue
        low = min(head, key=lambda j: (sc[j], j)) if head else None
        if low is None or sc[i] <= m * sc[low]:
            break
        head.remove(low)
        hs.discard(low)
        head.append(i)
        hs.add(i)
    head = sorted(head, key=lambda i: (sc[i], i), reverse=True)
    return done(q, head + [i for i in order if i not in hs])


def rule_d4(q, n=10):
    """Full text's rank read from its score: r' = 1 + (n - 1)(s1 - s) /
    (s1 - sn) over its best score at each rank (sn its n-th rank's), so
    near ties share credit and wide gaps keep it apart; the other
    channels as kept."""
    lv = fts_levels(q)
    w = kept_w(q)
    sc = scores(q, {**w, 'fts': 0})
    if len(lv) >= 2 and lv[0] > lv[min(n, len(lv)) - 1]:
        s1, sn = lv[0], lv[min(n, len(lv)) - 1]
        for h in v.hits_of(q, 'fts'):
            r = 1 + (n - 1) * (s1 - h['score']) / (s1 - sn) if h['score'] is not None else h['rank']
            sc[h['id']] += w['fts'] / (K + max(1.0, r))
    else:
        for h in v.hits_of(q, 'fts'):
            sc[h['id']] += w['fts'] / (K + h['rank'])
    return done(q, order_of(sc))


def message_ranks(q, ch):
    """Channel ch's best rank of each source message (through any memory
    citing it), and the memories it ranked."""
    best, own = {}, set()
    for h in v.hits_of(q, ch):
        own.add(h['id'])
        for m in h['src'] or []:
            best[m] = min(best.get(m, 1e9), h['rank'])
    return best, own


def rule_d5(q, share):
    """Sibling credit (draws-experiments.txt §9, replayed here over the
    32 draws): a memory a channel did not rank takes share x that
    channel's best rank among memories citing one of its source
    messages."""
    w = kept_w(q)
    sc = scores(q, w)
    src = srcs(q)
    for ch in FUSED:
        if ch == 'key':
            continue
        best, own = message_ranks(q, ch)
        for i, ss in src.items():
            if i in own:
                continue
            r = min([best[m] for m in ss or [] if m in best] or [0])
            if r:
                sc[i] += share * w[ch] / (K + r)
    return done(q, order_of(sc))


def rule_d6(q, share):
    """Sibling credit to one memory a message: where a channel ranks a
    message through one memory, the message's memory with the best kept
    score that the channel did not rank takes share x that rank."""
    w = kept_w(q)
    sc = scores(q, w)
    base = dict(sc)
    src = srcs(q)
    of_msg = collections.defaultdict(list)
    for i, ss in src.items():
        for m in ss or []:
            of_msg[m].append(i)
    for ch in FUSED:
        if ch == 'key':
            continue
        best, own = message_ranks(q, ch)
        for m, r in best.items():
            others = [i for i in of_msg[m] if i not in own]
            if others:
                top = max(others, key=lambda i: (base[i], i))
                sc[top] += share * w[ch] / (K + r)
    return done(q, order_of(sc))


def rule_d2(q, depth=30, equal=False):
    w = kept_w(q)
    if equal:
        w = {c: 1.0 for c in w}
    base = scores(q, w)
    ranks = {}
    cand = set()
    for c in FUSED:
        if c == 'key':
            continue
        r = {}
        for h in v.hits_of(q, c):
            r[h['id']] = h['rank']
            if h['rank'] <= depth:
                cand.add(h['id'])
        ranks[c] = r
    cand = sorted(cand)
    wins = collections.defaultdict(float)
    for a, b2 in itertools.combinations(cand, 2):
        s = 0.0
        for c, r in ranks.items():
            ra, rb = r.get(a, 1e9), r.get(b2, 1e9)
            if ra < rb:
                s += w[c]
            elif rb < ra:
                s -= w[c]
        if s == 0 and equal:
            s = ranks['fts'].get(b2, 1e9) - ranks['fts'].get(a, 1e9)
        if s > 0:
            wins[a] += 1
        elif s < 0:
            wins[b2] += 1
    head = sorted(cand, key=lambda i: (wins[i], base[i], i), reverse=True)
    rest = [i for i in order_of(base) if i not in set(cand)]
    return done(q, head + rest)


# tables -------------------------------------------------------------------------------
def chans_of(data):
    cs = ['fts', 'messages', 'vector'] + (['hyde'] if EMB == 'minilm' else [])
    return {c: dr.pooled(data, lambda q, c=c: rp.alone(q, c)) for c in cs}


def best_of(chans):
    return {k: max(chans[c][k] for c in chans) for k in dr.COLS}


def header(title):
    print(f"\n{title}")
    print(f"{EMB:30s}" + ' '.join(f'{c[:6]:>6s}' for c in dr.COLS))


def stars(r, best):
    return sum(1 for k in dr.COLS if r[k] < best[k] - 1e-9)


def qcounts(data, fn):
    """Per style: questions' worth of gap to the best channel, and the
    questions lost and won against it."""
    chans = chans_of(data)
    out = []
    for s in ['locomo'] + dr.STYLES:
        bc = max(chans, key=lambda c: chans[c][s])
        lost = sum(1 for q in data[s] if fn(q) < rp.alone(q, bc) - 1e-9)
        won = sum(1 for q in data[s] if fn(q) > rp.alone(q, bc) + 1e-9)
        diff = sum(fn(q) - rp.alone(q, bc) for q in data[s])
        out.append(f'{s[:6]} vs {bc[:3]} {diff:+.1f}q (-{lost}/+{won})')
    return '  '.join(out)


def families(data, odd, even):
    """{family: [(name, fn_factory(fit half) -> fn)]}; a factory takes the
    questions a setting is fitted on (percentiles, means)."""
    fam = collections.OrderedDict()
    rows = []
    for how in ['gap', 'ratio', 'nqc', 'top1']:
        for t, b in [(0.0, 0.5), (0.0, 1.0), (0.5, 1.0), (0.75, 1.0), (0.9, 1.0)]:
            rows.append((f'a {how} t {t:g} b {b:g}',
                         lambda fit, how=how, t=t, b=b: (lambda q, p=Pct([conf(x, how) for x in fit]): rule_a(q, how, t, b, p))))
    for how in ['gap', 'nqc']:
        for t in [0.0, 0.5]:
            rows.append((f'a {how} sharp t {t:g}',
                         lambda fit, how=how, t=t: (lambda q, p=Pct([conf(x, how) for x in fit]): rule_a(q, how, t, 1.0, p, sharp=True))))
    fam['a'] = rows
    rows = []
    for ref in ['fts', 'others']:
        for e in [-2.0, -1.0, 1.0, 2.0]:
            rows.append((f'b agree {ref} e {e:g}',
                         lambda fit, ref=ref, e=e: (lambda q, m=agreement_means(fit): rule_b(q, ref, e, m))))
    fam['b'] = rows
    rows = []
    for p, L, t in [(3, 10, 1), (5, 10, 1), (8, 10, 1), (8, 10, 2), (9, 10, 2), (10, 10, 1), (10, 10, 2), (10, 10, 3), (10, 10, 5), (8, 12, 1), (10, 12, 1), (10, 12, 2)]:
        rows.append((f'c protect p {p} L {L} t {t}', lambda fit, p=p, L=L, t=t: (lambda q: rule_c(q, p, L, t))))
    if EMB == 'minilm':
        for p, t in [(8, 2), (10, 2), (10, 3)]:
            rows.append((f'c dominant p {p} L 10 t {t}', lambda fit, p=p, t=t: (lambda q: rule_c(q, p, 10, t, 'dominant'))))
    fam['c'] = rows
    rows = []
    for N, t in [(10, 1), (10, 2), (10, 3), (10, 5), (12, 3), (15, 3), (15, 5), (20, 3), (30, 3)]:
        rows.append((f'd1 pool fts {N} t {t}', lambda fit, N=N, t=t: (lambda q: rule_d1(q, N, t))))
    fam['d1'] = rows
    fam['ac'] = [(f'ac {how} + c p 10 t 2',
                  lambda fit, how=how: (lambda q, p=Pct([conf(x, how) for x in fit]): rule_c(q, 10, 10, 2, w=gated_w(q, how, 0.0, 1.0, p))))
                 for how in ['top1', 'gap']]
    fam['d3'] = [(f'd3 fts 10 margin {m:g}', lambda fit, m=m: (lambda q: rule_d3(q, 10, m)))
                 for m in [1.0, 1.1, 1.25, 1.5, 2.0]]
    fam['d2'] = [('d2 copeland 30', lambda fit: rule_d2),
                 ('d2 copeland 30 one vote each', lambda fit: (lambda q: rule_d2(q, 30, True)))]
    fam['d5'] = [(f'd5 sibling credit {x:g}', lambda fit, x=x: (lambda q: rule_d5(q, x))) for x in [0.25, 0.5, 1.0]]
    fam['d6'] = [(f'd6 sibling to one {x:g}', lambda fit, x=x: (lambda q: rule_d6(q, x))) for x in [0.5, 1.0]]
    fam['d4'] = [(f'd4 fts rank from score n {n}', lambda fit, n=n: (lambda q: rule_d4(q, n))) for n in [5, 10, 20]]
    return fam


def twofold(data, odd, even, factory):
    f_odd, f_even = factory(all_q(odd)), factory(all_q(even))
    oddset = {id(q) for q in all_q(odd)}
    return lambda q: f_even(q) if id(q) in oddset else f_odd(q)


def all_q(d):
    return [q for qs in d.values() for q in qs]


def memo(fn, tag):
    return lambda q: cached(q, tag, lambda: fn(q))


def main():
    d, emb = sys.argv[1], sys.argv[2]
    wanted = sys.argv[3:] or ['a', 'b', 'c', 'd1', 'd2', 'sel']
    setup(emb)
    data = dr.load(d, emb)
    odd, even = v.half(data, True), v.half(data, False)
    chans = chans_of(data)
    best = best_of(chans)
    header('all 32 draws + LoCoMo dev (two-fold where anything is fitted)')
    for c in chans:
        dr.row(f'{c} alone', chans[c])
    kf = memo(kept, 'kept')
    kr = dr.pooled(data, kf)
    dr.row('kept', kr, best)
    fam = families(data, odd, even)
    results = {}
    for name, rows in fam.items():
        if name not in wanted and not (name.startswith('d') and 'd' in wanted):
            continue
        for rn, factory in rows:
            fn = memo(twofold(data, odd, even, factory), rn)
            r = dr.pooled(data, fn)
            results[rn] = (r, fn, factory, name)
            dr.row(rn, r, best)
            if not stars(r, best) and r['all'] >= kr['all'] - 1e-9 and r['locomo'] >= kr['locomo'] - 1e-9:
                print(f'{"":30s}^ no star, all and LoCoMo not below kept')
    if 'sel' in wanted:
        header('chosen on one half, scored on the other (each family)')
        bo, be = best_of(chans_of(odd)), best_of(chans_of(even))
        for name in fam:
            rows = [(rn, results[rn]) for rn, _ in fam[name] if rn in results]
            if not rows:
                continue

            def pick(half, bh):
                def key(item):
                    rn, (r, fn, factory, _) = item
                    rr = dr.pooled(half, fn)  # fn is two-fold: on a half it is fitted on the other half
                    return (-stars(rr, bh), rr['all'] + rr['locomo'])
                return max(rows, key=key)[0]
            # a setting chosen on the odd half is scored on the even half, and the reverse
            on_odd, on_even = pick(odd, bo), pick(even, be)
            fo, fe = results[on_odd][1], results[on_even][1]
            evenset = {id(q) for q in all_q(even)}
            fn = lambda q, fo=fo, fe=fe: fo(q) if id(q) in evenset else fe(q)
            print(f'{name}: chosen on the odd half: {on_odd}; on the even half: {on_even}')
            dr.row(f'{name} chosen on a half', dr.pooled(data, fn), best)
    if 'halves' in wanted:
        for hn, hd in [('odd half (odd seeds, odd LoCoMo questions)', odd), ('even half (dev, even seeds, even LoCoMo questions)', even)]:
            header(hn)
            bh = best_of(chans_of(hd))
            dr.row('kept', dr.pooled(hd, kf), bh)
            for rn, (r, fn, _, _) in results.items():
                dr.row(rn, dr.pooled(hd, fn), bh)
    if 'counts' in wanted:
        print('\nquestions against the best channel (gap in questions, lost/won)')
        print(f"{'kept':30s}", qcounts(data, kf))
        for rn, (r, fn, _, _) in results.items():
            print(f'{rn:30s}', qcounts(data, fn))


if __name__ == '__main__':
    main()
